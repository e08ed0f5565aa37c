//! Shared helpers for the integration tests: small synthetic machines, configs and the
//! invariants every run must satisfy.
#![allow(dead_code)]

use schedsim_core::sched::task::{TaskState, TaskStats};
use schedsim_core::{Sim, SimConfig};
use serde_json::{json, Value};

/// `cores` cores × `threads` SMT threads at one fixed frequency, one LLC, one package, Linux
/// numbering (sibling of cpu i is i + cores). No kernel work costs unless `costs`.
pub fn smp(cores: usize, threads: usize, khz: u64, costs: bool) -> Value {
    let mut cpus = Vec::new();
    for t in 0..threads {
        for c in 0..cores {
            let id = t * cores + c;
            cpus.push(
                json!({"id": id, "core": c, "cluster": 0, "llc": 0, "node": 0, "package": 0,
                             "core_type": 0, "freq_domain": 0}),
            );
        }
    }
    let smt_share: Vec<f64> = match threads {
        1 => vec![],
        2 => vec![1.0, 0.62],
        _ => (1..=threads).map(|k| 1.0 / (k as f64).sqrt()).collect(),
    };
    let kernel_cycles = if costs {
        json!({"context_switch": 6000.0, "wakeup": 4000.0, "fork": 150000.0, "exec": 400000.0, "migrate": 2000.0})
    } else {
        json!({})
    };
    json!({
        "name": format!("test-{cores}x{threads}"),
        "arch": "x86",
        "cpus": cpus,
        "core_types": [{"name": "core", "capacity_dmips_mhz": 1024, "smt_share": smt_share,
                        "kernel_cycles": kernel_cycles}],
        "freq_domains": [{"granularity": "package", "base_khz": khz,
                          "opps": [{"khz": khz / 2, "uv": 700000}, {"khz": khz, "uv": 1000000}]}],
        "idle_states": {"default": [
            {"name": "POLL", "exit_latency_us": 0, "target_residency_us": 0, "turbo_active": true},
            {"name": "C1", "exit_latency_us": 2, "target_residency_us": 2, "power_mw": 500.0, "turbo_active": true},
            {"name": "C6", "exit_latency_us": 85, "target_residency_us": 200, "power_mw": 50.0}]},
        "power": {"model": "parametric", "package_idle_mw": 2000.0, "uncore_active_mw": 3000.0,
                  "core_leakage_mw": 500.0, "c_eff": 4000.0, "smt_power_factor": 0.15},
        "tsc_khz": khz
    })
}

/// A task's mean wakeup latency (ns) over the wakeups it recorded.
pub fn mean_wakeup_latency_ns(s: &TaskStats) -> f64 {
    s.wakeup_latency_sum_ns as f64 / s.wakeup_latency_count as f64
}

/// A config around a machine and a workload.
pub fn config(machine: Value, workload: Value, kernel: &str, duration_ms: f64) -> SimConfig {
    let mut cfg = json!({
        "machine": machine,
        "kernel": {"version": kernel},
        "workload": workload,
        "seed": 7,
        "duration_ns": (duration_ms * 1e6) as u64,
    });
    if duration_ms <= 0.0 {
        cfg.as_object_mut().unwrap().remove("duration_ns");
    }
    serde_json::from_value(cfg).expect("valid test config")
}

/// A custom workload from task specs.
pub fn custom(tasks: Value, channels: Value) -> Value {
    json!({"name": "custom", "custom": {"tasks": tasks, "channels": channels}})
}

/// Cycles for `ms` at `khz`.
pub fn cycles(ms: f64, khz: u64) -> f64 {
    ms * khz as f64
}

/// Build, run, check invariants.
pub fn run(cfg: SimConfig) -> Sim {
    let mut sim = Sim::new(cfg).expect("sim builds");
    sim.run().expect("sim runs");
    check_invariants(&sim);
    sim
}

/// Invariants every run satisfies.
pub fn check_invariants(sim: &Sim) {
    for (c, rq) in sim.rqs.iter().enumerate() {
        assert_eq!(
            rq.busy_ns + rq.idle_ns,
            sim.now,
            "cpu{c}: busy + idle != elapsed"
        );
        let idle_sum: u64 = rq.idle_state_ns.iter().sum();
        assert!(
            idle_sum <= rq.idle_ns,
            "cpu{c}: idle-state residency exceeds idle time"
        );
        // a cfs_rq's util_avg may exceed the capacity right after migrations (the kernel says
        // so in cpu_util()); the CPU utilization the consumers see is clamped
        let cap = sim.topo.cpus[c].capacity_orig;
        assert!(
            sim.cpu_util_cfs(c) <= cap,
            "cpu{c}: cpu_util {}",
            sim.cpu_util_cfs(c)
        );
        let expect_nr = rq.cfs.queued.len()
            + rq.cfs
                .curr
                .filter(|&t| sim.tasks[t].se.on_rq)
                .map_or(0, |_| 1);
        assert_eq!(rq.cfs.nr_running as usize, expect_nr, "cpu{c}: nr_running");
        let w: u64 = rq
            .cfs
            .queued
            .iter()
            .chain(rq.cfs.curr.iter())
            .filter(|&&t| sim.tasks[t].se.on_rq)
            .map(|&t| sim.tasks[t].se.weight)
            .sum();
        assert_eq!(rq.cfs.load_weight, w, "cpu{c}: load weight");
    }
    let mut seen = vec![0u32; sim.tasks.len()];
    for rq in &sim.rqs {
        for &t in rq.cfs.queued.iter() {
            seen[t] += 1;
            assert_eq!(sim.tasks[t].cpu, rq.cpu, "queued task on a foreign rq");
        }
        if let Some(t) = rq.cfs.curr {
            if sim.tasks[t].se.on_rq {
                seen[t] += 1;
            }
        }
        for &t in &rq.rt.queue {
            seen[t] += 1;
            assert_eq!(sim.tasks[t].cpu, rq.cpu, "RT task on a foreign rq");
        }
    }
    for (t, task) in sim.tasks.iter().enumerate() {
        assert!(
            task.se.avg.util_avg <= 1024,
            "task {t} util {}",
            task.se.avg.util_avg
        );
        let expected = (task.state == TaskState::Runnable && !task.throttled) as u32;
        if task.throttled {
            let held: usize = sim
                .tgs
                .iter()
                .map(|g| g.rqs[task.cpu].held.iter().filter(|&&x| x == t).count())
                .sum();
            assert_eq!(held, 1, "throttled task {} held {held} times", task.comm);
        }
        assert_eq!(
            seen[t], expected,
            "task {} ({:?}) on {} runqueues",
            task.comm, task.state, seen[t]
        );
        assert!(task.stats.cpu_ns <= sim.now);
    }
    let live = sim
        .tasks
        .iter()
        .filter(|t| !matches!(t.state, TaskState::Dead))
        .count();
    assert_eq!(live, sim.live_tasks, "live task count");
}

/// The result JSON without host-timing fields.
pub fn stable_json(sim: &Sim) -> String {
    let s = schedsim_core::metrics::result_json(sim, 0.0);
    let mut v: Value = serde_json::from_str(&s).unwrap();
    v["sim"]["wall_s"] = json!(0);
    v["sim"]["events_per_s"] = json!(0);
    v.to_string()
}
