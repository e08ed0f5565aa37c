//! The "dbs" (demand-based switching) governors ondemand and conservative (spec/kernel.md
//! §4.3–§4.5; `drivers/cpufreq/cpufreq_governor.c`, `cpufreq_ondemand.c`,
//! `cpufreq_conservative.c`, read at v5.15 — the v4.7+ structure).
//!
//! What it models:
//! - the sample gate of `dbs_update_util_handler` (a sample is due when `time −
//!   last_sample_time ≥ sample_delay_ns`; there is no timer, so an idle CPU is not sampled);
//! - `dbs_update`: per-CPU load from the idle-time and wall-clock counters (µs) over the
//!   interval, with `io_is_busy`, `ignore_nice_load`, the "reuse `prev_load` once after a long
//!   idle" rule and the `idle_periods` count; the policy load is the maximum;
//! - ondemand's `od_dbs_update` / `od_update`: above `up_threshold` go to `policy->max`
//!   (RELATION_H) and stretch the next sample by `sampling_down_factor`, else
//!   `cpuinfo.min + load × (cpuinfo.max − cpuinfo.min) / 100` with RELATION_C; `powersave_bias`
//!   time-shares the two OPPs around the reduced target within one sampling period;
//! - conservative's `cs_dbs_update`: `requested_freq` moved by `freq_step` % of `policy->max`
//!   per sample (RELATION_H up, RELATION_L down), `down_skip` for `sampling_down_factor`, and one
//!   step down per idle period missed.
//!
//! The caller supplies cumulative per-CPU counters ([`CpuIdleSample`]) at each sample; the
//! functions return the frequency to set (`None` = unchanged, as `__cpufreq_driver_target` skips
//! a resolved frequency equal to `policy->cur`) and the delay until the next sample.
//!
//! Notes on fidelity:
//! - the long-idle rules compare the *idle* time (not the elapsed time, as spec §4.3 writes)
//!   with twice the sampling rate, and `idle_periods` is computed whenever that holds,
//!   independently of `prev_load` — as the v4.14+ code does;
//! - the kernel's `unsigned int` arithmetic is kept (wrapping u32), including the µs
//!   truncation of each counter (`ktime_to_us`);
//! - `CPUFREQ_RELATION_E` (v5.16) is not modelled.
//!
//! Simplifications: the work item runs synchronously (no `work_in_progress` window); the
//! jiffy-based idle accounting (no NO_HZ micro accounting) is represented only by the
//! `up_threshold` default; per-policy vs global tunables is the caller's business. Depends on
//! `super::policy` only.

use super::policy::{dbs_min_sampling_interval_us, PolicyView, Relation, NSEC_PER_USEC};

/// `DEF_FREQUENCY_UP_THRESHOLD` (ondemand without idle micro accounting, conservative).
pub const DEF_FREQUENCY_UP_THRESHOLD: u32 = 80;
/// `MICRO_FREQUENCY_UP_THRESHOLD`: ondemand's default when idle micro accounting is available
/// (`get_cpu_idle_time_us` works, i.e. NO_HZ kernels — practically all).
pub const MICRO_FREQUENCY_UP_THRESHOLD: u32 = 95;
/// `MIN_FREQUENCY_UP_THRESHOLD` / `MAX_FREQUENCY_UP_THRESHOLD` (ondemand sysfs range).
pub const MIN_FREQUENCY_UP_THRESHOLD: u32 = 1;
pub const MAX_FREQUENCY_UP_THRESHOLD: u32 = 100;
/// `DEF_SAMPLING_DOWN_FACTOR`.
pub const DEF_SAMPLING_DOWN_FACTOR: u32 = 1;
/// ondemand's `MAX_SAMPLING_DOWN_FACTOR`.
pub const OD_MAX_SAMPLING_DOWN_FACTOR: u32 = 100_000;
/// conservative's `MAX_SAMPLING_DOWN_FACTOR`.
pub const CS_MAX_SAMPLING_DOWN_FACTOR: u32 = 10;
/// conservative's `DEF_FREQUENCY_DOWN_THRESHOLD`.
pub const DEF_FREQUENCY_DOWN_THRESHOLD: u32 = 20;
/// conservative's `DEF_FREQUENCY_STEP` (% of `policy->max`; also the kHz fallback step).
pub const DEF_FREQUENCY_STEP: u32 = 5;
/// ondemand's `powersave_bias` maximum (per mille).
pub const MAX_POWERSAVE_BIAS: u32 = 1000;

/// Governor tunables (`struct dbs_data` + `od_dbs_tuners` / `cs_dbs_tuners`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DbsTunables {
    /// `sampling_rate` (µs).
    pub sampling_rate_us: u32,
    pub up_threshold: u32,
    pub sampling_down_factor: u32,
    pub ignore_nice_load: bool,
    /// ondemand only (per mille, 0..=1000).
    pub powersave_bias: u32,
    /// Count iowait time as busy.
    pub io_is_busy: bool,
    /// conservative only.
    pub down_threshold: u32,
    /// conservative only (% of `policy->max`).
    pub freq_step: u32,
}

/// `sampling_rate = max(CPUFREQ_DBS_MIN_SAMPLING_INTERVAL, cpufreq_policy_transition_delay_us)`
/// (v4.14+; `transition_delay_us` from [`super::policy::transition_delay_us`]).
pub fn default_sampling_rate_us(transition_delay_us: u64, tick_ns: u64) -> u32 {
    dbs_min_sampling_interval_us(tick_ns).max(transition_delay_us) as u32
}

impl DbsTunables {
    /// ondemand defaults (`od_init`): `up_threshold` 95 with idle micro accounting, else 80;
    /// `io_is_busy` = `should_io_be_busy()` (Intel family 6 model ≥ 15: true) — the caller's.
    pub fn ondemand(
        transition_delay_us: u64,
        tick_ns: u64,
        micro_accounting: bool,
        io_is_busy: bool,
    ) -> Self {
        DbsTunables {
            sampling_rate_us: default_sampling_rate_us(transition_delay_us, tick_ns),
            up_threshold: if micro_accounting {
                MICRO_FREQUENCY_UP_THRESHOLD
            } else {
                DEF_FREQUENCY_UP_THRESHOLD
            },
            sampling_down_factor: DEF_SAMPLING_DOWN_FACTOR,
            ignore_nice_load: false,
            powersave_bias: 0,
            io_is_busy,
            down_threshold: 0,
            freq_step: 0,
        }
    }

    /// conservative defaults (`cs_init`): up 80, down 20, step 5 %, `sampling_down_factor` 1,
    /// `io_is_busy` off.
    pub fn conservative(transition_delay_us: u64, tick_ns: u64) -> Self {
        DbsTunables {
            sampling_rate_us: default_sampling_rate_us(transition_delay_us, tick_ns),
            up_threshold: DEF_FREQUENCY_UP_THRESHOLD,
            sampling_down_factor: DEF_SAMPLING_DOWN_FACTOR,
            ignore_nice_load: false,
            powersave_bias: 0,
            io_is_busy: false,
            down_threshold: DEF_FREQUENCY_DOWN_THRESHOLD,
            freq_step: DEF_FREQUENCY_STEP,
        }
    }

    /// The sysfs range checks of ondemand (v4.x+): `up_threshold` in [1, 100],
    /// `sampling_down_factor` in [1, 100000], `powersave_bias` ≤ 1000, `sampling_rate` ≥ 2
    /// ticks.
    pub fn check_ondemand(&self, tick_ns: u64) -> Result<(), String> {
        self.check_rate(tick_ns)?;
        if !(MIN_FREQUENCY_UP_THRESHOLD..=MAX_FREQUENCY_UP_THRESHOLD).contains(&self.up_threshold) {
            return Err(format!(
                "ondemand up_threshold = {}: allowed 1..=100",
                self.up_threshold
            ));
        }
        if !(1..=OD_MAX_SAMPLING_DOWN_FACTOR).contains(&self.sampling_down_factor) {
            return Err(format!(
                "ondemand sampling_down_factor = {}: allowed 1..=100000",
                self.sampling_down_factor
            ));
        }
        if self.powersave_bias > MAX_POWERSAVE_BIAS {
            return Err(format!(
                "ondemand powersave_bias = {}: allowed 0..=1000",
                self.powersave_bias
            ));
        }
        Ok(())
    }

    /// The sysfs range checks of conservative: 1 ≤ down < up ≤ 100, `sampling_down_factor` in
    /// [1, 10], `freq_step` ≤ 100, `sampling_rate` ≥ 2 ticks.
    pub fn check_conservative(&self, tick_ns: u64) -> Result<(), String> {
        self.check_rate(tick_ns)?;
        if !(self.down_threshold >= 1
            && self.down_threshold < self.up_threshold
            && self.up_threshold <= 100)
        {
            return Err(format!(
                "conservative up_threshold = {}, down_threshold = {}: need 1 <= down < up <= 100",
                self.up_threshold, self.down_threshold
            ));
        }
        if !(1..=CS_MAX_SAMPLING_DOWN_FACTOR).contains(&self.sampling_down_factor) {
            return Err(format!(
                "conservative sampling_down_factor = {}: allowed 1..=10",
                self.sampling_down_factor
            ));
        }
        if self.freq_step > 100 {
            return Err(format!(
                "conservative freq_step = {}: allowed 0..=100",
                self.freq_step
            ));
        }
        Ok(())
    }

    fn check_rate(&self, tick_ns: u64) -> Result<(), String> {
        let min = dbs_min_sampling_interval_us(tick_ns);
        if u64::from(self.sampling_rate_us) < min {
            return Err(format!(
                "sampling_rate = {} us: must be at least {min} us (2 ticks)",
                self.sampling_rate_us
            ));
        }
        Ok(())
    }
}

/// Cumulative counters of one CPU at the moment of a sample (what `get_cpu_idle_time` reads).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuIdleSample {
    /// Total idle time excluding iowait (`idle_sleeptime`, plus the ongoing idle period), ns.
    pub idle_ns: u64,
    /// Total iowait time (`iowait_sleeptime`), ns.
    pub iowait_ns: u64,
    /// Total time in niced tasks (`kcpustat CPUTIME_NICE`), ns.
    pub nice_ns: u64,
    /// The current time (ns).
    pub now_ns: u64,
}

/// `get_cpu_idle_time(cpu, &wall, io_busy)`: (idle µs, wall µs). With `io_busy` iowait counts
/// as busy, else as idle; each counter is truncated to µs separately.
pub fn get_cpu_idle_time_us(s: &CpuIdleSample, io_busy: bool) -> (u64, u64) {
    let mut idle = s.idle_ns / NSEC_PER_USEC;
    if !io_busy {
        idle += s.iowait_ns / NSEC_PER_USEC;
    }
    (idle, s.now_ns / NSEC_PER_USEC)
}

/// Per-CPU load bookkeeping (`struct cpu_dbs_info`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DbsCpu {
    /// µs.
    pub prev_cpu_idle: u64,
    /// µs.
    pub prev_update_time: u64,
    /// ns.
    pub prev_cpu_nice: u64,
    pub prev_load: u32,
}

impl DbsCpu {
    /// The state `cpufreq_dbs_governor_start` sets up (`prev_load` 0 so the first sample
    /// computes the load).
    pub fn start(s: &CpuIdleSample, tun: &DbsTunables) -> Self {
        let (idle, wall) = get_cpu_idle_time_us(s, tun.io_is_busy);
        DbsCpu {
            prev_cpu_idle: idle,
            prev_update_time: wall,
            prev_cpu_nice: if tun.ignore_nice_load { s.nice_ns } else { 0 },
            prev_load: 0,
        }
    }
}

/// Result of [`dbs_update`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DbsLoad {
    /// Highest per-CPU load (%).
    pub max_load: u32,
    /// Smallest number of whole sampling periods a CPU spent idle, when some CPU was idle for
    /// more than two periods; `u32::MAX` otherwise.
    pub idle_periods: u32,
}

/// `dbs_update()`: the policy load since the previous sample. `sampling_rate` is
/// `tunables.sampling_rate × rate_mult`.
pub fn dbs_update(
    cpus: &mut [DbsCpu],
    samples: &[CpuIdleSample],
    tun: &DbsTunables,
    rate_mult: u32,
) -> DbsLoad {
    assert_eq!(cpus.len(), samples.len(), "one sample per policy CPU");
    let sampling_rate = tun.sampling_rate_us.wrapping_mul(rate_mult);
    let long_idle = sampling_rate.wrapping_mul(2);
    let mut max_load = 0;
    let mut idle_periods = u32::MAX;
    for (c, s) in cpus.iter_mut().zip(samples) {
        let (cur_idle, update_time) = get_cpu_idle_time_us(s, tun.io_is_busy);
        // unsigned int differences, as in the kernel.
        let time_elapsed = update_time.wrapping_sub(c.prev_update_time) as u32;
        c.prev_update_time = update_time;
        let mut idle_time = cur_idle.wrapping_sub(c.prev_cpu_idle) as u32;
        c.prev_cpu_idle = cur_idle;
        if tun.ignore_nice_load {
            let nice_us = s.nice_ns.wrapping_sub(c.prev_cpu_nice) / NSEC_PER_USEC;
            idle_time = idle_time.wrapping_add(nice_us as u32);
            c.prev_cpu_nice = s.nice_ns;
        }
        let load = if time_elapsed == 0 {
            // Called twice in a row: reuse the previous load.
            c.prev_load
        } else if idle_time > long_idle && c.prev_load != 0 {
            // Woken after a long idle: use the load from before the idle once.
            let l = c.prev_load;
            c.prev_load = 0;
            l
        } else {
            let l = if time_elapsed >= idle_time {
                100u32.wrapping_mul(time_elapsed - idle_time) / time_elapsed
            } else if (idle_time as i32) < 0 {
                100
            } else {
                0
            };
            c.prev_load = l;
            l
        };
        if idle_time > long_idle {
            idle_periods = idle_periods.min(idle_time / sampling_rate);
        }
        max_load = max_load.max(load);
    }
    DbsLoad {
        max_load,
        idle_periods,
    }
}

/// Per-policy sampling state (`struct policy_dbs_info`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DbsPolicy {
    pub cpus: Vec<DbsCpu>,
    /// Multiplier of the sampling rate (ondemand's `sampling_down_factor` at max).
    pub rate_mult: u32,
    /// From the last [`dbs_update`].
    pub idle_periods: u32,
    pub last_sample_time: u64,
    pub sample_delay_ns: u64,
}

impl DbsPolicy {
    /// `cpufreq_dbs_governor_start` + `gov_set_update_util`.
    pub fn start(samples: &[CpuIdleSample], tun: &DbsTunables) -> Self {
        DbsPolicy {
            cpus: samples.iter().map(|s| DbsCpu::start(s, tun)).collect(),
            rate_mult: 1,
            idle_periods: u32::MAX,
            last_sample_time: 0,
            sample_delay_ns: u64::from(tun.sampling_rate_us) * NSEC_PER_USEC,
        }
    }

    /// The time gate of `dbs_update_util_handler`, run on every scheduler callback: true (and
    /// `last_sample_time = time`) when a sample is due.
    pub fn sample_due(&mut self, time: u64) -> bool {
        if time < self.last_sample_time || time - self.last_sample_time < self.sample_delay_ns {
            return false;
        }
        self.last_sample_time = time;
        true
    }

    /// `gov_update_sample_delay`.
    pub fn set_sample_delay_us(&mut self, delay_us: u64) {
        self.sample_delay_ns = delay_us * NSEC_PER_USEC;
    }

    /// Run [`dbs_update`] and keep its `idle_periods`; returns the load.
    pub fn update(&mut self, samples: &[CpuIdleSample], tun: &DbsTunables) -> u32 {
        let r = dbs_update(&mut self.cpus, samples, tun, self.rate_mult);
        self.idle_periods = r.idle_periods;
        r.max_load
    }
}

/// What one sampling-work run decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DbsDecision {
    /// Frequency to set (kHz), `None` = unchanged.
    pub target_khz: Option<u64>,
    /// Delay until the next sample (µs); already applied to the sample gate.
    pub next_delay_us: u64,
    /// The load computed, if this run computed one (an ondemand sub-sample does not).
    pub load: Option<u32>,
}

/// The `powersave_bias` time-sharing decided by `generic_powersave_bias_target`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PowersaveBias {
    /// Frequency to request now (`freq_hi`, or the single OPP when no split is needed).
    pub freq: u64,
    /// The lower OPP for the rest of the period; 0 = no split.
    pub freq_lo: u64,
    pub freq_hi_delay_us: u64,
    pub freq_lo_delay_us: u64,
}

/// `generic_powersave_bias_target(policy, freq_next, relation)`: reduce the resolved request by
/// `bias` per mille and split one sampling period between the OPPs around the reduced value:
/// `t_hi = ((avg − lo) × T + (hi − lo) / 2) / (hi − lo)` (u32 arithmetic).
pub fn powersave_bias_target(
    policy: &PolicyView,
    freq_next: u64,
    relation: Relation,
    bias: u32,
    sampling_rate_us: u32,
) -> PowersaveBias {
    let t = policy.table_khz;
    if t.is_empty() {
        return PowersaveBias {
            freq: freq_next,
            freq_lo: 0,
            freq_hi_delay_us: 0,
            freq_lo_delay_us: 0,
        };
    }
    let freq_req = policy.resolve(freq_next, relation) as u32;
    let freq_reduc = freq_req.wrapping_mul(bias) / 1000;
    let freq_avg = freq_req - freq_reduc;
    let freq_lo = policy.resolve(u64::from(freq_avg), Relation::H) as u32;
    let freq_hi = policy.resolve(u64::from(freq_avg), Relation::L) as u32;
    if freq_hi == freq_lo {
        return PowersaveBias {
            freq: u64::from(freq_lo),
            freq_lo: 0,
            freq_hi_delay_us: 0,
            freq_lo_delay_us: 0,
        };
    }
    let span = freq_hi - freq_lo;
    let delay_hi = (freq_avg - freq_lo)
        .wrapping_mul(sampling_rate_us)
        .wrapping_add(span / 2)
        / span;
    PowersaveBias {
        freq: u64::from(freq_hi),
        freq_lo: u64::from(freq_lo),
        freq_hi_delay_us: u64::from(delay_hi),
        freq_lo_delay_us: u64::from(sampling_rate_us.wrapping_sub(delay_hi)),
    }
}

/// ondemand's sample type (`OD_NORMAL_SAMPLE` / `OD_SUB_SAMPLE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OdSampleType {
    Normal,
    /// The next run switches to `freq_lo` for the rest of the period (`powersave_bias`).
    Sub,
}

/// The ondemand governor of one policy (`struct od_policy_dbs_info`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ondemand {
    pub dbs: DbsPolicy,
    pub sample_type: OdSampleType,
    pub freq_lo: u64,
    pub freq_lo_delay_us: u64,
    pub freq_hi_delay_us: u64,
}

impl Ondemand {
    /// Governor start with the counters at that time.
    pub fn start(samples: &[CpuIdleSample], tun: &DbsTunables) -> Self {
        Ondemand {
            dbs: DbsPolicy::start(samples, tun),
            sample_type: OdSampleType::Normal,
            freq_lo: 0,
            freq_lo_delay_us: 0,
            freq_hi_delay_us: 0,
        }
    }

    /// `od_update()`: compute the load and the new frequency.
    pub fn od_update(
        &mut self,
        policy: &PolicyView,
        samples: &[CpuIdleSample],
        tun: &DbsTunables,
    ) -> (u32, Option<u64>) {
        let load = self.dbs.update(samples, tun);
        self.freq_lo = 0;
        if load > tun.up_threshold {
            // Switching to max: stay there longer.
            if policy.cur_khz < policy.max_khz {
                self.dbs.rate_mult = tun.sampling_down_factor;
            }
            // dbs_freq_increase(policy, policy->max)
            let target = if tun.powersave_bias != 0 {
                let f = self.bias(policy, policy.max_khz, Relation::H, tun);
                policy.driver_target(f, Relation::L)
            } else if policy.cur_khz == policy.max_khz {
                None
            } else {
                policy.driver_target(policy.max_khz, Relation::H)
            };
            (load, target)
        } else {
            let (min_f, max_f) = (policy.cpuinfo_min_khz, policy.cpuinfo_max_khz);
            let mut freq_next = min_f + u64::from(load) * (max_f - min_f) / 100;
            self.dbs.rate_mult = 1;
            if tun.powersave_bias != 0 {
                freq_next = self.bias(policy, freq_next, Relation::L, tun);
            }
            (load, policy.driver_target(freq_next, Relation::C))
        }
    }

    fn bias(
        &mut self,
        policy: &PolicyView,
        freq_next: u64,
        rel: Relation,
        tun: &DbsTunables,
    ) -> u64 {
        let b = powersave_bias_target(
            policy,
            freq_next,
            rel,
            tun.powersave_bias,
            tun.sampling_rate_us,
        );
        self.freq_lo = b.freq_lo;
        self.freq_lo_delay_us = b.freq_lo_delay_us;
        if b.freq_lo != 0 {
            self.freq_hi_delay_us = b.freq_hi_delay_us;
        }
        b.freq
    }

    /// `od_dbs_update()`: one run of the sampling work (call when [`DbsPolicy::sample_due`]).
    pub fn od_dbs_update(
        &mut self,
        policy: &PolicyView,
        samples: &[CpuIdleSample],
        tun: &DbsTunables,
    ) -> DbsDecision {
        let sample_type = self.sample_type;
        self.sample_type = OdSampleType::Normal;
        let d = if sample_type == OdSampleType::Sub && self.dbs.sample_delay_ns > 0 {
            DbsDecision {
                target_khz: policy.driver_target(self.freq_lo, Relation::H),
                next_delay_us: self.freq_lo_delay_us,
                load: None,
            }
        } else {
            let (load, target_khz) = self.od_update(policy, samples, tun);
            let next_delay_us = if self.freq_lo != 0 {
                self.sample_type = OdSampleType::Sub;
                self.freq_hi_delay_us
            } else {
                u64::from(tun.sampling_rate_us) * u64::from(self.dbs.rate_mult)
            };
            DbsDecision {
                target_khz,
                next_delay_us,
                load: Some(load),
            }
        };
        self.dbs.set_sample_delay_us(d.next_delay_us);
        d
    }
}

/// `get_freq_step()`: `freq_step` % of `policy->max` (kHz), `DEF_FREQUENCY_STEP` kHz if that
/// is 0.
pub fn get_freq_step(freq_step_pct: u32, policy_max_khz: u64) -> u64 {
    let step = u64::from(freq_step_pct) * policy_max_khz / 100;
    if step == 0 {
        u64::from(DEF_FREQUENCY_STEP)
    } else {
        step
    }
}

/// The conservative governor of one policy (`struct cs_policy_dbs_info`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conservative {
    pub dbs: DbsPolicy,
    pub down_skip: u32,
    /// kHz; need not be an OPP.
    pub requested_freq: u64,
}

impl Conservative {
    /// Governor start (`cs_start`: `requested_freq = policy->cur`).
    pub fn start(samples: &[CpuIdleSample], tun: &DbsTunables, cur_khz: u64) -> Self {
        Conservative {
            dbs: DbsPolicy::start(samples, tun),
            down_skip: 0,
            requested_freq: cur_khz,
        }
    }

    /// `cs_dbs_update()`: one run of the sampling work (call when [`DbsPolicy::sample_due`]).
    pub fn cs_dbs_update(
        &mut self,
        policy: &PolicyView,
        samples: &[CpuIdleSample],
        tun: &DbsTunables,
    ) -> DbsDecision {
        let load = self.dbs.update(samples, tun);
        let target_khz = self.decide(policy, load, tun);
        let next_delay_us = u64::from(tun.sampling_rate_us);
        self.dbs.set_sample_delay_us(next_delay_us);
        DbsDecision {
            target_khz,
            next_delay_us,
            load: Some(load),
        }
    }

    fn decide(&mut self, policy: &PolicyView, load: u32, tun: &DbsTunables) -> Option<u64> {
        let (min, max) = (policy.min_khz, policy.max_khz);
        let mut requested = self.requested_freq;
        // freq_step 0: the user does not want any change.
        if tun.freq_step == 0 {
            return None;
        }
        // Limits changed meanwhile: restart from the current frequency.
        if requested > max || requested < min {
            requested = policy.cur_khz;
            self.requested_freq = requested;
        }
        let step = get_freq_step(tun.freq_step, max);
        // One step down per sampling period spent idle (not stored unless a target follows).
        if self.dbs.idle_periods < u32::MAX {
            let steps = u64::from(self.dbs.idle_periods) * step;
            requested = if requested > min + steps {
                requested - steps
            } else {
                min
            };
            self.dbs.idle_periods = u32::MAX;
        }
        if load > tun.up_threshold {
            self.down_skip = 0;
            if requested == max {
                return None;
            }
            requested = (requested + step).min(max);
            self.requested_freq = requested;
            return policy.driver_target(requested, Relation::H);
        }
        self.down_skip += 1;
        if self.down_skip < tun.sampling_down_factor {
            return None;
        }
        self.down_skip = 0;
        if load < tun.down_threshold {
            if requested == min {
                return None;
            }
            requested = if requested > step {
                requested - step
            } else {
                min
            };
            self.requested_freq = requested;
            return policy.driver_target(requested, Relation::L);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const TICK: u64 = 4 * MS;

    fn table() -> Vec<u64> {
        (8..=39).map(|r| r * 100_000).collect()
    }

    fn view(t: &[u64], cur: u64) -> PolicyView<'_> {
        PolicyView {
            table_khz: t,
            min_khz: 800_000,
            max_khz: 3_900_000,
            cpuinfo_min_khz: 800_000,
            cpuinfo_max_khz: 3_900_000,
            cur_khz: cur,
        }
    }

    fn tun() -> DbsTunables {
        // 10 ms sampling (10 ms cap of a pre-6.9 kernel with 20 µs latency), up_threshold 80.
        DbsTunables::ondemand(10_000, TICK, false, true)
    }

    fn s(now_ms: u64, idle_ms: u64, iowait_ms: u64) -> CpuIdleSample {
        CpuIdleSample {
            idle_ns: idle_ms * MS,
            iowait_ns: iowait_ms * MS,
            nice_ns: 0,
            now_ns: now_ms * MS,
        }
    }

    #[test]
    fn defaults() {
        let od = DbsTunables::ondemand(500, TICK, true, true);
        // max(2 ticks = 8000 µs, 500 µs).
        assert_eq!(od.sampling_rate_us, 8_000);
        assert_eq!(od.up_threshold, 95);
        assert_eq!(od.sampling_down_factor, 1);
        assert!(od.io_is_busy);
        assert_eq!(
            DbsTunables::ondemand(10_000, TICK, false, false).up_threshold,
            80
        );
        let cs = DbsTunables::conservative(10_000, TICK);
        assert_eq!(
            (
                cs.sampling_rate_us,
                cs.up_threshold,
                cs.down_threshold,
                cs.freq_step
            ),
            (10_000, 80, 20, 5)
        );
        assert!(od.check_ondemand(TICK).is_ok() && cs.check_conservative(TICK).is_ok());
        let mut bad = cs;
        bad.down_threshold = 80;
        assert!(bad.check_conservative(TICK).is_err());
        let mut bad = od;
        bad.sampling_rate_us = 1_000;
        assert!(bad.check_ondemand(TICK).unwrap_err().contains("8000"));
    }

    #[test]
    fn load_from_idle_counters() {
        let t = tun();
        let mut cpus = [DbsCpu::start(&s(0, 0, 0), &t)];
        // 10 ms elapsed, 1 ms idle -> 90 %.
        assert_eq!(dbs_update(&mut cpus, &[s(10, 1, 0)], &t, 1).max_load, 90);
        // Called again at the same time: the previous load.
        assert_eq!(dbs_update(&mut cpus, &[s(10, 1, 0)], &t, 1).max_load, 90);
        // Max over CPUs.
        let mut two = [
            DbsCpu::start(&s(0, 0, 0), &t),
            DbsCpu::start(&s(0, 0, 0), &t),
        ];
        let r = dbs_update(&mut two, &[s(10, 7, 0), s(10, 4, 0)], &t, 1);
        assert_eq!((r.max_load, r.idle_periods), (60, u32::MAX));
    }

    #[test]
    fn io_is_busy_counts_iowait_as_busy() {
        let mut t = tun();
        // 10 ms: 2 ms idle + 3 ms iowait.
        let mut c = [DbsCpu::start(&s(0, 0, 0), &t)];
        assert_eq!(dbs_update(&mut c, &[s(10, 2, 3)], &t, 1).max_load, 80);
        t.io_is_busy = false;
        let mut c = [DbsCpu::start(&s(0, 0, 0), &t)];
        assert_eq!(dbs_update(&mut c, &[s(10, 2, 3)], &t, 1).max_load, 50);
    }

    #[test]
    fn ignore_nice_counts_nice_time_as_idle() {
        let mut t = tun();
        t.ignore_nice_load = true;
        let mut c = [DbsCpu::start(&s(0, 0, 0), &t)];
        let mut x = s(10, 1, 0);
        x.nice_ns = 4 * MS;
        assert_eq!(dbs_update(&mut c, &[x], &t, 1).max_load, 50);
    }

    #[test]
    fn counters_truncate_to_microseconds() {
        let t = tun();
        let mut c = [DbsCpu::start(&s(0, 0, 0), &t)];
        // 9_999_999 ns -> 9999 µs elapsed, 999_999 ns -> 999 µs idle: 100 × 9000 / 9999 = 90.
        let x = CpuIdleSample {
            idle_ns: 999_999,
            iowait_ns: 0,
            nice_ns: 0,
            now_ns: 9_999_999,
        };
        assert_eq!(dbs_update(&mut c, &[x], &t, 1).max_load, 90);
        assert_eq!(c[0].prev_update_time, 9_999);
    }

    #[test]
    fn long_idle_reuses_prev_load_once() {
        let t = tun();
        let mut c = [DbsCpu::start(&s(0, 0, 0), &t)];
        assert_eq!(dbs_update(&mut c, &[s(10, 1, 0)], &t, 1).max_load, 90);
        // 45 ms later, 44 ms of it idle (> 2 × 10 ms): the old 90 % is reused, prev_load cleared,
        // idle periods = 44000 / 10000 = 4.
        let r = dbs_update(&mut c, &[s(55, 45, 0)], &t, 1);
        assert_eq!((r.max_load, r.idle_periods), (90, 4));
        assert_eq!(c[0].prev_load, 0);
        // Another long idle: prev_load is 0 now, so the load is computed (1 busy ms in 31).
        let r = dbs_update(&mut c, &[s(86, 75, 0)], &t, 1);
        assert_eq!((r.max_load, r.idle_periods), (3, 3));
        // 26 ms with 25 ms idle: "long" (> 2 × 10 ms) with rate_mult 1 (prev_load 3 reused,
        // 2 idle periods), not with rate_mult 2 (2 × 20 ms).
        let mut c2 = c;
        let r = dbs_update(&mut c2, &[s(112, 100, 0)], &t, 2);
        assert_eq!(r.idle_periods, u32::MAX);
        let r = dbs_update(&mut c, &[s(112, 100, 0)], &t, 1);
        assert_eq!(r.idle_periods, 2);
    }

    #[test]
    fn sample_gate() {
        let t = tun();
        let mut p = DbsPolicy::start(&[s(0, 0, 0)], &t);
        assert!(p.sample_due(10 * MS));
        assert!(!p.sample_due(15 * MS));
        assert!(p.sample_due(20 * MS));
        p.set_sample_delay_us(40_000);
        assert!(!p.sample_due(59 * MS));
        assert!(p.sample_due(60 * MS));
    }

    #[test]
    fn ondemand_high_load_goes_to_max() {
        let tb = table();
        let mut t = tun();
        t.sampling_down_factor = 4;
        let mut od = Ondemand::start(&[s(0, 0, 0)], &t);
        // 90 % > 80: max, rate_mult = 4 -> next sample in 40 ms.
        let d = od.od_dbs_update(&view(&tb, 2_000_000), &[s(10, 1, 0)], &t);
        assert_eq!(
            d,
            DbsDecision {
                target_khz: Some(3_900_000),
                next_delay_us: 40_000,
                load: Some(90)
            }
        );
        // Already at max and still busy: no driver call, rate_mult kept.
        let d = od.od_dbs_update(&view(&tb, 3_900_000), &[s(50, 2, 0)], &t);
        assert_eq!((d.target_khz, d.next_delay_us), (None, 40_000));
        // Load drops to 50 %: proportional, rate_mult back to 1.
        let d = od.od_dbs_update(&view(&tb, 3_900_000), &[s(90, 22, 0)], &t);
        assert_eq!(d.load, Some(50));
        assert_eq!(d.next_delay_us, 10_000);
    }

    #[test]
    fn ondemand_proportional_with_relation_c() {
        let tb = table();
        let t = tun();
        let mut od = Ondemand::start(&[s(0, 0, 0)], &t);
        // 50 %: 800 + 50 × 3100 / 100 = 2350 MHz, halfway between 2.3 and 2.4: the tie goes low.
        let d = od.od_dbs_update(&view(&tb, 800_000), &[s(10, 5, 0)], &t);
        assert_eq!(d.target_khz, Some(2_300_000));
        // 50 ms with 17 ms idle = 66 %: 800 + 2046 = 2846 MHz -> closest 2.8 GHz.
        let d = od.od_dbs_update(&view(&tb, 2_300_000), &[s(60, 22, 0)], &t);
        assert_eq!((d.load, d.target_khz), (Some(66), Some(2_800_000)));
        // With up_threshold 95 a 90 % load is proportional: 800 + 2790 = 3590 -> 3.6 GHz.
        let t95 = DbsTunables::ondemand(10_000, TICK, true, true);
        let mut od = Ondemand::start(&[s(0, 0, 0)], &t95);
        let d = od.od_dbs_update(&view(&tb, 800_000), &[s(10, 1, 0)], &t95);
        assert_eq!(d.target_khz, Some(3_600_000));
    }

    #[test]
    fn ondemand_powersave_bias_time_shares() {
        let tb = table();
        let mut t = tun();
        t.powersave_bias = 100; // 10 %
        let p = view(&tb, 800_000);
        // 2350 MHz -> RELATION_L 2.4 GHz -> minus 10 % = 2160 MHz, between 2.1 and 2.2 GHz:
        // t_hi = (60_000 × 10_000 + 50_000) / 100_000 = 6000 µs, t_lo = 4000 µs.
        let b = powersave_bias_target(&p, 2_350_000, Relation::L, 100, 10_000);
        assert_eq!(
            b,
            PowersaveBias {
                freq: 2_200_000,
                freq_lo: 2_100_000,
                freq_hi_delay_us: 6_000,
                freq_lo_delay_us: 4_000
            }
        );
        let mut od = Ondemand::start(&[s(0, 0, 0)], &t);
        let d = od.od_dbs_update(&p, &[s(10, 5, 0)], &t);
        assert_eq!((d.target_khz, d.next_delay_us), (Some(2_200_000), 6_000));
        assert_eq!(od.sample_type, OdSampleType::Sub);
        // The sub-sample switches to freq_lo for the rest of the period.
        let d = od.od_dbs_update(&view(&tb, 2_200_000), &[s(16, 8, 0)], &t);
        assert_eq!(
            d,
            DbsDecision {
                target_khz: Some(2_100_000),
                next_delay_us: 4_000,
                load: None
            }
        );
        assert_eq!(od.sample_type, OdSampleType::Normal);
        // A reduced target that is an OPP: no split.
        let b = powersave_bias_target(&p, 2_000_000, Relation::L, 100, 10_000);
        assert_eq!((b.freq, b.freq_lo), (1_800_000, 0));
        // No table: unchanged.
        let nt = view(&[], 800_000);
        assert_eq!(
            powersave_bias_target(&nt, 2_345_678, Relation::L, 100, 10_000).freq,
            2_345_678
        );
    }

    #[test]
    fn conservative_steps_by_five_percent_of_max() {
        let tb = table();
        let t = DbsTunables::conservative(10_000, TICK);
        assert_eq!(get_freq_step(5, 3_900_000), 195_000);
        let mut cs = Conservative::start(&[s(0, 0, 0)], &t, 2_000_000);
        // 90 % > 80: 2.0 + 0.195 = 2.195 GHz -> RELATION_H 2.1 GHz.
        let d = cs.cs_dbs_update(&view(&tb, 2_000_000), &[s(10, 1, 0)], &t);
        assert_eq!(
            (d.target_khz, cs.requested_freq),
            (Some(2_100_000), 2_195_000)
        );
        // Again: 2.39 GHz -> 2.3 GHz.
        let d = cs.cs_dbs_update(&view(&tb, 2_100_000), &[s(20, 2, 0)], &t);
        assert_eq!(
            (d.target_khz, cs.requested_freq),
            (Some(2_300_000), 2_390_000)
        );
        // 50 %: between the thresholds, nothing.
        let d = cs.cs_dbs_update(&view(&tb, 2_300_000), &[s(30, 7, 0)], &t);
        assert_eq!(d.target_khz, None);
        // 10 % < 20: down one step to 2.195 GHz -> RELATION_L 2.2 GHz.
        let d = cs.cs_dbs_update(&view(&tb, 2_300_000), &[s(40, 16, 0)], &t);
        assert_eq!(
            (d.target_khz, cs.requested_freq),
            (Some(2_200_000), 2_195_000)
        );
        assert_eq!(d.next_delay_us, 10_000);
    }

    #[test]
    fn conservative_sampling_down_factor_and_limits() {
        let tb = table();
        let mut t = DbsTunables::conservative(10_000, TICK);
        t.sampling_down_factor = 3;
        let mut cs = Conservative::start(&[s(0, 0, 0)], &t, 2_000_000);
        let p = view(&tb, 2_000_000);
        // Two low-load samples are skipped, the third steps down.
        assert_eq!(cs.cs_dbs_update(&p, &[s(10, 9, 0)], &t).target_khz, None);
        assert_eq!(cs.cs_dbs_update(&p, &[s(20, 18, 0)], &t).target_khz, None);
        assert_eq!(
            cs.cs_dbs_update(&p, &[s(30, 27, 0)], &t).target_khz,
            Some(1_900_000)
        ); // 1.805 -> L 1.9
        assert_eq!(cs.down_skip, 0);
        // At max already: no step up.
        let mut cs = Conservative::start(&[s(0, 0, 0)], &t, 3_900_000);
        assert_eq!(
            cs.cs_dbs_update(&view(&tb, 3_900_000), &[s(10, 0, 0)], &t)
                .target_khz,
            None
        );
        // requested_freq outside new limits -> restarts from cur.
        let mut cs = Conservative::start(&[s(0, 0, 0)], &t, 3_900_000);
        let mut lim = view(&tb, 3_000_000);
        lim.max_khz = 3_000_000;
        cs.cs_dbs_update(&lim, &[s(10, 5, 0)], &t);
        assert_eq!(cs.requested_freq, 3_000_000);
        // freq_step 0: never changes.
        let mut t0 = t;
        t0.freq_step = 0;
        let mut cs = Conservative::start(&[s(0, 0, 0)], &t0, 2_000_000);
        assert_eq!(
            cs.cs_dbs_update(&view(&tb, 2_000_000), &[s(10, 0, 0)], &t0)
                .target_khz,
            None
        );
    }

    #[test]
    fn conservative_steps_down_per_idle_period() {
        let tb = table();
        let t = DbsTunables::conservative(10_000, TICK);
        let mut cs = Conservative::start(&[s(0, 0, 0)], &t, 3_000_000);
        let p = view(&tb, 3_000_000);
        // 90 % busy first (prev_load 90): up to 3.195 -> H 3.1 GHz.
        assert_eq!(
            cs.cs_dbs_update(&p, &[s(10, 1, 0)], &t).target_khz,
            Some(3_100_000)
        );
        // 40 ms later with 35 ms idle: prev_load (90) reused -> "busy", but 3 idle periods
        // first lower the request by 3 steps: 3.195 − 0.585 = 2.61, + 0.195 = 2.805 -> H 2.8 GHz.
        let d = cs.cs_dbs_update(&view(&tb, 3_100_000), &[s(50, 36, 0)], &t);
        assert_eq!(
            (d.load, d.target_khz, cs.requested_freq),
            (Some(90), Some(2_800_000), 2_805_000)
        );
        assert_eq!(cs.dbs.idle_periods, u32::MAX);
    }
}
