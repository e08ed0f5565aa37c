//! The RT class: priorities over fair, FIFO vs RR, placement and push, the RT utilization
//! signal and the capacity it takes from CFS.

mod common;

use common::*;
use serde_json::json;

const KHZ: u64 = 1_000_000;

fn rt(name: &str, policy: &str, prio: u32, program: serde_json::Value) -> serde_json::Value {
    json!({"name": name, "policy": policy, "priority": prio, "program": program})
}

fn hog_program() -> serde_json::Value {
    json!([{"op": "loop", "count": -1, "body": [{"op": "run", "cycles": cycles(1.0, KHZ)}]}])
}

#[test]
fn an_rt_task_preempts_fair_tasks_at_once_and_runs_to_completion() {
    let periodic = rt(
        "rt",
        "SCHED_FIFO",
        50,
        json!([{"op": "loop", "count": -1, "body": [
        {"op": "run", "cycles": cycles(3.0, KHZ)}, {"op": "timer", "period_ns": 10_000_000}]}]),
    );
    let fair = json!({"name": "hog", "program": hog_program()});
    for kernel in ["5.2", "6.12"] {
        let sim = run(config(
            smp(1, 1, KHZ, false),
            custom(json!([fair.clone(), periodic.clone()]), json!([])),
            kernel,
            500.0,
        ));
        let s = &sim.tasks[1].stats;
        assert!(
            s.wakeup_latency_max_ns < 20_000,
            "{kernel}: RT wakeup latency {}",
            s.wakeup_latency_max_ns
        );
        // 3 ms every 10 ms: 30 % of the CPU, the fair hog gets the rest
        let share = s.cpu_ns as f64 / sim.now as f64;
        assert!((share - 0.30).abs() < 0.01, "{kernel}: RT share {share}");
        assert_eq!(sim.tasks[1].prio(), 49);
    }
}

#[test]
fn fifo_priorities_preempt_and_rr_round_robins_every_100ms() {
    // FIFO 10 (hog) is preempted by FIFO 20 waking every 20 ms for 5 ms.
    let low = rt("low", "SCHED_FIFO", 10, hog_program());
    let high = rt(
        "high",
        "SCHED_FIFO",
        20,
        json!([{"op": "loop", "count": -1, "body": [
        {"op": "run", "cycles": cycles(5.0, KHZ)}, {"op": "timer", "period_ns": 20_000_000}]}]),
    );
    let sim = run(config(
        smp(1, 1, KHZ, false),
        custom(json!([low, high]), json!([])),
        "6.12",
        400.0,
    ));
    let high_share = sim.tasks[1].stats.cpu_ns as f64 / sim.now as f64;
    assert!((high_share - 0.25).abs() < 0.01, "high share {high_share}");
    // two RR hogs of equal priority share the CPU in 100 ms turns
    let a = rt("a", "SCHED_RR", 30, hog_program());
    let b = rt("b", "SCHED_RR", 30, hog_program());
    let sim = run(config(
        smp(1, 1, KHZ, false),
        custom(json!([a, b]), json!([])),
        "6.12",
        1000.0,
    ));
    let (ca, cb) = (
        sim.tasks[0].stats.cpu_ns as f64,
        sim.tasks[1].stats.cpu_ns as f64,
    );
    assert!((ca / cb - 1.0).abs() < 0.1, "RR split {ca} / {cb}");
    let switches = sim.tasks[0].stats.nr_switches + sim.tasks[1].stats.nr_switches;
    assert!((9..=11).contains(&switches), "RR switches {switches}");
    // FIFO equals never yield to each other
    let a = rt("a", "SCHED_FIFO", 30, hog_program());
    let b = rt("b", "SCHED_FIFO", 30, hog_program());
    let sim = run(config(
        smp(1, 1, KHZ, false),
        custom(json!([a, b]), json!([])),
        "6.12",
        1000.0,
    ));
    assert!(sim.tasks[1].stats.cpu_ns == 0 || sim.tasks[0].stats.cpu_ns == 0);
}

#[test]
fn rt_tasks_spread_over_cpus_and_their_utilization_takes_capacity_from_cfs() {
    // two RT hogs started on cpu0 of a 2-CPU machine end up one per CPU
    let a = json!({"name": "a", "policy": "SCHED_FIFO", "priority": 10, "start_cpu": 0, "program": hog_program()});
    let b = json!({"name": "b", "policy": "SCHED_FIFO", "priority": 10, "start_cpu": 0, "program": hog_program()});
    let sim = run(config(
        smp(2, 1, KHZ, false),
        custom(json!([a, b]), json!([])),
        "6.12",
        300.0,
    ));
    assert_ne!(sim.tasks[0].cpu, sim.tasks[1].cpu);
    for c in 0..2 {
        let util = sim.cpu_util_rt(c);
        // always running for 300 ms: 1024·(1 − y^293) ≈ 1024
        assert!(util > 1000, "cpu{c} rt util {util}");
        assert!(
            sim.capacity_of(c) < 30,
            "cpu{c} capacity left for CFS {}",
            sim.capacity_of(c)
        );
    }
}

#[test]
fn rt_priorities_are_validated() {
    let bad = custom(json!([rt("x", "SCHED_FIFO", 0, hog_program())]), json!([]));
    let e = schedsim_core::Sim::new(config(smp(1, 1, KHZ, false), bad, "6.12", 10.0))
        .err()
        .unwrap();
    assert!(e.contains("priority 1..99"), "{e}");
    let bad = custom(
        json!([{"name": "x", "priority": 5, "program": hog_program()}]),
        json!([]),
    );
    let e = schedsim_core::Sim::new(config(smp(1, 1, KHZ, false), bad, "6.12", 10.0))
        .err()
        .unwrap();
    assert!(e.contains("SCHED_FIFO / SCHED_RR"), "{e}");
}
