//! Engine throughput on the DESIGN scenarios built in Rust (no Python): events per second and
//! simulated seconds per wall second. `cargo bench -p schedsim-core` (release profile).
//! `schedsim bench` reports the same scenarios through the Python front end.

use std::time::Instant;

use serde_json::{json, Value};

fn machine(cores: usize, threads: usize, khz: u64) -> Value {
    let mut cpus = Vec::new();
    for t in 0..threads {
        for c in 0..cores {
            cpus.push(
                json!({"id": t * cores + c, "core": c, "cluster": 0, "llc": 0, "node": 0,
                             "package": 0, "core_type": 0, "freq_domain": 0}),
            );
        }
    }
    json!({
        "name": "bench", "arch": "x86", "cpus": cpus,
        "core_types": [{"name": "core", "capacity_dmips_mhz": 1024, "smt_share": [1.0, 0.62],
                        "kernel_cycles": {"context_switch": 6000.0, "wakeup": 4000.0, "migrate": 2000.0}}],
        "freq_domains": [{"granularity": "package", "base_khz": 3_500_000,
                          "turbo_khz": [3_900_000, 3_900_000, 3_800_000, 3_700_000],
                          "opps": [{"khz": 800_000, "uv": 700_000}, {"khz": 3_500_000, "uv": 1_100_000},
                                   {"khz": khz, "uv": 1_200_000}]}],
        "idle_states": {"default": [
            {"name": "POLL", "exit_latency_us": 0, "target_residency_us": 0, "turbo_active": true},
            {"name": "C1", "exit_latency_us": 2, "target_residency_us": 2, "turbo_active": true},
            {"name": "C6", "exit_latency_us": 85, "target_residency_us": 200}]},
        "power": {"model": "parametric", "package_idle_mw": 2000.0, "c_eff": 4000.0},
        "tsc_khz": 3_500_000
    })
}

fn pingpong() -> Value {
    let mut tasks = Vec::new();
    let mut chans = Vec::new();
    for i in 0..32 {
        let (a2b, b2a) = (format!("a2b{i}"), format!("b2a{i}"));
        chans.push(json!({"name": a2b, "capacity": 1}));
        chans.push(json!({"name": b2a, "capacity": 1}));
        tasks.push(json!({"name": format!("ping{i}"), "program": [{"op": "loop", "count": -1, "body": [
            {"op": "run", "cycles": 20000.0}, {"op": "send", "chan": a2b}, {"op": "recv", "chan": b2a}]}]}));
        tasks.push(json!({"name": format!("pong{i}"), "program": [{"op": "loop", "count": -1, "body": [
            {"op": "recv", "chan": a2b}, {"op": "run", "cycles": 20000.0}, {"op": "send", "chan": b2a}]}]}));
    }
    json!({"name": "custom", "custom": {"tasks": tasks, "channels": chans}})
}

fn main() {
    let cfg = json!({
        "machine": machine(4, 2, 3_900_000),
        "kernel": {"version": "6.12"},
        "workload": pingpong(),
        "duration_ns": 2_000_000_000u64,
    });
    let t0 = Instant::now();
    let out = schedsim_core::run_json(&cfg.to_string()).expect("bench runs");
    let wall = t0.elapsed().as_secs_f64();
    let v: Value = serde_json::from_str(&out).unwrap();
    let events = v["sim"]["events"].as_f64().unwrap();
    println!(
        "pingpong-8cpu-64: {:.0} events, {:.3} s wall, {:.2} M events/s, {:.2} simulated s per wall s, {} context switches",
        events,
        wall,
        events / wall / 1e6,
        v["sim"]["simulated_s"].as_f64().unwrap() / wall,
        v["sched"]["context_switches"]
    );
}
