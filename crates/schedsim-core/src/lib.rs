//! schedsim-core: a deterministic discrete-event simulator of a Linux machine's CPU scheduling
//! and power management — the fair scheduler (CFS and EEVDF) with PELT, wakeup placement and
//! load balancing over scheduling domains, frequency domains with turbo, idle states, power
//! and energy — driven by task programs and benchmark models.
//!
//! The core is pure Rust. It takes a [`config::SimConfig`] (JSON from the Python front end)
//! and returns the result JSON of DESIGN "Interfaces". Same inputs and seed give the same
//! bytes (apart from the host timing fields `sim.wall_s` and `sim.events_per_s`).

pub mod config;
pub mod cpufreq;
pub mod cpuidle;
pub mod engine;
pub mod hw;
pub mod metrics;
pub mod sched;
pub mod sim;
pub mod timer;
pub mod trace;
pub mod workload;

use std::time::Instant;

pub use config::SimConfig;
pub use engine::Sim;

/// Run one simulation from its JSON configuration; returns the result JSON.
pub fn run_json(config_json: &str) -> Result<String, String> {
    let cfg: SimConfig =
        serde_json::from_str(config_json).map_err(|e| format!("invalid run configuration: {e}"))?;
    run(cfg)
}

/// Check a run configuration without running it: everything the core checks when it builds
/// a simulation (machine, kernel profile and features, tunables, cpufreq, cgroups, workload
/// parameters). Returns, as JSON, the headline metric the configured workload will report
/// (`{"primary": {"name", "higher_is_better"}}`): it can depend on the parameters (schbench's
/// `version`, whether an rt-app file has timers).
pub fn check_json(config_json: &str) -> Result<String, String> {
    let cfg: SimConfig =
        serde_json::from_str(config_json).map_err(|e| format!("invalid run configuration: {e}"))?;
    let sim = Sim::new(cfg)?;
    let m = sim.workload.metrics(&sim);
    let out = serde_json::json!({
        "primary": {"name": m.primary, "higher_is_better": m.higher_is_better},
    });
    Ok(out.to_string())
}

/// Run one simulation.
pub fn run(cfg: SimConfig) -> Result<String, String> {
    let mut sim = Sim::new(cfg)?;
    let start = Instant::now();
    sim.run()?;
    let wall = start.elapsed().as_secs_f64();
    Ok(metrics::result_json(&sim, wall))
}

/// The workload generators as JSON (for `schedsim workloads`).
pub fn workloads_json() -> String {
    serde_json::to_string(&workload::registry()).expect("registry serialises")
}

/// The crate version.
pub fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// A hash of the core's sources and data at build time: two builds with the same fingerprint
/// simulate identically.
pub fn model_fingerprint() -> &'static str {
    env!("SCHEDSIM_MODEL_FINGERPRINT")
}
