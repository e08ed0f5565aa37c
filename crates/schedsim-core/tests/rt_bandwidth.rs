//! What keeps RT tasks from starving the fair class (spec/kernel.md §7.6): RT throttling
//! (`sched_rt_runtime_us` = 950 ms per 1 s) before v6.12, with and without RT_RUNTIME_SHARE,
//! and the fair server (a deferred 50 ms / 1 s deadline reservation) from v6.12. Expected
//! values are traced by hand from the kernel's rules (comments give the trace); HZ = 250, so
//! the running RT task is charged at every 4 ms tick.

mod common;

use common::*;
use serde_json::{json, Value};

const KHZ: u64 = 1_000_000;
const MS: u64 = 1_000_000;

fn hog(name: &str, rt: bool, cpu: usize) -> Value {
    let mut t = json!({"name": name, "cpus": [cpu], "start_cpu": cpu, "program":
        [{"op": "loop", "count": -1, "body": [{"op": "run", "cycles": cycles(1000.0, KHZ)}]}]});
    if rt {
        t["policy"] = json!("SCHED_FIFO");
        t["priority"] = json!(10);
    }
    t
}

fn run_with(
    cpus: usize,
    tasks: Value,
    kernel: &str,
    ms: f64,
    tunables: Value,
    features: Value,
) -> schedsim_core::Sim {
    let mut cfg = config(
        smp(cpus, 1, KHZ, false),
        custom(tasks, json!([])),
        kernel,
        ms,
    );
    cfg.tunables = serde_json::from_value(tunables).unwrap();
    cfg.kernel.features = serde_json::from_value(features).unwrap();
    run(cfg)
}

fn cpu_ms(sim: &schedsim_core::Sim, task: usize) -> f64 {
    sim.tasks[task].stats.cpu_ns as f64 / MS as f64
}

#[test]
fn rt_throttling_leaves_the_fair_class_what_the_rt_runtime_leaves() {
    // v5.15, RT_RUNTIME_SHARE off. The CPU leaves C6 (85 us) before the RT task runs; the
    // period timer starts with its enqueue at 0. rt_time passes 950 ms in the tick period
    // ending at 952 ms (951.915 > 950), which throttles the runqueue: the fair hog runs
    // 952..1000. The timer at 1000 takes 950 ms off (1.915 left) and unthrottles; the next
    // tick over 950 is 1952 (953.915), then 2948 (3.915 + 948): the fair hog gets 48, 48 and
    // 52 ms, 148 ms in all.
    let sim = run_with(
        1,
        json!([hog("rt", true, 0), hog("fair", false, 0)]),
        "5.15",
        3000.0,
        json!({}),
        json!({}),
    );
    assert!(
        (cpu_ms(&sim, 1) - 148.0).abs() < 0.01,
        "fair {}",
        cpu_ms(&sim, 1)
    );
    assert!(
        (cpu_ms(&sim, 0) - 2851.915).abs() < 0.01,
        "rt {}",
        cpu_ms(&sim, 0)
    );
    assert_eq!(sim.stats.rt_throttles, 3);
    // alone, the throttled RT task leaves the CPU idle instead, and pays the exit from C6
    // (85 us) at the two unthrottles that find the CPU idle
    let alone = run_with(
        1,
        json!([hog("rt", true, 0)]),
        "5.15",
        3000.0,
        json!({}),
        json!({}),
    );
    assert!(
        (cpu_ms(&alone, 0) - 2851.745).abs() < 0.01,
        "{}",
        cpu_ms(&alone, 0)
    );
    assert!((alone.rqs[0].idle_ns as f64 / MS as f64 - 148.255).abs() < 0.01);
}

#[test]
fn rt_runtime_tunables_set_the_share_or_turn_throttling_off() {
    let tasks = json!([hog("rt", true, 0), hog("fair", false, 0)]);
    // 500 ms per 1 s: over at the 504 ms tick (503.915 > 500), fair runs 504..1000
    let half = run_with(
        1,
        tasks.clone(),
        "5.15",
        1000.0,
        json!({"sched_rt_runtime_us": 500_000}),
        json!({}),
    );
    assert!(
        (cpu_ms(&half, 1) - 496.0).abs() < 0.5,
        "{}",
        cpu_ms(&half, 1)
    );
    // -1: never throttled, the fair hog starves
    let inf = run_with(
        1,
        tasks,
        "5.15",
        2000.0,
        json!({"sched_rt_runtime_us": -1}),
        json!({}),
    );
    assert_eq!(inf.tasks[1].stats.cpu_ns, 0);
    assert_eq!(inf.stats.rt_throttles, 0);
}

#[test]
fn rt_runtime_share_lets_a_hog_borrow_the_idle_cpus_runtime() {
    let one_hog = json!([hog("rt", true, 0), hog("fair", false, 0)]);
    // v5.4 (RT_RUNTIME_SHARE on): over its runtime, CPU 0 takes 1/2 of CPU 1's unused 950 ms,
    // capped at the period: its runtime becomes 1000 ms = the period, and a runqueue whose
    // runtime covers the period is never throttled. The fair hog starves.
    let shared = run_with(2, one_hog.clone(), "5.4", 3000.0, json!({}), json!({}));
    assert_eq!(shared.tasks[1].stats.cpu_ns, 0);
    assert_eq!(shared.rqs[0].rt.rt_runtime, 1000 * MS);
    assert_eq!(shared.rqs[1].rt.rt_runtime, 900 * MS);
    // the same kernel with the feature off throttles as v5.10+ does
    let own = run_with(
        2,
        one_hog,
        "5.4",
        3000.0,
        json!({}),
        json!({"RT_RUNTIME_SHARE": false}),
    );
    assert!((cpu_ms(&own, 1) - 148.0).abs() < 0.01);
    // With an RT hog on every CPU there is little spare runtime to borrow: a CPU over its
    // runtime takes half of what the other has not used yet, and the other, running its own
    // hog, has used all but what it ran since its last accounting (at most a 4 ms tick). So
    // each borrow moves at most 2 ms, borrowing conserves the total runtime (2 x 950 ms), and
    // both CPUs are throttled in every period: each fair hog gets its 48 ms per period within
    // a tick and a borrow, 3 x (48 +- 6) ms.
    let both = json!([
        hog("rt0", true, 0),
        hog("rt1", true, 1),
        hog("f0", false, 0),
        hog("f1", false, 1)
    ]);
    let sim = run_with(2, both, "5.4", 3000.0, json!({}), json!({}));
    assert_eq!(
        sim.rqs[0].rt.rt_runtime + sim.rqs[1].rt.rt_runtime,
        2 * 950 * MS
    );
    for f in [2, 3] {
        let ms = cpu_ms(&sim, f);
        assert!((126.0..=162.0).contains(&ms), "fair {f}: {ms}");
    }
    assert_eq!(sim.stats.rt_throttles, 6);
}

#[test]
fn the_fair_server_serves_a_starved_fair_class_50ms_per_period_from_v6_12() {
    // v6.12: no RT throttling. The fair hog's enqueue at 0 starts the server: deadline 1000,
    // runtime 50, armed until the zero-laxity instant 950. There the unused reservation
    // overflows (50 ms left in 50 ms > 5 %): a new period, deadline 1950, and the server runs
    // the fair hog ahead of RT until its 50 ms are used (1000). Throttled until 1950, then
    // replenished and, still starving, served at once: 1950..2000, 2950..3000.
    let sim = run_with(
        1,
        json!([hog("rt", true, 0), hog("fair", false, 0)]),
        "6.12",
        3000.0,
        json!({}),
        json!({}),
    );
    assert!(
        (cpu_ms(&sim, 1) - 150.0).abs() < 0.1,
        "fair {}",
        cpu_ms(&sim, 1)
    );
    assert_eq!(sim.stats.fair_server_activations, 3);
    assert_eq!(sim.stats.rt_throttles, 0);
    // alone, the RT task keeps the whole CPU
    let alone = run_with(
        1,
        json!([hog("rt", true, 0)]),
        "6.12",
        3000.0,
        json!({}),
        json!({}),
    );
    assert!(
        (cpu_ms(&alone, 0) - 2999.915).abs() < 0.01,
        "{}",
        cpu_ms(&alone, 0)
    );
    // a runtime of 0 turns the server off: the fair hog starves
    let off = run_with(
        1,
        json!([hog("rt", true, 0), hog("fair", false, 0)]),
        "6.12",
        2000.0,
        json!({"fair_server_runtime_ns": 0}),
        json!({}),
    );
    assert_eq!(off.tasks[1].stats.cpu_ns, 0);
}

#[test]
fn the_fair_server_stays_out_of_the_way_of_a_fair_class_that_gets_its_time() {
    // An RT task running 5 ms every 10 ms leaves the fair hog 50 %: the server's runtime is
    // used up in background within every 100 ms, each time restarting its period, so it never
    // reaches a zero-laxity instant and the split is the plain RT-over-fair one.
    let periodic = json!({"name": "rt", "policy": "SCHED_FIFO", "priority": 10, "cpus": [0],
        "program": [{"op": "loop", "count": -1, "body": [
            {"op": "run", "cycles": cycles(5.0, KHZ)}, {"op": "timer", "period_ns": 10 * MS}]}]});
    let sim = run_with(
        1,
        json!([periodic, hog("fair", false, 0)]),
        "6.12",
        2000.0,
        json!({}),
        json!({}),
    );
    assert_eq!(sim.stats.fair_server_activations, 0);
    assert!(
        (cpu_ms(&sim, 1) - 1000.0).abs() < 1.0,
        "{}",
        cpu_ms(&sim, 1)
    );
}

#[test]
fn the_fair_servers_runtime_is_scaled_by_the_cpus_capacity() {
    // dl_scaled_delta_exec(): on a CPU of capacity 512 (half the big CPU's) each ms of run
    // time uses 0.5 ms of the reservation, so the 50 ms last 100 ms. Armed at 950 ms, the
    // overflow moves the deadline to 1950; the fair hog runs from 950 until the tick that
    // sees the runtime used, 1052 (1 ms over); replenished at 1950 with 49 ms, it runs until
    // the run ends at 2000: 102 + 50 = 152 ms.
    let mut machine = smp(2, 1, KHZ, false);
    let little = machine["core_types"][0].clone();
    machine["core_types"].as_array_mut().unwrap().push(little);
    machine["core_types"][1]["capacity_dmips_mhz"] = json!(512);
    machine["cpus"][1]["core_type"] = json!(1);
    let cfg = config(
        machine,
        custom(
            json!([hog("rt", true, 1), hog("fair", false, 1)]),
            json!([]),
        ),
        "6.12",
        2000.0,
    );
    let sim = run(cfg);
    assert!(
        (cpu_ms(&sim, 1) - 152.0).abs() < 0.01,
        "fair {}",
        cpu_ms(&sim, 1)
    );
}

#[test]
fn runtime_above_the_period_is_refused() {
    for (k, v) in [
        ("sched_rt_runtime_us", json!(2_000_000)),
        ("fair_server_runtime_ns", json!(2_000_000_000u64)),
    ] {
        let mut cfg = config(
            smp(1, 1, KHZ, false),
            custom(json!([hog("a", false, 0)]), json!([])),
            "6.12",
            10.0,
        );
        cfg.tunables = serde_json::from_value(json!({ k: v })).unwrap();
        let err = schedsim_core::Sim::new(cfg).err().expect("refused");
        assert!(err.contains(k) && err.contains("must not exceed"), "{err}");
    }
}
