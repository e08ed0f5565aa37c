//! Energy Aware Scheduling: the energy estimate against a hand computation, placement of a
//! small task, overutilization switching EAS off and on, and the two feec algorithms choosing
//! the same CPU while their work grows as n² and n.

mod common;

use common::*;
use schedsim_core::sched::eas::EasOps;
use serde_json::{json, Value};

/// 2 LITTLE (dmips 512) + 2 big (1024) CPUs, one cluster each; OPPs 1 and 2 GHz with EM power
/// LITTLE 100/400 mW, big 400/1600 mW. Capacities: LITTLE 512, big 1024.
fn two_clusters(per_cpu_domains: bool) -> Value {
    let cpus: Vec<Value> = (0..4)
        .map(|i| {
            let fd = if per_cpu_domains { i } else { i / 2 };
            json!({"id": i, "core": i, "cluster": i / 2, "llc": 0, "node": 0, "package": 0,
                   "core_type": i / 2, "freq_domain": fd})
        })
        .collect();
    let little = json!([{"khz": 1_000_000, "uv": 800_000, "power_mw": 100.0}, {"khz": 2_000_000, "uv": 1_000_000, "power_mw": 400.0}]);
    let big = json!([{"khz": 1_000_000, "uv": 800_000, "power_mw": 400.0}, {"khz": 2_000_000, "uv": 1_000_000, "power_mw": 1600.0}]);
    let fd = |opps: &Value| json!({"granularity": "cluster", "coordination": "max", "base_khz": 2_000_000, "opps": opps});
    let fds: Vec<Value> = if per_cpu_domains {
        vec![fd(&little), fd(&little), fd(&big), fd(&big)]
    } else {
        vec![fd(&little), fd(&big)]
    };
    json!({
        "name": "two-clusters", "arch": "arm64", "cpus": cpus,
        "core_types": [{"name": "little", "capacity_dmips_mhz": 512}, {"name": "big", "capacity_dmips_mhz": 1024}],
        "freq_domains": fds,
        "idle_states": {"default": [{"name": "WFI", "exit_latency_us": 1, "target_residency_us": 1}]},
        "power": {"model": "em"},
        "tsc_khz": 19_200
    })
}

fn arm_cfg(m: Value, w: Value, kernel: &str, ms: f64) -> schedsim_core::SimConfig {
    let mut c = config(m, w, kernel, ms);
    c.cpufreq.driver = Some("cpufreq-dt".into());
    c.cpufreq.governor = "schedutil".into();
    c.cpufreq.invariance = "cpufreq".into();
    c
}

fn small_periodic() -> Value {
    // 1 ms of big-CPU-at-2GHz work every 16 ms: util ≈ 64 on the big scale
    custom(
        json!([{"name": "small", "program": [{"op": "loop", "count": -1, "body": [
        {"op": "run", "cycles": 2.0e6}, {"op": "timer", "period_ns": 16_000_000}]}]}]),
        json!([]),
    )
}

#[test]
fn the_energy_model_matches_a_hand_computation() {
    let sim = run(arm_cfg(two_clusters(false), small_periodic(), "5.4", 5.0));
    assert!(sim.eas.enabled);
    // costs: cost = P × f_max / f → LITTLE 200, 400; big 800, 1600
    let l = &sim.eas.pds[0].states;
    assert_eq!((l[0].cost, l[1].cost), (200.0, 400.0));
    let b = &sim.eas.pds[1].states;
    assert_eq!((b[0].cost, b[1].cost), (800.0, 1600.0));
    // Put the task's util at 100 with nothing else running: on a LITTLE CPU, 1.25 × 100 = 125
    // → f = 2 GHz × 125/512 = 488 MHz → the 1 GHz state: energy = 200 × 100 / 512.
    let mut sim = sim;
    let t = 0;
    for rq in sim.rqs.iter_mut() {
        rq.cfs.avg.util_avg = 0;
        rq.cfs.util_est = 0;
    }
    sim.tasks[t].cpu = 3;
    sim.tasks[t].se.avg.util_avg = 100;
    sim.tasks[t].util_est = Default::default();
    let mut ops = EasOps::default();
    let e_little = sim.pd_energy(0, t, Some(0), &mut ops);
    assert!(
        (e_little - 200.0 * 100.0 / 512.0).abs() < 1e-9,
        "{e_little}"
    );
    let e_big = sim.pd_energy(1, t, Some(2), &mut ops);
    assert!((e_big - 800.0 * 100.0 / 1024.0).abs() < 1e-9, "{e_big}");
}

#[test]
fn the_v6_9_cost_form_scales_the_energy_by_ten_thousand_in_uw() {
    // v6.9: cost = 10 × power(µW) / performance, energy = cost × sum_util. The LITTLE 1 GHz
    // state: performance = 512 × 1/2 = 256, cost = 10 × 100000 / 256; big 1 GHz: 10 × 400000 / 512.
    let mut sim = run(arm_cfg(two_clusters(false), small_periodic(), "6.12", 5.0));
    assert!(sim.eas.cost_v6_9);
    let l = &sim.eas.pds[0].states;
    assert!(
        (l[0].cost - 10.0 * 100_000.0 / 256.0).abs() < 1e-6,
        "{}",
        l[0].cost
    );
    assert!(
        (l[1].cost - 10.0 * 400_000.0 / 512.0).abs() < 1e-6,
        "{}",
        l[1].cost
    );
    let b = &sim.eas.pds[1].states;
    assert!(
        (b[0].cost - 10.0 * 400_000.0 / 512.0).abs() < 1e-6,
        "{}",
        b[0].cost
    );
    for rq in sim.rqs.iter_mut() {
        rq.cfs.avg.util_avg = 0;
        rq.cfs.util_est = 0;
    }
    sim.tasks[0].cpu = 3;
    sim.tasks[0].se.avg.util_avg = 100;
    sim.tasks[0].util_est = Default::default();
    let mut ops = EasOps::default();
    // the same estimate as the pre-6.9 form (200 × 100 / 512 mW-units), × 10⁴ (µW, × 10)
    let e_little = sim.pd_energy(0, 0, Some(0), &mut ops);
    assert!(
        (e_little - 1e4 * 200.0 * 100.0 / 512.0).abs() < 1e-6,
        "{e_little}"
    );
    let e_big = sim.pd_energy(1, 0, Some(2), &mut ops);
    assert!(
        (e_big - 1e4 * 800.0 * 100.0 / 1024.0).abs() < 1e-6,
        "{e_big}"
    );
}

#[test]
fn a_small_task_runs_where_the_energy_estimate_is_lowest() {
    for kernel in ["5.3", "5.4", "6.12"] {
        let sim = run(arm_cfg(
            two_clusters(false),
            small_periodic(),
            kernel,
            500.0,
        ));
        assert!(sim.eas.enabled, "{kernel}");
        let cpu = sim.tasks[0].cpu;
        assert!(
            cpu < 2,
            "{kernel}: the small task ended on cpu{cpu}, not a LITTLE CPU"
        );
        let little_busy: u64 = sim.rqs[..2].iter().map(|r| r.busy_ns).sum();
        let big_busy: u64 = sim.rqs[2..].iter().map(|r| r.busy_ns).sum();
        assert!(
            little_busy > 10 * big_busy.max(1),
            "{kernel}: LITTLE {little_busy} vs big {big_busy}"
        );
    }
}

#[test]
fn overutilization_turns_eas_off_and_its_end_turns_it_back_on() {
    // Four hogs for 300 ms then they exit; a small periodic task keeps running.
    let hog = json!({"name": "hog", "instances": 4, "program": [{"op": "loop", "count": 300,
        "body": [{"op": "run", "cycles": 2.0e6}]}, {"op": "exit"}]});
    // 17 ms: not a multiple of the 4 ms tick, so the task's CPU sees ticks while busy (the
    // flag is only cleared by a load balance, which busy ticks run)
    let small = json!({"name": "small", "program": [{"op": "loop", "count": -1, "body": [
        {"op": "run", "cycles": 2.0e6}, {"op": "timer", "period_ns": 17_000_000}]}]});
    let w = custom(json!([hog, small]), json!([]));
    let busy = run(arm_cfg(two_clusters(false), w.clone(), "5.4", 200.0));
    assert!(busy.eas.overutilized, "4 hogs on 4 CPUs must overutilize");
    let after = run(arm_cfg(two_clusters(false), w, "5.4", 1500.0));
    assert!(
        !after.eas.overutilized,
        "long after the hogs exit the flag must clear"
    );
}

#[test]
fn both_feec_algorithms_choose_the_same_cpu_and_their_work_grows_as_n2_and_n() {
    for per_cpu in [false, true] {
        let sim = run(arm_cfg(
            two_clusters(per_cpu),
            small_periodic(),
            "5.4",
            100.0,
        ));
        let t = 0;
        let prev = sim.tasks[t].cpu;
        let (mut o3, mut o4) = (EasOps::default(), EasOps::default());
        let c3 = sim.feec_v5_3(t, prev, &mut o3);
        let c4 = sim.feec_v5_4(t, prev, &mut o4);
        assert_eq!(c3, c4, "per_cpu={per_cpu}: same decision");
        let pds = sim.eas.pds.len() as u64;
        // v5.3 evaluates (candidates) × (all CPUs); v5.4 (base + ≤ 2 candidates) × (the PD's CPUs)
        assert!(o3.energy_evals >= pds * 2, "{o3:?}");
        if per_cpu {
            // n = 4 CPUs, one per domain: v5.3 visits n candidates × n CPUs (+ the n candidate
            // checks), v5.4 at most 3 per domain (+ the n candidate checks)
            let n = 4;
            assert!(o3.cpus_visited >= n * n, "{o3:?}");
            assert!(o4.cpus_visited <= 3 * n + 1, "{o4:?}");
        }
    }
    // the visits of v5.3 grow quadratically with per-CPU domains, v5.4 linearly
    let two = run(arm_cfg(two_clusters(false), small_periodic(), "5.3", 100.0));
    let four = run(arm_cfg(two_clusters(true), small_periodic(), "5.3", 100.0));
    let (mut a, mut b) = (EasOps::default(), EasOps::default());
    two.feec_v5_3(0, two.tasks[0].cpu, &mut a);
    four.feec_v5_3(0, four.tasks[0].cpu, &mut b);
    assert!(b.cpus_visited > a.cpus_visited, "{a:?} vs {b:?}");
}

#[test]
fn select_calls_are_profiled_per_cpu_and_eas_work_is_charged() {
    let mut m = two_clusters(true);
    for ct in m["core_types"].as_array_mut().unwrap() {
        ct["kernel_cycles"] = json!({"select_base": 1000.0, "eas_per_cpu": 300.0, "eas_per_energy": 500.0, "eas_per_ps": 50.0});
    }
    let old = run(arm_cfg(m.clone(), small_periodic(), "5.3", 500.0));
    let new = run(arm_cfg(m, small_periodic(), "5.4", 500.0));
    let calls = |s: &schedsim_core::Sim| s.eas.profile.iter().map(|p| p.hits).sum::<u64>();
    let mean = |s: &schedsim_core::Sim| {
        let (h, t): (u64, f64) = s
            .eas
            .profile
            .iter()
            .fold((0, 0.0), |a, p| (a.0 + p.hits, a.1 + p.sum_ns));
        t / h as f64
    };
    assert!(calls(&old) > 20 && calls(&new) > 20);
    assert!(
        mean(&new) < mean(&old),
        "per-PD feec cheaper: {} vs {}",
        mean(&new),
        mean(&old)
    );
}

#[test]
fn sched_energy_aware_zero_turns_eas_off() {
    let mut cfg = arm_cfg(two_clusters(false), small_periodic(), "5.4", 5.0);
    cfg.tunables.insert("sched_energy_aware".into(), json!(0));
    assert!(!run(cfg).eas.enabled);
    let mut cfg = arm_cfg(two_clusters(false), small_periodic(), "5.4", 5.0);
    cfg.tunables.insert("sched_energy_aware".into(), json!("1"));
    assert!(run(cfg).eas.enabled);
    let mut cfg = arm_cfg(two_clusters(false), small_periodic(), "5.4", 5.0);
    cfg.tunables
        .insert("sched_energy_aware".into(), json!(false));
    assert!(!run(cfg).eas.enabled);
    let mut cfg = arm_cfg(two_clusters(false), small_periodic(), "5.4", 5.0);
    cfg.tunables.insert("sched_energy_aware".into(), json!(2));
    let err = schedsim_core::engine::Sim::new(cfg)
        .err()
        .expect("2 is out of range");
    assert!(
        err.contains("sched_energy_aware") && err.contains("0..=1"),
        "{err}"
    );
}
