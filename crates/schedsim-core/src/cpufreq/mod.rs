//! cpufreq (spec/kernel.md §2–§5): policies, drivers and governors (performance, powersave,
//! schedutil, ondemand, conservative, intel_pstate active with and without HWP, HWP dynamic
//! boost, passive intel_cpufreq), frequency invariance. [`gov`] wires the decision modules to
//! the simulator.

pub mod dbs;
pub mod gov;
pub mod intel_pstate;
pub mod invariance;
pub mod policy;
pub mod schedutil;

/// `SCHED_CPUFREQ_IOWAIT`: the enqueued task was in iowait.
pub const SCHED_CPUFREQ_IOWAIT: u32 = 1;

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
