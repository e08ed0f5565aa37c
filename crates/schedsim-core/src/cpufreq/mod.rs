//! cpufreq: policies and governors (spec/kernel.md §3–§5). The fixed-frequency governors
//! `performance` (policy max) and `powersave` (policy min) exist today; the scheduler already
//! calls [`crate::engine::Sim::cpufreq_update_util`] where the kernel calls
//! `cpufreq_update_util`, so the dynamic governors plug in there.

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
