//! intel_pstate decision logic (spec/kernel.md §5; `drivers/cpufreq/intel_pstate.c`, read at
//! v5.10/v5.15 with the pre-v5.1 iowait form from the v4.19 code).
//!
//! What it models:
//! - P-state units (ratio × `scaling`, 100 MHz on non-hybrid parts) and the policy → ratio
//!   limits (`intel_pstate_update_perf_limits`, `intel_pstate_prepare_request`);
//! - active mode without HWP, "powersave" (`intel_pstate_update_util`, `intel_pstate_sample`,
//!   `get_target_pstate`): every ≥ 10 ms a sample of the APERF/MPERF/TSC deltas;
//!   `busy_frac = (ΔMPERF << shift) / ΔTSC` in 8-bit fixed point, raised to the iowait boost;
//!   `target = (top + top/4) × busy_frac` with `top` = turbo (or max non-turbo P-state with
//!   no_turbo), floored at `min_pstate`; when the average P-state of the busy time
//!   (`max_pstate_physical × ΔAPERF/ΔMPERF`, 14-bit fixed point) is higher, half the difference
//!   is added ("don't drop too fast"); clamped to the policy limits; the first sample after the
//!   hook is installed is discarded, and a sample needs both MPERF and TSC to have moved;
//! - the two iowait-boost forms: before v5.1 a full boost (1.0) with an immediate sample,
//!   halved at each sample and cleared after a tick without callbacks; v5.1+ (b8bd1581aa61,
//!   "Rework iowait boosting to be less aggressive") a 1/8 start doubling per callback within a
//!   tick, halved on other callbacks;
//! - HWP dynamic boost (`intel_pstate_update_util_hwp`, [`HwpBoost`]): HWP min raised through
//!   (guaranteed + min)/2, guaranteed, max on two IOWAIT callbacks within 2 ticks; dropped at the
//!   first non-IOWAIT local callback more than 3 ms after the previous callback;
//! - passive mode (`intel_cpufreq`): `target` / `fast_switch` rounding of kHz to P-states, the
//!   HWP request written in passive mode, and `adjust_perf` mapping schedutil's capacity-unit
//!   hints to HWP {min, max, desired}.
//!
//! Fixed point is the kernel's: `FRAC_BITS` = 8 for busy fractions and the boost,
//! `EXT_FRAC_BITS` = 14 for the APERF/MPERF ratio. Note that `top + (top >> 2)` truncates first:
//! with turbo 39 the "1.25 × 39 = 48.75" is 48, so 50 % busy gives P-state 24 exactly.
//!
//! Simplifications: only the local CPU's callbacks reach [`IntelPstateCpu::update_util`]
//! (remote ones are ignored by the kernel); the caller adds the C0 time of a callback on an idle
//! CPU to the counters it passes ([`IntelPstateCpu::c0_idle`]); the turbo state (`update_turbo_state`) and the
//! limits are inputs; the MSR value written (`ratio << 8`, turbo-disengage bit) is the caller's;
//! the hybrid perf-to-frequency scaling is only the `scaling_khz` parameter; the "performance"
//! policy (always the top P-state) needs no logic here. Depends on `super::policy` only.

use super::policy::{KernelVersion, Relation, NSEC_PER_MSEC, SCHED_CPUFREQ_IOWAIT};

/// Fractional bits of the busy/boost fixed point.
pub const FRAC_BITS: u32 = 8;
/// Fractional bits of the extended (APERF/MPERF) fixed point.
pub const EXT_FRAC_BITS: u32 = 6 + FRAC_BITS;
/// 1.0 in `FRAC_BITS` fixed point (`int_tofp(1)`).
pub const ONE_FP: i32 = 1 << FRAC_BITS;
/// 1/8 in `FRAC_BITS` fixed point.
pub const ONE_EIGHTH_FP: i32 = 1 << (FRAC_BITS - 3);
/// `INTEL_PSTATE_SAMPLING_INTERVAL` (non-HWP active mode).
pub const INTEL_PSTATE_SAMPLING_INTERVAL_NS: u64 = 10 * NSEC_PER_MSEC;
/// `INTEL_CPUFREQ_TRANSITION_LATENCY` (ns).
pub const INTEL_CPUFREQ_TRANSITION_LATENCY_NS: u64 = 20_000;
/// `INTEL_CPUFREQ_TRANSITION_DELAY_HWP` (µs): schedutil's rate limit with HWP.
pub const INTEL_CPUFREQ_TRANSITION_DELAY_HWP_US: u64 = 5_000;
/// `INTEL_CPUFREQ_TRANSITION_DELAY` (µs): schedutil's rate limit without HWP.
pub const INTEL_CPUFREQ_TRANSITION_DELAY_US: u64 = 500;
/// `hwp_boost_hold_time_ns`.
pub const HWP_BOOST_HOLD_TIME_NS: u64 = 3 * NSEC_PER_MSEC;
/// kHz per P-state on non-hybrid parts (`core_get_scaling`).
pub const CORE_SCALING_KHZ: u64 = 100_000;
/// First version with the 1/8-doubling iowait ramp (b8bd1581aa61).
pub const IOWAIT_RAMP_FROM: KernelVersion = (5, 1);

/// `mul_fp(x, y)` = `(x × y) >> FRAC_BITS`.
pub fn mul_fp(x: i32, y: i32) -> i32 {
    ((i64::from(x) * i64::from(y)) >> FRAC_BITS) as i32
}

/// `div_fp(x, y)` = `(x << FRAC_BITS) / y` (64-bit signed division, truncating).
pub fn div_fp(x: i64, y: i64) -> i32 {
    ((x << FRAC_BITS) / y) as i32
}

/// `fp_toint(x)` = `x >> FRAC_BITS`.
pub fn fp_toint(x: i32) -> i32 {
    x >> FRAC_BITS
}

/// `mul_ext_fp(x, y)` = `(x × y) >> EXT_FRAC_BITS`.
pub fn mul_ext_fp(x: u64, y: u64) -> u64 {
    x.wrapping_mul(y) >> EXT_FRAC_BITS
}

/// `div_ext_fp(x, y)` = `(x << EXT_FRAC_BITS) / y`.
pub fn div_ext_fp(x: u64, y: u64) -> u64 {
    (x << EXT_FRAC_BITS) / y
}

/// P-state limits of the CPU (`struct pstate_data`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PstateData {
    /// Lowest P-state (`MSR_PLATFORM_INFO` max efficiency ratio).
    pub min_pstate: i32,
    /// Highest non-turbo P-state (P1 / guaranteed; may be a cTDP level).
    pub max_pstate: i32,
    /// Physical P1 (`MSR_PLATFORM_INFO` bits 8–15).
    pub max_pstate_physical: i32,
    /// Max 1-core turbo P-state (`MSR_TURBO_RATIO_LIMIT` bits 0–7).
    pub turbo_pstate: i32,
    /// kHz per P-state unit.
    pub scaling_khz: u64,
}

impl PstateData {
    /// A non-hybrid part from its frequencies (kHz, multiples of 100 MHz).
    pub fn from_khz(min_khz: u64, base_khz: u64, turbo_khz: u64) -> Self {
        let r = |k: u64| (k / CORE_SCALING_KHZ) as i32;
        PstateData {
            min_pstate: r(min_khz),
            max_pstate: r(base_khz),
            max_pstate_physical: r(base_khz),
            turbo_pstate: r(turbo_khz),
            scaling_khz: CORE_SCALING_KHZ,
        }
    }

    /// `turbo_disabled` as `update_turbo_state` computes it, given the MISC_ENABLE bit.
    pub fn turbo_disabled(&self, misc_enable_turbo_disable: bool) -> bool {
        misc_enable_turbo_disable || self.max_pstate == self.turbo_pstate
    }
}

/// The per-CPU ratio limits (`cpu->min_perf_ratio`, `cpu->max_perf_ratio`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PerfLimits {
    pub min_perf_ratio: i32,
    pub max_perf_ratio: i32,
}

/// `DIV_ROUND_UP` on non-negative values.
fn div_round_up(n: i64, d: i64) -> i64 {
    (n + d - 1) / d
}

/// `intel_pstate_update_perf_limits()` without HWP: policy limits (kHz) → ratios, combined with
/// the global `min_perf_pct` / `max_perf_pct` (percent of the max turbo P-state) unless
/// `per_cpu_limits`. `no_turbo` = `global.no_turbo || global.turbo_disabled`.
pub fn update_perf_limits(
    pstate: &PstateData,
    no_turbo: bool,
    policy_min_khz: u64,
    policy_max_khz: u64,
    min_perf_pct: u32,
    max_perf_pct: u32,
    per_cpu_limits: bool,
) -> PerfLimits {
    let max_state = i64::from(if no_turbo {
        pstate.max_pstate
    } else {
        pstate.turbo_pstate
    });
    let turbo_max = i64::from(pstate.turbo_pstate);
    let max_freq = max_state * pstate.scaling_khz as i64;
    let (pmin, pmax) = (policy_min_khz as i64, policy_max_khz as i64);
    let max_policy_perf = max_state * pmax / max_freq;
    let min_policy_perf = if pmax == pmin {
        max_policy_perf
    } else {
        (max_state * pmin / max_freq).clamp(0, max_policy_perf)
    };
    if per_cpu_limits {
        return PerfLimits {
            min_perf_ratio: min_policy_perf as i32,
            max_perf_ratio: max_policy_perf as i32,
        };
    }
    let global_max = div_round_up(turbo_max * i64::from(max_perf_pct), 100);
    let global_min = div_round_up(turbo_max * i64::from(min_perf_pct), 100).clamp(0, global_max);
    let mut min_ratio = min_policy_perf.max(global_min).min(max_policy_perf);
    let max_ratio = max_policy_perf.min(global_max).max(min_policy_perf);
    min_ratio = min_ratio.min(max_ratio);
    PerfLimits {
        min_perf_ratio: min_ratio as i32,
        max_perf_ratio: max_ratio as i32,
    }
}

/// `intel_pstate_prepare_request()`: clamp to `[max(min_pstate, min_perf_ratio),
/// max(that, max_perf_ratio)]`.
pub fn prepare_request(pstate: &PstateData, limits: &PerfLimits, target: i32) -> i32 {
    let min = pstate.min_pstate.max(limits.min_perf_ratio);
    let max = min.max(limits.max_perf_ratio);
    target.clamp(min, max)
}

/// Cumulative counters of one CPU (`MSR_IA32_APERF`, `MSR_IA32_MPERF`, TSC).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PerfCounters {
    pub aperf: u64,
    pub mperf: u64,
    pub tsc: u64,
}

/// The last sample (`struct sample`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sample {
    /// ΔAPERF/ΔMPERF in `EXT_FRAC_BITS` fixed point.
    pub core_avg_perf: i32,
    /// `busy_frac × 100` in `FRAC_BITS` fixed point.
    pub busy_scaled: i32,
    pub aperf: u64,
    pub mperf: u64,
    pub tsc: u64,
    /// Time of the sample (ns); 0 = none yet.
    pub time: u64,
}

/// What the non-HWP algorithm needs besides its own state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PstateEnv {
    pub version: KernelVersion,
    pub pstate: PstateData,
    pub limits: PerfLimits,
    /// `global.no_turbo || global.turbo_disabled`.
    pub no_turbo: bool,
    /// `TICK_NSEC`.
    pub tick_ns: u64,
    /// `aperf_mperf_shift` (0 on Core; 10 on Xeon Phi).
    pub aperf_mperf_shift: u32,
}

/// Per-CPU state of active mode without HWP (`struct cpudata`, the fields the algorithm uses).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IntelPstateCpu {
    /// The P-state last written to `MSR_IA32_PERF_CTL`.
    pub current_pstate: i32,
    /// `FRAC_BITS` fixed point.
    pub iowait_boost: i32,
    pub last_update: u64,
    pub last_sample_time: u64,
    pub sample: Sample,
    pub prev: PerfCounters,
    /// C0 time of the callbacks on an idle CPU, which the caller adds to the counters it reads
    /// (the hook runs in C0 even when no task does).
    pub c0_idle: PerfCounters,
}

impl IntelPstateCpu {
    /// State after `intel_pstate_init_cpu` + setting the hook: current P-state as given (the
    /// driver starts at the minimum), counters as read now, `sample.time` = 0 so the first
    /// sample is discarded.
    pub fn new(current_pstate: i32, counters: PerfCounters) -> Self {
        IntelPstateCpu {
            current_pstate,
            prev: counters,
            ..Default::default()
        }
    }

    /// `intel_pstate_sample()`: take a sample if MPERF and TSC moved; true if it can be used
    /// (not the first one).
    pub fn sample(&mut self, time: u64, c: PerfCounters) -> bool {
        if self.prev.mperf == c.mperf || self.prev.tsc == c.tsc {
            return false;
        }
        self.last_sample_time = self.sample.time;
        self.sample.time = time;
        self.sample.aperf = c.aperf.wrapping_sub(self.prev.aperf);
        self.sample.mperf = c.mperf.wrapping_sub(self.prev.mperf);
        self.sample.tsc = c.tsc.wrapping_sub(self.prev.tsc);
        self.prev = c;
        if self.last_sample_time != 0 {
            // intel_pstate_calc_avg_perf()
            self.sample.core_avg_perf = div_ext_fp(self.sample.aperf, self.sample.mperf) as i32;
            true
        } else {
            false
        }
    }

    /// `get_avg_pstate()`: `max_pstate_physical × ΔAPERF/ΔMPERF`.
    pub fn avg_pstate(&self, pstate: &PstateData) -> i32 {
        mul_ext_fp(
            pstate.max_pstate_physical as u64,
            self.sample.core_avg_perf as u64,
        ) as i32
    }

    /// `get_target_pstate()` (before the policy clamp). Before v5.1 the boost is consumed
    /// (halved) here.
    pub fn get_target_pstate(&mut self, env: &PstateEnv) -> i32 {
        let s = &self.sample;
        let mut busy_frac = div_fp((s.mperf << env.aperf_mperf_shift) as i64, s.tsc as i64);
        let boost = self.iowait_boost;
        if env.version < IOWAIT_RAMP_FROM {
            self.iowait_boost >>= 1;
        }
        if busy_frac < boost {
            busy_frac = boost;
        }
        self.sample.busy_scaled = busy_frac * 100;
        let mut target = if env.no_turbo {
            env.pstate.max_pstate
        } else {
            env.pstate.turbo_pstate
        };
        target += target >> 2;
        target = mul_fp(target, busy_frac);
        if target < env.pstate.min_pstate {
            target = env.pstate.min_pstate;
        }
        // Don't drop too fast: add half the gap to the average busy P-state.
        let avg_pstate = self.avg_pstate(&env.pstate);
        if avg_pstate > target {
            target += (avg_pstate - target) >> 1;
        }
        target
    }

    /// `intel_pstate_adjust_pstate()`: the new P-state, or `None` if unchanged (no MSR write).
    pub fn adjust_pstate(&mut self, env: &PstateEnv) -> Option<i32> {
        let target = self.get_target_pstate(env);
        let target = prepare_request(&env.pstate, &env.limits, target);
        if target == self.current_pstate {
            return None;
        }
        self.current_pstate = target;
        Some(target)
    }

    /// `intel_pstate_update_util()`: one scheduler callback on this (local) CPU with the
    /// counters read now. Returns the new P-state when one is written.
    pub fn update_util(
        &mut self,
        time: u64,
        flags: u32,
        counters: PerfCounters,
        env: &PstateEnv,
    ) -> Option<i32> {
        let iowait = flags & SCHED_CPUFREQ_IOWAIT != 0;
        let delta_ns = time.wrapping_sub(self.last_update);
        if env.version < IOWAIT_RAMP_FROM {
            if iowait {
                self.iowait_boost = ONE_FP;
                self.last_update = time;
                // The last sample was 100 % busy: the P-state is at the top anyway.
                if fp_toint(self.sample.busy_scaled) == 100 {
                    return None;
                }
                // Sample now, bypassing the 10 ms interval.
                return if self.sample(time, counters) {
                    self.adjust_pstate(env)
                } else {
                    None
                };
            } else if self.iowait_boost != 0 && delta_ns > env.tick_ns {
                // The CPU may have been idle.
                self.iowait_boost = 0;
            }
        } else if iowait {
            // Start over if the CPU may have been idle.
            self.iowait_boost = if delta_ns > env.tick_ns || self.iowait_boost < ONE_EIGHTH_FP {
                ONE_EIGHTH_FP
            } else {
                (self.iowait_boost << 1).min(ONE_FP)
            };
        } else if self.iowait_boost != 0 {
            self.iowait_boost = if delta_ns > env.tick_ns {
                0
            } else {
                self.iowait_boost >> 1
            };
        }
        self.last_update = time;
        // (s64)(time - sample.time) < INTEL_PSTATE_SAMPLING_INTERVAL
        if (time.wrapping_sub(self.sample.time) as i64) < INTEL_PSTATE_SAMPLING_INTERVAL_NS as i64 {
            return None;
        }
        if self.sample(time, counters) {
            self.adjust_pstate(env)
        } else {
            None
        }
    }
}

/// HWP dynamic boost state of one CPU (`hwp_boost_min`, `last_update`, `last_io_update`,
/// `sched_flags`, `sample.time`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HwpBoost {
    /// The boosted HWP min; 0 = no boost active.
    pub hwp_boost_min: u32,
    pub last_update: u64,
    pub last_io_update: u64,
    pub sched_flags: u32,
    pub sample_time: u64,
}

impl HwpBoost {
    /// `intel_pstate_update_util_hwp()`: one scheduler callback for this CPU (`local` = run on
    /// the CPU itself; remote callbacks only accumulate flags). `min_limit`/`max_limit` are the
    /// cached (unboosted) `HWP_REQUEST` min/max, `guaranteed` the HWP_CAP guaranteed level.
    /// Returns the HWP min to write: the boosted level, or `min_limit` when the boost ends.
    pub fn on_callback(
        &mut self,
        time: u64,
        flags: u32,
        local: bool,
        tick_ns: u64,
        guaranteed: u32,
        min_limit: u32,
        max_limit: u32,
    ) -> Option<u32> {
        self.sched_flags |= flags;
        if !local {
            return None;
        }
        self.sample_time = time;
        if self.sched_flags & SCHED_CPUFREQ_IOWAIT != 0 {
            self.sched_flags = 0;
            // Two iowait callbacks within two ticks make a boost candidate.
            let do_io = time < self.last_io_update + 2 * tick_ns;
            self.last_io_update = time;
            if do_io {
                return self.boost_up(guaranteed, min_limit, max_limit);
            }
            None
        } else {
            self.boost_down(min_limit)
        }
    }

    /// `intel_pstate_hwp_boost_up()`: one level up per call.
    pub fn boost_up(&mut self, guaranteed: u32, min_limit: u32, max_limit: u32) -> Option<u32> {
        if max_limit == min_limit || self.hwp_boost_min >= max_limit {
            return None;
        }
        if self.hwp_boost_min == 0 {
            self.hwp_boost_min = min_limit;
        }
        let level1 = (guaranteed + min_limit) >> 1;
        if self.hwp_boost_min < level1 {
            self.hwp_boost_min = level1;
        } else if self.hwp_boost_min < guaranteed {
            self.hwp_boost_min = guaranteed;
        } else if self.hwp_boost_min == guaranteed && max_limit != guaranteed {
            self.hwp_boost_min = max_limit;
        } else {
            return None;
        }
        self.last_update = self.sample_time;
        Some(self.hwp_boost_min)
    }

    /// `intel_pstate_hwp_boost_down()`: drop the boost if this callback comes more than 3 ms
    /// after the previous one; always remember this callback's time.
    pub fn boost_down(&mut self, min_limit: u32) -> Option<u32> {
        let mut write = None;
        if self.hwp_boost_min != 0 && self.sample_time > self.last_update + HWP_BOOST_HOLD_TIME_NS {
            self.hwp_boost_min = 0;
            write = Some(min_limit);
        }
        self.last_update = self.sample_time;
        write
    }
}

/// An `HWP_REQUEST` {min, max, desired} (EPP and the rest unchanged).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HwpRequest {
    pub min: u32,
    pub max: u32,
    /// 0 = autonomous.
    pub desired: u32,
}

/// `intel_cpufreq_fast_switch()` rounding: `ceil(khz / 100 MHz)` (before the limits clamp).
pub fn fast_switch_pstate(khz: u64) -> i32 {
    khz.div_ceil(CORE_SCALING_KHZ) as i32
}

/// `intel_cpufreq_target()` rounding by relation (scaling `scaling_khz`): L ceil, H floor,
/// C round to nearest.
pub fn target_pstate(khz: u64, relation: Relation, scaling_khz: u64) -> i32 {
    (match relation {
        Relation::L => khz.div_ceil(scaling_khz),
        Relation::H => khz / scaling_khz,
        Relation::C => (khz + scaling_khz / 2) / scaling_khz,
    }) as i32
}

/// `intel_cpufreq_fast_switch()` in full: round up, clamp to the limits; returns the P-state
/// and the frequency reported back to the core (which becomes `policy->cur`).
pub fn fast_switch(khz: u64, pstate: &PstateData, limits: &PerfLimits) -> (i32, u64) {
    let p = prepare_request(pstate, limits, khz.div_ceil(pstate.scaling_khz) as i32);
    (p, p as u64 * pstate.scaling_khz)
}

/// The `HWP_REQUEST` passive mode writes for a target P-state (v5.9+ with HWP): min = target,
/// max = target with `strict_target`, else `max_perf_ratio`; desired 0.
pub fn passive_hwp_request(
    target_pstate: i32,
    strict_target: bool,
    limits: &PerfLimits,
) -> HwpRequest {
    HwpRequest {
        min: target_pstate as u32,
        max: if strict_target {
            target_pstate as u32
        } else {
            limits.max_perf_ratio as u32
        },
        desired: 0,
    }
}

/// HWP capability levels used by passive mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HwpCaps {
    /// `HWP_HIGHEST_PERF` (= turbo_pstate).
    pub highest: u32,
    /// `HWP_GUARANTEED_PERF` (P1).
    pub guaranteed: u32,
}

/// `intel_cpufreq_adjust_perf()` (v5.11+): schedutil's `min_perf` / `target_perf` (capacity
/// units, out of `capacity`) → `HWP_REQUEST` {min, max, desired}. `turbo_disabled` selects
/// the guaranteed level as the top.
pub fn adjust_perf(
    min_perf: u64,
    target_perf: u64,
    capacity: u64,
    caps: HwpCaps,
    turbo_disabled: bool,
    pstate: &PstateData,
    limits: &PerfLimits,
) -> HwpRequest {
    let cap_pstate = i64::from(if turbo_disabled {
        caps.guaranteed
    } else {
        caps.highest
    });
    let scale = |perf: u64| {
        if perf < capacity {
            div_round_up(cap_pstate * perf as i64, capacity as i64)
        } else {
            cap_pstate
        }
    };
    let target = scale(target_perf);
    let min = scale(min_perf)
        .max(i64::from(pstate.min_pstate))
        .max(i64::from(limits.min_perf_ratio));
    let max = cap_pstate.min(i64::from(limits.max_perf_ratio)).max(min);
    HwpRequest {
        min: min as u32,
        max: max as u32,
        desired: target.clamp(min, max) as u32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const TICK: u64 = 4 * MS;
    /// TSC ticks per 10 ms at 3.5 GHz.
    const TSC_10MS: u64 = 35_000_000;

    /// Skylake-like: 0.8 GHz min, 3.5 GHz base, 3.9 GHz 1C turbo.
    fn pstate() -> PstateData {
        PstateData::from_khz(800_000, 3_500_000, 3_900_000)
    }

    fn env(version: KernelVersion) -> PstateEnv {
        let p = pstate();
        PstateEnv {
            version,
            pstate: p,
            limits: update_perf_limits(&p, false, 800_000, 3_900_000, 0, 100, false),
            no_turbo: false,
            tick_ns: TICK,
            aperf_mperf_shift: 0,
        }
    }

    /// Counters after `n` 10 ms intervals at `busy_pct` C0 residency running at P-state `p`.
    fn counters(n: u64, busy_pct: u64, p: u64) -> PerfCounters {
        let mperf = n * TSC_10MS * busy_pct / 100;
        PerfCounters {
            aperf: mperf * p / 35,
            mperf,
            tsc: n * TSC_10MS,
        }
    }

    #[test]
    fn fixed_point_helpers() {
        assert_eq!(div_fp(17_500_000, 35_000_000), 128);
        assert_eq!(mul_fp(48, 128), 24);
        assert_eq!(div_ext_fp(7_500_000, 8_750_000), 14_043);
        assert_eq!(mul_ext_fp(35, 14_043), 29);
        assert_eq!(fp_toint(100 * ONE_FP), 100);
    }

    #[test]
    fn perf_limits_from_policy() {
        let p = pstate();
        let l = update_perf_limits(&p, false, 800_000, 3_900_000, 0, 100, false);
        assert_eq!(
            l,
            PerfLimits {
                min_perf_ratio: 8,
                max_perf_ratio: 39
            }
        );
        // 2.05 GHz policy max: 39 × 2_050_000 / 3_900_000 = 20.5 -> 20.
        let l = update_perf_limits(&p, false, 800_000, 2_050_000, 0, 100, false);
        assert_eq!(l.max_perf_ratio, 20);
        // no_turbo: max state 35.
        let l = update_perf_limits(&p, true, 800_000, 3_500_000, 0, 100, false);
        assert_eq!(
            l,
            PerfLimits {
                min_perf_ratio: 8,
                max_perf_ratio: 35
            }
        );
        // Global max_perf_pct 50: ceil(39 × 50 / 100) = 20.
        let l = update_perf_limits(&p, false, 800_000, 3_900_000, 0, 50, false);
        assert_eq!(l.max_perf_ratio, 20);
        assert_eq!(prepare_request(&p, &l, 39), 20);
        assert_eq!(prepare_request(&p, &l, 2), 8);
    }

    /// Run a first (discarded) sample at 10 ms and a real one at 20 ms; the P-state written.
    fn two_samples(e: &PstateEnv, busy_pct: u64, p: u64) -> (IntelPstateCpu, Option<i32>) {
        let mut cpu = IntelPstateCpu::new(8, PerfCounters::default());
        assert_eq!(
            cpu.update_util(10 * MS, 0, counters(1, busy_pct, p), e),
            None
        );
        let r = cpu.update_util(20 * MS, 0, counters(2, busy_pct, p), e);
        (cpu, r)
    }

    #[test]
    fn half_busy_with_turbo_39_gives_pstate_24() {
        // busy_frac = 128 (0.5); top = 39 + (39 >> 2) = 48; 48 × 128 >> 8 = 24. Ran at P24:
        // avg_pstate = 35 × 11234 >> 14 = 23 < 24, no correction.
        let (cpu, r) = two_samples(&env((5, 10)), 50, 24);
        assert_eq!(r, Some(24));
        assert_eq!(cpu.sample.busy_scaled, 128 * 100);
        assert_eq!(cpu.avg_pstate(&pstate()), 23);
        // no_turbo: top = 35 + 8 = 43 -> 43 × 128 >> 8 = 21.
        let mut e = env((5, 10));
        e.no_turbo = true;
        assert_eq!(two_samples(&e, 50, 21).1, Some(21));
    }

    #[test]
    fn avg_pstate_rule_slows_the_drop() {
        // 25 % busy at P30: target 48 × 64 >> 8 = 12; avg_pstate 29 -> 12 + (17 >> 1) = 20.
        let (_, r) = two_samples(&env((5, 10)), 25, 30);
        assert_eq!(r, Some(20));
    }

    #[test]
    fn min_pstate_floor_and_policy_clamp() {
        // 5 % busy at P8: busy_frac 12 -> 48 × 12 >> 8 = 2 -> min_pstate 8 = current: no write.
        let (cpu, r) = two_samples(&env((5, 10)), 5, 8);
        assert_eq!((r, cpu.current_pstate), (None, 8));
        // Fully busy with a 3.0 GHz policy max: 48 -> clamped to 30.
        let mut e = env((5, 10));
        e.limits = update_perf_limits(&e.pstate, false, 800_000, 3_000_000, 0, 100, false);
        assert_eq!(two_samples(&e, 100, 30).1, Some(30));
    }

    #[test]
    fn sample_gate_and_first_sample_discarded() {
        let e = env((5, 10));
        let mut cpu = IntelPstateCpu::new(8, PerfCounters::default());
        // First sample: discarded (no previous sample time).
        assert_eq!(cpu.update_util(10 * MS, 0, counters(1, 100, 39), &e), None);
        assert_eq!(cpu.sample.time, 10 * MS);
        // 9 ms later: inside the 10 ms interval.
        assert_eq!(cpu.update_util(19 * MS, 0, counters(2, 100, 39), &e), None);
        assert_eq!(cpu.sample.time, 10 * MS);
        // MPERF did not move (idle): no sample, sample.time unchanged.
        assert_eq!(cpu.update_util(25 * MS, 0, counters(1, 100, 39), &e), None);
        assert_eq!(cpu.sample.time, 10 * MS);
        assert_eq!(
            cpu.update_util(30 * MS, 0, counters(3, 100, 39), &e),
            Some(39)
        );
    }

    #[test]
    fn iowait_ramp_from_v51() {
        let e = env((5, 10));
        let mut cpu = IntelPstateCpu::new(8, PerfCounters::default());
        cpu.update_util(10 * MS, 0, counters(1, 10, 8), &e);
        let mut boosts = vec![];
        for t in [11, 12, 13, 14, 15] {
            cpu.update_util(t * MS, SCHED_CPUFREQ_IOWAIT, counters(1, 10, 8), &e);
            boosts.push(cpu.iowait_boost);
        }
        // 1/8, 1/4, 1/2, 1, 1 (capped).
        assert_eq!(boosts, [32, 64, 128, 256, 256]);
        // Non-iowait callbacks within a tick halve it.
        cpu.update_util(16 * MS, 0, counters(1, 10, 8), &e);
        assert_eq!(cpu.iowait_boost, 128);
        // The 20 ms sample: 10 % busy but boost 128 (1/2) -> 48 × 128 >> 8 = 24... halved
        // again by this non-iowait callback first: 64 -> 12.
        assert_eq!(
            cpu.update_util(20 * MS, 0, counters(2, 10, 8), &e),
            Some(12)
        );
        assert_eq!(cpu.iowait_boost, 64);
        // More than a tick without callbacks: cleared; an iowait wakeup after idle restarts at 1/8.
        cpu.update_util(25 * MS, 0, counters(2, 10, 8), &e);
        assert_eq!(cpu.iowait_boost, 0);
        cpu.iowait_boost = 128;
        cpu.update_util(35 * MS, SCHED_CPUFREQ_IOWAIT, counters(3, 10, 8), &e);
        assert_eq!(cpu.iowait_boost, ONE_EIGHTH_FP);
    }

    #[test]
    fn iowait_full_boost_before_v51() {
        let e = env((4, 19));
        let mut cpu = IntelPstateCpu::new(8, PerfCounters::default());
        cpu.update_util(10 * MS, 0, counters(1, 10, 8), &e);
        cpu.update_util(20 * MS, 0, counters(2, 10, 8), &e);
        assert_eq!(cpu.current_pstate, 8);
        // An iowait wakeup 1 ms later: boost 1.0 and an immediate sample -> 48 -> clamp 39;
        // the sample consumed half the boost.
        let r = cpu.update_util(21 * MS, SCHED_CPUFREQ_IOWAIT, counters(2, 10, 8).bump(), &e);
        assert_eq!(r, Some(39));
        assert_eq!(cpu.iowait_boost, 128);
        // The last sample was "100 % busy": the next iowait wakeup does not sample again.
        assert_eq!(fp_toint(cpu.sample.busy_scaled), 100);
        let s_time = cpu.sample.time;
        cpu.update_util(22 * MS, SCHED_CPUFREQ_IOWAIT, counters(3, 10, 8), &e);
        assert_eq!((cpu.sample.time, cpu.iowait_boost), (s_time, 256));
        // Callbacks less than a tick apart keep it (this form does not halve on callbacks);
        // the next regular sample uses the boost (1.0 again) and halves it.
        cpu.update_util(25 * MS, 0, counters(3, 10, 8), &e);
        cpu.update_util(28 * MS, 0, counters(3, 10, 8), &e);
        assert_eq!(cpu.iowait_boost, 256);
        cpu.update_util(31 * MS + 1, 0, counters(4, 10, 8), &e);
        assert_eq!(cpu.iowait_boost, 128);
        // A callback more than a tick after the previous one clears the boost.
        cpu.update_util(36 * MS, 0, counters(4, 10, 8), &e);
        assert_eq!(cpu.iowait_boost, 0);
    }

    impl PerfCounters {
        /// Counters a little later (MPERF and TSC moved).
        fn bump(self) -> Self {
            PerfCounters {
                aperf: self.aperf + 1_000,
                mperf: self.mperf + 3_500,
                tsc: self.tsc + 3_500_000,
            }
        }
    }

    #[test]
    fn hwp_boost_levels_need_two_iowaits_within_two_ticks() {
        let mut b = HwpBoost::default();
        let mut cb = |t_ms: u64, flags: u32| b.on_callback(t_ms * MS, flags, true, TICK, 35, 8, 39);
        // First iowait: only remembered.
        assert_eq!(cb(100, SCHED_CPUFREQ_IOWAIT), None);
        // Second within 8 ms: level 1 = (35 + 8) / 2 = 21, then guaranteed 35, then max 39.
        assert_eq!(cb(101, SCHED_CPUFREQ_IOWAIT), Some(21));
        assert_eq!(cb(102, SCHED_CPUFREQ_IOWAIT), Some(35));
        assert_eq!(cb(103, SCHED_CPUFREQ_IOWAIT), Some(39));
        assert_eq!(cb(104, SCHED_CPUFREQ_IOWAIT), None);
        // Two iowaits 8 ms apart (2 ticks exactly) do not count.
        let mut c = HwpBoost::default();
        assert_eq!(
            c.on_callback(100 * MS, SCHED_CPUFREQ_IOWAIT, true, TICK, 35, 8, 39),
            None
        );
        assert_eq!(
            c.on_callback(108 * MS, SCHED_CPUFREQ_IOWAIT, true, TICK, 35, 8, 39),
            None
        );
    }

    #[test]
    fn hwp_boost_hold_is_measured_from_the_previous_callback() {
        let mut b = HwpBoost::default();
        b.on_callback(100 * MS, SCHED_CPUFREQ_IOWAIT, true, TICK, 35, 8, 39);
        assert_eq!(
            b.on_callback(101 * MS, SCHED_CPUFREQ_IOWAIT, true, TICK, 35, 8, 39),
            Some(21)
        );
        // Callbacks every 2-3 ms keep the boost, however long.
        for t in [104, 107, 110, 113] {
            assert_eq!(b.on_callback(t * MS, 0, true, TICK, 35, 8, 39), None);
        }
        assert_eq!(b.hwp_boost_min, 21);
        // 3 ms exactly is not "after" the hold; 3 ms + 1 ns is: the cached min is written back.
        assert_eq!(b.on_callback(116 * MS, 0, true, TICK, 35, 8, 39), None);
        assert_eq!(
            b.on_callback(119 * MS + 1, 0, true, TICK, 35, 8, 39),
            Some(8)
        );
        assert_eq!(b.hwp_boost_min, 0);
    }

    #[test]
    fn hwp_boost_remote_flags_and_degenerate_limits() {
        let mut b = HwpBoost::default();
        b.on_callback(100 * MS, SCHED_CPUFREQ_IOWAIT, true, TICK, 35, 8, 39);
        // A remote iowait only sets the flag; the next local callback acts on it.
        assert_eq!(
            b.on_callback(101 * MS, SCHED_CPUFREQ_IOWAIT, false, TICK, 35, 8, 39),
            None
        );
        assert_eq!(b.on_callback(102 * MS, 0, true, TICK, 35, 8, 39), Some(21));
        // min == max: nothing to boost.
        let mut c = HwpBoost::default();
        c.on_callback(100 * MS, SCHED_CPUFREQ_IOWAIT, true, TICK, 35, 39, 39);
        assert_eq!(
            c.on_callback(101 * MS, SCHED_CPUFREQ_IOWAIT, true, TICK, 35, 39, 39),
            None
        );
        // max == guaranteed: two levels only.
        let mut d = HwpBoost::default();
        d.on_callback(100 * MS, SCHED_CPUFREQ_IOWAIT, true, TICK, 35, 8, 35);
        assert_eq!(
            d.on_callback(101 * MS, SCHED_CPUFREQ_IOWAIT, true, TICK, 35, 8, 35),
            Some(21)
        );
        assert_eq!(
            d.on_callback(102 * MS, SCHED_CPUFREQ_IOWAIT, true, TICK, 35, 8, 35),
            Some(35)
        );
        assert_eq!(
            d.on_callback(103 * MS, SCHED_CPUFREQ_IOWAIT, true, TICK, 35, 8, 35),
            None
        );
    }

    #[test]
    fn hwp_boost_dropped_at_each_hz250_tick_but_kept_at_hz1000() {
        for (tick, kept) in [(4 * MS, false), (MS, true)] {
            let mut b = HwpBoost::default();
            b.on_callback(100 * MS, SCHED_CPUFREQ_IOWAIT, true, tick, 35, 8, 39);
            assert_eq!(
                b.on_callback(
                    100 * MS + 500_000,
                    SCHED_CPUFREQ_IOWAIT,
                    true,
                    tick,
                    35,
                    8,
                    39
                ),
                Some(21)
            );
            // Only tick callbacks follow.
            let r = b.on_callback(100 * MS + 500_000 + tick, 0, true, tick, 35, 8, 39);
            assert_eq!(r.is_none(), kept, "tick {tick}");
        }
    }

    #[test]
    fn passive_mode_rounding() {
        // schedutil asked for 1904.296 MHz: fast switch rounds up to P20 (2.0 GHz).
        assert_eq!(fast_switch_pstate(1_904_296), 20);
        assert_eq!(fast_switch_pstate(2_000_000), 20);
        assert_eq!(target_pstate(1_950_000, Relation::L, CORE_SCALING_KHZ), 20);
        assert_eq!(target_pstate(1_950_000, Relation::H, CORE_SCALING_KHZ), 19);
        assert_eq!(target_pstate(1_950_000, Relation::C, CORE_SCALING_KHZ), 20);
        assert_eq!(target_pstate(1_949_999, Relation::C, CORE_SCALING_KHZ), 19);
        let p = pstate();
        let l = update_perf_limits(&p, false, 800_000, 3_900_000, 0, 100, false);
        assert_eq!(fast_switch(1_904_296, &p, &l), (20, 2_000_000));
        assert_eq!(fast_switch(5_000_000, &p, &l), (39, 3_900_000));
        assert_eq!(fast_switch(100_000, &p, &l), (8, 800_000));
        assert_eq!(
            passive_hwp_request(20, false, &l),
            HwpRequest {
                min: 20,
                max: 39,
                desired: 0
            }
        );
        assert_eq!(
            passive_hwp_request(20, true, &l),
            HwpRequest {
                min: 20,
                max: 20,
                desired: 0
            }
        );
    }

    #[test]
    fn adjust_perf_maps_capacity_hints_to_hwp_request() {
        let p = pstate();
        let l = update_perf_limits(&p, false, 800_000, 3_900_000, 0, 100, false);
        let caps = HwpCaps {
            highest: 39,
            guaranteed: 35,
        };
        // target 500/1024 of 39 = 19.04 -> 20; min 0 -> floor at min_pstate 8.
        assert_eq!(
            adjust_perf(0, 500, 1024, caps, false, &p, &l),
            HwpRequest {
                min: 8,
                max: 39,
                desired: 20
            }
        );
        // Turbo disabled: top 35 -> ceil(17.09) = 18, max 35.
        assert_eq!(
            adjust_perf(0, 500, 1024, caps, true, &p, &l),
            HwpRequest {
                min: 8,
                max: 35,
                desired: 18
            }
        );
        // DL floor 300/1024 -> ceil(11.43) = 12.
        assert_eq!(
            adjust_perf(300, 500, 1024, caps, false, &p, &l),
            HwpRequest {
                min: 12,
                max: 39,
                desired: 20
            }
        );
        // Saturated hints.
        assert_eq!(
            adjust_perf(1024, 2000, 1024, caps, false, &p, &l),
            HwpRequest {
                min: 39,
                max: 39,
                desired: 39
            }
        );
        // A 2.5 GHz policy max caps max and desired.
        let l25 = update_perf_limits(&p, false, 800_000, 2_500_000, 0, 100, false);
        assert_eq!(
            adjust_perf(0, 900, 1024, caps, false, &p, &l25),
            HwpRequest {
                min: 8,
                max: 25,
                desired: 25
            }
        );
    }

    #[test]
    fn turbo_disabled_rule() {
        let p = pstate();
        assert!(!p.turbo_disabled(false));
        assert!(p.turbo_disabled(true));
        let flat = PstateData::from_khz(800_000, 3_500_000, 3_500_000);
        assert!(flat.turbo_disabled(false));
    }
}
