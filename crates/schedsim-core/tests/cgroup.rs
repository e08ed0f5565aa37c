//! cgroup v2 cpu controller: cpu.weight shares, cpu.max quota/period throttling, slack, burst,
//! cpu.stat, and the period timer's phase (spec/kernel.md §7, §8.6). Expected values are
//! traced by hand from the kernel's rules (comments give the trace).

mod common;

use common::*;
use schedsim_core::{Sim, SimConfig};
use serde_json::{json, Value};

const KHZ: u64 = 2_000_000;
const MS: u64 = 1_000_000;

/// A busy loop of 1 ms work items, each marked.
fn spinner(name: &str, cpus: &[usize], group: &str) -> Value {
    json!({"name": name, "cpus": cpus, "start_cpu": cpus[0], "cgroup": group, "program": [
        {"op": "loop", "count": -1, "body": [
            {"op": "run", "cycles": cycles(1.0, KHZ)}, {"op": "mark", "name": "op"}]}]})
}

fn cfg_with(
    machine: Value,
    tasks: Value,
    groups: Value,
    kernel: &str,
    hz: u32,
    ms: f64,
) -> SimConfig {
    let mut v = json!({
        "machine": machine,
        "kernel": {"version": kernel, "hz": hz},
        "workload": custom(tasks, json!([])),
        "seed": 7,
        "duration_ns": (ms * 1e6) as u64,
        "cgroups": groups,
    });
    if ms <= 0.0 {
        v.as_object_mut().unwrap().remove("duration_ns");
    }
    serde_json::from_value(v).expect("valid config")
}

fn group(sim: &Sim, path: &str) -> usize {
    sim.group_by_path(path).expect("group exists")
}

fn cpu_ms(sim: &Sim, comm_prefix: &str) -> f64 {
    sim.tasks
        .iter()
        .filter(|t| t.comm.starts_with(comm_prefix))
        .map(|t| t.stats.cpu_ns as f64 / 1e6)
        .sum()
}

#[test]
fn cpu_weight_shares_one_cpu_in_proportion() {
    // two groups on one CPU, cpu.weight 100 and 300: 1024 vs 3072 shares → 1:3
    let tasks = json!([spinner("a", &[0], "A"), spinner("b", &[0], "B")]);
    let groups = json!([{"path": "A", "weight": 100}, {"path": "B", "weight": 300}]);
    for kernel in ["5.10", "6.6"] {
        let sim = run(cfg_with(
            smp(1, 1, KHZ, false),
            tasks.clone(),
            groups.clone(),
            kernel,
            1000,
            2000.0,
        ));
        let (a, b) = (cpu_ms(&sim, "a"), cpu_ms(&sim, "b"));
        let share = b / (a + b);
        assert!(
            (share - 0.75).abs() < 0.02,
            "{kernel}: B got {share:.3} of the CPU, expected 0.75 (a {a} ms, b {b} ms)"
        );
    }
}

#[test]
fn a_group_is_one_entity_however_many_tasks_it_has() {
    // group A has 4 tasks, group B 1, all on one CPU: per-task fairness would give B 1/5;
    // group scheduling gives each group half
    let mut tasks: Vec<Value> = (0..4)
        .map(|i| spinner(&format!("a{i}"), &[0], "A"))
        .collect();
    tasks.push(spinner("b", &[0], "B"));
    let groups = json!([{"path": "A"}, {"path": "B"}]);
    let sim = run(cfg_with(
        smp(1, 1, KHZ, false),
        json!(tasks),
        groups,
        "6.6",
        1000,
        2000.0,
    ));
    let (a, b) = (cpu_ms(&sim, "a"), cpu_ms(&sim, "b"));
    let share = b / (a + b);
    assert!(
        (share - 0.5).abs() < 0.03,
        "B got {share:.3} of the CPU, expected 0.5"
    );
}

#[test]
fn cpu_stat_matches_a_hand_traced_single_task_case() {
    // one busy task, quota 10 ms per 100 ms, HZ=1000, aligned timers (6.1), 350 ms:
    // t=0 tg_set_cfs_bandwidth fills the pool (10 ms) and arms the timer at the next multiple
    // of 100 ms; the task takes 5 ms slices, runs 10 ms, is throttled, and is unthrottled at
    // 100, 200 and 300 ms, each time running 10 ms more.
    // nr_periods = 3, nr_throttled = 3, usage = 40 ms, throttled = 3 × 90 + 40 = 310 ms.
    let tasks = json!([spinner("t", &[0], "G")]);
    let groups = json!([{"path": "G", "quota_us": 10000, "period_us": 100000}]);
    let sim = run(cfg_with(
        smp(1, 1, KHZ, false),
        tasks,
        groups,
        "6.1",
        1000,
        350.0,
    ));
    let g = &sim.tgs[group(&sim, "G")];
    let b = &g.cfs_b;
    assert_eq!(b.nr_periods, 3);
    assert_eq!(b.nr_throttled, 3);
    assert_eq!(b.refills, vec![100 * MS, 200 * MS, 300 * MS]);
    let usage = g.usage_ns as f64 / 1e6;
    assert!((usage - 40.0).abs() <= 1.0, "usage {usage} ms");
    // progress stops while throttled: 1 ms work items, 40 ms of CPU
    let ops = sim.marks.len() as f64;
    assert!((ops - 40.0).abs() <= 1.0, "{ops} work items done");
    let stat: Value =
        serde_json::from_str(&schedsim_core::metrics::result_json(&sim, 0.0)).unwrap();
    let thr = stat["cgroups"]["G"]["throttled_usec"].as_f64().unwrap() / 1e3;
    assert!((thr - 310.0).abs() <= 1.0, "throttled {thr} ms");
    assert_eq!(stat["cgroups"]["G"]["nr_periods"], 3);
    assert_eq!(stat["cgroups"]["G"]["period_phase_us"], 0);
}

#[test]
fn quota_caps_a_group_spanning_many_cpus() {
    // 6 busy tasks on 6 CPUs, quota 30 ms per 50 ms period (0.6 CPU): any window of k periods
    // gets at most k × quota plus one tick of overshoot per CPU, and in the long run the group
    // uses its quota
    let tasks: Vec<Value> = (0..6)
        .map(|i| spinner(&format!("t{i}"), &[i], "G"))
        .collect();
    let groups = json!([{"path": "G", "quota_us": 30000, "period_us": 50000}]);
    let sim = run(cfg_with(
        smp(6, 1, KHZ, false),
        json!(tasks),
        groups,
        "6.6",
        250,
        1000.0,
    ));
    let g = &sim.tgs[group(&sim, "G")];
    let used = g.usage_ns as f64 / 1e6;
    let periods = 1000.0 / 50.0;
    let tick_ms = 4.0;
    assert!(
        used <= periods * 30.0 + 30.0 + 6.0 * tick_ms,
        "used {used} ms in {periods} periods"
    );
    assert!(used >= (periods - 1.0) * 30.0, "used only {used} ms");
    let ops = sim.marks.len() as f64;
    assert!(
        (ops - used).abs() <= 6.0,
        "{ops} ms of work for {used} ms of quota"
    );
    assert!(
        g.cfs_b.nr_throttled >= 18,
        "nr_throttled {}",
        g.cfs_b.nr_throttled
    );
}

#[test]
fn slack_returns_all_but_min_cfs_rq_runtime() {
    // quota 10 ms: the task's first enqueue takes a 5 ms slice (pool 5 ms); it runs 2 ms and
    // sleeps, so its cfs_rq empties with 3 ms left and returns 3 − 1 = 2 ms: pool 7 ms, 1 ms
    // kept locally
    let tasks = json!([{"name": "t", "cpus": [0], "start_cpu": 0, "cgroup": "G", "program": [
        {"op": "run", "cycles": cycles(2.0, KHZ)}, {"op": "sleep", "ns": 10_000_000_000u64}]}]);
    let groups = json!([{"path": "G", "quota_us": 10000}]);
    let sim = run(cfg_with(
        smp(1, 1, KHZ, false),
        tasks,
        groups,
        "6.6",
        250,
        3.0,
    ));
    let g = &sim.tgs[group(&sim, "G")];
    assert_eq!(g.cfs_b.runtime, 7 * MS);
    assert_eq!(g.rqs[0].runtime_remaining, MS as i64);
}

#[test]
fn burst_lets_a_group_spend_saved_quota() {
    // quota 10 ms, period 100 ms, aligned (6.1), HZ=1000. The task runs 2 ms (pool 5 + 2 = 7
    // ms after the slack return, 1 ms kept) and sleeps until 252 ms. Refills: 100 ms → 17 ms,
    // 200 ms → min(27, quota + burst). From 252 ms it runs its 1 ms plus the pool before
    // being throttled: 21 ms with burst 10 ms, 11 ms without. At 300 ms the refill counts the
    // burst: snap 20 − (0 + 10) = 10 ms.
    let tasks = json!([{"name": "t", "cpus": [0], "start_cpu": 0, "cgroup": "G", "program": [
        {"op": "run", "cycles": cycles(2.0, KHZ)}, {"op": "sleep", "ns": 250_000_000u64},
        {"op": "loop", "count": -1, "body": [{"op": "run", "cycles": cycles(1.0, KHZ)}]}]}]);
    for (burst_us, expect_ms) in [(10000, 21.0), (0, 11.0)] {
        let groups =
            json!([{"path": "G", "quota_us": 10000, "period_us": 100000, "burst_us": burst_us}]);
        let sim = run(cfg_with(
            smp(1, 1, KHZ, false),
            tasks.clone(),
            groups.clone(),
            "6.1",
            1000,
            299.0,
        ));
        let after = cpu_ms(&sim, "t") - 2.0;
        assert!(
            (after - expect_ms).abs() <= 1.0,
            "burst {burst_us} µs: ran {after} ms after waking, expected {expect_ms}"
        );
        let sim = run(cfg_with(
            smp(1, 1, KHZ, false),
            tasks.clone(),
            groups,
            "6.1",
            1000,
            301.0,
        ));
        let b = &sim.tgs[group(&sim, "G")].cfs_b;
        if burst_us > 0 {
            assert_eq!(b.nr_burst, 1);
            assert!((b.burst_time as f64 / 1e6 - 10.0).abs() <= 1.0);
        } else {
            assert_eq!(b.nr_burst, 0);
        }
    }
}

fn three_groups(kernel: &str, seed: u64) -> Sim {
    let tasks: Vec<Value> = (0..3)
        .map(|i| spinner(&format!("t{i}"), &[i], &format!("g{i}")))
        .collect();
    let groups: Vec<Value> = (0..3)
        .map(|i| json!({"path": format!("g{i}"), "quota_us": 20000}))
        .collect();
    let mut cfg = cfg_with(
        smp(3, 1, KHZ, false),
        json!(tasks),
        json!(groups),
        kernel,
        250,
        450.0,
    );
    cfg.seed = seed;
    run(cfg)
}

#[test]
fn period_timers_align_before_6_4_and_interleave_after() {
    let sim = three_groups("6.1", 7);
    for g in 1..=3 {
        assert_eq!(
            sim.tgs[g].cfs_b.refills,
            vec![100 * MS, 200 * MS, 300 * MS, 400 * MS]
        );
    }
    let sim = three_groups("6.6", 7);
    let phases: Vec<u64> = (1..=3)
        .map(|g| sim.tgs[g].cfs_b.refills[0] % (100 * MS))
        .collect();
    for (g, &p) in phases.iter().enumerate() {
        let r = &sim.tgs[g + 1].cfs_b.refills;
        assert!(r.windows(2).all(|w| w[1] - w[0] == 100 * MS), "{r:?}");
        assert!(p < 100 * MS);
    }
    assert!(
        phases[0] != phases[1] && phases[1] != phases[2] && phases[0] != phases[2],
        "phases {phases:?}"
    );
    // the offset comes from its own named stream: the same seed draws the same phases
    let again = three_groups("6.6", 7);
    let again: Vec<u64> = (1..=3)
        .map(|g| again.tgs[g].cfs_b.refills[0] % (100 * MS))
        .collect();
    assert_eq!(phases, again);
    let other = three_groups("6.6", 8);
    assert_ne!(other.tgs[1].cfs_b.refills[0], sim.tgs[1].cfs_b.refills[0]);
}

#[test]
fn the_feature_overrides_the_kernel_version() {
    let tasks = json!([spinner("t", &[0], "G")]);
    let groups = json!([{"path": "G", "quota_us": 20000}]);
    let mut cfg = cfg_with(smp(1, 1, KHZ, false), tasks, groups, "6.6", 250, 250.0);
    cfg.kernel
        .features
        .insert("cfs_bw_timer_phase".into(), json!("aligned"));
    let sim = run(cfg);
    assert_eq!(sim.tgs[1].cfs_b.refills, vec![100 * MS, 200 * MS]);
}

#[test]
fn smt_siblings_burn_quota_faster_per_unit_of_work() {
    // 2 cores × 2 threads (cpu i and i+2 are siblings; a busy pair runs at 0.62 each). The
    // same quota buys less work when the group's two tasks share a core.
    let ops = |cpus: [usize; 2]| {
        let tasks = json!([spinner("a", &[cpus[0]], "G"), spinner("b", &[cpus[1]], "G")]);
        let groups = json!([{"path": "G", "quota_us": 100000, "period_us": 100000}]);
        let sim = run(cfg_with(
            smp(2, 2, KHZ, false),
            tasks,
            groups,
            "6.6",
            250,
            1000.0,
        ));
        let used = sim.tgs[1].usage_ns as f64;
        sim.marks.len() as f64 / used
    };
    let apart = ops([0, 1]);
    let siblings = ops([0, 2]);
    let r = siblings / apart;
    assert!((r - 0.62).abs() < 0.03, "work per quota ratio {r:.3}");
}

#[test]
fn cgroup_runs_are_deterministic() {
    let a = three_groups("6.6", 11);
    let b = three_groups("6.6", 11);
    assert_eq!(stable_json(&a), stable_json(&b));
}

#[test]
fn bad_cgroup_settings_are_errors_naming_the_key() {
    let tasks = json!([spinner("t", &[0], "G")]);
    for (groups, needle) in [
        (json!([{"path": "G", "quota_us": 500}]), "quota_us = 500"),
        (json!([{"path": "G", "period_us": 2_000_000}]), "period_us"),
        (json!([{"path": "G", "weight": 0}]), "weight = 0"),
        (
            json!([{"path": "G", "quota_us": 5000, "burst_us": 6000}]),
            "burst_us",
        ),
        (json!([{"path": "G"}, {"path": "G"}]), "defined twice"),
        (json!([{"path": "a/b"}]), "parent 'a'"),
        (json!([{"path": "/G"}]), "relative path"),
    ] {
        let cfg = cfg_with(
            smp(1, 1, KHZ, false),
            tasks.clone(),
            groups,
            "6.6",
            250,
            10.0,
        );
        let err = Sim::new(cfg).err().expect("rejected");
        assert!(err.contains(needle), "{err}");
    }
    let cfg = cfg_with(smp(1, 1, KHZ, false), tasks, json!([]), "6.6", 250, 10.0);
    let err = Sim::new(cfg).err().expect("undefined group rejected");
    assert!(err.contains("cgroup 'G'"), "{err}");
}

/// 0.8–3.9 GHz in 100 MHz steps, one package-wide policy (as tests/cpufreq.rs).
fn dvfs_machine() -> Value {
    let mut m = smp(2, 1, 3_900_000, false);
    let opps: Vec<Value> = (8..=39)
        .map(|r| json!({"khz": r * 100_000u64, "uv": 700_000 + (r - 8) * 16_000}))
        .collect();
    m["freq_domains"] = json!([{"granularity": "package", "base_khz": 3_900_000, "opps": opps}]);
    m["tsc_khz"] = json!(3_900_000);
    m
}

/// The busy frequency over the second half of a 1 s run: steady state (the intel_pstate
/// drivers start every CPU at the lowest P-state, so the first activations climb).
fn schedutil_mhz(task: Value, groups: Value, kernel: &str) -> f64 {
    let mut cfg = cfg_with(dvfs_machine(), json!([task]), groups, kernel, 250, 1000.0);
    cfg.cpufreq.driver = Some("intel_cpufreq".into());
    cfg.cpufreq.governor = "schedutil".into();
    cfg.cpufreq.invariance = "max".into();
    cfg.sample_interval_ns = 500_000_000;
    let sim = run(cfg);
    sim.samples.last().expect("a sample per 500 ms").bzy_mhz
}

#[test]
fn group_uclamp_caps_and_boosts_schedutil() {
    let busy = json!({"name": "b", "cpus": [0], "start_cpu": 0, "cgroup": "G", "program": [
        {"op": "loop", "count": -1, "body": [{"op": "run", "cycles": cycles(1.0, 3_900_000)}]}]});
    let free = schedutil_mhz(busy.clone(), json!([{"path": "G"}]), "6.12");
    assert!(free > 3800.0, "unclamped busy task at {free} MHz");
    // cpu.uclamp.max 50 % = 512: from v6.7 the clamp applies after the 1.25 headroom, so the
    // request is 512/1024 × 3.9 GHz = 1.95 GHz → the 2.0 GHz OPP; before, 1.25 × 512 → 2.5 GHz
    let capped = json!([{"path": "G", "uclamp_max": 50.0}]);
    let new = schedutil_mhz(busy.clone(), capped.clone(), "6.12");
    assert!((new - 2000.0).abs() < 60.0, "6.12 capped at {new} MHz");
    let old = schedutil_mhz(busy, capped, "6.1");
    assert!((old - 2500.0).abs() < 60.0, "6.1 capped at {old} MHz");
    // cpu.uclamp.min 80 % = 819 lifts a light task (1 ms every 10 ms): from v6.8 the floor
    // takes no headroom, 819/1024 × 3.9 = 3.12 GHz → the 3.2 GHz OPP; before, the clamped util
    // gets the 1.25 headroom, 1.25 × 819 ≥ 1024 → the highest OPP
    let light = json!({"name": "l", "cpus": [0], "start_cpu": 0, "cgroup": "G", "program": [
        {"op": "loop", "count": -1, "body": [{"op": "run", "cycles": cycles(1.0, 3_900_000)},
        {"op": "timer", "period_ns": 10_000_000}]}]});
    let low = schedutil_mhz(light.clone(), json!([{"path": "G"}]), "6.12");
    let floor = json!([{"path": "G", "uclamp_min": 80.0}]);
    let boosted = schedutil_mhz(light.clone(), floor.clone(), "6.12");
    assert!(low < 2000.0, "light task at {low} MHz");
    assert!(
        (boosted - 3200.0).abs() < 60.0,
        "6.12 boosted light task at {boosted} MHz"
    );
    let boosted_old = schedutil_mhz(light, floor, "6.1");
    assert!(
        boosted_old > 3850.0,
        "6.1 boosted light task at {boosted_old} MHz"
    );
}

#[test]
fn the_slack_timer_hands_returned_runtime_to_a_throttled_cpu() {
    // Hand-set state at t = 0 (the period timer expires at 100 ms): cpu1's cfs_rq of G is
    // throttled 0.2 ms in debt, the pool holds 3 ms. cpu0's cfs_rq empties with 4.5 ms left:
    // it returns 4.5 − 1 = 3.5 ms (pool 6.5 ms > the 5 ms slice), which starts the slack timer;
    // 5 ms later the timer gives cpu1 its debt + 1 ns and unthrottles it.
    let tasks = json!([{"name": "idle", "program": [{"op": "sleep", "ns": 1_000_000_000u64}]}]);
    let groups = json!([{"path": "G", "quota_us": 20000}]);
    let mut sim = Sim::new(cfg_with(
        smp(2, 1, KHZ, false),
        tasks,
        groups,
        "6.6",
        250,
        10.0,
    ))
    .unwrap();
    let g = group(&sim, "G");
    sim.tgs[g].cfs_b.runtime = 3 * MS;
    sim.tgs[g].rqs[0].runtime_remaining = 4_500_000;
    sim.tgs[g].rqs[1].runtime_remaining = -200_000;
    sim.tgs[g].rqs[1].throttled = true;
    sim.tgs[g].cfs_b.throttled_cpus = vec![1];
    sim.return_cfs_rq_runtime(0, g);
    assert_eq!(sim.tgs[g].rqs[0].runtime_remaining, MS as i64);
    assert_eq!(sim.tgs[g].cfs_b.runtime, 6_500_000);
    assert!(sim.tgs[g].cfs_b.slack_started);
    sim.run().unwrap();
    let b = &sim.tgs[g].cfs_b;
    assert!(!sim.tgs[g].rqs[1].throttled, "cpu1 still throttled");
    assert!(b.throttled_cpus.is_empty());
    assert_eq!(sim.tgs[g].rqs[1].runtime_remaining, 1);
    assert_eq!(b.runtime, 6_500_000 - 200_001);
    // the throttled time runs from its (hand-set) start at 0 to the slack timer at 5 ms
    assert_eq!(b.throttled_time, 5 * MS);
}
