//! Scheduler behaviour against numbers derived independently of the code: the kernel's weight
//! table, PELT closed forms, preemption and balancing rules.

mod common;

use common::*;
use schedsim_core::sched::core::{SdFlag, WakeFlags};
use serde_json::json;

const KHZ: u64 = 1_000_000; // 1 GHz: 1 cycle per ns

fn hog(name: &str, nice: i32, start_cpu: Option<usize>) -> serde_json::Value {
    json!({"name": name, "nice": nice, "start_cpu": start_cpu,
           "program": [{"op": "loop", "count": -1, "body": [{"op": "run", "cycles": cycles(1.0, KHZ)}]}]})
}

/// A task pinned to `cpu` that runs `ms` of work at 1 GHz and exits.
fn pinned_hog(name: &str, cpu: usize, ms: f64) -> serde_json::Value {
    json!({"name": name, "start_cpu": cpu, "program": [
        {"op": "set_affinity", "cpus": [cpu]}, {"op": "run", "cycles": cycles(ms, KHZ)}]})
}

#[test]
fn nice_weights_share_one_cpu_1024_to_335_in_both_flavours() {
    for kernel in ["5.2", "6.12"] {
        let w = custom(json!([hog("n0", 0, None), hog("n5", 5, None)]), json!([]));
        let sim = run(config(smp(1, 1, KHZ, false), w, kernel, 3000.0));
        let a = sim.tasks[0].stats.cpu_ns as f64;
        let b = sim.tasks[1].stats.cpu_ns as f64;
        let ratio = a / b;
        let expect = 1024.0 / 335.0;
        assert!(
            (ratio / expect - 1.0).abs() < 0.03,
            "kernel {kernel}: ratio {ratio:.3}, expected {expect:.3}"
        );
        assert!(
            ((a + b) / sim.now as f64 - 1.0).abs() < 1e-3,
            "the CPU is always busy"
        );
    }
}

#[test]
fn periodic_task_util_settles_at_the_pelt_closed_form() {
    // 8 ms every 16 ms on a 1024-capacity CPU at fixed frequency: the signal at the end of a
    // run phase is 1024·(1 − y^r)/(1 − y^p), r and p in 1024-µs PELT periods.
    let y: f64 = 0.5f64.powf(1.0 / 32.0);
    let r = 8.0e6 / 1024.0 / 1024.0;
    let p = 16.0e6 / 1024.0 / 1024.0;
    let max = 1024.0 * (1.0 - y.powf(r)) / (1.0 - y.powf(p));
    let min = max * y.powf(p - r);
    for kernel in ["5.2", "6.12"] {
        let w =
            json!({"name": "periodic", "params": {"tasks": 1, "period_ms": 16, "duty_pct": 50}});
        // ends just after the 63rd activation's run completes (62·16 + 8 ms)
        let sim = run(config(smp(1, 1, KHZ, false), w.clone(), kernel, 1000.001));
        let u = sim.tasks[0].se.avg.util_avg as f64;
        assert!(
            (u / max - 1.0).abs() < 0.02,
            "kernel {kernel}: util at end of run {u}, closed form {max:.1}"
        );
        // and just before the 64th activation: fully decayed through the sleep
        let sim = run(config(smp(1, 1, KHZ, false), w, kernel, 1008.0 - 0.001));
        let cfs = sim.rqs[0].cfs.avg.util_avg as f64;
        assert!(
            cfs <= max * 1.02 && cfs >= min * 0.95,
            "kernel {kernel}: rq util {cfs}, range {min:.1}..{max:.1}"
        );
    }
}

#[test]
fn before_5_7_a_sleeping_tasks_load_leaves_the_runnable_load_at_once() {
    // 8 ms every 16 ms, observed 4 ms into a sleep (62·16 + 12 ms). At the end of the run
    // phase the task's load is the util closed form above, ≈ 554 at nice 0, and the idle
    // CPU's cfs_rq has not been updated since the dequeue: load_avg still holds it as blocked
    // load. v5.2 took the sleeper's runnable load off the cfs_rq at dequeue
    // (`dequeue_runnable_load_avg`), so the balancer's `weighted_cpuload()` reads 0; v5.7+
    // reads load_avg, blocked load included.
    let y: f64 = 0.5f64.powf(1.0 / 32.0);
    let (r, p) = (8.0e6 / 1024.0 / 1024.0, 16.0e6 / 1024.0 / 1024.0);
    let peak = 1024.0 * (1.0 - y.powf(r)) / (1.0 - y.powf(p));
    let w = json!({"name": "periodic", "params": {"tasks": 1, "period_ms": 16, "duty_pct": 50}});
    for kernel in ["5.2", "6.12"] {
        let sim = run(config(smp(1, 1, KHZ, false), w.clone(), kernel, 1004.0));
        let load = sim.rqs[0].cfs.avg.load_avg as f64;
        assert!(
            (load / peak - 1.0).abs() < 0.03,
            "{kernel}: load_avg {load}, closed form {peak:.1}"
        );
        let read = sim.cpu_load(0);
        if kernel == "5.2" {
            assert!(read <= 2, "5.2: runnable load {read}");
        } else {
            assert_eq!(read, sim.rqs[0].cfs.avg.load_avg, "6.12 reads load_avg");
        }
    }
}

#[test]
fn a_waking_task_preempts_a_hog_unless_wakeup_preemption_is_off() {
    let sleeper = json!({"name": "sleeper", "program": [{"op": "loop", "count": -1, "body": [
        {"op": "sleep", "ns": 10_000_000}, {"op": "run", "cycles": cycles(0.1, KHZ)}]}]});
    for kernel in ["5.2", "6.12"] {
        let w = custom(json!([hog("hog", 0, None), sleeper.clone()]), json!([]));
        let sim = run(config(smp(1, 1, KHZ, false), w.clone(), kernel, 1000.0));
        let s = &sim.tasks[1].stats;
        let mean_us = mean_wakeup_latency_ns(s) / 1e3;
        assert!(
            s.wakeup_latency_count > 80,
            "{kernel}: wakeups {}",
            s.wakeup_latency_count
        );
        // EEVDF places a sleeper that overran its share behind V (negative lag): it may wait
        // for the next tick before it is eligible, so allow more than the CFS sleeper credit.
        assert!(
            mean_us < 200.0,
            "{kernel}: mean wakeup latency {mean_us:.1} us"
        );
        // NO_WAKEUP_PREEMPTION: the sleeper waits for the tick-driven reschedule
        let mut cfg = config(smp(1, 1, KHZ, false), w, kernel, 1000.0);
        cfg.kernel
            .features
            .insert("WAKEUP_PREEMPTION".into(), json!(false));
        let sim = run(cfg);
        let s = &sim.tasks[1].stats;
        let slow_us = mean_wakeup_latency_ns(s) / 1e3;
        assert!(
            slow_us > 500.0 && slow_us > 10.0 * mean_us,
            "{kernel}: without wakeup preemption latency {slow_us:.1} us"
        );
    }
}

#[test]
fn load_balancing_spreads_cpu_bound_tasks_to_idle_cpus() {
    for kernel in ["5.2", "6.12"] {
        let tasks: Vec<_> = (0..4)
            .map(|i| hog(&format!("hog{i}"), 0, Some(0)))
            .collect();
        let sim = run(config(
            smp(4, 1, KHZ, false),
            custom(json!(tasks), json!([])),
            kernel,
            500.0,
        ));
        let mut cpus: Vec<usize> = sim.tasks.iter().map(|t| t.cpu).collect();
        cpus.sort();
        assert_eq!(cpus, vec![0, 1, 2, 3], "{kernel}: final placement");
        // before v5.5 an idle CPU pulls from a single-CPU group only once that group is
        // overloaded (util above 1024 × 100 / 117 = 875), which takes CPU 0 tens of ms
        let floor = if kernel == "5.2" { 0.75 } else { 0.9 };
        for c in 1..4 {
            let busy = sim.rqs[c].busy_ns as f64 / sim.now as f64;
            assert!(busy > floor, "{kernel}: cpu{c} busy {busy:.2}");
        }
        assert!(sim.stats.migrations >= 3);
    }
}

#[test]
fn before_5_5_an_idle_cpu_waits_for_an_overloaded_group() {
    // Four hogs start on CPU 0 of four. Their initial utils sum to 512 + 256 + 128 + 64 = 960;
    // the first pull takes one task's util away, leaving CPU 0 below 875 = 1024 × 100 / 117.
    // v5.2's idle balance then sees a `group_other` with one idle CPU fewer than its own group
    // (1 ≤ 0 + 1): balanced, until CPU 0's util climbs past 875. v5.5+ balances the task
    // counts of single-CPU groups at once.
    let hogs = || {
        custom(
            json!((0..4)
                .map(|i| hog(&format!("hog{i}"), 0, Some(0)))
                .collect::<Vec<_>>()),
            json!([]),
        )
    };
    let old = run(config(smp(4, 1, KHZ, false), hogs(), "5.2", 40.0));
    assert!(
        old.rqs[0].cfs.avg.util_avg < 875,
        "5.2: cpu0 util {}",
        old.rqs[0].cfs.avg.util_avg
    );
    let on_cpu0 = old.tasks.iter().filter(|t| t.cpu == 0).count();
    assert_eq!(on_cpu0, 3, "5.2: one task pulled in 40 ms");
    let new = run(config(smp(4, 1, KHZ, false), hogs(), "6.12", 40.0));
    let on_cpu0 = new.tasks.iter().filter(|t| t.cpu == 0).count();
    assert_eq!(on_cpu0, 1, "6.12: spread in 40 ms");
}

#[test]
fn new_idle_balance_pulls_one_task_only_on_a_preemptible_kernel() {
    // Four hogs start on CPU 0 of two; CPU 1's task sleeps after 0.2 ms, before any tick, and
    // its new-idle balance runs. v5.2's load-based balancer finds CPU 0 overloaded (4 tasks,
    // util 512 + 256 + 128 + 64 = 960 > 1024 × 100 / 117) and CPU 1 with capacity: the
    // imbalance is min(4096 − 2048, 2048 − 0) × 1024 / 1024 = 2048, two tasks' load of 1024.
    // Three hogs have not run yet (not cache hot). detach_tasks takes both on a voluntary
    // kernel; with CONFIG_PREEMPTION it stops after the first.
    let w = || {
        let mut tasks: Vec<serde_json::Value> = (0..4)
            .map(|i| hog(&format!("hog{i}"), 0, Some(0)))
            .collect();
        tasks.push(json!({"name": "sleeper", "start_cpu": 1, "program": [
            {"op": "run", "cycles": cycles(0.2, KHZ)}, {"op": "sleep", "ns": 1_000_000_000u64}]}));
        custom(json!(tasks), json!([]))
    };
    let hogs_on_cpu1 = |sim: &schedsim_core::engine::Sim| {
        sim.tasks
            .iter()
            .filter(|t| t.comm.starts_with("hog") && t.cpu == 1)
            .count()
    };
    let voluntary = run(config(smp(2, 1, KHZ, false), w(), "5.2", 1.0));
    assert_eq!(hogs_on_cpu1(&voluntary), 2, "5.2, voluntary preemption");
    let mut cfg = config(smp(2, 1, KHZ, false), w(), "5.2", 1.0);
    cfg.kernel.features.insert("preempt".into(), json!("full"));
    let full = run(cfg);
    assert_eq!(hogs_on_cpu1(&full), 1, "5.2, CONFIG_PREEMPT");
}

#[test]
fn a_waking_task_goes_to_an_idle_core_before_an_idle_smt_sibling() {
    // 2 cores × 2 threads: core 0 = {0, 2}, core 1 = {1, 3}. A hog is pinned on cpu0.
    let probe = json!({"name": "probe", "start_cpu": 0, "program": [{"op": "sleep", "ns": 5_000_000_000u64}]});
    let pinned = json!({"name": "hog", "cpus": [0], "start_cpu": 0, "program": [
        {"op": "loop", "count": -1, "body": [{"op": "run", "cycles": cycles(1.0, KHZ)}]}]});
    let w = custom(json!([pinned, probe]), json!([]));
    let mut sim = run(config(smp(2, 2, KHZ, false), w, "6.12", 20.0));
    let probe = 1;
    // a wakeup with prev = cpu0 (busy), from cpu0, with no recently used CPU to fall back on
    sim.tasks[probe].recent_used_cpu = 0;
    let cpu = sim.select_task_rq_fair(probe, 0, SdFlag::Wake, WakeFlags::default(), 0);
    assert!(
        cpu == 1 || cpu == 3,
        "picked cpu{cpu}, expected a CPU of the idle core 1"
    );
}

#[test]
fn fork_wait_exit_chain_runs_serially() {
    let child = json!({"name": "child", "start": false, "program": [{"op": "run", "cycles": cycles(2.0, KHZ)}, {"op": "exit"}]});
    let parent = json!({"name": "shell", "program": [
        {"op": "loop", "count": 5, "body": [{"op": "fork", "task": "child"}, {"op": "wait"}]}]});
    let w = custom(json!([parent, child]), json!([]));
    let sim = run(config(smp(4, 1, KHZ, false), w, "6.12", 0.0));
    assert_eq!(sim.tasks.len(), 6);
    assert_eq!(sim.stats.forks, 5);
    // five 2 ms children one after another; each hand-over may wake a CPU out of C6 (85 µs)
    let end = sim
        .tasks
        .iter()
        .filter_map(|t| t.stats.exit_ns)
        .max()
        .unwrap();
    assert!(
        (10_000_000..=10_000_000 + 5 * 2 * 85_000 + 5 * 20_000).contains(&end),
        "elapsed {end} ns"
    );
    for w in sim.tasks[1..].windows(2) {
        assert!(
            w[1].stats.start_ns >= w[0].stats.exit_ns.unwrap(),
            "children overlap"
        );
    }
}

#[test]
fn a_dead_tasks_load_stays_on_its_idle_cpu_so_serial_children_spread() {
    // task_dead_fair() only queues the dead task's averages in cfs_rq->removed; its idle CPU
    // applies them at its next PELT update (new-idle balance is skipped with nothing
    // overloaded, the nohz blocked-load update runs every 32 ms), so the next fork sees that
    // CPU's load. v5.2 find_idlest_group() breaks ties of runnable load by the blocked load
    // (any load loses to none), so a shell forking one 2 ms child at a time on four CPUs puts
    // each child on a CPU no recent child used, where detaching at exit gave them all the
    // same one.
    let child = json!({"name": "child", "start": false, "program": [{"op": "run", "cycles": cycles(2.0, KHZ)}, {"op": "exit"}]});
    let parent = json!({"name": "shell", "start_cpu": 0, "program": [
        {"op": "loop", "count": 3, "body": [{"op": "fork", "task": "child"}, {"op": "wait"}]}]});
    let w = custom(json!([parent, child]), json!([]));
    let sim = run(config(smp(4, 1, KHZ, false), w, "5.2", 0.0));
    let cpus: Vec<usize> = sim.tasks[1..].iter().map(|t| t.cpu).collect();
    assert_eq!(cpus, [1, 2, 3], "children's CPUs");
    // the last child's CPU still carries it until that CPU's next update
    let last = &sim.rqs[3].cfs;
    assert_eq!(last.removed.nr, 1);
    assert!(last.avg.load_avg > 0);
}

#[test]
fn a_child_exit_wakes_its_parent_with_wf_sync() {
    // exit_notify() wakes the waiting parent with __wake_up_sync_key() (WF_SYNC) while the
    // dying child is still queued. Two CPUs, each running a pinned hog (runnable load L near
    // 1024); the child runs pinned on CPU 1; the shell slept 200 ms first, so its load is
    // ~16. At the exit, v5.2 wake_affine_weight() compares this = L + 16 (sync subtracts the
    // dying current's load from CPU 1's L + child) times 100 with prev = (L - 16) times 108
    // (WA_BIAS: 100 + (imbalance_pct 117 - 100) / 2): CPU 1 wins for any L above 416. Without
    // WF_SYNC this = 2L + 16 loses to prev and the shell would go back to CPU 0. No CPU is
    // idle, so select_idle_sibling() keeps the target.
    let child = json!({"name": "child", "start": false, "program": [
        {"op": "set_affinity", "cpus": [1]}, {"op": "run", "cycles": cycles(10.0, KHZ)}, {"op": "exit"}]});
    let shell = json!({"name": "shell", "start_cpu": 0, "program": [
        {"op": "sleep", "ns": 200_000_000u64}, {"op": "fork", "task": "child"}, {"op": "wait"}]});
    let w = custom(
        json!([
            shell,
            pinned_hog("hog0", 0, 600.0),
            pinned_hog("hog1", 1, 600.0),
            child
        ]),
        json!([]),
    );
    let sim = run(config(smp(2, 1, KHZ, false), w, "5.2", 0.0));
    assert_eq!(sim.tasks[3].cpu, 1, "the child ran on CPU 1");
    assert!(
        sim.tasks[3].stats.exit_ns.unwrap() < 300_000_000,
        "the hogs were still running"
    );
    assert_eq!(sim.tasks[0].cpu, 1, "the shell woke on its child's CPU");
}

#[test]
fn a_pipe_reader_wakes_its_blocked_writer_with_wf_sync_and_tcp_does_not() {
    // pipe_read() and unix_write_space() wake a writer blocked on a full pipe or socket with
    // wake_up_interruptible_sync_poll() (WF_SYNC); TCP's sk_stream_write_space() uses the
    // plain wake_up_interruptible_poll(). Each CPU runs a pinned hog (runnable load L near
    // 1024); the reader, pinned to CPU 1, ran 150 ms there beside its hog (load ~L) before it
    // reads; the writer slept 200 ms (load ~16) and blocked on its second message. v5.2
    // wake_affine_weight(): with WF_SYNC, this = L + 16 (the reader's own load discounted)
    // times 100 against prev = (L - 16) times 108, so CPU 1 wins; without it this = 2L + 16
    // loses and the writer stays on CPU 0.
    let writer = json!({"name": "writer", "start_cpu": 0, "program": [
        {"op": "sleep", "ns": 200_000_000u64},
        {"op": "send", "chan": "p"}, {"op": "send", "chan": "p"}]});
    let reader = json!({"name": "reader", "start_cpu": 1, "program": [
        {"op": "set_affinity", "cpus": [1]}, {"op": "run", "cycles": cycles(150.0, KHZ)},
        {"op": "recv", "chan": "p"}, {"op": "recv", "chan": "p"}]});
    let writer_cpu = |tcp: bool| {
        let w = custom(
            json!([
                writer.clone(),
                reader.clone(),
                pinned_hog("hog0", 0, 900.0),
                pinned_hog("hog1", 1, 900.0)
            ]),
            json!([{"name": "p", "capacity": 1, "tcp": tcp}]),
        );
        let sim = run(config(smp(2, 1, KHZ, false), w, "5.2", 0.0));
        let w = &sim.tasks[0];
        assert_eq!(w.comm, "writer");
        assert!(
            w.stats.exit_ns.unwrap() < 600_000_000,
            "the hogs were still running"
        );
        w.cpu
    };
    assert_eq!(
        writer_cpu(false),
        1,
        "a pipe's writer is pulled to its reader's CPU"
    );
    assert_eq!(writer_cpu(true), 0, "a TCP sender goes back to its own CPU");
}

#[test]
fn pingpong_over_channels_alternates() {
    let a = json!({"name": "ping", "program": [{"op": "loop", "count": 100, "body": [
        {"op": "run", "cycles": 10000.0}, {"op": "send", "chan": "a2b"}, {"op": "recv", "chan": "b2a"}]}]});
    let b = json!({"name": "pong", "program": [{"op": "loop", "count": 100, "body": [
        {"op": "recv", "chan": "a2b"}, {"op": "run", "cycles": 10000.0}, {"op": "send", "chan": "b2a"}]}]});
    let w = custom(
        json!([a, b]),
        json!([{"name": "a2b", "capacity": 1}, {"name": "b2a", "capacity": 1}]),
    );
    let sim = run(config(smp(2, 1, KHZ, true), w, "6.12", 0.0));
    assert_eq!(sim.live_tasks, 0);
    assert!(sim.tasks[1].stats.nr_wakeups >= 99);
    // 200 bursts of 10 µs serialised, plus kernel work: at least 2 ms
    assert!(sim.now >= 2_000_000, "elapsed {}", sim.now);
}

#[test]
fn same_seed_gives_identical_results_and_traces() {
    let w = json!({"name": "periodic", "params": {"tasks": 6, "period_ms": 10, "duty_pct": 35}});
    let mk = || {
        let mut c = config(smp(2, 2, KHZ, true), w.clone(), "6.12", 300.0);
        c.trace = true;
        c.sample_interval_ns = 50_000_000;
        c
    };
    let a = run(mk());
    let b = run(mk());
    assert_eq!(stable_json(&a), stable_json(&b));
    assert!(stable_json(&a).contains("sched_switch"));
}

#[test]
fn bad_inputs_give_clear_errors() {
    let err = |cfg| schedsim_core::Sim::new(cfg).err().expect("error");
    let m = smp(1, 1, KHZ, false);
    let e = err(config(m.clone(), json!({"name": "nope"}), "6.12", 10.0));
    assert!(
        e.contains("unknown workload 'nope'") && e.contains("periodic"),
        "{e}"
    );
    let e = err(config(
        m.clone(),
        json!({"name": "periodic", "params": {"taskz": 1}}),
        "6.12",
        10.0,
    ));
    assert!(e.contains("taskz") && e.contains("period_ms"), "{e}");
    let e = err(config(
        m.clone(),
        json!({"name": "periodic", "params": {"duty_pct": 300}}),
        "6.12",
        10.0,
    ));
    assert!(e.contains("duty_pct") && e.contains("0..=100"), "{e}");
    let e = err(config(m.clone(), json!({"name": "periodic"}), "6.12", 0.0));
    assert!(e.contains("duration"), "{e}");
    let mut c = config(m.clone(), json!({"name": "periodic"}), "6.12", 10.0);
    c.cpufreq.governor = "turbo".into();
    assert!(err(c).contains("allowed governors"));
    let mut c = config(m, json!({"name": "periodic"}), "6.12", 10.0);
    c.tunables.insert("sched_foo".into(), json!(1));
    assert!(err(c).contains("sched_migration_cost_ns"));
}

#[test]
fn cfs_keeps_the_sleeper_credit_across_a_wakeup_migration() {
    // A sleeper whose vruntime lies 20 ms behind cpu0's min_vruntime wakes onto cpu1 (its only
    // allowed CPU, where a hog runs). migrate_task_rq_fair keeps its vruntime relative (−20 ms,
    // a negative, wrapping u64 in the kernel); place_entity then caps the credit at
    // sched_latency/2 = 6 ms (12 ms latency on 2 CPUs): v = min_vruntime(cpu1) − 6 ms, which is
    // more than the 2 ms wakeup granularity behind the hog, so it preempts.
    let sleeper = json!({"name": "sleeper", "cpus": [1], "start_cpu": 0, "program": [
        {"op": "sleep", "ns": 1_000_000_000u64}, {"op": "exit"}]});
    let hog = json!({"name": "hog", "cpus": [1], "start_cpu": 1, "program": [
        {"op": "loop", "count": -1, "body": [{"op": "run", "cycles": cycles(1.0, KHZ)}]}]});
    let w = custom(json!([hog, sleeper]), json!([]));
    let mut sim = run(config(smp(2, 1, KHZ, false), w, "5.2", 10.0));
    let (hog, sleeper) = (0, 1);
    assert_eq!(sim.tasks[sleeper].cpu, 0);
    let min0 = sim.rqs[0].cfs.min_vruntime;
    sim.tasks[sleeper].se.vruntime = min0 - 20_000_000;
    sim.update_rq_clock(1);
    sim.update_curr(1);
    let min1 = sim.rqs[1].cfs.min_vruntime;
    assert_eq!(sim.tasks[hog].se.vruntime, min1);
    sim.try_to_wake_up(sleeper, 0, WakeFlags::default());
    assert_eq!(sim.tasks[sleeper].cpu, 1);
    assert_eq!(sim.tasks[sleeper].se.vruntime, min1 - 6_000_000);
    assert!(
        sim.rqs[1].need_resched,
        "the migrated sleeper preempts the hog"
    );
}

#[test]
fn run_for_is_wall_time_like_rt_app_runtime() {
    // A 10 ms `run_for` shares one CPU with a hog: it ends 10 ms after it started, having run
    // for only part of that time; a 10 ms `run` of work would need the full 10 ms of CPU.
    let wall =
        json!({"name": "wall", "program": [{"op": "run_for", "ns": 10_000_000}, {"op": "exit"}]});
    let w = custom(json!([hog("hog", 0, None), wall]), json!([]));
    let sim = run(config(smp(1, 1, KHZ, false), w, "6.12", 50.0));
    let t = &sim.tasks[1].stats;
    let exit = t.exit_ns.expect("exited");
    assert!(exit >= t.start_ns + 10_000_000, "ended early at {exit}");
    assert!(
        exit <= t.start_ns + 10_000_000 + 4_000_000,
        "ended late at {exit}"
    );
    assert!(
        t.cpu_ns < 8_000_000,
        "ran {} ns: it should have shared the CPU",
        t.cpu_ns
    );
}

#[test]
fn a_task_started_at_time_zero_is_tracked_by_pelt_from_its_first_enqueue() {
    // An always-running task from t = 0: its util follows 1024·(1 − y^n) (n in 1024-µs periods)
    // from its initial value; after 200 ms it is above 0.98 × 1024·(1 − y^195).
    for kernel in ["5.2", "6.12"] {
        let hog = json!({"name": "hog", "program": [{"op": "loop", "count": -1, "body": [{"op": "run", "cycles": cycles(1.0, KHZ)}]}]});
        let sim = run(config(
            smp(1, 1, KHZ, false),
            custom(json!([hog]), json!([])),
            kernel,
            200.0,
        ));
        let y: f64 = 0.5f64.powf(1.0 / 32.0);
        let expect = 1024.0 * (1.0 - y.powf(195.0));
        let u = sim.tasks[0].se.avg.util_avg as f64;
        assert!(u > 0.98 * expect, "{kernel}: util {u} vs {expect:.0}");
    }
}

#[test]
fn a_timer_wakeup_on_an_idle_cpu_delays_the_task_by_the_interrupts_kernel_work() {
    // One task: 1 M cycles every 10 ms on one 1 GHz CPU with the test costs (switch 6,000,
    // wakeup 4,000 cycles). The timer's wakeup runs in interrupt context on the idle CPU, so
    // each activation runs 1,000,000 + 4,000 (wakeup) + 6,000 (switch in) cycles = 1,010 us;
    // the first, started by the fork, has no timer wakeup.
    let w = custom(
        json!([{"name": "t", "start_cpu": 0, "program": [{"op": "loop", "count": -1, "body": [
            {"op": "run", "cycles": 1.0e6}, {"op": "timer", "period_ns": 10_000_000}]}]}]),
        json!([]),
    );
    let cpu_ns = |costs: bool| {
        let sim = run(config(smp(1, 1, KHZ, costs), w.clone(), "6.12", 1005.0));
        let t = &sim.tasks[0];
        assert_eq!(t.stats.nr_wakeups, 100, "one wakeup per period");
        t.stats.cpu_ns as f64
    };
    let bare = cpu_ns(false);
    let charged = cpu_ns(true);
    assert!((bare - 101.0e6).abs() < 10.0, "{bare}");
    let want = 100.0 * (4_000.0 + 6_000.0) + 6_000.0;
    assert!((charged - bare - want).abs() < 10.0, "{charged} vs {bare}");
}

/// Two nodes of two CPUs: a busy parent on CPU 0 forks a child.
fn fork_from_a_busy_node(kernel: &str) -> usize {
    let mut m = smp(4, 1, 2_000_000, false);
    for c in 2..4 {
        m["cpus"][c]["node"] = json!(1);
        m["cpus"][c]["package"] = json!(1);
        m["cpus"][c]["llc"] = json!(1);
    }
    let w = custom(
        json!([
            {"name": "parent", "start_cpu": 0, "program": [
                {"op": "run", "cycles": cycles(100.0, 2_000_000)},
                {"op": "fork", "task": "child"},
                {"op": "wait"}]},
            {"name": "child", "start": false, "program": [
                {"op": "run", "cycles": cycles(10.0, 2_000_000)}]}
        ]),
        json!([]),
    );
    let sim = run(config(m, w, kernel, 0.0));
    sim.tasks
        .iter()
        .find(|t| sim.compiled.programs[t.program].name == "child")
        .expect("child")
        .cpu
}

#[test]
fn fork_balancing_before_5_5_leaves_a_loaded_node() {
    // v5.2 find_idlest_group(): node 0's runnable load after 100 ms of the parent is ~0.9 x 1024,
    // ~460 per 1024 of the node's capacity; node 1 has none. Across NUMA the local node is kept
    // only if remote + imbalance (1024 x 25 % = 256) >= local: 256 < 460, so the child goes to
    // node 1. From v5.5 a local node with an idle CPU and fewer than two running tasks keeps it.
    let old = fork_from_a_busy_node("5.2");
    assert!(old >= 2, "5.2: child on CPU {old}, expected node 1");
    let new = fork_from_a_busy_node("6.12");
    assert_eq!(
        new, 1,
        "6.12: child on CPU {new}, expected node 0's idle CPU"
    );
}

/// Two nodes of eight CPUs; `n` CPU-bound tasks start on node 0's first CPUs and run 200 ms.
/// Returns the nodes the tasks ended on, sorted.
fn hogs_on_one_node(kernel: &str, n: usize) -> Vec<usize> {
    let mut m = smp(16, 1, 2_000_000, false);
    for c in 8..16 {
        m["cpus"][c]["node"] = json!(1);
        m["cpus"][c]["package"] = json!(1);
        m["cpus"][c]["llc"] = json!(1);
    }
    let hog = |cpu: usize| {
        json!({"name": format!("hog{cpu}"), "start_cpu": cpu, "program": [
            {"op": "run", "cycles": cycles(200.0, 2_000_000)}]})
    };
    let w = custom(json!((0..n).map(hog).collect::<Vec<_>>()), json!([]));
    let sim = run(config(m, w, kernel, 150.0));
    let mut nodes: Vec<usize> = sim.tasks.iter().map(|t| t.cpu / 8).collect();
    nodes.sort_unstable();
    nodes
}

#[test]
fn numa_balancing_leaves_the_small_imbalance_of_each_version() {
    // Node 1 idle (8 idle CPUs), node 0 running n tasks (8 - n idle): an idle node-1 CPU's
    // balance sees more than one idle CPU of difference and an imbalance of n / 2 tasks.
    // v5.5 moves one of two; v5.6-v5.10 keep a node's two tasks and move one of three; from
    // v5.11 a destination node that stays under a quarter busy (1 + 1 < 8 / 4 fails,
    // 0 + 1 < 2 holds) keeps an imbalance of up to two tasks.
    // v5.2: the child domain prefers siblings, so node 0 with two tasks more than node 1
    // counts as overloaded; the imbalance is min(256 − 128, 128 − 0) × 8192 / 1024 = 1024,
    // one task. With three, 2 against 1 is no longer two more: idle CPUs 7 ≤ 6 + 1, balanced.
    assert_eq!(hogs_on_one_node("5.5", 2), vec![0, 1], "5.5 splits a pair");
    assert_eq!(hogs_on_one_node("5.2", 2), vec![0, 1], "5.2 splits a pair");
    assert_eq!(hogs_on_one_node("5.6", 2), vec![0, 0], "5.6 keeps a pair");
    assert_eq!(
        hogs_on_one_node("5.2", 3),
        vec![0, 0, 1],
        "5.2 moves one of three"
    );
    assert_eq!(hogs_on_one_node("6.12", 2), vec![0, 0], "6.12 keeps a pair");
    assert_eq!(
        hogs_on_one_node("6.12", 3),
        vec![0, 0, 0],
        "6.12 keeps three"
    );
}

/// Where a sync wakeup from CPU 0 places a task whose previous CPU is 3, on 8 CPUs of one LLC
/// where CPUs 0-5 run something and 6-7 are idle, with the waking CPU's `avg_idle` and
/// `avg_scan_cost` (ns) set.
fn sync_wakeup_with_cpus_6_and_7_idle(kernel: &str, avg_idle: u64, avg_scan_cost: u64) -> usize {
    let tasks: Vec<_> = (0..7)
        .map(|i| json!({"name": format!("t{i}"), "start_cpu": i.min(6), "program": [{"op": "exit"}]}))
        .collect();
    let mut sim = schedsim_core::Sim::new(config(
        smp(8, 1, 1_000_000, false),
        custom(json!(tasks), json!([])),
        kernel,
        10.0,
    ))
    .expect("sim builds");
    assert!(sim.tasks.len() >= 7, "tasks exist before the run");
    for cpu in 0..6 {
        sim.rqs[cpu].curr = Some(cpu);
    }
    sim.rqs[0].avg_idle = avg_idle;
    sim.rqs[0].avg_scan_cost = avg_scan_cost;
    let p = 6;
    sim.tasks[p].cpu = 3;
    sim.tasks[p].recent_used_cpu = 3;
    sim.select_task_rq_fair(
        p,
        3,
        schedsim_core::sched::core::SdFlag::Wake,
        schedsim_core::sched::core::WakeFlags { sync: true },
        0,
    )
}

#[test]
fn sis_prop_limits_the_idle_cpu_scan_before_5_12() {
    // SIS_PROP: nr = 8 CPUs x avg_idle / 512 over avg_scan_cost + 1, at least 4; the scan
    // starts at the (busy) target and gives up when nr reaches 0 before reading a CPU.
    // avg_idle 40 us: 8 x 78 = 624 <= 4 x 301, so nr = 4: CPUs 0-2 read, 3 never -> the
    // target, the waker's CPU (wake_affine's choice), where the wakee queues.
    assert_eq!(sync_wakeup_with_cpus_6_and_7_idle("5.2", 40_000, 300), 0);
    // avg_idle 1 ms: 8 x 1953 / 301 = 51 CPUs: the scan reaches CPU 6.
    assert_eq!(sync_wakeup_with_cpus_6_and_7_idle("5.2", 1_000_000, 300), 6);
    // v5.15 scans the whole LLC whatever the waker's idle time (SIS_PROP's budget is not
    // modelled between v5.12 and v6.0).
    assert_eq!(sync_wakeup_with_cpus_6_and_7_idle("5.15", 40_000, 300), 6);
}

/// Two tasks pinned to CPUs 0 and 1 ping-pong `rounds` times: `a` runs `a_cycles` and sends,
/// `b` receives, runs `b_cycles` and replies. Kernel costs: a 6000-cycle sleep-and-wake
/// switch of which the sleeping task runs `out` itself, a 4000-cycle wakeup; POLL only, so an
/// idle CPU leaves idle at once.
fn ping_pong(out: f64, rounds: i64, a_cycles: f64, b_cycles: f64) -> schedsim_core::Sim {
    let mut m = smp(2, 1, KHZ, true);
    m["core_types"][0]["kernel_cycles"]["context_switch_out"] = json!(out);
    m["idle_states"]["default"] = json!([
        {"name": "POLL", "exit_latency_us": 0, "target_residency_us": 0, "turbo_active": true}
    ]);
    let a = json!({"name": "a", "start_cpu": 0, "program": [
        {"op": "set_affinity", "cpus": [0]},
        {"op": "loop", "count": rounds, "body": [
            {"op": "run", "cycles": a_cycles}, {"op": "send", "chan": "ab"},
            {"op": "recv", "chan": "ba"}]}]});
    let b = json!({"name": "b", "start_cpu": 1, "program": [
        {"op": "set_affinity", "cpus": [1]},
        {"op": "loop", "count": rounds, "body": [
            {"op": "recv", "chan": "ab"}, {"op": "run", "cycles": b_cycles},
            {"op": "send", "chan": "ba"}]}]});
    let chans = json!([{"name": "ab", "capacity": 1}, {"name": "ba", "capacity": 1}]);
    run(config(m, custom(json!([a, b]), chans), "5.2", 0.0))
}

#[test]
fn a_sleeping_task_runs_its_part_of_the_switch_and_the_ipi_follows_the_wakeup_work() {
    // Per round trip at 1 GHz (ns = cycles): a runs 10,000, sends and pays the 4,000-cycle
    // wakeup before the IPI leaves, so b's CPU starts 4,000 ns after the send; b pays the
    // 3,000 cycles of the switch that a sleeping task leaves to the next one, runs 5,000,
    // replies (4,000 more before its IPI), and a pays 3,000 to come back: 29,000 ns. Each
    // task also runs its 3,000-cycle part of the switch after its wakeup, while the other
    // is already on its way: a's CPU is busy 3,000 + 10,000 + 4,000 + 3,000 = 20,000 ns of
    // the round trip, b's 3,000 + 5,000 + 4,000 + 3,000 = 15,000.
    let rounds = 200;
    let sim = ping_pong(3000.0, rounds, 10_000.0, 5_000.0);
    let per_round = |x: u64| x as f64 / rounds as f64;
    let rt = per_round(sim.now);
    assert!(
        (rt - 29_000.0).abs() < 200.0,
        "round trip {rt} ns, expected 29,000"
    );
    let (a, b) = (&sim.tasks[0].stats, &sim.tasks[1].stats);
    assert!(
        (per_round(a.cpu_ns) - 20_000.0).abs() < 200.0,
        "a's CPU time per round {}",
        per_round(a.cpu_ns)
    );
    assert!(
        (per_round(b.cpu_ns) - 15_000.0).abs() < 200.0,
        "b's CPU time per round {}",
        per_round(b.cpu_ns)
    );
    assert!(
        a.nr_wakeups >= rounds as u64 - 1,
        "a slept every round: {}",
        a.nr_wakeups
    );
    // b waits 4,000 ns from its wakeup to running: the waker's try_to_wake_up work
    let lat = mean_wakeup_latency_ns(b);
    assert!((lat - 4_000.0).abs() < 50.0, "b's wakeup latency {lat} ns");
    // without the sleeping task's own part, the incoming task pays the whole 6,000 cycles:
    // 10,000 + 4,000 (IPI) + 6,000 + 5,000 + 4,000 (IPI) + 6,000 = 35,000 ns
    let sim = ping_pong(0.0, rounds, 10_000.0, 5_000.0);
    let rt = per_round(sim.now);
    assert!(
        (rt - 35_000.0).abs() < 200.0,
        "round trip {rt} ns, expected 35,000"
    );
}

#[test]
fn a_reply_that_arrives_on_the_way_to_sleep_is_taken_without_sleeping() {
    // The sleeping task runs the whole 6,000-cycle switch itself: after its send a pays the
    // 4,000-cycle wakeup, finds nothing to read and starts its way to sleep, busy until
    // 10,000 ns after the send. b's CPU starts when the IPI leaves, 4,000 ns after the send;
    // b runs 1,000 cycles and replies at 5,000, during a's way to sleep: a takes the reply
    // when it gets there instead of sleeping, so it never leaves its CPU and b never has to
    // wake it.
    let rounds = 50;
    let sim = ping_pong(6000.0, rounds, 10_000.0, 1_000.0);
    let a = &sim.tasks[0].stats;
    assert_eq!(a.nr_wakeups, 0, "a was never asleep");
    assert!(a.nr_switches <= 1, "a switched out {} times", a.nr_switches);
    // a's round trip is its own work: 10,000 + 4,000 + 6,000 ns
    let rt = sim.now as f64 / rounds as f64;
    assert!((rt - 20_000.0).abs() < 500.0, "round trip {rt} ns");
}

#[test]
fn a_sleepers_part_larger_than_the_switch_is_an_error() {
    let mut m = smp(2, 1, KHZ, true);
    m["core_types"][0]["kernel_cycles"]["context_switch_out"] = json!(7000.0);
    let w = custom(json!([hog("h", 0, None)]), json!([]));
    let err = match schedsim_core::Sim::new(config(m, w, "5.2", 10.0)) {
        Ok(_) => panic!("context_switch_out above context_switch was accepted"),
        Err(e) => e,
    };
    assert!(
        err.contains("context_switch_out = 7000") && err.contains("allowed 0..=6000"),
        "{err}"
    );
}

/// The initial util_avg a new task gets on CPU 1 when that CPU's cfs_rq carries `util` and
/// `load` (blocked averages of earlier tasks).
fn initial_util(kernel: &str, util: u64, load: u64) -> u64 {
    let shell =
        json!({"name": "shell", "start_cpu": 0, "program": [{"op": "sleep", "ns": 1_000_000u64}]});
    let child = json!({"name": "child", "start": false, "program": [{"op": "exit"}]});
    let mut sim = run(config(
        smp(2, 1, KHZ, false),
        custom(json!([shell, child]), json!([])),
        kernel,
        0.5,
    ));
    let prog = sim
        .compiled
        .programs
        .iter()
        .position(|p| p.name == "child")
        .unwrap();
    sim.rqs[1].cfs.avg.util_avg = util;
    sim.rqs[1].cfs.avg.load_avg = load;
    let t = sim.create_task(prog, None, 0);
    sim.wake_up_new_task_on(t, 1, 0);
    sim.tasks[t].se.avg.util_avg
}

#[test]
fn a_new_tasks_util_follows_the_kernels_weight_scale() {
    // post_init_entity_util_avg() extrapolates util × weight / (load + 1), capped at half the
    // spare capacity. Until v6.10 the weight is se->load.weight, scale_load(1024) = 2^20 on
    // 64 bits, against the unscaled load_avg, so the cap always wins: (1024 - 100) / 2 = 462.
    // v6.10 (72bffbf57c52) uses se_weight() = 1024: 100 × 1024 / 1001 = 102.
    assert_eq!(initial_util("6.9", 100, 1000), 462);
    assert_eq!(initial_util("5.2", 100, 1000), 462);
    assert_eq!(initial_util("6.10", 100, 1000), 102);
    // Where the extrapolation exceeds the cap, both agree: 400 × 1024 / 401 > (1024 - 400) / 2.
    assert_eq!(initial_util("6.10", 400, 400), 312);
    assert_eq!(initial_util("6.9", 400, 400), 312);
}
