//! The run configuration handed to the core: a fully resolved machine, a kernel profile, the
//! cpufreq set-up, the workload and the run options.
//!
//! Python owns presets, defaults and validation of user input (`python/schedsim/config.py`) and
//! sends this structure as JSON; the core checks the cross-references it relies on
//! ([`SimConfig::validate`]) and never falls back to a silent default.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One simulation.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimConfig {
    pub machine: MachineSpec,
    #[serde(default)]
    pub kernel: KernelSpec,
    #[serde(default)]
    pub cpufreq: CpufreqSpec,
    pub workload: WorkloadSpec,
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Stop the run at this simulated time (ns). Open-ended workloads need it.
    #[serde(default)]
    pub duration_ns: Option<u64>,
    /// Record a trace.
    #[serde(default)]
    pub trace: bool,
    /// The trace's form in the result: `ftrace` text (`trace`), Perfetto protobuf
    /// (`trace_perfetto`, base64) or Chrome JSON (`trace_chrome`).
    #[serde(default)]
    pub trace_format: TraceFormat,
    /// Keep per-interval turbostat samples every this many ns (0 = none).
    #[serde(default)]
    pub sample_interval_ns: u64,
    /// Named tunables in the kernel's sysfs/sysctl names, e.g. `sched_migration_cost_ns`.
    #[serde(default)]
    pub tunables: BTreeMap<String, serde_json::Value>,
    /// cgroup v2 task groups below the root, parents before children.
    #[serde(default)]
    pub cgroups: Vec<CgroupSpec>,
}

/// The form of a recorded trace.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TraceFormat {
    /// tracefs text (spec/ecosystem.md §1.1).
    #[default]
    Ftrace,
    /// Perfetto's `Trace` protobuf (spec/ecosystem.md §1.3).
    Perfetto,
    /// The Trace Event Format's JSON object (spec/ecosystem.md §1.2).
    Chrome,
}

/// One cgroup v2 directory's cpu controller files (spec/kernel.md §7.1, §8.6).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CgroupSpec {
    /// `cg1` or nested `a/b` (no leading slash); the parent must be listed first.
    pub path: String,
    /// `cpu.weight`, 1..=10000 (100 ⇔ 1024 shares).
    #[serde(default = "default_cpu_weight")]
    pub weight: u32,
    /// `cpu.max` quota in µs; `None` = `max` (no limit).
    #[serde(default)]
    pub quota_us: Option<u64>,
    /// `cpu.max` period in µs.
    #[serde(default = "default_cfs_period_us")]
    pub period_us: u64,
    /// `cpu.max.burst` in µs.
    #[serde(default)]
    pub burst_us: u64,
    /// `cpu.uclamp.min` / `cpu.uclamp.max` in percent.
    #[serde(default)]
    pub uclamp_min: f64,
    #[serde(default = "default_uclamp_max")]
    pub uclamp_max: f64,
}

impl CgroupSpec {
    /// A group with every cpu controller file at its default (what `mkdir` creates).
    pub fn new(path: &str) -> Self {
        CgroupSpec {
            path: path.to_string(),
            weight: default_cpu_weight(),
            quota_us: None,
            period_us: default_cfs_period_us(),
            burst_us: 0,
            uclamp_min: 0.0,
            uclamp_max: default_uclamp_max(),
        }
    }
}

fn default_cpu_weight() -> u32 {
    100
}
fn default_cfs_period_us() -> u64 {
    100_000
}
fn default_uclamp_max() -> f64 {
    100.0
}

/// `max_cfs_runtime`: quota + burst may not exceed `MAX_BW` µs (2^44 − 1).
const MAX_CFS_RUNTIME_US: u64 = (1 << 44) - 1;

impl CgroupSpec {
    /// `tg_set_cfs_bandwidth()` limits and the cpu controller's ranges.
    pub fn validate(&self, known: &[&str]) -> Result<(), String> {
        let p = &self.path;
        let bad_path = p.is_empty()
            || p.starts_with('/')
            || p.ends_with('/')
            || p.split('/').any(|c| c.is_empty() || c == "." || c == "..");
        if bad_path {
            return Err(format!(
                "cgroups: path '{p}': expected a relative path like 'cg1' or 'a/b' (the root group cannot be configured)"
            ));
        }
        if known.contains(&p.as_str()) {
            return Err(format!("cgroups: path '{p}' defined twice"));
        }
        if let Some((parent, _)) = p.rsplit_once('/') {
            if !known.contains(&parent) {
                return Err(format!(
                    "cgroups: '{p}': parent '{parent}' must be defined before it"
                ));
            }
        }
        if !(1..=10000).contains(&self.weight) {
            return Err(format!(
                "cgroups '{p}': weight = {}: cpu.weight allows 1..=10000",
                self.weight
            ));
        }
        if !(1000..=1_000_000).contains(&self.period_us) {
            return Err(format!(
                "cgroups '{p}': period_us = {}: the cpu.max period must be 1000..=1000000 µs",
                self.period_us
            ));
        }
        match self.quota_us {
            Some(q) if q < 1000 => {
                return Err(format!(
                    "cgroups '{p}': quota_us = {q}: the cpu.max quota must be at least 1000 µs (or max)"
                ))
            }
            Some(q) if self.burst_us > q || q + self.burst_us > MAX_CFS_RUNTIME_US => {
                return Err(format!(
                    "cgroups '{p}': burst_us = {}: cpu.max.burst must be at most the quota ({q} µs)",
                    self.burst_us
                ))
            }
            None if self.burst_us > 0 => {
                return Err(format!(
                    "cgroups '{p}': burst_us = {}: cpu.max.burst needs a quota",
                    self.burst_us
                ))
            }
            _ => {}
        }
        let pct = |v: f64| (0.0..=100.0).contains(&v);
        if !pct(self.uclamp_min) || !pct(self.uclamp_max) || self.uclamp_min > self.uclamp_max {
            return Err(format!(
                "cgroups '{p}': uclamp_min = {}, uclamp_max = {}: percentages 0..=100 with min <= max",
                self.uclamp_min, self.uclamp_max
            ));
        }
        Ok(())
    }
}

fn default_seed() -> u64 {
    1
}

/// Kernel profile: the version picks versioned behaviour; `features` overrides single
/// `SCHED_FEAT`-like toggles by name (see [`crate::sim::profile`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelSpec {
    #[serde(default = "default_kernel")]
    pub version: String,
    /// CONFIG_HZ.
    #[serde(default = "default_hz")]
    pub hz: u32,
    #[serde(default)]
    pub features: BTreeMap<String, serde_json::Value>,
}

fn default_kernel() -> String {
    "6.12".to_string()
}
fn default_hz() -> u32 {
    250
}

impl Default for KernelSpec {
    fn default() -> Self {
        KernelSpec {
            version: default_kernel(),
            hz: default_hz(),
            features: BTreeMap::new(),
        }
    }
}

/// cpufreq driver, governor and invariance.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpufreqSpec {
    #[serde(default = "default_governor")]
    pub governor: String,
    #[serde(default)]
    pub driver: Option<String>,
    /// `none`, `turbo:N`, `base`, `max`, `amd-midpoint`, `cpufreq`.
    #[serde(default = "default_invariance")]
    pub invariance: String,
}

fn default_coordination() -> String {
    "max-active".to_string()
}

fn default_turbo_grant() -> String {
    "request".to_string()
}

fn default_governor() -> String {
    "performance".to_string()
}
fn default_invariance() -> String {
    "none".to_string()
}

impl Default for CpufreqSpec {
    fn default() -> Self {
        CpufreqSpec {
            governor: default_governor(),
            driver: None,
            invariance: default_invariance(),
        }
    }
}

/// The workload: a named generator with parameters, or explicit task programs.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSpec {
    pub name: String,
    #[serde(default)]
    pub params: BTreeMap<String, serde_json::Value>,
    /// Explicit programs (the Python builder); used when `name == "custom"`.
    #[serde(default)]
    pub custom: Option<crate::workload::spec::CustomWorkload>,
    /// Run one copy of the workload in each of these cgroups (paths from
    /// [`SimConfig::cgroups`]); empty = one copy in the root group.
    #[serde(default)]
    pub cgroups: Vec<String>,
}

/// A machine with every CPU listed. Python expands the compact preset TOML into this.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineSpec {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// `x86`, `arm64` or `power`.
    pub arch: String,
    /// Logical CPUs in Linux numbering order (`cpus[i].id == i`).
    pub cpus: Vec<CpuSpec>,
    pub core_types: Vec<CoreTypeSpec>,
    pub freq_domains: Vec<FreqDomainSpec>,
    /// NUMA distance matrix (node × node); empty means one node.
    #[serde(default)]
    pub numa_distance: Vec<Vec<u32>>,
    /// Idle states, shallowest first (state 0 is the polling/WFI state), per core type name;
    /// a core type without an entry uses `"default"`.
    #[serde(default)]
    pub idle_states: BTreeMap<String, Vec<IdleStateSpec>>,
    pub power: PowerSpec,
    /// TSC / MPERF reference frequency (kHz); on x86 the base (P1) frequency.
    pub tsc_khz: u64,
    /// Package C-states, shallowest first; a package enters the deepest one whose
    /// `min_core_state` every core of the package has reached.
    #[serde(default)]
    pub package_idle_states: Vec<PackageIdleStateSpec>,
    /// Hardware P-states (Intel HWP), when the part has them.
    #[serde(default)]
    pub hwp: Option<HwpSpec>,
    /// The storage device the file-system benchmarks write to, when the preset describes it;
    /// without it they use their own measured defaults.
    #[serde(default)]
    pub storage: Option<StorageSpec>,
}

/// The machine's storage device, as the I/O benchmarks see it.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StorageSpec {
    /// Time one fsync/fdatasync of freshly written file data spends on the device (the data
    /// write and the cache flush or journal commit it forces), µs: the default of dbench's
    /// `flush_io_us` and pgbench's `wal_flush_us`.
    pub fsync_us: f64,
}

/// A package C-state (PC2..PC10 on Intel, cluster-off on Arm).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PackageIdleStateSpec {
    pub name: String,
    /// Index of the core idle state (in each core type's list) every core must be in, or deeper.
    pub min_core_state: usize,
    /// Package (uncore) power in this state (mW), replacing `package_idle_mw`.
    pub power_mw: f64,
    /// Extra exit latency a wakeup pays when the package was in this state, on top of the core
    /// state's `core_exit_latency_us`.
    #[serde(default)]
    pub exit_latency_us: u64,
}

/// HWP capabilities and the parameters of the autonomous-selection stand-in (Intel does not
/// publish the algorithm; see `cpufreq::hwp`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HwpSpec {
    /// HWP_CAPABILITIES in kHz: highest (1-core turbo), guaranteed (P1), most efficient, lowest.
    pub highest_khz: u64,
    pub guaranteed_khz: u64,
    pub efficient_khz: u64,
    pub lowest_khz: u64,
    /// EPP the firmware leaves in HWP_REQUEST (0x80 = balance_performance).
    #[serde(default = "default_epp")]
    pub default_epp: u8,
    /// How often the hardware re-evaluates its choice (ns).
    #[serde(default = "default_hwp_sample")]
    pub sample_ns: u64,
    /// Target frequency = busy fraction × highest × (1 + headroom), with the headroom moving
    /// linearly from `headroom_epp0` at EPP 0 to `headroom_epp255` at EPP 255.
    #[serde(default)]
    pub headroom_epp0: f64,
    #[serde(default)]
    pub headroom_epp255: f64,
    /// The activity window (`HWP_REQUEST` bits 41:32, left 0 by Linux: the hardware's own
    /// choice): the time constant (ns) of the moving average of each CPU's busy fraction that
    /// the target follows; 0 = the last sample alone.
    #[serde(default)]
    pub activity_window_ns: u64,
    /// Largest frequency step per sample up and down (kHz); 0 = unlimited.
    #[serde(default)]
    pub ramp_up_khz: u64,
    #[serde(default)]
    pub ramp_down_khz: u64,
}

fn default_epp() -> u8 {
    0x80
}
fn default_hwp_sample() -> u64 {
    1_000_000
}

/// One logical CPU and where it sits.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuSpec {
    pub id: usize,
    /// Global core index (SMT siblings share it).
    pub core: usize,
    /// Global cluster index (Arm cluster; on x86 equal to the LLC).
    pub cluster: usize,
    /// Global last-level-cache index.
    pub llc: usize,
    pub node: usize,
    pub package: usize,
    /// Index into `MachineSpec::core_types`.
    pub core_type: usize,
    /// Index into `MachineSpec::freq_domains`.
    pub freq_domain: usize,
}

/// A micro-architecture: relative performance per MHz and SMT throughput.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoreTypeSpec {
    pub name: String,
    /// DT `capacity-dmips-mhz` (x86: 1024 for every core).
    pub capacity_dmips_mhz: u32,
    /// `smt_share[k-1]`: throughput of one hardware thread when k threads of its core are busy,
    /// relative to a lone thread (`smt_share[0] == 1.0`). Empty = no SMT.
    #[serde(default)]
    pub smt_share: Vec<f64>,
    /// Cycles of kernel work per operation kind (context switch, wakeup, ...).
    #[serde(default)]
    pub kernel_cycles: BTreeMap<String, f64>,
}

/// One operating point.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OppSpec {
    pub khz: u64,
    #[serde(default)]
    pub uv: u64,
    /// Power of one CPU running flat out at this OPP (mW), from the energy model or the
    /// parametric x86 model; 0 = derive from the power model.
    #[serde(default)]
    pub power_mw: f64,
}

/// A set of CPUs that share one frequency (and one cpufreq policy by default).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FreqDomainSpec {
    /// `thread`, `core`, `cluster` or `package`.
    pub granularity: String,
    /// How the hardware resolves different requests of the domain's CPUs: `max-active` (the
    /// highest request among CPUs not in a deep idle state, Intel) or `max` (all members).
    #[serde(default = "default_coordination")]
    pub coordination: String,
    /// Selectable frequencies, ascending. On x86 these are the P-states (ratio × 100 MHz)
    /// up to the 1-core turbo.
    pub opps: Vec<OppSpec>,
    /// Base (P1, guaranteed) frequency; on Arm the highest OPP.
    pub base_khz: u64,
    /// `turbo_khz[k-1]`: highest deliverable frequency with k active cores in the package
    /// (x86 MSR_TURBO_RATIO_LIMIT). Empty = no turbo.
    #[serde(default)]
    pub turbo_khz: Vec<u64>,
    /// What a legacy (non-HWP) P-state request in the turbo range, above `base_khz`, is granted:
    /// `request` (up to the requested P-state, as Sandy Bridge) or `range` (the highest bin the
    /// active cores allow, which later Intel generations may grant: intel_pstate.rst, "Turbo
    /// P-states Support").
    #[serde(default = "default_turbo_grant")]
    pub turbo_grant: String,
    #[serde(default)]
    pub transition_latency_ns: u64,
}

/// One idle state.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdleStateSpec {
    pub name: String,
    /// The exit latency the kernel declares (cpuidle's `exit_latency`): what the governors and
    /// the wakeup path read.
    pub exit_latency_us: u64,
    pub target_residency_us: u64,
    /// What a wakeup from this state takes in hardware while the package is in no package
    /// C-state; a package state adds its own `exit_latency_us`. Declared latencies of states
    /// that let the package go deep are worst cases that include the package's exit, which a
    /// busy neighbour core keeps from happening. `None`: the declared `exit_latency_us`.
    #[serde(default)]
    pub core_exit_latency_us: Option<u64>,
    /// Power of one core in this state (mW).
    #[serde(default)]
    pub power_mw: f64,
    /// Whether a core in this state counts as active for turbo (C0/C1: yes; C3+: no).
    #[serde(default)]
    pub turbo_active: bool,
    /// Whether a CPU in this state still takes part in its frequency domain's `max-active`
    /// resolution with the P-state it last requested (Intel: C0 and C1, the "active cores" whose
    /// highest request the shared domain runs at; C1E asks for the lowest P-state and C3+ make
    /// no request).
    #[serde(default)]
    pub holds_pstate_request: bool,
}

/// Package-level power terms (mW). Per-CPU busy power comes from the OPPs.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PowerSpec {
    /// `em` (Arm device-tree energy model: P = dpc·V²·f) or `parametric` (x86: C·V²·f + leakage).
    pub model: String,
    /// Power of the package when every core idles, excluding the cores (uncore, IO).
    #[serde(default)]
    pub package_idle_mw: f64,
    /// Extra uncore power while any core of the package is busy, at the package's top frequency.
    #[serde(default)]
    pub uncore_active_mw: f64,
    /// Leakage of one powered (not power-gated) core at the top voltage.
    #[serde(default)]
    pub core_leakage_mw: f64,
    /// Effective switched capacitance for the parametric model: P = c_eff · V² · f, in
    /// mW / (V² · GHz).
    #[serde(default)]
    pub c_eff: f64,
    /// Switching activity of the simulated code relative to the workload `c_eff` was
    /// calibrated on (P = activity · c_eff · V² · f); 1 = that workload.
    #[serde(default = "default_activity_factor")]
    pub activity_factor: f64,
    /// Extra power fraction of a core when its second (k-th) SMT thread is busy.
    #[serde(default)]
    pub smt_power_factor: f64,
    /// Long-term package power limit (Intel PL1 / AMD PPT), mW; 0 = none. While the package's
    /// power averaged over `power_limit_tau_ms` exceeds it, the turbo ceiling steps down.
    #[serde(default)]
    pub power_limit_mw: f64,
    #[serde(default)]
    pub power_limit_tau_ms: f64,
    /// Short-term limit (Intel PL2), mW; 0 = none.
    #[serde(default)]
    pub power_limit2_mw: f64,
}

fn default_activity_factor() -> f64 {
    1.0
}

/// The kernel paths a core type may give a cost for (`[core_types.*.kernel_cycles]`).
pub const KERNEL_CYCLES_KEYS: [&str; 11] = [
    "context_switch",
    "context_switch_out",
    "wakeup",
    "fork",
    "exec",
    "migrate",
    "balance_per_cpu",
    "select_base",
    "eas_per_cpu",
    "eas_per_energy",
    "eas_per_ps",
];

/// The longest idle-state exit latency or target residency a preset may declare (1 s).
pub const MAX_IDLE_EXIT_US: u64 = 1_000_000;

impl SimConfig {
    /// Cross-reference checks. Errors name the key and what is allowed.
    pub fn validate(&self) -> Result<(), String> {
        let m = &self.machine;
        if m.cpus.is_empty() {
            return Err(format!("machine '{}': no CPUs", m.name));
        }
        let af = m.power.activity_factor;
        if !(af > 0.0 && af <= 2.0) {
            return Err(format!(
                "machine '{}': power.activity_factor {af} is outside (0, 2] (1 = the workload \
                 c_eff was calibrated on; a power virus may switch more, not twice as much)",
                m.name
            ));
        }
        if m.power.model == "em" && af != 1.0 {
            return Err(format!(
                "machine '{}': power.activity_factor {af} applies to the parametric model only \
                 (the em model's OPP powers are the energy model's own)",
                m.name
            ));
        }
        // a finite, non-negative number, or an error naming the machine and the key
        let non_negative = |key: String, v: f64| {
            if v.is_finite() && v >= 0.0 {
                Ok(())
            } else {
                Err(format!(
                    "machine '{}': {key} = {v}: must be finite and >= 0",
                    m.name
                ))
            }
        };
        let pw = &m.power;
        for (key, v) in [
            ("package_idle_mw", pw.package_idle_mw),
            ("uncore_active_mw", pw.uncore_active_mw),
            ("core_leakage_mw", pw.core_leakage_mw),
            ("c_eff", pw.c_eff),
            ("smt_power_factor", pw.smt_power_factor),
            ("power_limit_mw", pw.power_limit_mw),
            ("power_limit_tau_ms", pw.power_limit_tau_ms),
            ("power_limit2_mw", pw.power_limit2_mw),
        ] {
            non_negative(format!("power.{key}"), v)?;
        }
        for (name, states) in &m.idle_states {
            for (i, st) in states.iter().enumerate() {
                let at = format!("idle_states.{name}[{i}] ({})", st.name);
                non_negative(format!("{at}: power_mw"), st.power_mw)?;
                for (key, v) in [
                    ("exit_latency_us", st.exit_latency_us),
                    ("core_exit_latency_us", st.core_exit_latency_us.unwrap_or(0)),
                    ("target_residency_us", st.target_residency_us),
                ] {
                    if v > MAX_IDLE_EXIT_US {
                        return Err(format!(
                            "machine '{}': {at}: {key} = {v}: at most {MAX_IDLE_EXIT_US} (1 s)",
                            m.name
                        ));
                    }
                }
            }
        }
        for (i, ps) in m.package_idle_states.iter().enumerate() {
            let at = format!("package_idle_states[{i}] ({})", ps.name);
            non_negative(format!("{at}: power_mw"), ps.power_mw)?;
            if ps.exit_latency_us > MAX_IDLE_EXIT_US {
                return Err(format!(
                    "machine '{}': {at}: exit_latency_us = {}: at most {MAX_IDLE_EXIT_US} (1 s)",
                    m.name, ps.exit_latency_us
                ));
            }
        }
        for (i, fd) in m.freq_domains.iter().enumerate() {
            for o in &fd.opps {
                non_negative(
                    format!("freq_domains[{i}]: the {} kHz OPP's power_mw", o.khz),
                    o.power_mw,
                )?;
            }
        }
        for ct in &m.core_types {
            for (key, v) in &ct.kernel_cycles {
                if !KERNEL_CYCLES_KEYS.contains(&key.as_str()) {
                    return Err(format!(
                        "machine '{}': core type '{}': unknown kernel_cycles key '{key}'; \
                         allowed: {}",
                        m.name,
                        ct.name,
                        KERNEL_CYCLES_KEYS.join(", ")
                    ));
                }
                non_negative(format!("core type '{}': kernel_cycles.{key}", ct.name), *v)?;
            }
        }
        if let Some(st) = &m.storage {
            if !(1.0..=1e6).contains(&st.fsync_us) {
                return Err(format!(
                    "machine '{}': storage.fsync_us {} is outside 1..1000000 (us)",
                    m.name, st.fsync_us
                ));
            }
        }
        for (i, c) in m.cpus.iter().enumerate() {
            if c.id != i {
                return Err(format!(
                    "machine '{}': cpus[{i}].id is {}, expected {i} (CPUs are listed in id order)",
                    m.name, c.id
                ));
            }
            if c.core_type >= m.core_types.len() {
                return Err(format!(
                    "machine '{}': cpus[{i}].core_type {} out of range 0..{}",
                    m.name,
                    c.core_type,
                    m.core_types.len()
                ));
            }
            if c.freq_domain >= m.freq_domains.len() {
                return Err(format!(
                    "machine '{}': cpus[{i}].freq_domain {} out of range 0..{}",
                    m.name,
                    c.freq_domain,
                    m.freq_domains.len()
                ));
            }
        }
        for (i, fd) in m.freq_domains.iter().enumerate() {
            if fd.opps.is_empty() {
                return Err(format!(
                    "machine '{}': freq_domains[{i}].opps is empty",
                    m.name
                ));
            }
            if fd.opps.windows(2).any(|w| w[0].khz >= w[1].khz) {
                return Err(format!(
                    "machine '{}': freq_domains[{i}].opps must be strictly ascending in khz",
                    m.name
                ));
            }
            if !matches!(fd.turbo_grant.as_str(), "request" | "range") {
                return Err(format!(
                    "machine '{}': freq_domains[{i}].turbo_grant = '{}': allowed values are \
                     'request' and 'range'",
                    m.name, fd.turbo_grant
                ));
            }
        }
        for (i, ct) in m.core_types.iter().enumerate() {
            if ct.capacity_dmips_mhz == 0 {
                return Err(format!(
                    "machine '{}': core_types[{i}].capacity_dmips_mhz must be > 0",
                    m.name
                ));
            }
            if let Some(s) = ct.smt_share.first() {
                if (*s - 1.0).abs() > 1e-9 {
                    return Err(format!(
                        "machine '{}': core_types[{i}].smt_share[0] must be 1.0",
                        m.name
                    ));
                }
            }
        }
        if m.tsc_khz == 0 {
            return Err(format!("machine '{}': tsc_khz must be > 0", m.name));
        }
        let mut known: Vec<&str> = Vec::new();
        for g in &self.cgroups {
            g.validate(&known)?;
            known.push(&g.path);
        }
        for g in &self.workload.cgroups {
            if !known.contains(&g.as_str()) {
                return Err(format!(
                    "workload.cgroups: '{g}' is not a defined cgroup; defined: {}",
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                ));
            }
        }
        if self.sample_interval_ns > 0 && self.sample_interval_ns < 1000 {
            return Err(format!(
                "sample_interval_ns = {}: at least 1000 (1 us), or 0 for no samples",
                self.sample_interval_ns
            ));
        }
        if !(100..=10000).contains(&self.kernel.hz) {
            return Err(format!(
                "kernel.hz = {}: allowed 100..=10000 (CONFIG_HZ: 100, 250, 300, 1000)",
                self.kernel.hz
            ));
        }
        Ok(())
    }
}
