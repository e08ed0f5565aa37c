//! The scheduler: tasks, runqueues, the fair class (CFS and EEVDF flavours) with PELT, wakeup
//! placement, load balancing over scheduling domains (spec/kernel.md §1, §8).
pub mod balance;
pub mod balance_load;
pub mod bandwidth;
pub mod cgroup;
pub mod core;
pub mod dl_server;
pub mod domain;
pub mod eas;
pub mod fair;
pub mod pelt;
pub mod rq;
pub mod rt;
pub mod rt_bandwidth;
pub mod select;
pub mod task;
pub mod uclamp;

use crate::sim::profile::KernelProfile;
use std::collections::BTreeMap;

/// Scheduler tunables in the kernel's names, already scaled by `get_update_sysctl_factor()`.
#[derive(Clone, Debug)]
pub struct Tunables {
    pub sched_latency_ns: u64,
    pub sched_min_granularity_ns: u64,
    pub sched_wakeup_granularity_ns: u64,
    pub sched_nr_latency: u64,
    pub sched_base_slice_ns: u64,
    pub sched_migration_cost_ns: i64,
    pub sched_nr_migrate: u32,
    /// `sched_cfs_bandwidth_slice_us`: runtime a cfs_rq takes from its group's pool at once.
    pub sched_cfs_bandwidth_slice_us: u64,
    /// `sched_energy_aware` (v5.0): 0 turns Energy Aware Scheduling off where it would be on.
    pub sched_energy_aware: bool,
    /// `sched_rt_runtime_us` (-1: RT tasks are never throttled) and `sched_rt_period_us`:
    /// RT throttling before v6.12.
    pub sched_rt_runtime_us: i64,
    pub sched_rt_period_us: u64,
    /// The fair server's `runtime` and `period` (debugfs `sched/fair_server/cpuN/`, ns;
    /// v6.12+). A runtime of 0 turns the server off.
    pub fair_server_runtime_ns: u64,
    pub fair_server_period_ns: u64,
    /// `sched_util_clamp_min`, `sched_util_clamp_max` (v5.3+): system-wide limits on every
    /// task's effective clamps; `sched_util_clamp_min_rt_default` (v5.10+): RT tasks' default
    /// `uclamp_min` request.
    pub sched_util_clamp_min: u64,
    pub sched_util_clamp_max: u64,
    pub sched_util_clamp_min_rt_default: u64,
}

const TUNABLE_NAMES: &[&str] = &[
    "sched_latency_ns",
    "sched_min_granularity_ns",
    "sched_wakeup_granularity_ns",
    "sched_base_slice_ns",
    "sched_migration_cost_ns",
    "sched_nr_migrate",
    "sched_tunable_scaling",
    "sched_cfs_bandwidth_slice_us",
    "sched_energy_aware",
    "sched_rt_runtime_us",
    "sched_rt_period_us",
    "fair_server_runtime_ns",
    "fair_server_period_ns",
    "sched_util_clamp_min",
    "sched_util_clamp_max",
    "sched_util_clamp_min_rt_default",
];

impl Tunables {
    /// Defaults of the profile on `nr_cpus` CPUs, then user overrides. Every key must be known.
    pub fn new(
        prof: &KernelProfile,
        nr_cpus: usize,
        overrides: &BTreeMap<String, serde_json::Value>,
    ) -> Result<Self, String> {
        let mut scaling = 1u64;
        for (k, v) in overrides {
            if crate::cpufreq::gov::is_cpufreq_tunable(k) {
                continue;
            }
            if !TUNABLE_NAMES.contains(&k.as_str()) {
                return Err(format!(
                    "unknown tunable '{k}'; known tunables: {}, {}",
                    TUNABLE_NAMES.join(", "),
                    crate::cpufreq::gov::CPUFREQ_TUNABLES.join(", ")
                ));
            }
            if k == "sched_tunable_scaling" {
                scaling = int_value(k, v, 0, 2)? as u64;
            }
        }
        let cpus = nr_cpus.min(8) as u64;
        let factor = match scaling {
            0 => 1,
            2 => cpus,
            _ => 1 + (63 - cpus.leading_zeros() as u64),
        };
        let mut t = Tunables {
            sched_latency_ns: 6_000_000 * factor,
            sched_min_granularity_ns: 750_000 * factor,
            sched_wakeup_granularity_ns: 1_000_000 * factor,
            sched_nr_latency: 8,
            sched_base_slice_ns: prof.base_slice_ns * factor,
            sched_migration_cost_ns: 500_000,
            sched_nr_migrate: 32,
            sched_cfs_bandwidth_slice_us: 5000,
            sched_energy_aware: true,
            sched_rt_runtime_us: 950_000,
            sched_rt_period_us: 1_000_000,
            fair_server_runtime_ns: 50_000_000,
            fair_server_period_ns: 1_000_000_000,
            sched_util_clamp_min: 1024,
            sched_util_clamp_max: 1024,
            sched_util_clamp_min_rt_default: 1024,
        };
        for (k, v) in overrides {
            match k.as_str() {
                "sched_latency_ns" => {
                    t.sched_latency_ns = int_value(k, v, 100_000, 1_000_000_000)? as u64
                }
                "sched_min_granularity_ns" => {
                    t.sched_min_granularity_ns = int_value(k, v, 100_000, 1_000_000_000)? as u64
                }
                "sched_wakeup_granularity_ns" => {
                    t.sched_wakeup_granularity_ns = int_value(k, v, 0, 1_000_000_000)? as u64
                }
                "sched_base_slice_ns" => {
                    t.sched_base_slice_ns = int_value(k, v, 100_000, 100_000_000)? as u64
                }
                "sched_migration_cost_ns" => {
                    t.sched_migration_cost_ns = int_value(k, v, -1, 1_000_000_000)?
                }
                "sched_nr_migrate" => t.sched_nr_migrate = int_value(k, v, 1, 1_000_000)? as u32,
                "sched_cfs_bandwidth_slice_us" => {
                    t.sched_cfs_bandwidth_slice_us = int_value(k, v, 1, 1_000_000)? as u64
                }
                "sched_energy_aware" => t.sched_energy_aware = flag_value(k, v)?,
                "sched_rt_runtime_us" => {
                    t.sched_rt_runtime_us = int_value(k, v, -1, i32::MAX as i64)?
                }
                "sched_rt_period_us" => {
                    t.sched_rt_period_us = int_value(k, v, 1, i32::MAX as i64)? as u64
                }
                // sched_fair_server_write(): period within 100 us..~4.2 s (1 << 22 us)
                "fair_server_period_ns" => {
                    t.fair_server_period_ns = int_value(k, v, 100_000, (1 << 22) * 1000)? as u64
                }
                "fair_server_runtime_ns" => {
                    t.fair_server_runtime_ns = int_value(k, v, 0, (1 << 22) * 1000)? as u64
                }
                "sched_util_clamp_min" => t.sched_util_clamp_min = int_value(k, v, 0, 1024)? as u64,
                "sched_util_clamp_max" => t.sched_util_clamp_max = int_value(k, v, 0, 1024)? as u64,
                "sched_util_clamp_min_rt_default" => {
                    t.sched_util_clamp_min_rt_default = int_value(k, v, 0, 1024)? as u64
                }
                _ => {}
            }
        }
        // the uclamp sysctls came with v5.3 (e8f14172c6b1), the RT default with v5.10
        // (13685c4a08fc)
        for (k, since) in [
            ("sched_util_clamp_min", (5, 3)),
            ("sched_util_clamp_max", (5, 3)),
            ("sched_util_clamp_min_rt_default", (5, 10)),
        ] {
            if overrides.contains_key(k) && prof.version < since {
                return Err(format!(
                    "tunable {k}: needs kernel {}.{} or later (this run's kernel is {}.{})",
                    since.0, since.1, prof.version.0, prof.version.1
                ));
            }
        }
        if t.sched_util_clamp_min > t.sched_util_clamp_max {
            return Err(format!(
                "tunable sched_util_clamp_min = {}: must not exceed sched_util_clamp_max = {}",
                t.sched_util_clamp_min, t.sched_util_clamp_max
            ));
        }
        for k in ["fair_server_runtime_ns", "fair_server_period_ns"] {
            if overrides.contains_key(k) && !prof.fair_server() {
                return Err(format!(
                    "tunable {k}: the fair server exists from kernel 6.12 (this run's kernel is \
                     {}.{}); before 6.12 set sched_rt_runtime_us and sched_rt_period_us",
                    prof.version.0, prof.version.1
                ));
            }
        }
        // sched_rt_global_validate() and sched_fair_server_write() refuse a runtime above the
        // period
        if t.sched_rt_runtime_us > t.sched_rt_period_us as i64 {
            return Err(format!(
                "tunable sched_rt_runtime_us = {}: must not exceed sched_rt_period_us = {} \
                 (or be -1 for no RT throttling)",
                t.sched_rt_runtime_us, t.sched_rt_period_us
            ));
        }
        if t.fair_server_runtime_ns > t.fair_server_period_ns {
            return Err(format!(
                "tunable fair_server_runtime_ns = {}: must not exceed fair_server_period_ns = {}",
                t.fair_server_runtime_ns, t.fair_server_period_ns
            ));
        }
        if overrides.contains_key("sched_latency_ns")
            || overrides.contains_key("sched_min_granularity_ns")
        {
            t.sched_nr_latency = t.sched_latency_ns.div_ceil(t.sched_min_granularity_ns);
        }
        Ok(t)
    }
}

/// A 0/1 sysctl: `0`, `1`, `true` or `false`.
fn flag_value(key: &str, v: &serde_json::Value) -> Result<bool, String> {
    match v.as_bool() {
        Some(b) => Ok(b),
        None => int_value(key, v, 0, 1)
            .map(|n| n == 1)
            .map_err(|e| format!("{e} (or true/false)")),
    }
}

fn int_value(key: &str, v: &serde_json::Value, lo: i64, hi: i64) -> Result<i64, String> {
    let n = v
        .as_i64()
        .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
        .ok_or_else(|| format!("tunable {key} = {v}: expected an integer in {lo}..={hi}"))?;
    if n < lo || n > hi {
        return Err(format!("tunable {key} = {n}: allowed range {lo}..={hi}"));
    }
    Ok(n)
}
