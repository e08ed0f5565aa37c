//! Hardware model behaviour against closed forms: turbo bins by active cores, APERF/MPERF,
//! power and energy, package power limits, package C-states, idle exit latency, frequency
//! coordination in a shared domain (and the idle states that keep a request in it), SMT
//! throughput.

mod common;

use common::*;
use serde_json::{json, Value};

/// A Skylake-client-like package: 4 cores × 2 threads, P-states 0.8–3.9 GHz, turbo bins
/// 3900/3900/3800/3700 MHz, base 3500 MHz, V(f) linear 0.70–1.20 V.
fn turbo_machine() -> Value {
    let mut m = smp(4, 2, 3_900_000, false);
    let opps: Vec<Value> = (8..=39)
        .map(|r| {
            let khz = r * 100_000u64;
            let uv = 700_000 + (khz - 800_000) * 500_000 / 3_100_000;
            json!({"khz": khz, "uv": uv})
        })
        .collect();
    m["freq_domains"] = json!([{"granularity": "package", "base_khz": 3_500_000,
        "turbo_khz": [3_900_000, 3_900_000, 3_800_000, 3_700_000], "opps": opps}]);
    m["tsc_khz"] = json!(3_500_000);
    m
}

fn hogs(n: usize, pin_to_cores: bool) -> Value {
    let tasks: Vec<Value> = (0..n)
        .map(|i| {
            let mut t = json!({"name": format!("hog{i}"), "program": [{"op": "loop", "count": -1,
                "body": [{"op": "run", "cycles": 1.0e6}, {"op": "mark", "name": "op"}]}]});
            if pin_to_cores {
                t["cpus"] = json!([i]);
                t["start_cpu"] = json!(i);
            }
            t
        })
        .collect();
    custom(json!(tasks), json!([]))
}

fn avg_busy_mhz(sim: &schedsim_core::Sim, cpu: usize) -> f64 {
    let c = &sim.counters[cpu];
    sim.cfg.machine.tsc_khz as f64 * c.aperf / c.mperf / 1000.0
}

#[test]
fn delivered_frequency_follows_the_turbo_bin_of_the_active_cores() {
    let one = run(config(turbo_machine(), hogs(1, true), "6.12", 200.0));
    assert!(
        (avg_busy_mhz(&one, 0) - 3900.0).abs() < 1.0,
        "{}",
        avg_busy_mhz(&one, 0)
    );
    let four = run(config(turbo_machine(), hogs(4, true), "6.12", 200.0));
    for cpu in 0..4 {
        // the first microseconds run at a higher bin while the others wake up
        assert!(
            (avg_busy_mhz(&four, cpu) - 3700.0).abs() < 2.0,
            "cpu{cpu}: {}",
            avg_busy_mhz(&four, cpu)
        );
    }
}

#[test]
fn aperf_over_mperf_is_delivered_over_base_and_tsc_always_counts() {
    let sim = run(config(turbo_machine(), hogs(1, true), "6.12", 100.0));
    let c = &sim.counters[0];
    assert!((c.aperf / c.mperf - 3900.0 / 3500.0).abs() < 1e-3);
    let idle = &sim.counters[3];
    assert_eq!(idle.aperf, 0.0);
    assert!((idle.tsc - 0.1 * 3.5e9).abs() < 1.0);
}

/// 4 hogs on 4 cores at 3700 MHz for 0.5 s with the code's `activity` (None: the preset's
/// default, 1): the package's average power and the parametric formula's, each core
/// activity·c_eff·V²·f + leakage, plus the uncore at 3700/3900 of its active power, plus the
/// package idle floor (the other threads of these cores idle, but the cores are busy).
fn busy_package_mw(activity: Option<f64>) -> (f64, f64) {
    let mut m = turbo_machine();
    if let Some(a) = activity {
        m["power"]["activity_factor"] = json!(a);
    }
    let sim = run(config(m, hogs(4, true), "6.12", 500.0));
    let p = &sim.cfg.machine.power;
    let v = (700_000 + (3_700_000u64 - 800_000) * 500_000 / 3_100_000) as f64 * 1e-6;
    let core = activity.unwrap_or(1.0) * p.c_eff * v * v * 3.7 + p.core_leakage_mw;
    let expect_mw = 4.0 * core + p.package_idle_mw + p.uncore_active_mw * 3700.0 / 3900.0;
    (sim.hw.pkg_energy_uj[0] * 1e-3 / 0.5, expect_mw)
}

#[test]
fn busy_package_power_matches_the_parametric_formula_and_energy_integrates_power() {
    let (avg_mw, expect_mw) = busy_package_mw(None);
    // the first ~100 µs of wake-up run differently
    assert!(
        (avg_mw / expect_mw - 1.0).abs() < 0.002,
        "avg {avg_mw:.1} mW, expected {expect_mw:.1} mW"
    );
}

/// `activity_factor` scales the switched-capacitance term only: with 0.6 the same package draws
/// 4 × (0.6 · c_eff·V²·f + leakage) + the uncore and the package floor.
#[test]
fn the_activity_factor_scales_the_busy_cores_switching_power() {
    let (avg_mw, expect_mw) = busy_package_mw(Some(0.6));
    assert!(
        (avg_mw / expect_mw - 1.0).abs() < 0.002,
        "avg {avg_mw:.1} mW, expected {expect_mw:.1} mW"
    );
}

/// The error of a machine the simulator refuses to build.
fn refusal(m: Value) -> String {
    schedsim_core::Sim::new(config(m, hogs(1, true), "6.12", 10.0))
        .err()
        .expect("refused")
}

#[test]
fn an_activity_factor_out_of_range_is_refused_naming_the_key() {
    for bad in [0.0, -0.5, 2.5] {
        let mut m = turbo_machine();
        m["power"]["activity_factor"] = json!(bad);
        let err = refusal(m);
        assert!(
            err.contains("power.activity_factor") && err.contains("(0, 2]"),
            "{err}"
        );
    }
    let mut m = turbo_machine();
    m["power"]["model"] = json!("em");
    m["power"]["activity_factor"] = json!(0.5);
    let err = refusal(m);
    assert!(
        err.contains("power.activity_factor") && err.contains("parametric model only"),
        "{err}"
    );
}

#[test]
fn energy_equals_the_sum_of_per_interval_power() {
    let w = json!({"name": "periodic", "params": {"tasks": 5, "period_ms": 7, "duty_pct": 45}});
    let mut cfg = config(turbo_machine(), w, "6.12", 300.0);
    cfg.sample_interval_ns = 10_000_000;
    let sim = run(cfg);
    let from_samples: f64 = sim.samples.iter().map(|s| s.pkg_watt * 0.01).sum();
    let total_j = sim.hw.pkg_energy_uj[0] * 1e-6;
    assert_eq!(sim.samples.len(), 30);
    assert!(
        (from_samples / total_j - 1.0).abs() < 1e-9,
        "{from_samples} vs {total_j}"
    );
}

#[test]
fn an_idle_package_draws_its_idle_power_and_enters_its_package_c_state() {
    let mut m = turbo_machine();
    m["package_idle_states"] = json!([{"name": "PC2", "min_core_state": 1, "power_mw": 1500.0},
                                      {"name": "PC6", "min_core_state": 2, "power_mw": 600.0, "exit_latency_us": 40}]);
    let w = custom(
        json!([{"name": "nap", "program": [{"op": "sleep", "ns": 1_000_000_000u64}]}]),
        json!([]),
    );
    let sim = run(config(m, w, "6.12", 1000.0));
    // every core sits in C6 (50 mW each) and the package in PC6
    let avg_mw = sim.hw.pkg_energy_uj[0] * 1e-3 / 1.0;
    let expect = 4.0 * 50.0 + 600.0;
    assert!(
        (avg_mw / expect - 1.0).abs() < 0.01,
        "avg {avg_mw:.1} mW, expected {expect} mW"
    );
    assert_eq!(sim.hw.pkg_cstate[0], Some(1));
}

#[test]
fn a_package_power_limit_caps_boost() {
    let mut m = turbo_machine();
    // well below the ~4-core turbo power: the ceiling must come down
    m["power"]["power_limit_mw"] = json!(30_000.0);
    m["power"]["power_limit_tau_ms"] = json!(10.0);
    let free = run(config(turbo_machine(), hogs(4, true), "6.12", 1000.0));
    let capped = run(config(m, hogs(4, true), "6.12", 1000.0));
    let f_free = avg_busy_mhz(&free, 0);
    let f_cap = avg_busy_mhz(&capped, 0);
    assert!(
        f_cap < f_free - 100.0,
        "capped {f_cap:.0} MHz vs free {f_free:.0} MHz"
    );
    let watts = capped.hw.pkg_energy_uj[0] * 1e-6;
    let free_w = free.hw.pkg_energy_uj[0] * 1e-6;
    assert!(
        watts < free_w,
        "limit lowered power: {watts:.1} W vs {free_w:.1} W"
    );
    // the controller holds the average near the limit, never below base frequency
    assert!(f_cap >= 3500.0 - 1.0);
}

#[test]
fn waking_a_cpu_pays_its_idle_state_exit_latency() {
    // one periodic task alone: every activation wakes an idle CPU from C6 (85 µs exit latency)
    let w = json!({"name": "periodic", "params": {"tasks": 1, "period_ms": 10, "duty_pct": 10}});
    let sim = run(config(smp(1, 1, 1_000_000, false), w, "6.12", 500.0));
    let mean = mean_wakeup_latency_ns(&sim.tasks[0].stats);
    assert!(
        (mean - 85_000.0).abs() < 1.0,
        "mean wakeup latency {mean} ns"
    );
}

#[test]
fn a_deep_state_wakes_at_its_core_latency_unless_the_package_went_deep_too() {
    // C10 declares 890 us, the worst case with the package's PC10 exit; the core alone wakes
    // in 85 us. A task on CPU 1 sleeps 20 ms at a time (menu picks C10). With CPU 0 busy the
    // package stays up and each wakeup takes 85 us; with CPU 0 idle too the package reaches
    // PC10 and the wakeup takes 85 + 805 = 890 us.
    // smp()'s POLL, C1 and C6, and a C10 whose package state PC10 adds 805 us
    let mut m = smp(2, 1, 1_000_000, false);
    m["idle_states"]["default"].as_array_mut().unwrap().push(json!(
        {"name": "C10", "exit_latency_us": 890, "core_exit_latency_us": 85, "target_residency_us": 5000}));
    m["package_idle_states"] =
        json!([{"name": "PC10", "min_core_state": 3, "power_mw": 100.0, "exit_latency_us": 805}]);
    let sleeper = json!({"name": "sleeper", "cpus": [1], "start_cpu": 1, "program": [
        {"op": "loop", "count": -1, "body": [{"op": "sleep", "ns": 20_000_000u64}, {"op": "run", "cycles": 1000.0}]}]});
    let hog = json!({"name": "hog", "cpus": [0], "start_cpu": 0, "program": [
        {"op": "loop", "count": -1, "body": [{"op": "run", "cycles": 1.0e6}]}]});
    let mean_latency = |tasks: Value| {
        let sim = run(config(m.clone(), custom(tasks, json!([])), "6.12", 500.0));
        let t = sim
            .tasks
            .iter()
            .find(|t| t.comm == "sleeper")
            .expect("the sleeper");
        // the first wakeups come before menu has learnt the 20 ms sleeps
        assert!(t.stats.wakeup_latency_count >= 20);
        mean_wakeup_latency_ns(&t.stats)
    };
    let busy_neighbour = mean_latency(json!([sleeper.clone(), hog]));
    assert!(
        (busy_neighbour - 85_000.0).abs() < 5_000.0,
        "{busy_neighbour} ns with CPU 0 busy"
    );
    let idle_package = mean_latency(json!([sleeper]));
    assert!(
        (idle_package - 890_000.0).abs() < 40_000.0,
        "{idle_package} ns with the package idle"
    );
}

#[test]
fn menu_learns_the_idle_periods_that_task_wakeups_end() {
    // cpuidle_reflect() runs after every idle period, whoever ends it. Two pinned tasks
    // ping-pong 50 us bursts over channels: each CPU idles ~50 us between wakeups by the other
    // task's send, and no timer bounds the sleep length. Menu's last 8 intervals then give a
    // typical interval of ~50 us, so it picks C1 (2 us exit) instead of C6 (85 us), which
    // an infinite sleep length alone would choose.
    let m = smp(2, 1, 1_000_000, false); // POLL, C1 (2 us), C6 (85 us)
    let burst = 50_000.0; // 50 us at 1 GHz
    let ping = json!({"name": "ping", "cpus": [0], "start_cpu": 0, "program": [
        {"op": "loop", "count": 2000, "body": [
            {"op": "run", "cycles": burst}, {"op": "send", "chan": "a2b"}, {"op": "recv", "chan": "b2a"}]}]});
    let pong = json!({"name": "pong", "cpus": [1], "start_cpu": 1, "program": [
        {"op": "loop", "count": 2000, "body": [
            {"op": "recv", "chan": "a2b"}, {"op": "run", "cycles": burst}, {"op": "send", "chan": "b2a"}]}]});
    let w = custom(
        json!([ping, pong]),
        json!([{"name": "a2b", "capacity": 1}, {"name": "b2a", "capacity": 1}]),
    );
    let sim = run(config(m, w, "6.12", 0.0));
    let pong = sim.tasks.iter().find(|t| t.comm == "pong").expect("pong");
    assert!(pong.stats.wakeup_latency_count >= 1999);
    let mean = mean_wakeup_latency_ns(&pong.stats);
    // a few C6 exits before the history fills; every later wakeup pays C1's 2 us
    assert!(mean < 4_000.0, "mean wakeup latency {mean} ns");
}

#[test]
fn a_shared_domain_runs_at_the_highest_request_of_its_active_cpus() {
    let w = hogs(2, true);
    let mut sim = run(config(turbo_machine(), w, "6.12", 5.0));
    sim.set_cpu_request(0, 2_000_000);
    sim.set_cpu_request(1, 1_200_000);
    assert_eq!(sim.fds[0].delivered_khz, 2_000_000);
    // cpu0 goes idle: the domain follows cpu1's request
    sim.set_cpu_request(0, 3_000_000);
    assert_eq!(sim.fds[0].delivered_khz, 3_000_000);
    for c in 2..8 {
        sim.set_cpu_request(c, 3_900_000); // idle CPUs' requests don't count
    }
    assert_eq!(sim.fds[0].delivered_khz, 3_000_000);
}

#[test]
fn an_idle_cpu_in_c1_holds_its_shared_domain_at_its_request_and_one_in_c1e_does_not() {
    // Intel's shared domain runs at "the highest frequency P-state requested amongst all
    // active cores": a core halted in C1 is active and keeps its request; C1E (Enhanced Halt)
    // asks for the lowest P-state. cpu0 ran a short task and idles in the machine's only
    // state; cpu1 (core 1) runs a hog at a lower request.
    for (state, holds, want_khz) in [("C1", true, 3_000_000), ("C1E", false, 1_200_000)] {
        let mut m = turbo_machine();
        m["idle_states"] = json!({"default": [{"name": state, "exit_latency_us": 2,
            "target_residency_us": 2, "turbo_active": true, "holds_pstate_request": holds}]});
        let w = custom(
            json!([
                {"name": "short", "cpus": [0], "start_cpu": 0,
                 "program": [{"op": "run", "cycles": 1.0e6}]},
                {"name": "hog", "cpus": [1], "start_cpu": 1, "program": [{"op": "loop",
                 "count": -1, "body": [{"op": "run", "cycles": 1.0e6}]}]}
            ]),
            json!([]),
        );
        let mut sim = run(config(m, w, "6.12", 5.0));
        assert!(sim.rqs[0].curr.is_none() && sim.rqs[0].idle_state == Some(0));
        for c in 2..8 {
            sim.set_cpu_request(c, 800_000); // the other idle CPUs ask for the minimum
        }
        sim.set_cpu_request(0, 3_000_000);
        sim.set_cpu_request(1, 1_200_000);
        assert_eq!(sim.fds[0].delivered_khz, want_khz, "cpu0 idle in {state}");
    }
}

#[test]
fn a_lone_smt_thread_runs_faster_than_one_sharing_its_core() {
    // 1 core × 2 threads at 1 GHz, 1e6-cycle operations for 100 ms: a lone thread completes
    // 100; two threads sharing the core at 0.62 each complete 62 each (smt_share[1]).
    let ops = |s: &schedsim_core::Sim, t: usize| s.marks.iter().filter(|m| m.1 == t).count();
    let alone = run(config(
        smp(1, 2, 1_000_000, false),
        hogs(1, true),
        "6.12",
        100.0,
    ));
    let shared = run(config(
        smp(1, 2, 1_000_000, false),
        hogs(2, true),
        "6.12",
        100.0,
    ));
    assert!((99..=100).contains(&ops(&alone, 0)), "{}", ops(&alone, 0));
    for t in 0..2 {
        assert!((61..=62).contains(&ops(&shared, t)), "{}", ops(&shared, t));
    }
}

fn hwp_machine() -> Value {
    let mut m = turbo_machine();
    m["hwp"] = json!({"highest_khz": 3_900_000, "guaranteed_khz": 3_500_000, "efficient_khz": 800_000,
                      "lowest_khz": 800_000, "default_epp": 128, "sample_ns": 1_000_000,
                      "headroom_epp0": 0.5, "headroom_epp255": 0.0});
    m
}

#[test]
fn a_run_ends_when_only_the_hardwares_own_loops_are_left() {
    // 1 ms of work, then a receive that no one ever answers, and no end time. The turbostat
    // samples, the power-limit controller and HWP's evaluation re-arm themselves for ever, but
    // none of them can wake the task: the run is over when the task blocks.
    let stuck = json!({"name": "stuck", "program": [
        {"op": "run", "cycles": 3.9e6}, {"op": "recv", "chan": "never"}]});
    let w = custom(json!([stuck]), json!([{"name": "never", "capacity": 1}]));
    let mut m = hwp_machine();
    m["power"]["power_limit_mw"] = json!(30_000.0);
    let mut cfg = config(m, w, "6.12", 0.0);
    cfg.cpufreq.driver = Some("intel_pstate".into());
    cfg.cpufreq.governor = "performance".into();
    cfg.sample_interval_ns = 100_000;
    let sim = run(cfg);
    assert_eq!(sim.live_tasks, 1);
    // 3.9 M cycles at 3.9 GHz: 1 ms, plus the kernel's work on the way to sleep
    assert!(
        (1_000_000..1_100_000).contains(&sim.now),
        "the run ended at {} ns",
        sim.now
    );
    assert!(
        (10..=11).contains(&sim.samples.len()),
        "{} samples",
        sim.samples.len()
    );
}

#[test]
fn impossible_machine_values_are_errors_that_name_the_key() {
    let err = |edit: &dyn Fn(&mut Value)| {
        let mut m = smp(2, 1, 3_000_000, true);
        edit(&mut m);
        schedsim_core::Sim::new(config(m, hogs(1, false), "6.12", 10.0))
            .err()
            .expect("rejected")
    };
    let e = err(&|m| m["power"]["package_idle_mw"] = json!(-1e6));
    assert!(
        e.contains("power.package_idle_mw = -1000000: must be finite and >= 0"),
        "{e}"
    );
    let e = err(&|m| m["power"]["c_eff"] = json!(-2740.0));
    assert!(e.contains("power.c_eff"), "{e}");
    let e = err(&|m| m["idle_states"]["default"][1]["power_mw"] = json!(-5.0));
    assert!(
        e.contains("idle_states.default[1] (C1): power_mw = -5"),
        "{e}"
    );
    let e = err(&|m| m["idle_states"]["default"][2]["exit_latency_us"] = json!(u64::MAX));
    assert!(
        e.contains("idle_states.default[2] (C6)") && e.contains("at most 1000000"),
        "{e}"
    );
    let e = err(&|m| m["core_types"][0]["kernel_cycles"]["wakup"] = json!(4000.0));
    assert!(
        e.contains("unknown kernel_cycles key 'wakup'; allowed: context_switch"),
        "{e}"
    );
    let e = err(&|m| m["core_types"][0]["kernel_cycles"]["fork"] = json!(-1.0));
    assert!(e.contains("kernel_cycles.fork = -1"), "{e}");
}

#[test]
fn turbostat_samples_are_bounded() {
    // a task asleep for 1.1 s keeps the run going
    let sleeper = || {
        let t = json!({"name": "t", "program": [{"op": "sleep", "ns": 1_100_000_000u64}]});
        custom(json!([t]), json!([]))
    };
    let mut cfg = config(smp(1, 1, 1_000_000, false), sleeper(), "6.12", 0.0);
    cfg.sample_interval_ns = 999;
    let e = schedsim_core::Sim::new(cfg)
        .err()
        .expect("too short an interval");
    assert!(e.contains("sample_interval_ns = 999: at least 1000"), "{e}");
    // 1 us samples over 1.1 s would be 1.1 million of them
    let mut cfg = config(smp(1, 1, 1_000_000, false), sleeper(), "6.12", 0.0);
    cfg.sample_interval_ns = 1000;
    let e = schedsim_core::Sim::new(cfg).unwrap().run().unwrap_err();
    assert!(e.contains("more than 1000000 turbostat samples"), "{e}");
}

#[test]
fn hwp_activity_window_averages_the_busy_time() {
    // one hog pinned to CPU 0 from t = 0, EPP 255 (target = busy × highest), 1 ms samples:
    // without a window the first sample (busy 1.0) asks for the highest 3.9 GHz; with a 20 ms
    // window the average after ten samples is 1 − e^(−10/20) = 0.3935, so the request is the
    // first P-state at or above 0.3935 × 3.9 GHz = 1.535 GHz: 1.6 GHz
    let request = |window_ns: u64| {
        let mut m = hwp_machine();
        m["hwp"]["default_epp"] = json!(255);
        m["hwp"]["activity_window_ns"] = json!(window_ns);
        let mut cfg = config(m, hogs(1, true), "6.12", 10.5);
        cfg.cpufreq.driver = Some("intel_pstate".into());
        cfg.cpufreq.governor = "powersave".into();
        let sim = run(cfg);
        sim.hw.cpu_req_khz[0]
    };
    assert_eq!(request(0), 3_900_000);
    assert_eq!(request(20_000_000), 1_600_000);
}

#[test]
fn hwp_with_a_3_ms_window_reaches_the_top_in_5_ms() {
    // the Skylake presets' window: a core with HWP goes from idle to its top frequency in just
    // over 5 ms (measured on a Core i5-6600K). At EPP 0x80 the headroom is 0.5 × (1 − 128/255)
    // = 0.249; after four 1 ms samples of a hog the average is 1 − e^(−4/3) = 0.736, a target of
    // 0.736 × 3.9 GHz × 1.249 = 3.59 GHz (3.6 GHz); after five 0.811, above the top: 3.9 GHz
    let request = |ms: f64| {
        let mut m = hwp_machine();
        m["hwp"]["activity_window_ns"] = json!(3_000_000);
        let mut cfg = config(m, hogs(1, true), "6.12", ms);
        cfg.cpufreq.driver = Some("intel_pstate".into());
        cfg.cpufreq.governor = "powersave".into();
        run(cfg).hw.cpu_req_khz[0]
    };
    assert_eq!(request(4.5), 3_600_000);
    assert_eq!(request(5.5), 3_900_000);
}

#[test]
fn hwp_picks_frequencies_from_busy_time_and_epp() {
    // a steady 1-CPU load busy 100 % at whatever frequency: the HWP target is highest × (1 +
    // headroom) clamped to highest; a 20 %-duty periodic task gets a lower frequency.
    let w = json!({"name": "periodic", "params": {"tasks": 1, "period_ms": 10, "duty_pct": 20}});
    let mut cfg = config(hwp_machine(), w.clone(), "6.12", 500.0);
    cfg.cpufreq.driver = Some("intel_pstate".into());
    cfg.cpufreq.governor = "powersave".into();
    let sim = run(cfg);
    let f = sim.counters.iter().map(|c| c.aperf).sum::<f64>()
        / sim.counters.iter().map(|c| c.mperf).sum::<f64>()
        * 3500.0;
    assert!(f > 900.0 && f < 3800.0, "HWP powersave busy MHz {f:.0}");
    // performance: EPP 0 and min = max = highest
    let mut cfg = config(hwp_machine(), w, "6.12", 500.0);
    cfg.cpufreq.driver = Some("intel_pstate".into());
    let sim = run(cfg);
    let f = sim.counters.iter().map(|c| c.aperf).sum::<f64>()
        / sim.counters.iter().map(|c| c.mperf).sum::<f64>()
        * 3500.0;
    assert!((f - 3900.0).abs() < 1.0, "HWP performance busy MHz {f:.0}");
    // no_hwp turns HWP off: intel_pstate's own load algorithm (1.25 × turbo × busy) decides
    let w = json!({"name": "periodic", "params": {"tasks": 1, "period_ms": 10, "duty_pct": 20}});
    let mut cfg = config(hwp_machine(), w, "6.12", 500.0);
    cfg.cpufreq.driver = Some("intel_pstate".into());
    cfg.cpufreq.governor = "powersave".into();
    cfg.tunables.insert("intel_pstate.no_hwp".into(), json!(1));
    let sim = run(cfg);
    assert!(sim.hwp.is_none());
    let f = sim.counters.iter().map(|c| c.aperf).sum::<f64>()
        / sim.counters.iter().map(|c| c.mperf).sum::<f64>()
        * 3500.0;
    assert!(
        f > 800.0 && f < 3900.0,
        "intel_pstate powersave busy MHz {f:.0}"
    );
}

#[test]
fn idle_governors_pick_deeper_states_for_longer_idle_and_pay_their_exit_latency() {
    // States POLL 0/0, C1 2/2, C6 85/200 µs. A task sleeping 50 µs between short runs keeps its
    // CPU in shallow states; one sleeping ~9 ms lets it reach C6 and pays 85 µs per wakeup.
    let short = custom(
        json!([{"name": "short", "program": [{"op": "loop", "count": -1, "body": [
        {"op": "run", "cycles": 20_000.0}, {"op": "sleep", "ns": 50_000}]}]}]),
        json!([]),
    );
    let long = json!({"name": "periodic", "params": {"tasks": 1, "period_ms": 10, "duty_pct": 10}});
    for gov in ["menu", "teo"] {
        let mut cfg = config(smp(1, 1, 1_000_000, false), short.clone(), "6.12", 200.0);
        cfg.tunables.insert("cpuidle.governor".into(), json!(gov));
        let sim = run(cfg);
        let rq = &sim.rqs[0];
        let c6 = rq.idle_state_ns[2] as f64 / rq.idle_ns as f64;
        assert!(
            c6 < 0.05,
            "{gov}: short idles spent {:.0} % in C6",
            100.0 * c6
        );
        let lat = mean_wakeup_latency_ns(&sim.tasks[0].stats);
        assert!(lat < 10_000.0, "{gov}: short idles wake in {lat:.0} ns");

        let mut cfg = config(smp(1, 1, 1_000_000, false), long.clone(), "6.12", 500.0);
        cfg.tunables.insert("cpuidle.governor".into(), json!(gov));
        let sim = run(cfg);
        let rq = &sim.rqs[0];
        let c6 = rq.idle_state_ns[2] as f64 / rq.idle_ns as f64;
        assert!(
            c6 > 0.95,
            "{gov}: long idles spent only {:.0} % in C6",
            100.0 * c6
        );
        let lat = mean_wakeup_latency_ns(&sim.tasks[0].stats);
        assert!(
            (lat - 85_000.0).abs() < 5_000.0,
            "{gov}: long-idle wakeups take {lat:.0} ns"
        );
    }
    let mut cfg = config(smp(1, 1, 1_000_000, false), long, "6.12", 10.0);
    cfg.tunables
        .insert("cpuidle.governor".into(), json!("ladder"));
    assert!(schedsim_core::Sim::new(cfg)
        .err()
        .unwrap()
        .contains("menu, teo"));
}

#[test]
fn the_uncore_follows_the_fastest_busy_core_not_an_idle_one() {
    // Two cores with their own P-states (1 and 2 GHz). cpu1 runs at 2 GHz for 20 ms and exits;
    // cpu0 stays busy, capped at 1 GHz. Afterwards the uncore draws its active power at
    // 1000/2000 of the maximum, whatever cpu1's idle domain last delivered.
    let mut m = smp(2, 1, 2_000_000, false);
    let fd = |id: usize| {
        json!({"granularity": "core", "base_khz": 2_000_000, "opps": [
        {"khz": 1_000_000, "uv": 800_000}, {"khz": 2_000_000, "uv": 1_000_000}], "id": id})
    };
    m["freq_domains"] = json!([fd(0), fd(1)]);
    for d in m["freq_domains"].as_array_mut().unwrap() {
        d.as_object_mut().unwrap().remove("id");
    }
    m["cpus"][1]["freq_domain"] = json!(1);
    let w = custom(
        json!([
            {"name": "b", "cpus": [0], "start_cpu": 0, "program": [{"op": "loop", "count": -1,
                "body": [{"op": "run", "cycles": 1.0e6}]}]},
            {"name": "a", "cpus": [1], "start_cpu": 1, "program": [
                {"op": "run", "cycles": 4.0e7}, {"op": "exit"}]}
        ]),
        json!([]),
    );
    let mut cfg = config(m, w, "6.12", 60.0);
    cfg.tunables
        .insert("policy0.scaling_max_freq".into(), json!(1_000_000));
    let sim = run(cfg);
    assert!(
        avg_busy_mhz(&sim, 1) > 1999.0,
        "cpu1 ran at {}",
        avg_busy_mhz(&sim, 1)
    );
    assert!(sim.rqs[1].curr.is_none());
    let p = &sim.cfg.machine.power;
    let expect = p.package_idle_mw + p.uncore_active_mw * 0.5;
    assert!(
        (sim.hw.pkg_uncore_mw[0] - expect).abs() < 1e-6,
        "uncore {} mW, expected {expect} mW",
        sim.hw.pkg_uncore_mw[0]
    );
}

/// intel_pstate.rst, "Turbo P-states Support": after Sandy Bridge a legacy request for any
/// turbo P-state lets the core run at every turbo bin the active cores allow. The governor asks
/// for 3.6 GHz (scaling_max_freq, above the 3.5 GHz base): one busy core gets the 1C bin,
/// 3.9 GHz, four busy cores the 4C bin, 3.7 GHz; with `turbo_grant = "request"` 3.6 GHz is a
/// ceiling, and a request at base is delivered as asked either way.
#[test]
fn a_turbo_request_licenses_the_whole_turbo_range_where_the_part_grants_it() {
    let run_capped = |grant: &str, n: usize, max_khz: u64| {
        let mut m = turbo_machine();
        m["freq_domains"][0]["turbo_grant"] = json!(grant);
        let mut cfg = config(m, hogs(n, true), "6.12", 100.0);
        cfg.cpufreq.driver = Some("intel_cpufreq".into());
        cfg.cpufreq.governor = "performance".into();
        for p in 0..8 {
            cfg.tunables
                .insert(format!("policy{p}.scaling_max_freq"), json!(max_khz));
        }
        run(cfg)
    };
    let near = |sim: &schedsim_core::Sim, mhz: f64| (avg_busy_mhz(sim, 0) - mhz).abs() < 2.0;
    let one = run_capped("range", 1, 3_600_000);
    assert!(near(&one, 3900.0), "{}", avg_busy_mhz(&one, 0));
    let four = run_capped("range", 4, 3_600_000);
    assert!(near(&four, 3700.0), "{}", avg_busy_mhz(&four, 0));
    let ceiling = run_capped("request", 1, 3_600_000);
    assert!(near(&ceiling, 3600.0), "{}", avg_busy_mhz(&ceiling, 0));
    let at_base = run_capped("range", 1, 3_500_000);
    assert!(near(&at_base, 3500.0), "{}", avg_busy_mhz(&at_base, 0));
}

#[test]
fn an_unknown_turbo_grant_is_refused_naming_the_key() {
    let mut m = turbo_machine();
    m["freq_domains"][0]["turbo_grant"] = json!("always");
    let err = refusal(m);
    assert!(
        err.contains("turbo_grant") && err.contains("'request' and 'range'"),
        "{err}"
    );
}

/// A sender on CPU 0 sends one message at 1 ms to a receiver on CPU 1, then both block for
/// good; returns the run after `ms` milliseconds.
fn one_message(tcp: bool, ms: f64) -> schedsim_core::Sim {
    let w = custom(
        json!([
            {"name": "sender", "start_cpu": 0, "cpus": [0], "program": [
                {"op": "run", "cycles": cycles(1.0, 1_000_000)},
                {"op": "send", "chan": "c"}, {"op": "recv", "chan": "never"}]},
            {"name": "receiver", "start_cpu": 1, "cpus": [1], "program": [
                {"op": "recv", "chan": "c"}, {"op": "recv", "chan": "never"}]}
        ]),
        json!([{"name": "c", "tcp": tcp}, {"name": "never"}]),
    );
    run(config(smp(2, 1, 1_000_000, false), w, "6.12", ms))
}

#[test]
fn a_tcp_send_leaves_socket_timers_that_bound_the_sleep_length_and_wake_the_cpu() {
    // HZ=250. The send at 1 ms (jiffy 0) arms the delayed ACK for jiffy 0 + 10 + 1 (44 ms) and
    // the retransmit timer for jiffy 0 + 50 + 1 (204 ms), both on CPU 0.
    let sim = one_message(true, 100.0);
    assert_eq!(sim.sleep_length(0), 104_000_000, "RTO pending at 204 ms");
    assert_eq!(
        sim.sleep_length(1),
        u64::MAX,
        "the receiver's CPU has no timer"
    );
    // Without TCP nothing is armed.
    let plain = one_message(false, 100.0);
    assert_eq!(plain.sleep_length(0), u64::MAX);
    // Over 300 ms CPU 0's governor runs three times: idle entry at 1 ms (sleep length 43 ms:
    // C6, tick stopped), the delayed-ACK interrupt at 44 ms and the RTO interrupt at 204 ms;
    // a plain channel's CPU selects once.
    let selections =
        |s: &schedsim_core::Sim, cpu: usize| -> u64 { s.rqs[cpu].idle_state_usage.iter().sum() };
    let tcp = one_message(true, 300.0);
    let plain = one_message(false, 300.0);
    assert_eq!(selections(&plain, 0) + 2, selections(&tcp, 0));
    assert_eq!(selections(&plain, 1), selections(&tcp, 1));
    assert_eq!(tcp.sleep_length(0), u64::MAX, "both timers fired");
}
