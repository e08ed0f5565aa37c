//! cpufreq policies in the simulator: which CPUs share a policy, the driver and governor
//! running it, the scheduler's `cpufreq_update_util` callback dispatching to the governor, the
//! frequency-invariance scale PELT reads, and the cpufreq tunables (sysfs / boot-parameter
//! names). The decisions themselves are in [`super::schedutil`], [`super::dbs`],
//! [`super::intel_pstate`] and [`super::invariance`]; this module feeds them the simulator's
//! state and applies their answers (spec/kernel.md §2–§5).
//!
//! Policies: one per CPU on x86 (intel_pstate, intel_cpufreq, acpi-cpufreq); one per frequency
//! domain on Arm, or per CPU with `cpufreq.policy_per_cpu = 1` (as faked in seed 002). Remote
//! callbacks follow `cpufreq_this_cpu_can_update()`: only a CPU of the policy may update it,
//! except on the Arm drivers, which may update from any CPU. The slow path (a kthread on
//! drivers without fast switch) is modelled as the domain's transition latency.

use std::collections::BTreeMap;

use super::dbs::{Conservative, CpuIdleSample, DbsTunables, Ondemand};
use super::intel_pstate::{
    self as ip, HwpBoost, IntelPstateCpu, PerfCounters, PerfLimits, PstateData, PstateEnv,
};
use super::invariance::{self, ArchFreqScale, Invariance};
use super::policy::{transition_delay_us, PolicyView};
use super::schedutil::{self as su, CpuUtil, SugovCpu, SugovEnv, SugovPolicy, SugovTunables};
use crate::config::SimConfig;
use crate::engine::Sim;
use crate::hw::hwp::HwpRequest;

/// The governor of a policy and its state.
#[derive(Clone, Debug)]
pub enum GovState {
    /// performance / powersave: set once.
    Fixed,
    Schedutil {
        pol: SugovPolicy,
        cpus: Vec<SugovCpu>,
    },
    Ondemand(Box<Ondemand>),
    Conservative(Box<Conservative>),
    /// intel_pstate active mode without HWP, `powersave`: the load algorithm.
    Pstate(Box<IntelPstateCpu>),
    /// intel_pstate active mode with HWP: the hardware decides; optional dynamic boost.
    Hwp {
        boost: Option<HwpBoost>,
    },
}

/// One cpufreq policy.
#[derive(Clone, Debug)]
pub struct CpufreqPolicy {
    pub cpus: Vec<usize>,
    pub fd: usize,
    pub table_khz: Vec<u64>,
    pub min_khz: u64,
    pub max_khz: u64,
    pub cpuinfo_min_khz: u64,
    pub cpuinfo_max_khz: u64,
    /// `policy->cur`.
    pub cur_khz: u64,
    pub gov: GovState,
}

impl CpufreqPolicy {
    pub fn view(&self) -> PolicyView<'_> {
        PolicyView {
            table_khz: &self.table_khz,
            min_khz: self.min_khz,
            max_khz: self.max_khz,
            cpuinfo_min_khz: self.cpuinfo_min_khz,
            cpuinfo_max_khz: self.cpuinfo_max_khz,
            cur_khz: self.cur_khz,
        }
    }
}

/// Governors by name.
pub const GOVERNORS: &[&str] = &[
    "performance",
    "powersave",
    "schedutil",
    "ondemand",
    "conservative",
];

/// cpufreq tunables: every key is checked here; values go to the governors.
#[derive(Clone, Debug, Default)]
pub struct CpufreqTunables {
    pub rate_limit_us: Option<u64>,
    pub no_hwp: bool,
    pub hwp_dynamic_boost: bool,
    pub policy_per_cpu: bool,
    pub scaling_min_freq: Option<u64>,
    pub scaling_max_freq: Option<u64>,
    /// `policyN/scaling_min_freq` and `scaling_max_freq` for one policy.
    pub per_policy: BTreeMap<usize, (Option<u64>, Option<u64>)>,
    pub dbs: BTreeMap<String, u64>,
}

/// Whether `key` is a cpufreq/cpuidle tunable (a fixed name or `policyN.scaling_{min,max}_freq`).
pub fn is_cpufreq_tunable(key: &str) -> bool {
    CPUFREQ_TUNABLES.contains(&key) || per_policy_key(key).is_some()
}

/// `policyN.scaling_min_freq` → (N, true); `policyN.scaling_max_freq` → (N, false).
fn per_policy_key(key: &str) -> Option<(usize, bool)> {
    let rest = key.strip_prefix("policy")?;
    let (n, name) = rest.split_once('.')?;
    let n: usize = n.parse().ok()?;
    match name {
        "scaling_min_freq" => Some((n, true)),
        "scaling_max_freq" => Some((n, false)),
        _ => None,
    }
}

/// Every cpufreq/cpuidle tunable name accepted in `tunables`.
pub const CPUFREQ_TUNABLES: &[&str] = &[
    "schedutil.rate_limit_us",
    "ondemand.sampling_rate",
    "ondemand.up_threshold",
    "ondemand.sampling_down_factor",
    "ondemand.powersave_bias",
    "ondemand.io_is_busy",
    "ondemand.ignore_nice_load",
    "conservative.sampling_rate",
    "conservative.up_threshold",
    "conservative.down_threshold",
    "conservative.freq_step",
    "conservative.sampling_down_factor",
    "intel_pstate.no_hwp",
    "intel_pstate.hwp_dynamic_boost",
    "cpufreq.policy_per_cpu",
    "scaling_min_freq",
    "scaling_max_freq",
    "cpuidle.governor",
];

fn uint(key: &str, v: &serde_json::Value) -> Result<u64, String> {
    v.as_u64()
        .or_else(|| v.as_bool().map(u64::from))
        .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
        .ok_or_else(|| format!("tunable {key} = {v}: expected a non-negative integer"))
}

fn flag(key: &str, v: &serde_json::Value) -> Result<bool, String> {
    match uint(key, v)? {
        0 => Ok(false),
        1 => Ok(true),
        n => Err(format!("tunable {key} = {n}: allowed 0 or 1")),
    }
}

impl CpufreqTunables {
    pub fn parse(t: &BTreeMap<String, serde_json::Value>) -> Result<Self, String> {
        let mut out = CpufreqTunables::default();
        for (k, v) in t {
            match k.as_str() {
                "schedutil.rate_limit_us" => out.rate_limit_us = Some(uint(k, v)?),
                "intel_pstate.no_hwp" => out.no_hwp = flag(k, v)?,
                "intel_pstate.hwp_dynamic_boost" => out.hwp_dynamic_boost = flag(k, v)?,
                "cpufreq.policy_per_cpu" => out.policy_per_cpu = flag(k, v)?,
                "scaling_min_freq" => out.scaling_min_freq = Some(uint(k, v)?),
                "scaling_max_freq" => out.scaling_max_freq = Some(uint(k, v)?),
                _ if per_policy_key(k).is_some() => {
                    let (n, is_min) = per_policy_key(k).expect("checked");
                    let e = out.per_policy.entry(n).or_default();
                    if is_min {
                        e.0 = Some(uint(k, v)?);
                    } else {
                        e.1 = Some(uint(k, v)?);
                    }
                }
                _ if k.starts_with("ondemand.") || k.starts_with("conservative.") => {
                    if !CPUFREQ_TUNABLES.contains(&k.as_str()) {
                        return Err(format!(
                            "unknown tunable '{k}'; known cpufreq tunables: {}",
                            CPUFREQ_TUNABLES.join(", ")
                        ));
                    }
                    out.dbs.insert(k.clone(), uint(k, v)?);
                }
                _ => {}
            }
        }
        Ok(out)
    }
}

/// Drivers whose policies may be updated from any CPU (`dvfs_possible_from_any_cpu`).
fn dvfs_from_any_cpu(driver: &str) -> bool {
    matches!(driver, "cpufreq-dt" | "qcom-cpufreq-hw" | "scmi")
}

/// The cpufreq set-up of a run.
#[derive(Clone, Debug)]
pub struct CpufreqState {
    pub driver: String,
    pub governor: String,
    pub invariance: Invariance,
    pub tun: CpufreqTunables,
    pub policies: Vec<CpufreqPolicy>,
    pub cpu_policy: Vec<usize>,
    /// `arch_freq_scale` per CPU (1024 = no scaling).
    pub freq_scale: Vec<u64>,
    /// x86 APERF/MPERF invariance state per CPU and the counters at the previous tick.
    pub arch: Vec<ArchFreqScale>,
    pub prev_counters: Vec<(u64, u64)>,
    /// Whether `arch_scale_freq_invariant()` holds.
    pub invariant: bool,
    /// Whether intel_pstate/intel_cpufreq drive HWP.
    pub hwp: bool,
    pub dbs_tun: DbsTunables,
    pub transition_delay_us: u64,
}

impl CpufreqState {
    /// Check the driver, governor, invariance and tunables against the machine and version.
    pub fn new(cfg: &SimConfig, version: (u32, u32), tick_ns: u64) -> Result<Self, String> {
        let m = &cfg.machine;
        let driver = cfg.cpufreq.driver.clone().unwrap_or_default();
        if !driver.is_empty() && !super::DRIVERS.contains(&driver.as_str()) {
            return Err(format!(
                "cpufreq.driver = '{driver}': allowed drivers are {}",
                super::DRIVERS.join(", ")
            ));
        }
        let governor = cfg.cpufreq.governor.clone();
        if !GOVERNORS.contains(&governor.as_str()) {
            return Err(format!(
                "cpufreq.governor = '{governor}': allowed governors are {}",
                GOVERNORS.join(", ")
            ));
        }
        if driver == "intel_pstate" && !matches!(governor.as_str(), "performance" | "powersave") {
            return Err(format!(
                "cpufreq.governor = '{governor}': intel_pstate in active mode offers performance and powersave; use intel_cpufreq (passive) for the generic governors"
            ));
        }
        let tun = CpufreqTunables::parse(&cfg.tunables)?;
        let invariance = Invariance::parse(&cfg.cpufreq.invariance)?;
        if matches!(invariance, Invariance::Cpufreq) && m.arch == "x86" {
            return Err("cpufreq.invariance = 'cpufreq' is Arm's cpufreq-based scale; x86 uses none, turbo:N, base, max or amd-midpoint".into());
        }
        if let Invariance::Turbo(k) = invariance {
            let bins = m.freq_domains[0].turbo_khz.len();
            if k == 0 || k as usize > bins {
                return Err(format!(
                    "cpufreq.invariance = 'turbo:{k}': machine '{}' has turbo bins 1..{bins}",
                    m.name
                ));
            }
        }
        if invariance.uses_aperf_mperf() && m.arch != "x86" {
            return Err(format!(
                "cpufreq.invariance = '{}' uses x86 APERF/MPERF; on {} use none or cpufreq",
                cfg.cpufreq.invariance, m.arch
            ));
        }
        // Before v5.9 passive mode implied no_hwp.
        let passive_hwp_ok = driver != "intel_cpufreq" || version >= (5, 9);
        let hwp = matches!(driver.as_str(), "intel_pstate" | "intel_cpufreq")
            && m.hwp.is_some()
            && !tun.no_hwp
            && passive_hwp_ok;
        let n = m.cpus.len();
        let fd0 = &m.freq_domains[0];
        let delay_driver = match driver.as_str() {
            "intel_cpufreq" => Some(if hwp {
                ip::INTEL_CPUFREQ_TRANSITION_DELAY_HWP_US
            } else {
                ip::INTEL_CPUFREQ_TRANSITION_DELAY_US
            }),
            _ => None,
        };
        let delay = transition_delay_us(version, delay_driver, fd0.transition_latency_ns);
        let mut dbs_tun = if governor == "conservative" {
            DbsTunables::conservative(delay, tick_ns)
        } else {
            DbsTunables::ondemand(delay, tick_ns, true, m.arch == "x86")
        };
        for (k, v) in &tun.dbs {
            let name = k.split('.').nth(1).unwrap_or("");
            let v32 = u32::try_from(*v).map_err(|_| format!("tunable {k} = {v}: too large"))?;
            match name {
                "sampling_rate" => dbs_tun.sampling_rate_us = v32,
                "up_threshold" => dbs_tun.up_threshold = v32,
                "sampling_down_factor" => dbs_tun.sampling_down_factor = v32,
                "powersave_bias" => dbs_tun.powersave_bias = v32,
                "io_is_busy" => dbs_tun.io_is_busy = *v != 0,
                "ignore_nice_load" => dbs_tun.ignore_nice_load = *v != 0,
                "down_threshold" => dbs_tun.down_threshold = v32,
                "freq_step" => dbs_tun.freq_step = v32,
                _ => {}
            }
        }
        match governor.as_str() {
            "ondemand" => dbs_tun.check_ondemand(tick_ns)?,
            "conservative" => dbs_tun.check_conservative(tick_ns)?,
            _ => {}
        }
        Ok(CpufreqState {
            driver,
            governor,
            invariance,
            policies: Vec::new(),
            cpu_policy: vec![0; n],
            freq_scale: vec![1024; n],
            arch: Vec::new(),
            prev_counters: vec![(0, 0); n],
            invariant: false,
            hwp,
            dbs_tun,
            transition_delay_us: delay,
            tun,
        })
    }
}

impl Sim {
    /// Build the policies and start their governors.
    pub fn init_cpufreq(&mut self) -> Result<(), String> {
        let n = self.topo.nr_cpus();
        let per_cpu = self.cpufreq.tun.policy_per_cpu || self.cfg.machine.arch == "x86";
        let mut groups: Vec<Vec<usize>> = Vec::new();
        if per_cpu {
            groups = (0..n).map(|c| vec![c]).collect();
        } else {
            for fd in &self.fds {
                groups.push(fd.cpus.clone());
            }
        }
        if let Some(&n) = self
            .cpufreq
            .tun
            .per_policy
            .keys()
            .find(|&&n| n >= groups.len())
        {
            return Err(format!(
                "tunable policy{n}.scaling_*_freq: this machine has policies 0..{}",
                groups.len()
            ));
        }
        for (i, cpus) in groups.into_iter().enumerate() {
            let fd = self.topo.cpus[cpus[0]].freq_domain;
            let d = &self.fds[fd];
            let table: Vec<u64> = d.opps.iter().map(|o| o.khz).collect();
            let (cmin, cmax) = (d.cpuinfo_min_khz(), d.cpuinfo_max_khz());
            let own = self
                .cpufreq
                .tun
                .per_policy
                .get(&i)
                .copied()
                .unwrap_or_default();
            let min = own
                .0
                .or(self.cpufreq.tun.scaling_min_freq)
                .unwrap_or(cmin)
                .clamp(cmin, cmax);
            let max = own
                .1
                .or(self.cpufreq.tun.scaling_max_freq)
                .unwrap_or(cmax)
                .clamp(min, cmax);
            for &c in &cpus {
                self.cpufreq.cpu_policy[c] = i;
            }
            self.cpufreq.policies.push(CpufreqPolicy {
                cpus,
                fd,
                table_khz: table,
                min_khz: min,
                max_khz: max,
                cpuinfo_min_khz: cmin,
                cpuinfo_max_khz: cmax,
                cur_khz: self.initial_request_khz(cmin, d.base_khz).clamp(min, max),
                gov: GovState::Fixed,
            });
        }
        self.init_invariance();
        let version = self.prof.version;
        for p in 0..self.cpufreq.policies.len() {
            let gov = self.start_governor(p, version)?;
            self.cpufreq.policies[p].gov = gov;
            let f = self.cpufreq.policies[p].cur_khz;
            self.policy_apply(p, f);
        }
        if self.cpufreq.hwp && self.cpufreq.driver == "intel_pstate" {
            self.start_hwp();
        }
        if self.trace.is_some() {
            // the trace starts with every CPU's frequency, as a trace of a booted system would
            for c in 0..n {
                let khz = self.hw.cpu_req_khz[c];
                self.trace_event(
                    c,
                    crate::trace::ftrace::Payload::CpuFrequency { khz, cpu: c },
                );
            }
        }
        Ok(())
    }

    /// The request a policy starts from: intel_pstate's CPU init writes the lowest P-state
    /// (`intel_pstate_get_cpu_pstates` -> `intel_pstate_set_min_pstate`, which passive mode's
    /// `policy->cur = cpuinfo.min_freq` reflects); other drivers start where the firmware left
    /// the CPU, taken as the base frequency.
    fn initial_request_khz(&self, cpuinfo_min_khz: u64, base_khz: u64) -> u64 {
        match self.cpufreq.driver.as_str() {
            "intel_pstate" | "intel_cpufreq" => cpuinfo_min_khz,
            _ => base_khz,
        }
    }

    fn init_invariance(&mut self) {
        let n = self.topo.nr_cpus();
        let inv = self.cpufreq.invariance;
        if inv.uses_aperf_mperf() {
            let d = &self.fds[0];
            // AMD CPPC perf levels in proportion to the boost and nominal frequencies
            let amd = invariance::AmdPerf {
                highest_perf: (d.cpuinfo_max_khz() / 10_000).max(1),
                nominal_perf: (d.base_khz / 10_000).max(1),
            };
            let ratio = invariance::x86_max_freq_ratio(
                inv,
                d.base_khz,
                &d.turbo_khz,
                d.cpuinfo_max_khz(),
                amd,
            );
            self.cpufreq.arch = vec![ArchFreqScale::new(ratio); n];
            self.cpufreq.invariant = ratio.is_some();
        } else {
            self.cpufreq.invariant = matches!(inv, Invariance::Cpufreq);
        }
    }

    fn cpu_idle_sample(&mut self, cpu: usize) -> CpuIdleSample {
        self.sync_cpu(cpu);
        let rq = &self.rqs[cpu];
        CpuIdleSample {
            idle_ns: rq.idle_ns - rq.iowait_ns,
            iowait_ns: rq.iowait_ns,
            nice_ns: 0,
            now_ns: self.now,
        }
    }

    fn perf_counters(&mut self, cpu: usize) -> PerfCounters {
        self.sync_cpu(cpu);
        let c = &self.counters[cpu];
        PerfCounters {
            aperf: c.aperf as u64,
            mperf: c.mperf as u64,
            tsc: c.tsc as u64,
        }
    }

    fn pstate_data(&self, p: usize) -> PstateData {
        let d = &self.fds[self.cpufreq.policies[p].fd];
        PstateData::from_khz(d.cpuinfo_min_khz(), d.base_khz, d.cpuinfo_max_khz())
    }

    fn start_governor(&mut self, p: usize, version: (u32, u32)) -> Result<GovState, String> {
        let gov = self.cpufreq.governor.clone();
        let pol = &self.cpufreq.policies[p];
        let (min, max) = (pol.min_khz, pol.max_khz);
        Ok(match gov.as_str() {
            "performance" if self.cpufreq.hwp && self.cpufreq.driver == "intel_pstate" => {
                self.set_policy_hwp(p, max, max, 0);
                self.cpufreq.policies[p].cur_khz = max;
                GovState::Hwp { boost: None }
            }
            "powersave" if self.cpufreq.hwp && self.cpufreq.driver == "intel_pstate" => {
                let epp = self
                    .cfg
                    .machine
                    .hwp
                    .as_ref()
                    .map_or(0x80, |h| h.default_epp);
                self.set_policy_hwp(p, min, max, epp);
                let boost = self.cpufreq.tun.hwp_dynamic_boost.then(HwpBoost::default);
                GovState::Hwp { boost }
            }
            "powersave" if self.cpufreq.driver == "intel_pstate" => {
                let cpu = self.cpufreq.policies[p].cpus[0];
                let counters = self.perf_counters(cpu);
                let pd = self.pstate_data(p);
                self.cpufreq.policies[p].cur_khz = pd.min_pstate as u64 * pd.scaling_khz;
                GovState::Pstate(Box::new(IntelPstateCpu::new(pd.min_pstate, counters)))
            }
            "performance" => {
                self.cpufreq.policies[p].cur_khz = max;
                GovState::Fixed
            }
            "powersave" => {
                self.cpufreq.policies[p].cur_khz = min;
                GovState::Fixed
            }
            "schedutil" => {
                let rate = self
                    .cpufreq
                    .tun
                    .rate_limit_us
                    .unwrap_or(self.cpufreq.transition_delay_us);
                let need = self.cpufreq.driver == "intel_cpufreq";
                let ncpus = self.cpufreq.policies[p].cpus.len();
                GovState::Schedutil {
                    pol: SugovPolicy::start(
                        SugovTunables {
                            rate_limit_us: rate,
                        },
                        version,
                        need,
                    ),
                    cpus: vec![SugovCpu::default(); ncpus],
                }
            }
            "ondemand" | "conservative" => {
                let cpus = self.cpufreq.policies[p].cpus.clone();
                let samples: Vec<CpuIdleSample> =
                    cpus.iter().map(|&c| self.cpu_idle_sample(c)).collect();
                let tun = self.cpufreq.dbs_tun;
                if gov == "ondemand" {
                    GovState::Ondemand(Box::new(Ondemand::start(&samples, &tun)))
                } else {
                    let cur = self.cpufreq.policies[p].cur_khz;
                    GovState::Conservative(Box::new(Conservative::start(&samples, &tun, cur)))
                }
            }
            _ => unreachable!("governor names are checked"),
        })
    }

    fn set_policy_hwp(&mut self, p: usize, min: u64, max: u64, epp: u8) {
        for c in self.cpufreq.policies[p].cpus.clone() {
            self.write_hwp_request(
                c,
                HwpRequest {
                    min_khz: min,
                    max_khz: max,
                    desired_khz: 0,
                    epp,
                },
            );
        }
    }

    /// Apply a policy frequency (`policy->cur` and the driver's request; the Arm scale).
    pub fn policy_apply(&mut self, p: usize, khz: u64) {
        self.cpufreq.policies[p].cur_khz = khz;
        if matches!(self.cpufreq.policies[p].gov, GovState::Hwp { .. }) {
            return;
        }
        let max = self.cpufreq.policies[p].cpuinfo_max_khz;
        let passive_hwp = self.cpufreq.hwp && self.cpufreq.driver == "intel_cpufreq";
        for c in self.cpufreq.policies[p].cpus.clone() {
            if passive_hwp {
                // passive mode with HWP: the target becomes the HWP floor and desired level
                let pmax = self.cpufreq.policies[p].max_khz;
                let epp = self
                    .cfg
                    .machine
                    .hwp
                    .as_ref()
                    .map_or(0x80, |h| h.default_epp);
                self.write_hwp_request(
                    c,
                    HwpRequest {
                        min_khz: khz,
                        max_khz: pmax,
                        desired_khz: khz,
                        epp,
                    },
                );
            }
            if matches!(self.cpufreq.invariance, Invariance::Cpufreq) {
                self.cpufreq.freq_scale[c] = invariance::cpufreq_freq_scale(khz, max);
            }
            self.set_cpu_request(c, khz);
        }
    }

    /// `arch_scale_freq_capacity()`.
    pub fn freq_scale(&self, cpu: usize) -> u64 {
        self.cpufreq.freq_scale[cpu]
    }

    /// `arch_scale_freq_tick()`: at the start of a CPU's tick, the x86 scale from APERF/MPERF.
    pub fn arch_scale_freq_tick(&mut self, cpu: usize) {
        if self.cpufreq.arch.is_empty() {
            return;
        }
        self.sync_cpu(cpu);
        let (a, m) = (
            self.counters[cpu].aperf as u64,
            self.counters[cpu].mperf as u64,
        );
        let (pa, pm) = self.cpufreq.prev_counters[cpu];
        self.cpufreq.prev_counters[cpu] = (a, m);
        let version = self.prof.version;
        let scale = self.cpufreq.arch[cpu].tick(a - pa, m - pm, version);
        if self.cpufreq.arch[cpu].last == invariance::TickOutcome::WentWobbly {
            invariance::disable_freq_invariance(&mut self.cpufreq.arch, version);
            self.cpufreq.invariant = false;
            for c in 0..self.cpufreq.arch.len() {
                self.cpufreq.freq_scale[c] = self.cpufreq.arch[c].scale;
            }
            return;
        }
        self.cpufreq.freq_scale[cpu] = scale;
    }

    fn cpu_util_for_freq(&self, cpu: usize) -> CpuUtil {
        CpuUtil {
            util_cfs: self.cpu_util(cpu, None, None, self.prof.runnable_boost),
            util_rt: self.cpu_util_rt(cpu),
            util_dl: 0,
            bw_dl: 0,
            irq: 0,
            rt_runnable: self.rt_runnable(cpu),
            uclamp: self.uclamp_in_use.then(|| self.rq_uclamp(cpu)),
            capacity: self.topo.cpus[cpu].capacity_orig,
        }
    }

    /// `cpufreq_update_util(rq, flags)`: the scheduler's callback, run on `self.this_cpu`.
    pub fn cpufreq_update_util(&mut self, cpu: usize, flags: u32) {
        let p = self.cpufreq.cpu_policy[cpu];
        let this = self.this_cpu;
        let local = self.cpufreq.policies[p].cpus.contains(&this);
        let version = self.prof.version;
        let now = self.now;
        let tick_ns = self.prof.tick_ns();
        match &self.cpufreq.policies[p].gov {
            GovState::Fixed => {}
            GovState::Schedutil { .. } => {
                if !local && !dvfs_from_any_cpu(&self.cpufreq.driver) {
                    return;
                }
                self.sugov_update(p, cpu, flags);
            }
            GovState::Ondemand(_) | GovState::Conservative(_) => self.dbs_update_util(p, now),
            GovState::Pstate(_) => {
                if !local || this != cpu {
                    return;
                }
                let mut counters = self.perf_counters(cpu);
                let idle = self.rqs[cpu].curr.is_none();
                let tsc_khz = self.cfg.machine.tsc_khz;
                let khz = self.fds[self.topo.cpus[cpu].freq_domain].delivered_khz;
                let pstate = self.pstate_data(p);
                let pol = &self.cpufreq.policies[p];
                let limits = PerfLimits {
                    min_perf_ratio: (pol.min_khz / pstate.scaling_khz) as i32,
                    max_perf_ratio: (pol.max_khz / pstate.scaling_khz) as i32,
                };
                let env = PstateEnv {
                    version,
                    pstate,
                    limits,
                    no_turbo: false,
                    tick_ns,
                    aperf_mperf_shift: 0,
                };
                let GovState::Pstate(st) = &mut self.cpufreq.policies[p].gov else {
                    unreachable!()
                };
                idle_callback_c0(st, &mut counters, idle, tsc_khz, khz);
                if let Some(ps) = st.update_util(now, flags, counters, &env) {
                    self.policy_apply(p, ps as u64 * pstate.scaling_khz);
                }
            }
            GovState::Hwp { boost: Some(_) } => {
                let Some(h) = self.cfg.machine.hwp.clone() else {
                    return;
                };
                let pol = &self.cpufreq.policies[p];
                let r = |k: u64| (k / ip::CORE_SCALING_KHZ) as u32;
                let (min_r, max_r, guar) = (r(pol.min_khz), r(pol.max_khz), r(h.guaranteed_khz));
                let GovState::Hwp { boost: Some(b) } = &mut self.cpufreq.policies[p].gov else {
                    unreachable!()
                };
                if let Some(min) = b.on_callback(
                    now,
                    flags,
                    local && this == cpu,
                    tick_ns,
                    guar,
                    min_r,
                    max_r,
                ) {
                    let max = self.cpufreq.policies[p].max_khz;
                    let epp = h.default_epp;
                    self.write_hwp_request(
                        cpu,
                        HwpRequest {
                            min_khz: min as u64 * ip::CORE_SCALING_KHZ,
                            max_khz: max,
                            desired_khz: 0,
                            epp,
                        },
                    );
                }
            }
            GovState::Hwp { boost: None } => {}
        }
    }

    fn sugov_update(&mut self, p: usize, cpu: usize, flags: u32) {
        let version = self.prof.version;
        let now = self.now;
        let cpus = self.cpufreq.policies[p].cpus.clone();
        let utils: Vec<CpuUtil> = cpus.iter().map(|&c| self.cpu_util_for_freq(c)).collect();
        let caller = cpus.iter().position(|&c| c == cpu).unwrap_or(0);
        let idle_calls = self.rqs[cpu].idle_calls;
        let freq_ref = if self.cfg.machine.arch == "arm64" && version >= (6, 8) {
            self.cpufreq.policies[p].cpuinfo_max_khz
        } else {
            0
        };
        let invariant = self.cpufreq.invariant;
        let need = self.cpufreq.driver == "intel_cpufreq";
        let tick_ns = self.prof.tick_ns();
        let policy = &mut self.cpufreq.policies[p];
        let view_table = policy.table_khz.clone();
        let env = SugovEnv {
            version,
            policy: PolicyView {
                table_khz: &view_table,
                min_khz: policy.min_khz,
                max_khz: policy.max_khz,
                cpuinfo_min_khz: policy.cpuinfo_min_khz,
                cpuinfo_max_khz: policy.cpuinfo_max_khz,
                cur_khz: policy.cur_khz,
            },
            invariant,
            freq_ref_khz: freq_ref,
            tick_ns,
            nohz: true,
            need_update_limits: need,
        };
        let GovState::Schedutil { pol, cpus: st } = &mut policy.gov else {
            return;
        };
        let next = if st.len() == 1 {
            su::update_single(pol, &mut st[0], &env, now, flags, &utils[0], idle_calls)
        } else {
            su::update_shared(pol, st, &utils, caller, &env, now, flags)
        };
        if let Some(f) = next {
            self.policy_apply(p, f);
        }
    }

    fn dbs_update_util(&mut self, p: usize, now: u64) {
        let due = match &mut self.cpufreq.policies[p].gov {
            GovState::Ondemand(o) => o.dbs.sample_due(now),
            GovState::Conservative(c) => c.dbs.sample_due(now),
            _ => false,
        };
        if !due {
            return;
        }
        let cpus = self.cpufreq.policies[p].cpus.clone();
        let samples: Vec<CpuIdleSample> = cpus.iter().map(|&c| self.cpu_idle_sample(c)).collect();
        let tun = self.cpufreq.dbs_tun;
        let policy = &mut self.cpufreq.policies[p];
        let table = policy.table_khz.clone();
        let view = PolicyView {
            table_khz: &table,
            min_khz: policy.min_khz,
            max_khz: policy.max_khz,
            cpuinfo_min_khz: policy.cpuinfo_min_khz,
            cpuinfo_max_khz: policy.cpuinfo_max_khz,
            cur_khz: policy.cur_khz,
        };
        let decision = match &mut policy.gov {
            GovState::Ondemand(o) => o.od_dbs_update(&view, &samples, &tun),
            GovState::Conservative(c) => c.cs_dbs_update(&view, &samples, &tun),
            _ => return,
        };
        if let Some(f) = decision.target_khz {
            self.policy_apply(p, f);
        }
    }
}

/// C0 time counted for a scheduler callback on an idle CPU (ns). Any value below 1/256 of the
/// 10 ms sample (39 µs) gives the same `busy_frac`, 0; only the frequency of that time matters.
const IDLE_CALLBACK_C0_NS: u64 = 1_000;

/// The scheduler's callback runs in C0, so on real hardware MPERF moves between two callbacks
/// even on a CPU that idles (the idle tick's softirq calls it from `update_blocked_averages`).
/// The model's counters count C0 only while a task runs; without this, an idle CPU's
/// `intel_pstate_sample()` would see MPERF stand still, refuse the sample and keep its last
/// request for as long as it idles, where the kernel's next sample finds it ~0 % busy and
/// lowers it (to half-way between the minimum and the average P-state of that C0 time). The
/// callback's own time is [`IDLE_CALLBACK_C0_NS`] at `khz`, the frequency its core delivers.
fn idle_callback_c0(
    st: &mut IntelPstateCpu,
    counters: &mut PerfCounters,
    idle: bool,
    tsc_khz: u64,
    khz: u64,
) {
    counters.aperf = counters.aperf.wrapping_add(st.c0_idle.aperf);
    counters.mperf = counters.mperf.wrapping_add(st.c0_idle.mperf);
    if idle && counters.mperf == st.prev.mperf && counters.tsc != st.prev.tsc {
        let mperf = tsc_khz * IDLE_CALLBACK_C0_NS / 1_000_000;
        let aperf = khz * IDLE_CALLBACK_C0_NS / 1_000_000;
        st.c0_idle.mperf = st.c0_idle.mperf.wrapping_add(mperf);
        st.c0_idle.aperf = st.c0_idle.aperf.wrapping_add(aperf);
        counters.mperf = counters.mperf.wrapping_add(mperf);
        counters.aperf = counters.aperf.wrapping_add(aperf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Haswell-EP's P-states (min 12, P1 23, 1C turbo 31; TSC 2.3 GHz) with v5.2's rules.
    fn haswell_env() -> PstateEnv {
        PstateEnv {
            version: (5, 2),
            pstate: PstateData::from_khz(1_200_000, 2_300_000, 3_100_000),
            limits: PerfLimits {
                min_perf_ratio: 12,
                max_perf_ratio: 31,
            },
            no_turbo: false,
            tick_ns: 4_000_000,
            aperf_mperf_shift: 0,
        }
    }

    /// A CPU that left P-state 30 for idle: 20 ms later its idle tick's callback samples. The
    /// model's counters stood still, and without the callback's own C0 time the sample would be
    /// refused. With it (1 µs at 3.0 GHz: ΔMPERF 2,300, ΔAPERF 3,000, ΔTSC 46,000,000)
    /// `busy_frac` truncates to 0 and the target floors at 12; the average P-state of that C0
    /// time is 23 × 3,000/2,300 = 30 exactly, but the kernel's fixed point makes it
    /// 23 × ⌊3,000·2¹⁴/2,300⌋ / 2¹⁴ = 29.9993 → 29, so half the gap gives 12 + (29 − 12)/2 = 20
    /// (21 in exact arithmetic).
    #[test]
    fn an_idle_cpus_own_callback_lets_intel_pstate_lower_its_request() {
        let env = haswell_env();
        let at_idle = PerfCounters {
            aperf: 7_000_000,
            mperf: 5_000_000,
            tsc: 9_000_000,
        };
        let mut st = IntelPstateCpu::new(30, at_idle);
        st.sample.time = 1_000; // a sample was taken when the CPU went idle
        let later = PerfCounters {
            tsc: at_idle.tsc + 46_000_000,
            ..at_idle
        };
        let mut refused = st.clone();
        assert_eq!(refused.update_util(20_001_000, 0, later, &env), None);
        assert_eq!(refused.current_pstate, 30);

        let mut counters = later;
        idle_callback_c0(&mut st, &mut counters, true, 2_300_000, 3_000_000);
        assert_eq!(counters.mperf - at_idle.mperf, 2_300);
        assert_eq!(counters.aperf - at_idle.aperf, 3_000);
        assert_eq!(st.update_util(20_001_000, 0, counters, &env), Some(20));
    }

    /// No C0 time is added where the counters moved by themselves (the CPU ran a task since the
    /// last sample), nor for a callback on a CPU that is running a task.
    #[test]
    fn a_cpu_whose_counters_moved_gets_no_extra_c0_time() {
        let prev = PerfCounters {
            aperf: 7_000_000,
            mperf: 5_000_000,
            tsc: 9_000_000,
        };
        let moved = PerfCounters {
            aperf: prev.aperf + 10,
            mperf: prev.mperf + 10,
            tsc: prev.tsc + 100,
        };
        let mut st = IntelPstateCpu::new(30, prev);
        let mut c = moved;
        idle_callback_c0(&mut st, &mut c, true, 2_300_000, 3_000_000);
        assert_eq!((c, st.c0_idle), (moved, PerfCounters::default()));
        let still = PerfCounters {
            tsc: prev.tsc + 100,
            ..prev
        };
        let mut c = still;
        idle_callback_c0(&mut st, &mut c, false, 2_300_000, 3_000_000);
        assert_eq!((c, st.c0_idle), (still, PerfCounters::default()));
    }
}
