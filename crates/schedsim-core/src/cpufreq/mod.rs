//! cpufreq: policies and governors (spec/kernel.md §3–§5). The fixed-frequency governors
//! `performance` (policy max) and `powersave` (policy min) exist today; the scheduler already
//! calls [`crate::engine::Sim::cpufreq_update_util`] where the kernel calls
//! `cpufreq_update_util`, so the dynamic governors plug in there.

pub mod dbs;
pub mod intel_pstate;
pub mod invariance;
pub mod policy;
pub mod schedutil;

/// A governor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Governor {
    Performance,
    Powersave,
}

pub const GOVERNORS: &[&str] = &["performance", "powersave"];

impl Governor {
    pub fn parse(name: &str) -> Result<Governor, String> {
        match name {
            "performance" => Ok(Governor::Performance),
            "powersave" => Ok(Governor::Powersave),
            _ => Err(format!(
                "cpufreq.governor = '{name}': allowed governors are {}",
                GOVERNORS.join(", ")
            )),
        }
    }
}

/// `SCHED_CPUFREQ_IOWAIT`: the enqueued task was in iowait.
pub const SCHED_CPUFREQ_IOWAIT: u32 = 1;

/// Frequency invariance source (spec/kernel.md §2). Only `none` exists until the invariance
/// work lands: `arch_scale_freq_capacity` then stays 1024.
pub fn parse_invariance(s: &str) -> Result<(), String> {
    match s {
        "none" => Ok(()),
        _ => Err(format!(
            "cpufreq.invariance = '{s}': allowed values are none (turbo:N, base, max, amd-midpoint and cpufreq come with frequency invariance)"
        )),
    }
}

/// cpufreq drivers by their kernel names.
pub const DRIVERS: &[&str] = &[
    "intel_pstate",
    "intel_cpufreq",
    "acpi-cpufreq",
    "amd-pstate",
    "cpufreq-dt",
    "qcom-cpufreq-hw",
    "scmi",
];

/// What the driver choice means for the run: whether HWP is in use.
#[derive(Clone, Debug, Default)]
pub struct CpufreqSetup {
    pub hwp: bool,
}

/// cpufreq tunables accepted in `tunables` (sysfs / boot-parameter names).
pub const CPUFREQ_TUNABLES: &[&str] = &["intel_pstate.no_hwp", "cpuidle.governor"];

impl CpufreqSetup {
    /// Check the driver, governor and cpufreq tunables against the machine.
    pub fn new(cfg: &crate::config::SimConfig) -> Result<Self, String> {
        let driver = cfg.cpufreq.driver.as_deref().unwrap_or("");
        if !driver.is_empty() && !DRIVERS.contains(&driver) {
            return Err(format!(
                "cpufreq.driver = '{driver}': allowed drivers are {}",
                DRIVERS.join(", ")
            ));
        }
        let mut no_hwp = false;
        for (k, v) in &cfg.tunables {
            if k == "intel_pstate.no_hwp" {
                no_hwp = match v {
                    serde_json::Value::Bool(b) => *b,
                    serde_json::Value::Number(n)
                        if n.as_u64() == Some(0) || n.as_u64() == Some(1) =>
                    {
                        n.as_u64() == Some(1)
                    }
                    _ => return Err(format!("tunable intel_pstate.no_hwp = {v}: allowed 0 or 1")),
                };
            }
        }
        let hwp = driver == "intel_pstate" && cfg.machine.hwp.is_some() && !no_hwp;
        if driver == "intel_pstate" && !hwp && cfg.cpufreq.governor == "powersave" {
            return Err(
                "intel_pstate powersave without HWP (the active-mode load algorithm) is not modelled yet; use the performance governor or an HWP machine"
                    .into(),
            );
        }
        Ok(CpufreqSetup { hwp })
    }
}
