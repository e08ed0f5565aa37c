//! cpufreq in the running simulator: schedutil's frequency choice against its formula, the
//! invariance reference's effect on util and frequency (seed 000 §2.2), the serial
//! short-process chain that frequency invariance speeds up (seed 000's gitsource headline),
//! HWP dynamic boost on IO wakeups, ondemand, conservative and intel_pstate reacting to load.

mod common;

use common::*;
use serde_json::{json, Value};

/// Skylake-client-like: 0.8–3.9 GHz P-states (100 MHz), base 3.5 GHz, turbo bins.
fn machine() -> Value {
    let mut m = smp(4, 2, 3_900_000, true);
    let opps: Vec<Value> = (8..=39)
        .map(|r| {
            let khz = r * 100_000u64;
            json!({"khz": khz, "uv": 700_000 + (khz - 800_000) * 500_000 / 3_100_000})
        })
        .collect();
    m["freq_domains"] = json!([{"granularity": "package", "base_khz": 3_500_000,
        "turbo_khz": [3_900_000, 3_900_000, 3_800_000, 3_700_000], "opps": opps}]);
    m["tsc_khz"] = json!(3_500_000);
    m["hwp"] = json!({"highest_khz": 3_900_000, "guaranteed_khz": 3_500_000, "efficient_khz": 800_000,
                      "lowest_khz": 800_000, "default_epp": 128, "headroom_epp0": 0.5});
    m
}

fn cfg(
    w: Value,
    kernel: &str,
    driver: &str,
    gov: &str,
    inv: &str,
    ms: f64,
) -> schedsim_core::SimConfig {
    let mut c = config(machine(), w, kernel, ms);
    c.cpufreq.driver = Some(driver.into());
    c.cpufreq.governor = gov.into();
    c.cpufreq.invariance = inv.into();
    c
}

fn busy_mhz(sim: &schedsim_core::Sim) -> f64 {
    let a: f64 = sim.counters.iter().map(|c| c.aperf).sum();
    let m: f64 = sim.counters.iter().map(|c| c.mperf).sum();
    3500.0 * a / m
}

/// One task running `duty` of every 10 ms on cpu0.
fn periodic_on_cpu0(duty_ms: f64) -> Value {
    custom(
        json!([{"name": "p", "cpus": [0], "start_cpu": 0, "program": [{"op": "loop", "count": -1, "body": [
        {"op": "run", "cycles": duty_ms * 3.9e6}, {"op": "timer", "period_ns": 10_000_000}]}]}]),
        json!([]),
    )
}

#[test]
fn invariant_schedutil_requests_the_lowest_opp_above_its_formula() {
    // A steady periodic task: at the end, the last request equals the lowest OPP ≥
    // 1.25 × f_max(1C) × util/1024 computed from the rq's utilization at that point, up to the
    // movement of util since the last (rate-limited) update.
    let sim = run(cfg(
        periodic_on_cpu0(3.0),
        "6.12",
        "intel_cpufreq",
        "schedutil",
        "turbo:4",
        2000.0,
    ));
    let p = sim.cpufreq.cpu_policy[0];
    let cur = sim.cpufreq.policies[p].cur_khz;
    let util = sim.cpu_util(0, None, None, true).max(1) as f64;
    let target = 1.25 * 3_900_000.0 * util / 1024.0;
    assert!(
        cur as f64 >= target * 0.85 && (cur as f64) <= target * 1.15 + 100_000.0,
        "request {cur} kHz vs formula {target:.0} kHz (util {util})"
    );
    assert!(cur < 3_900_000 && cur > 800_000);
}

#[test]
fn a_higher_invariance_reference_gives_lower_util_and_frequency() {
    // seed 000 §2.2: freq_max = 1C turbo → util looks smaller → lower requests; base → higher.
    let one_c = run(cfg(
        periodic_on_cpu0(3.0),
        "6.12",
        "intel_cpufreq",
        "schedutil",
        "turbo:1",
        2000.0,
    ));
    let base = run(cfg(
        periodic_on_cpu0(3.0),
        "6.12",
        "intel_cpufreq",
        "schedutil",
        "base",
        2000.0,
    ));
    let u1 = one_c.tasks[0].se.avg.util_avg;
    let ub = base.tasks[0].se.avg.util_avg;
    assert!(u1 < ub, "util with 1C reference {u1} vs base {ub}");
    assert!(
        busy_mhz(&one_c) < busy_mhz(&base),
        "{} vs {}",
        busy_mhz(&one_c),
        busy_mhz(&base)
    );
}

#[test]
fn invariance_speeds_up_a_serial_chain_of_short_processes() {
    // A gitsource-like chain: a shell forks a 2 ms process, waits, again. Non-invariant
    // schedutil (kernel 5.2) restarts every new process on an idle CPU at a low request and
    // climbs by 1.25× per update; invariant schedutil jumps to the right frequency.
    let child = json!({"name": "git", "start": false, "program": [{"op": "run", "cycles": 2.0 * 3.9e6}, {"op": "exit"}]});
    let shell = json!({"name": "sh", "program": [{"op": "loop", "count": 200, "body": [
        {"op": "fork", "task": "git"}, {"op": "wait"}, {"op": "run", "cycles": 0.2 * 3.9e6}]}]});
    let w = custom(json!([shell, child]), json!([]));
    let plain = run(cfg(
        w.clone(),
        "5.2",
        "intel_cpufreq",
        "schedutil",
        "none",
        0.0,
    ));
    let fie = run(cfg(w, "5.2", "intel_cpufreq", "schedutil", "turbo:4", 0.0));
    let (tp, tf) = (plain.now as f64, fie.now as f64);
    assert!(
        tf < 0.85 * tp,
        "elapsed with invariance {tf} vs without {tp}"
    );
}

#[test]
fn hwp_dynamic_boost_raises_the_minimum_on_io_wakeups() {
    // A task doing 0.2 ms of work between 0.3 ms IO waits: with hwp_dynamic_boost the HWP
    // minimum is raised on consecutive iowait wakeups, so it runs faster.
    let io = custom(
        json!([{"name": "io", "cpus": [0], "start_cpu": 0, "program": [{"op": "loop", "count": -1, "body": [
        {"op": "run", "cycles": 0.2 * 3.9e6}, {"op": "io", "ns": 300_000}]}]}]),
        json!([]),
    );
    let mut k = config(machine(), io.clone(), "6.12", 500.0);
    k.kernel.hz = 1000;
    k.cpufreq.driver = Some("intel_pstate".into());
    k.cpufreq.governor = "powersave".into();
    let off = run(k.clone());
    k.tunables
        .insert("intel_pstate.hwp_dynamic_boost".into(), json!(1));
    let on = run(k);
    assert!(
        busy_mhz(&on) > busy_mhz(&off) + 200.0,
        "boost on {} vs off {}",
        busy_mhz(&on),
        busy_mhz(&off)
    );
}

#[test]
fn ondemand_conservative_and_intel_pstate_follow_load() {
    // light (10 %) vs heavy (90 %) load on cpu0: every dynamic governor picks a higher busy
    // frequency for the heavy load
    for (driver, gov) in [
        ("intel_cpufreq", "ondemand"),
        ("intel_cpufreq", "conservative"),
        ("intel_pstate", "powersave"),
    ] {
        let mut light = cfg(periodic_on_cpu0(1.0), "5.2", driver, gov, "none", 1000.0);
        let mut heavy = cfg(periodic_on_cpu0(9.0), "5.2", driver, gov, "none", 1000.0);
        light
            .tunables
            .insert("intel_pstate.no_hwp".into(), json!(1));
        heavy
            .tunables
            .insert("intel_pstate.no_hwp".into(), json!(1));
        let (l, h) = (run(light), run(heavy));
        assert!(
            busy_mhz(&h) > busy_mhz(&l) + 300.0,
            "{driver}/{gov}: heavy {} vs light {}",
            busy_mhz(&h),
            busy_mhz(&l)
        );
    }
}

#[test]
fn cpufreq_tunables_are_checked() {
    let mut c = cfg(
        periodic_on_cpu0(1.0),
        "6.12",
        "intel_cpufreq",
        "ondemand",
        "none",
        10.0,
    );
    c.tunables
        .insert("ondemand.up_threshold".into(), json!(150));
    let e = schedsim_core::Sim::new(c).err().unwrap();
    assert!(e.contains("up_threshold"), "{e}");
    let mut c = cfg(
        periodic_on_cpu0(1.0),
        "6.12",
        "intel_pstate",
        "schedutil",
        "none",
        10.0,
    );
    c.tunables.clear();
    let e = schedsim_core::Sim::new(c).err().unwrap();
    assert!(e.contains("intel_cpufreq"), "{e}");
    let c = cfg(
        periodic_on_cpu0(1.0),
        "6.12",
        "intel_cpufreq",
        "schedutil",
        "turbo:9",
        10.0,
    );
    let e = schedsim_core::Sim::new(c).err().unwrap();
    assert!(e.contains("turbo:9") || e.contains("turbo"), "{e}");
    // a rate limit holds: with a 100 ms rate limit requests change at most every 100 ms
    let mut c = cfg(
        periodic_on_cpu0(5.0),
        "6.12",
        "intel_cpufreq",
        "schedutil",
        "turbo:4",
        1000.0,
    );
    c.tunables
        .insert("schedutil.rate_limit_us".into(), json!(100_000));
    c.trace = true;
    let sim = run(c);
    let text = sim.trace.as_ref().unwrap().to_text(8);
    let changes = text
        .lines()
        .filter(|l| l.contains("cpu_frequency") && l.contains("cpu_id=0"))
        .count();
    assert!(
        changes <= 1 + 10,
        "{changes} frequency changes on cpu0 in 1 s with a 100 ms rate limit"
    );
}

#[test]
fn per_policy_limits_bound_the_requests() {
    // policy0 (cpu0) floored at 3.5 GHz: a light load on cpu0 still runs at ≥ 3.5 GHz
    let mut c = cfg(
        periodic_on_cpu0(1.0),
        "6.12",
        "intel_cpufreq",
        "schedutil",
        "turbo:4",
        500.0,
    );
    c.tunables
        .insert("policy0.scaling_min_freq".into(), json!(3_500_000));
    let sim = run(c);
    assert!(sim.cpufreq.policies[0].cur_khz >= 3_500_000);
    assert!(busy_mhz(&sim) >= 3499.0, "{}", busy_mhz(&sim));
    let mut c = cfg(
        periodic_on_cpu0(1.0),
        "6.12",
        "intel_cpufreq",
        "schedutil",
        "turbo:4",
        10.0,
    );
    c.tunables
        .insert("policy99.scaling_max_freq".into(), json!(2_000_000));
    assert!(schedsim_core::Sim::new(c)
        .err()
        .unwrap()
        .contains("policies 0..8"));
}

#[test]
fn intel_pstate_drivers_start_every_cpu_at_the_lowest_p_state_and_acpi_cpufreq_at_base() {
    // intel_pstate's CPU init writes the minimum P-state (intel_pstate_set_min_pstate; passive
    // mode sets policy->cur = cpuinfo.min_freq to match); acpi-cpufreq leaves the firmware's
    // setting, taken as the 3.5 GHz base. cpu7 never runs a task, so it keeps its first request.
    let w = periodic_on_cpu0(1.0);
    for (driver, want_khz) in [
        ("intel_cpufreq", 800_000),
        ("intel_pstate", 800_000),
        ("acpi-cpufreq", 3_500_000),
    ] {
        let gov = if driver == "intel_pstate" {
            "powersave"
        } else {
            "schedutil"
        };
        let mut c = cfg(w.clone(), "5.2", driver, gov, "none", 50.0);
        c.machine.hwp = None;
        let sim = run(c);
        assert_eq!(sim.hw.cpu_req_khz[7], want_khz, "{driver}");
    }
}

/// One task on cpu0 running `share` of every `period_ms` at 3.9 GHz.
fn periodic_share(period_ms: f64, share: f64) -> Value {
    custom(
        json!([{"name": "p", "cpus": [0], "start_cpu": 0, "program": [{"op": "loop", "count": -1, "body": [
        {"op": "run", "cycles": share * period_ms * 3.9e6},
        {"op": "timer", "period_ns": (period_ms * 1e6) as u64}]}]}]),
        json!([]),
    )
}

#[test]
fn idles_shorter_than_a_tick_keep_the_cpu_busy_for_schedutil() {
    // Since v4.17 menu keeps the tick for an idle it predicts shorter than a tick (4 ms at
    // HZ=250), and tick_nohz_idle_stop_tick() is then not called, so ts->idle_calls does not
    // move and sugov_cpu_is_busy() sees a CPU that never idled: non-invariant schedutil may
    // raise its request but not lower it. A task busy 60 % of every period at 3.9 GHz: with
    // 40 ms periods (8-16 ms idles, the tick stops) the request settles where the CPU is 80 %
    // busy, 1.25 · 0.6 · 3.9 GHz ≈ 2.9 GHz; with 1 ms periods (0.2-0.4 ms idles) it keeps the
    // top it climbed to while the CPU was saturated at the start.
    let run_with = |period_ms: f64| {
        run(cfg(
            periodic_share(period_ms, 0.6),
            "5.2",
            "intel_cpufreq",
            "schedutil",
            "none",
            3000.0,
        ))
    };
    let short = run_with(1.0);
    let long = run_with(40.0);
    let entries = |s: &schedsim_core::Sim| s.rqs[0].idle_state_usage.iter().sum::<u64>();
    assert!(
        short.rqs[0].idle_calls * 3 < entries(&short),
        "short idles: {} idle_calls for {} idle-state selections",
        short.rqs[0].idle_calls,
        entries(&short)
    );
    assert!(
        long.rqs[0].idle_calls >= 70,
        "long idles: {} idle_calls in 75 periods",
        long.rqs[0].idle_calls
    );
    assert!(
        busy_mhz(&short) > 3700.0,
        "short: {:.0} MHz",
        busy_mhz(&short)
    );
    assert!(
        (2600.0..3400.0).contains(&busy_mhz(&long)),
        "long: {:.0} MHz",
        busy_mhz(&long)
    );
}
