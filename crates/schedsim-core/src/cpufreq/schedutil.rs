//! The schedutil cpufreq governor (spec/kernel.md §3; `kernel/sched/cpufreq_schedutil.c`,
//! `effective_cpu_util` in `kernel/sched/core.c` / `syscalls.c`).
//!
//! What it models: the decision logic run from `cpufreq_update_util()` — per-CPU effective
//! utilization (CFS + RT + DL + IRQ, uclamp, DL bandwidth), the 1.25 headroom, utilization →
//! frequency with the invariant (`cpuinfo.max_freq`, or `arch_scale_freq_ref`) and
//! non-invariant (`policy->cur`) references, resolution to the lowest OPP ≥ target, the rate
//! limit and its interplay with `limits_changed` / `need_freq_update`, the I/O-wait boost state
//! machine, the NO_HZ "busy CPU" hold, and the single-CPU (`_freq`, `_perf`) and shared-policy
//! update paths. The caller supplies the scheduler signals ([`CpuUtil`]), the policy
//! ([`PolicyView`]), the NO_HZ idle-call counter, the time and the flags; the functions return
//! the frequency to send to the driver (`Some(kHz)`) or `None` for "no driver call".
//!
//! Versions (the kernel version in [`SugovEnv`] selects them; "(R)" = merge version recalled,
//! not verified):
//! - < v5.2: I/O-wait boost in frequency units (starts at `policy->min`, capped at
//!   `cpuinfo.max_freq`, applied as a util/max ratio); v5.0/v5.1 otherwise use the v5.2 flow (R);
//! - v5.2+: boost in capacity units, `IOWAIT_BOOST_MIN` = 128 (R: version);
//! - < v5.3: `sugov_limits` sets `need_freq_update` directly and the hold ignores it; v5.3+
//!   (600f5badb78c) `limits_changed`, and no hold while `need_freq_update`;
//! - < v5.10: `need_freq_update` is cleared in `get_next_freq`; the hold resets
//!   `cached_raw_freq` to 0; `sugov_update_next_freq` only compares frequencies;
//! - v5.10–v6.13: `sugov_update_next_freq` always accepts while `need_freq_update` is set and
//!   re-arms it for drivers with `CPUFREQ_NEED_UPDATE_LIMITS` (intel_cpufreq), so such drivers
//!   get a call at every evaluation after the first limits change; the hold restores
//!   `cached_raw_freq`;
//! - v5.11+: `sugov_update_single_perf` (`adjust_perf` drivers, invariant only);
//! - v5.14+ (R): the 1.25 moves out of `map_util_freq` into `map_util_perf` (rounding differs),
//!   and the boost is clamped by uclamp;
//! - v6.2+ (R): no hold when the rq is capped by uclamp_max; v6.6+ (R): no hold while
//!   `need_freq_update`;
//! - v6.8+ (9c0b4bb7f630): headroom applied in the utilization domain
//!   (`sugov_effective_cpu_perf`, DL/uclamp floor without headroom, uclamp_max cap), the boost
//!   applied before the headroom, `get_capacity_ref_freq` with the non-invariant `1.25 × cur`
//!   (so the non-invariant path gets the 1.25 twice: it moves up above ~64 % busy), shared
//!   policies take the max util over CPUs against the calling CPU's capacity (R: version);
//! - v6.14 (R) (8e461a1cb43d): `limits_changed` sets `need_freq_update` only for
//!   `NEED_UPDATE_LIMITS` drivers, `sugov_update_next_freq` clears it;
//! - v6.15+ (R) (cfde542df7dd and the DL fix): `need_freq_update` always set on limits changes,
//!   an unchanged frequency is re-sent only to `NEED_UPDATE_LIMITS` drivers, a pending
//!   `need_freq_update` bypasses the rate limit, `ignore_dl_rate_limit` sets it directly.
//!
//! Simplifications:
//! - `cpufreq_this_cpu_can_update()` is assumed true (callers only call for CPUs that may
//!   update the policy); sched_ext (`scx_*`) is not modelled;
//! - the slow path (irq_work + kthread, `work_in_progress`) is the caller's: a `Some(f)` is the
//!   moment the kernel would fast-switch or queue the work; the caller then updates
//!   `policy->cur` (after the driver rounded it, on intel_cpufreq);
//! - the pre-v4.19 "stale CPU" rule of shared policies is not modelled (v5.x+ only).
//!
//! All arithmetic is the kernel's: u64 integers, `>>` shifts, truncating divisions. Depends on
//! `super::policy` only.

use super::policy::{KernelVersion, PolicyView, Relation, NSEC_PER_USEC, SCHED_CPUFREQ_IOWAIT};

/// `SCHED_CAPACITY_SHIFT`.
pub const SCHED_CAPACITY_SHIFT: u32 = 10;
/// `SCHED_CAPACITY_SCALE`.
pub const SCHED_CAPACITY_SCALE: u64 = 1 << SCHED_CAPACITY_SHIFT;
/// `IOWAIT_BOOST_MIN` (capacity units, v5.2+).
pub const IOWAIT_BOOST_MIN: u64 = SCHED_CAPACITY_SCALE / 8;

/// First version with the boost in capacity units (R).
pub const BOOST_CAPACITY_UNITS_FROM: KernelVersion = (5, 2);
/// First version with `limits_changed` (600f5badb78c).
pub const LIMITS_CHANGED_FROM: KernelVersion = (5, 3);
/// First version with `CPUFREQ_NEED_UPDATE_LIMITS` handling in `sugov_update_next_freq`.
pub const NEED_UPDATE_LIMITS_FROM: KernelVersion = (5, 10);
/// First version with `sugov_update_single_perf` / `adjust_perf`.
pub const ADJUST_PERF_FROM: KernelVersion = (5, 11);
/// First version with `map_util_perf` split out of `map_util_freq` and the uclamp clamp on the
/// boost (R).
pub const MAP_UTIL_PERF_FROM: KernelVersion = (5, 14);
/// First version skipping the hold when capped by uclamp_max (R).
pub const HOLD_UCLAMP_CAPPED_FROM: KernelVersion = (6, 2);
/// First version skipping the hold while `need_freq_update` (R).
pub const HOLD_NEED_UPDATE_FROM: KernelVersion = (6, 6);
/// The v6.8 performance-estimation rework (9c0b4bb7f630).
pub const PERF_REWORK_FROM: KernelVersion = (6, 8);
/// 8e461a1cb43d ("Fix superfluous updates caused by need_freq_update") (R).
pub const SUPERFLUOUS_FIX_FROM: KernelVersion = (6, 14);
/// cfde542df7dd ("Fix the usage of CPUFREQ_NEED_UPDATE_LIMITS") and the DL rate-limit fix (R).
pub const LIMITS_FIX_FROM: KernelVersion = (6, 15);

/// The schedutil tunable (`/sys/.../schedutil/rate_limit_us`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SugovTunables {
    /// Default: [`super::policy::transition_delay_us`].
    pub rate_limit_us: u64,
}

/// The run queue's aggregated utilization clamps (`rq->uclamp[UCLAMP_MIN/MAX].value`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Uclamp {
    pub min: u64,
    pub max: u64,
}

/// Scheduler signals of one CPU at the time of the callback (capacity units, 0..=1024).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuUtil {
    /// `cpu_util_cfs()` (v6.5+ schedutil passes `cpu_util_cfs_boost()`: the caller's choice).
    pub util_cfs: u64,
    /// `cpu_util_rt()` (PELT).
    pub util_rt: u64,
    /// `cpu_util_dl()` (PELT).
    pub util_dl: u64,
    /// `cpu_bw_dl()`: admitted DL bandwidth, `running_bw × 1024 >> 20`.
    pub bw_dl: u64,
    /// `cpu_util_irq()`.
    pub irq: u64,
    /// `rt_rq_is_runnable()`.
    pub rt_runnable: bool,
    /// `None`: uclamp not in use (the `sched_uclamp_used` static key off, or
    /// `CONFIG_UCLAMP_TASK=n`); `Some`: the rq clamps.
    pub uclamp: Option<Uclamp>,
    /// `arch_scale_cpu_capacity()`.
    pub capacity: u64,
}

impl CpuUtil {
    /// Only CFS utilization on a CPU of `capacity`; no RT/DL/IRQ, no uclamp.
    pub fn cfs(util_cfs: u64, capacity: u64) -> Self {
        CpuUtil {
            util_cfs,
            util_rt: 0,
            util_dl: 0,
            bw_dl: 0,
            irq: 0,
            rt_runnable: false,
            uclamp: None,
            capacity,
        }
    }
}

/// What does not change between callbacks of one policy (or changes rarely).
#[derive(Clone, Copy, Debug)]
pub struct SugovEnv<'a> {
    pub version: KernelVersion,
    /// The policy: table, limits, `cpuinfo`, `cur`.
    pub policy: PolicyView<'a>,
    /// `arch_scale_freq_invariant()`.
    pub invariant: bool,
    /// `arch_scale_freq_ref(cpu)` (v6.8+; arm64's capacity reference frequency). 0 = none (x86).
    pub freq_ref_khz: u64,
    /// `TICK_NSEC`.
    pub tick_ns: u64,
    /// `CONFIG_NO_HZ_COMMON`: enables the busy hold.
    pub nohz: bool,
    /// The driver sets `CPUFREQ_NEED_UPDATE_LIMITS` (intel_cpufreq from v5.10).
    pub need_update_limits: bool,
}

/// Per-policy governor state (`struct sugov_policy`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SugovPolicy {
    pub last_freq_update_time: u64,
    pub freq_update_delay_ns: u64,
    pub next_freq: u64,
    pub cached_raw_freq: u64,
    pub limits_changed: bool,
    pub need_freq_update: bool,
}

impl SugovPolicy {
    /// `sugov_start()`: fresh state; from v5.10 `need_freq_update` starts as the driver's
    /// `CPUFREQ_NEED_UPDATE_LIMITS` flag.
    pub fn start(
        tunables: SugovTunables,
        version: KernelVersion,
        need_update_limits: bool,
    ) -> Self {
        SugovPolicy {
            freq_update_delay_ns: tunables.rate_limit_us * NSEC_PER_USEC,
            need_freq_update: version >= NEED_UPDATE_LIMITS_FROM && need_update_limits,
            ..Default::default()
        }
    }

    /// A write to `rate_limit_us`.
    pub fn set_rate_limit_us(&mut self, rate_limit_us: u64) {
        self.freq_update_delay_ns = rate_limit_us * NSEC_PER_USEC;
    }

    /// `sugov_limits()`: the policy limits changed (the slow path also applies them at once:
    /// the caller's job).
    pub fn limits(&mut self, version: KernelVersion) {
        if version < LIMITS_CHANGED_FROM {
            self.need_freq_update = true;
        } else {
            self.limits_changed = true;
        }
    }
}

/// Per-CPU governor state (`struct sugov_cpu`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SugovCpu {
    /// Capacity units (v5.2+) or kHz (before).
    pub iowait_boost: u64,
    pub iowait_boost_pending: bool,
    pub last_update: u64,
    /// NO_HZ idle-entry counter at the previous evaluation.
    pub saved_idle_calls: u64,
    /// Last computed utilization (v5.10+; v6.8+: the effective performance with headroom).
    pub util: u64,
    /// `bw_min` (v6.8+) / `bw_dl` (before).
    pub bw_min: u64,
    /// `sg_cpu->max` (before v6.8): the CPU capacity.
    pub max: u64,
}

/// What a single-CPU `_perf` update asks of the driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SugovRequest {
    /// `cpufreq_driver_fast_switch` / deferred `__cpufreq_driver_target(RELATION_L)` with this
    /// frequency (kHz).
    Freq(u64),
    /// `cpufreq_driver_adjust_perf(cpu, min_perf, target_perf, capacity)`.
    Perf {
        min_perf: u64,
        target_perf: u64,
        capacity: u64,
    },
}

// ---------------------------------------------------------------------------------------------
// Utilization helpers.

/// `map_util_perf()`: the 1.25 headroom, `util + util / 4`.
pub fn map_util_perf(util: u64) -> u64 {
    util + (util >> 2)
}

/// `map_util_freq()` (v5.14+): `freq × util / cap`.
pub fn map_util_freq(util: u64, freq: u64, cap: u64) -> u64 {
    freq * util / cap
}

/// `map_util_freq()` before v5.14: `(freq + freq / 4) × util / cap`.
pub fn map_util_freq_with_headroom(util: u64, freq: u64, cap: u64) -> u64 {
    (freq + (freq >> 2)) * util / cap
}

/// `scale_irq_capacity()`: `util × (max − irq) / max`.
pub fn scale_irq_capacity(util: u64, irq: u64, max: u64) -> u64 {
    util * (max - irq) / max
}

/// `uclamp_rq_util_with(rq, util, NULL)`: clamp by the rq clamps when uclamp is in use; an
/// inverted pair (`min >= max`) returns `min`.
pub fn uclamp_rq_util_with(util: u64, uclamp: Option<Uclamp>) -> u64 {
    match uclamp {
        None => util,
        Some(u) if u.min >= u.max => u.min,
        Some(u) => util.clamp(u.min, u.max),
    }
}

/// `uclamp_rq_is_capped()`: uclamp in use, a max clamp below 1024, and CFS + RT util at or
/// above it.
pub fn uclamp_rq_is_capped(u: &CpuUtil) -> bool {
    match u.uclamp {
        None => false,
        Some(c) => c.max != SCHED_CAPACITY_SCALE && u.util_cfs + u.util_rt >= c.max,
    }
}

/// Before v6.8: `schedutil_cpu_util` / `effective_cpu_util(cpu, util_cfs, max, FREQUENCY_UTIL,
/// NULL)` (and v5.0/v5.1's `sugov_get_util`, which is the same without uclamp).
pub fn effective_cpu_util_freq_pre68(u: &CpuUtil) -> u64 {
    let max = u.capacity;
    if u.uclamp.is_none() && u.rt_runnable {
        return max;
    }
    let irq = u.irq;
    if irq >= max {
        return max;
    }
    let util = uclamp_rq_util_with(u.util_cfs + u.util_rt, u.uclamp);
    if util + u.util_dl >= max {
        return max;
    }
    let util = scale_irq_capacity(util, irq, max) + irq + u.bw_dl;
    util.min(max)
}

/// The v6.8+ `effective_cpu_util(cpu, util_cfs, &min, &max)` result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EffectiveUtil {
    /// The returned actual utilization.
    pub util: u64,
    /// `*min`: DL bandwidth + IRQ, uclamp_min, or the capacity when RT runs without uclamp.
    pub min: u64,
    /// `*max`: `min(capacity, uclamp_max)`.
    pub max: u64,
}

/// v6.8+ `effective_cpu_util()`.
pub fn effective_cpu_util(u: &CpuUtil) -> EffectiveUtil {
    let scale = u.capacity;
    let irq = u.irq;
    if irq >= scale {
        return EffectiveUtil {
            util: scale,
            min: scale,
            max: scale,
        };
    }
    // uclamp_rq_get() defaults: min 0, max SCHED_CAPACITY_SCALE.
    let clamps = u.uclamp.unwrap_or(Uclamp {
        min: 0,
        max: SCHED_CAPACITY_SCALE,
    });
    let mut min = (irq + u.bw_dl).max(clamps.min);
    if u.uclamp.is_none() && u.rt_runnable {
        min = min.max(scale);
    }
    let max = scale.min(clamps.max);
    let util = u.util_cfs + u.util_rt + u.util_dl;
    if util >= scale {
        return EffectiveUtil {
            util: scale,
            min,
            max,
        };
    }
    let util = scale_irq_capacity(util, irq, scale) + irq;
    EffectiveUtil {
        util: util.min(scale),
        min,
        max,
    }
}

/// `sugov_effective_cpu_perf()` (v6.8+): headroom on the actual util, capped by `max`, floored
/// by `min` (no headroom on the floor).
pub fn sugov_effective_cpu_perf(actual: u64, min: u64, max: u64) -> u64 {
    let actual = map_util_perf(actual);
    let max = if actual < max { actual } else { max };
    min.max(max)
}

/// `get_capacity_ref_freq()` (v6.8+): `arch_scale_freq_ref`, else `cpuinfo.max_freq` when
/// invariant, else `cur + cur / 4`.
pub fn get_capacity_ref_freq(policy: &PolicyView, invariant: bool, freq_ref_khz: u64) -> u64 {
    if freq_ref_khz != 0 {
        freq_ref_khz
    } else if invariant {
        policy.cpuinfo_max_khz
    } else {
        policy.cur_khz + (policy.cur_khz >> 2)
    }
}

/// The raw (unresolved) target frequency for `util` / `max`, by version.
pub fn raw_next_freq(env: &SugovEnv, util: u64, max: u64) -> u64 {
    let p = &env.policy;
    if env.version >= PERF_REWORK_FROM {
        map_util_freq(
            util,
            get_capacity_ref_freq(p, env.invariant, env.freq_ref_khz),
            max,
        )
    } else {
        let freq = if env.invariant {
            p.cpuinfo_max_khz
        } else {
            p.cur_khz
        };
        if env.version >= MAP_UTIL_PERF_FROM {
            map_util_freq(map_util_perf(util), freq, max)
        } else {
            map_util_freq_with_headroom(util, freq, max)
        }
    }
}

/// `get_next_freq()`: raw frequency, the `cached_raw_freq` short cut, then
/// `cpufreq_driver_resolve_freq` (clamp to limits, lowest OPP ≥ target).
pub fn get_next_freq(pol: &mut SugovPolicy, env: &SugovEnv, util: u64, max: u64) -> u64 {
    let freq = raw_next_freq(env, util, max);
    if freq == pol.cached_raw_freq && !pol.need_freq_update {
        return pol.next_freq;
    }
    if env.version < NEED_UPDATE_LIMITS_FROM {
        pol.need_freq_update = false;
    }
    pol.cached_raw_freq = freq;
    env.policy.resolve(freq, Relation::L)
}

// ---------------------------------------------------------------------------------------------
// Rate limit and commit.

/// `sugov_should_update_freq()`.
pub fn sugov_should_update_freq(
    pol: &mut SugovPolicy,
    time: u64,
    version: KernelVersion,
    need_update_limits: bool,
) -> bool {
    if version < LIMITS_CHANGED_FROM {
        if pol.need_freq_update {
            return true;
        }
    } else if pol.limits_changed {
        pol.limits_changed = false;
        pol.need_freq_update = if version >= SUPERFLUOUS_FIX_FROM && version < LIMITS_FIX_FROM {
            need_update_limits
        } else {
            true
        };
        return true;
    } else if version >= LIMITS_FIX_FROM && pol.need_freq_update {
        return true;
    }
    // s64 delta_ns = time - last_freq_update_time; delta_ns >= freq_update_delay_ns
    time >= pol.last_freq_update_time
        && time - pol.last_freq_update_time >= pol.freq_update_delay_ns
}

/// `sugov_update_next_freq()`: whether to call the driver with `next_freq`; on acceptance the
/// rate limit is re-armed from `time` (so it counts from the last accepted change).
pub fn sugov_update_next_freq(
    pol: &mut SugovPolicy,
    time: u64,
    next_freq: u64,
    version: KernelVersion,
    need_update_limits: bool,
) -> bool {
    let same = pol.next_freq == next_freq;
    if version < NEED_UPDATE_LIMITS_FROM {
        if same {
            return false;
        }
    } else if pol.need_freq_update {
        if version < SUPERFLUOUS_FIX_FROM {
            pol.need_freq_update = need_update_limits;
        } else {
            pol.need_freq_update = false;
            if version >= LIMITS_FIX_FROM && same && !need_update_limits {
                return false;
            }
        }
    } else if same {
        return false;
    }
    pol.next_freq = next_freq;
    pol.last_freq_update_time = time;
    true
}

/// `ignore_dl_rate_limit()`: a DL bandwidth increase bypasses the rate limit.
pub fn ignore_dl_rate_limit(
    cpu: &SugovCpu,
    pol: &mut SugovPolicy,
    bw_dl: u64,
    version: KernelVersion,
) {
    if bw_dl > cpu.bw_min {
        if version < LIMITS_CHANGED_FROM || version >= LIMITS_FIX_FROM {
            pol.need_freq_update = true;
        } else {
            pol.limits_changed = true;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// I/O-wait boost.

fn boost_floor(env: &SugovEnv) -> u64 {
    if env.version < BOOST_CAPACITY_UNITS_FROM {
        env.policy.min_khz
    } else {
        IOWAIT_BOOST_MIN
    }
}

fn boost_ceiling(env: &SugovEnv) -> u64 {
    if env.version < BOOST_CAPACITY_UNITS_FROM {
        env.policy.cpuinfo_max_khz
    } else {
        SCHED_CAPACITY_SCALE
    }
}

/// `sugov_iowait_reset()`: more than a tick since the last callback → restart (at the floor if
/// this callback is an iowait one) or drop the boost.
pub fn sugov_iowait_reset(
    cpu: &mut SugovCpu,
    time: u64,
    set_iowait_boost: bool,
    env: &SugovEnv,
) -> bool {
    // s64 delta_ns = time - last_update; reset only if delta_ns > TICK_NSEC.
    if time <= cpu.last_update || time - cpu.last_update <= env.tick_ns {
        return false;
    }
    cpu.iowait_boost = if set_iowait_boost {
        boost_floor(env)
    } else {
        0
    };
    cpu.iowait_boost_pending = set_iowait_boost;
    true
}

/// `sugov_iowait_boost()` (run on every callback): start at the floor, double once per
/// evaluation on iowait wakeups, up to 1024 (or `cpuinfo.max_freq` before v5.2).
pub fn sugov_iowait_boost(cpu: &mut SugovCpu, time: u64, flags: u32, env: &SugovEnv) {
    let set = flags & SCHED_CPUFREQ_IOWAIT != 0;
    if cpu.iowait_boost != 0 && sugov_iowait_reset(cpu, time, set, env) {
        return;
    }
    if !set || cpu.iowait_boost_pending {
        return;
    }
    cpu.iowait_boost_pending = true;
    cpu.iowait_boost = if cpu.iowait_boost != 0 {
        (cpu.iowait_boost << 1).min(boost_ceiling(env))
    } else {
        boost_floor(env)
    };
}

/// Decay/consume the boost at an evaluation; the boost value (units of the version) or `None`.
fn iowait_boost_take(cpu: &mut SugovCpu, time: u64, env: &SugovEnv) -> Option<u64> {
    if cpu.iowait_boost == 0 || sugov_iowait_reset(cpu, time, false, env) {
        return None;
    }
    if !cpu.iowait_boost_pending {
        cpu.iowait_boost >>= 1;
        if cpu.iowait_boost < boost_floor(env) {
            cpu.iowait_boost = 0;
            return None;
        }
    }
    cpu.iowait_boost_pending = false;
    Some(cpu.iowait_boost)
}

/// `sugov_iowait_apply()` (v5.2+, at an evaluation): halve the boost unless an iowait wakeup
/// came since the last evaluation, drop it below `IOWAIT_BOOST_MIN`; returns the boost in the
/// CPU's capacity units (`boost × max_cap >> 10`), 0 for none.
pub fn sugov_iowait_apply(cpu: &mut SugovCpu, time: u64, max_cap: u64, env: &SugovEnv) -> u64 {
    iowait_boost_take(cpu, time, env)
        .map(|b| (b * max_cap) >> SCHED_CAPACITY_SHIFT)
        .unwrap_or(0)
}

/// `sugov_iowait_apply()` before v5.2 (frequency units): the boost replaces `(util, max)` by
/// `(boost, cpuinfo.max_freq)` when its ratio is higher.
pub fn sugov_iowait_apply_freq_units(
    cpu: &mut SugovCpu,
    time: u64,
    util: u64,
    max: u64,
    env: &SugovEnv,
) -> (u64, u64) {
    match iowait_boost_take(cpu, time, env) {
        Some(boost) => {
            let boost_max = env.policy.cpuinfo_max_khz;
            if util * boost_max < max * boost {
                (boost, boost_max)
            } else {
                (util, max)
            }
        }
        None => (util, max),
    }
}

// ---------------------------------------------------------------------------------------------
// Busy hold.

/// `sugov_cpu_is_busy()`: the CPU did not enter idle since the last evaluation (NO_HZ idle-call
/// counter unchanged). Always refreshes the saved counter; false without NO_HZ.
pub fn sugov_cpu_is_busy(cpu: &mut SugovCpu, idle_calls: u64, nohz: bool) -> bool {
    if !nohz {
        return false;
    }
    let busy = idle_calls == cpu.saved_idle_calls;
    cpu.saved_idle_calls = idle_calls;
    busy
}

/// `sugov_hold_freq()` (v5.10+ form): no hold when capped by uclamp_max (v6.2+; the counter is
/// then not refreshed), else [`sugov_cpu_is_busy`].
pub fn sugov_hold_freq(cpu: &mut SugovCpu, u: &CpuUtil, idle_calls: u64, env: &SugovEnv) -> bool {
    if env.version >= HOLD_UCLAMP_CAPPED_FROM && uclamp_rq_is_capped(u) {
        return false;
    }
    sugov_cpu_is_busy(cpu, idle_calls, env.nohz)
}

// ---------------------------------------------------------------------------------------------
// Per-CPU utilization at an evaluation.

/// Before v6.8: `sugov_get_util` + `sugov_iowait_apply`; returns `(util, max)` for
/// `get_next_freq` (max is in kHz when a pre-v5.2 boost won).
fn util_pre68(cpu: &mut SugovCpu, u: &CpuUtil, time: u64, env: &SugovEnv) -> (u64, u64) {
    let max = u.capacity;
    cpu.max = max;
    cpu.bw_min = u.bw_dl;
    let util = effective_cpu_util_freq_pre68(u);
    let (util, max) = if env.version < BOOST_CAPACITY_UNITS_FROM {
        sugov_iowait_apply_freq_units(cpu, time, util, max, env)
    } else {
        match iowait_boost_take(cpu, time, env) {
            Some(b) => {
                let mut boost = (b * max) >> SCHED_CAPACITY_SHIFT;
                if env.version >= MAP_UTIL_PERF_FROM {
                    boost = uclamp_rq_util_with(boost, u.uclamp);
                }
                (util.max(boost), max)
            }
            None => (util, max),
        }
    };
    cpu.util = util;
    (util, max)
}

/// v6.8+ `sugov_get_util(sg_cpu, boost)`: sets `bw_min` and `util` (effective performance).
fn get_util_v68(cpu: &mut SugovCpu, u: &CpuUtil, boost: u64) {
    let e = effective_cpu_util(u);
    let util = e.util.max(boost);
    cpu.bw_min = e.min;
    cpu.max = u.capacity;
    cpu.util = sugov_effective_cpu_perf(util, e.min, e.max);
}

/// The common front of the single-CPU paths (`sugov_update_single_common`): boost bookkeeping,
/// DL rate-limit bypass and the rate limit. True if an evaluation follows.
fn single_front(
    pol: &mut SugovPolicy,
    cpu: &mut SugovCpu,
    env: &SugovEnv,
    time: u64,
    flags: u32,
    u: &CpuUtil,
) -> bool {
    sugov_iowait_boost(cpu, time, flags, env);
    cpu.last_update = time;
    ignore_dl_rate_limit(cpu, pol, u.bw_dl, env.version);
    sugov_should_update_freq(pol, time, env.version, env.need_update_limits)
}

// ---------------------------------------------------------------------------------------------
// Update paths.

/// `sugov_update_single` / `sugov_update_single_freq`: one callback on a single-CPU policy.
/// Returns the frequency to send to the driver, or `None` (rate-limited or unchanged).
pub fn update_single(
    pol: &mut SugovPolicy,
    cpu: &mut SugovCpu,
    env: &SugovEnv,
    time: u64,
    flags: u32,
    u: &CpuUtil,
    idle_calls: u64,
) -> Option<u64> {
    if !single_front(pol, cpu, env, time, flags, u) {
        return None;
    }
    let v = env.version;
    let mut next_f;
    if v < NEED_UPDATE_LIMITS_FROM {
        // v5.3+: limits may have changed, don't skip the update (short-circuit: the idle
        // counter is not refreshed then). v5.2 checks only the idle counter.
        let busy = (v < LIMITS_CHANGED_FROM || !pol.need_freq_update)
            && sugov_cpu_is_busy(cpu, idle_calls, env.nohz);
        let (util, max) = util_pre68(cpu, u, time, env);
        next_f = get_next_freq(pol, env, util, max);
        if busy && next_f < pol.next_freq {
            next_f = pol.next_freq;
            pol.cached_raw_freq = 0;
        }
    } else {
        let cached_freq = pol.cached_raw_freq;
        let (util, max) = if v < PERF_REWORK_FROM {
            util_pre68(cpu, u, time, env)
        } else {
            let boost = sugov_iowait_apply(cpu, time, u.capacity, env);
            get_util_v68(cpu, u, boost);
            (cpu.util, u.capacity)
        };
        next_f = get_next_freq(pol, env, util, max);
        if sugov_hold_freq(cpu, u, idle_calls, env)
            && next_f < pol.next_freq
            && (v < HOLD_NEED_UPDATE_FROM || !pol.need_freq_update)
        {
            next_f = pol.next_freq;
            pol.cached_raw_freq = cached_freq;
        }
    }
    sugov_update_next_freq(pol, time, next_f, v, env.need_update_limits).then_some(next_f)
}

/// `sugov_update_single_perf` (v5.11+, drivers with `adjust_perf`, e.g. intel_cpufreq with
/// HWP): falls back to [`update_single`] when not invariant (or before v5.11). Otherwise
/// returns the `adjust_perf` hint in capacity units; the rate limit is re-armed at every
/// evaluation (there is no "unchanged" short cut on this path).
pub fn update_single_perf(
    pol: &mut SugovPolicy,
    cpu: &mut SugovCpu,
    env: &SugovEnv,
    time: u64,
    flags: u32,
    u: &CpuUtil,
    idle_calls: u64,
) -> Option<SugovRequest> {
    let v = env.version;
    if v < ADJUST_PERF_FROM || !env.invariant {
        return update_single(pol, cpu, env, time, flags, u, idle_calls).map(SugovRequest::Freq);
    }
    let prev_util = cpu.util;
    if !single_front(pol, cpu, env, time, flags, u) {
        return None;
    }
    if v < PERF_REWORK_FROM {
        util_pre68(cpu, u, time, env);
    } else {
        let boost = sugov_iowait_apply(cpu, time, u.capacity, env);
        get_util_v68(cpu, u, boost);
    }
    if sugov_hold_freq(cpu, u, idle_calls, env) && cpu.util < prev_util {
        cpu.util = prev_util;
    }
    let (min_perf, target_perf) = if v < PERF_REWORK_FROM {
        (map_util_perf(cpu.bw_min), map_util_perf(cpu.util))
    } else {
        (cpu.bw_min, cpu.util)
    };
    if v >= LIMITS_FIX_FROM {
        pol.need_freq_update = false;
    }
    pol.last_freq_update_time = time;
    Some(SugovRequest::Perf {
        min_perf,
        target_perf,
        capacity: u.capacity,
    })
}

/// `sugov_next_freq_shared()`: evaluate every CPU of the policy (boost decay included) and map
/// the highest demand to a frequency. `cpus[i]` and `utils[i]` describe the policy's CPU i;
/// `caller` is the CPU running the callback.
pub fn next_freq_shared(
    pol: &mut SugovPolicy,
    cpus: &mut [SugovCpu],
    utils: &[CpuUtil],
    caller: usize,
    env: &SugovEnv,
    time: u64,
) -> u64 {
    assert_eq!(cpus.len(), utils.len(), "one CpuUtil per policy CPU");
    if env.version >= PERF_REWORK_FROM {
        let max_cap = utils[caller].capacity;
        let mut util = 0;
        for (c, u) in cpus.iter_mut().zip(utils) {
            let boost = sugov_iowait_apply(c, time, max_cap, env);
            get_util_v68(c, u, boost);
            util = util.max(c.util);
        }
        get_next_freq(pol, env, util, max_cap)
    } else {
        let (mut util, mut max) = (0u64, 1u64);
        for (c, u) in cpus.iter_mut().zip(utils) {
            let (j_util, j_max) = util_pre68(c, u, time, env);
            if j_util * max > j_max * util {
                util = j_util;
                max = j_max;
            }
        }
        get_next_freq(pol, env, util, max)
    }
}

/// `sugov_update_shared()`: one callback on CPU `caller` of a shared policy. Returns the
/// frequency to send to the driver, or `None`.
pub fn update_shared(
    pol: &mut SugovPolicy,
    cpus: &mut [SugovCpu],
    utils: &[CpuUtil],
    caller: usize,
    env: &SugovEnv,
    time: u64,
    flags: u32,
) -> Option<u64> {
    {
        let cpu = &mut cpus[caller];
        sugov_iowait_boost(cpu, time, flags, env);
        cpu.last_update = time;
        ignore_dl_rate_limit(cpu, pol, utils[caller].bw_dl, env.version);
    }
    if !sugov_should_update_freq(pol, time, env.version, env.need_update_limits) {
        return None;
    }
    let f = next_freq_shared(pol, cpus, utils, caller, env, time);
    sugov_update_next_freq(pol, time, f, env.version, env.need_update_limits).then_some(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const TICK: u64 = 4 * MS; // HZ=250

    /// 0.8–3.9 GHz in 100 MHz steps (kHz).
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

    fn env(t: &[u64], version: KernelVersion, invariant: bool, cur: u64) -> SugovEnv<'_> {
        SugovEnv {
            version,
            policy: view(t, cur),
            invariant,
            freq_ref_khz: 0,
            tick_ns: TICK,
            nohz: true,
            need_update_limits: false,
        }
    }

    fn start(rate_limit_us: u64, version: KernelVersion) -> SugovPolicy {
        SugovPolicy::start(SugovTunables { rate_limit_us }, version, false)
    }

    const VERSIONS: [KernelVersion; 6] = [(5, 4), (5, 10), (5, 15), (6, 1), (6, 8), (6, 15)];

    #[test]
    fn invariant_picks_lowest_opp_at_or_above_125_fmax_util() {
        // 1.25 × 3.9 GHz × 400 / 1024 = 1904.3 MHz -> 2.0 GHz, in every version.
        let t = table();
        for v in VERSIONS {
            let e = env(&t, v, true, 800_000);
            assert_eq!(
                raw_next_freq(&e, if v >= PERF_REWORK_FROM { 500 } else { 400 }, 1024),
                1_904_296
            );
            let mut pol = start(500, v);
            let mut cpu = SugovCpu::default();
            let f = update_single(
                &mut pol,
                &mut cpu,
                &e,
                10 * MS,
                0,
                &CpuUtil::cfs(400, 1024),
                1,
            );
            assert_eq!(f, Some(2_000_000), "{v:?}");
            assert_eq!(pol.next_freq, 2_000_000);
        }
    }

    #[test]
    fn non_invariant_pre68_moves_up_only_above_80_percent() {
        let t = table();
        for v in [(5, 4), (5, 15), (6, 7)] {
            let e = env(&t, v, false, 2_000_000);
            // util 820: 1.25 × 2000 × 820 / 1024 = 2001.95 MHz -> 2.1 GHz.
            let mut pol = start(500, v);
            pol.next_freq = 2_000_000;
            let mut cpu = SugovCpu::default();
            let f = update_single(
                &mut pol,
                &mut cpu,
                &e,
                10 * MS,
                0,
                &CpuUtil::cfs(820, 1024),
                1,
            );
            assert_eq!(f, Some(2_100_000), "{v:?}");
            // util 819: 1999.5 (v5.4) / 1998.0 (v5.14+ rounding) MHz -> 2.0 GHz: no change.
            let mut pol = start(500, v);
            pol.next_freq = 2_000_000;
            let mut cpu = SugovCpu::default();
            let f = update_single(
                &mut pol,
                &mut cpu,
                &e,
                10 * MS,
                0,
                &CpuUtil::cfs(819, 1024),
                1,
            );
            assert_eq!(f, None, "{v:?}");
        }
        // The two roundings of the 1.25.
        let e54 = env(&t, (5, 4), false, 2_000_000);
        let e515 = env(&t, (5, 15), false, 2_000_000);
        assert_eq!(raw_next_freq(&e54, 819, 1024), 1_999_511); // 2_500_000 × 819 / 1024
        assert_eq!(raw_next_freq(&e515, 819, 1024), 1_998_046); // 2_000_000 × 1023 / 1024
    }

    #[test]
    fn non_invariant_v68_applies_the_headroom_twice() {
        // v6.8+: util -> perf = min(1.25 util, 1024), freq = 1.25 cur × perf / 1024.
        let t = table();
        let e = env(&t, (6, 8), false, 2_000_000);
        let go = |util| {
            let mut pol = start(500, (6, 8));
            pol.next_freq = 2_000_000;
            let mut cpu = SugovCpu::default();
            update_single(
                &mut pol,
                &mut cpu,
                &e,
                10 * MS,
                0,
                &CpuUtil::cfs(util, 1024),
                1,
            )
        };
        // 819 -> perf 1023 -> 2_500_000 × 1023 / 1024 = 2_497_558 -> 2.5 GHz.
        assert_eq!(go(819), Some(2_500_000));
        // 655 -> perf 818 -> 1_997_070: stays at 2.0 GHz; 656 -> perf 820 -> 2_001_953 -> 2.1 GHz.
        assert_eq!(go(655), None);
        assert_eq!(go(656), Some(2_100_000));
    }

    #[test]
    fn freq_ref_overrides_cpuinfo_max_from_v68() {
        let t = table();
        let mut e = env(&t, (6, 8), true, 800_000);
        e.freq_ref_khz = 3_000_000;
        // perf 500 -> 3_000_000 × 500 / 1024 = 1_464_843 -> 1.5 GHz.
        assert_eq!(raw_next_freq(&e, 500, 1024), 1_464_843);
    }

    #[test]
    fn iowait_boost_gets_the_headroom_in_both_forms() {
        // Boost 256 with no utilization: 1.25 × 3.9 GHz × 256 / 1024 = 1218.75 MHz -> 1.3 GHz.
        let t = table();
        for v in [(5, 4), (5, 15), (6, 8), (6, 15)] {
            let e = env(&t, v, true, 800_000);
            let mut pol = start(0, v);
            let mut cpu = SugovCpu {
                iowait_boost: 128,
                iowait_boost_pending: false,
                last_update: 9 * MS,
                ..Default::default()
            };
            // An iowait wakeup doubles 128 -> 256 and marks it pending; the evaluation applies it.
            let f = update_single(
                &mut pol,
                &mut cpu,
                &e,
                10 * MS,
                SCHED_CPUFREQ_IOWAIT,
                &CpuUtil::cfs(0, 1024),
                1,
            );
            assert_eq!(f, Some(1_300_000), "{v:?}");
            assert_eq!(cpu.iowait_boost, 256);
        }
    }

    /// Drive `n` callbacks 1 ms apart (fresh idle counter each time, so no hold); returns the
    /// boost and the requested frequency after each.
    fn run_boost(v: KernelVersion, flags: &[u32]) -> Vec<(u64, Option<u64>)> {
        let t = table();
        let e = env(&t, v, true, 800_000);
        let mut pol = start(500, v);
        let mut cpu = SugovCpu::default();
        let mut out = vec![];
        for (i, &fl) in flags.iter().enumerate() {
            let time = (i as u64 + 1) * MS;
            let f = update_single(
                &mut pol,
                &mut cpu,
                &e,
                time,
                fl,
                &CpuUtil::cfs(0, 1024),
                i as u64 + 1,
            );
            out.push((cpu.iowait_boost, f));
        }
        out
    }

    #[test]
    fn iowait_boost_doubles_then_halves() {
        const IO: u32 = SCHED_CPUFREQ_IOWAIT;
        for v in [(5, 4), (6, 8)] {
            let r = run_boost(v, &[IO, IO, IO, IO, IO, 0, 0, 0, 0]);
            let boosts: Vec<u64> = r.iter().map(|x| x.0).collect();
            assert_eq!(
                boosts,
                [128, 256, 512, 1024, 1024, 512, 256, 128, 0],
                "{v:?}"
            );
            let freqs: Vec<Option<u64>> = r.iter().map(|x| x.1).collect();
            // 128 -> 609 MHz -> min 0.8 GHz; 256 -> 1.3; 512 -> 2437.5 -> 2.5; 1024 -> 3.9.
            let expect = [
                Some(800_000),
                Some(1_300_000),
                Some(2_500_000),
                Some(3_900_000),
                None,
                Some(2_500_000),
                Some(1_300_000),
                Some(800_000),
                None,
            ];
            assert_eq!(freqs, expect, "{v:?}");
        }
    }

    #[test]
    fn iowait_boost_reset_after_a_tick_without_callbacks() {
        let t = table();
        let e = env(&t, (6, 8), true, 800_000);
        let mut cpu = SugovCpu::default();
        sugov_iowait_boost(&mut cpu, MS, SCHED_CPUFREQ_IOWAIT, &e);
        cpu.last_update = MS;
        cpu.iowait_boost_pending = false;
        sugov_iowait_boost(&mut cpu, 2 * MS, SCHED_CPUFREQ_IOWAIT, &e);
        cpu.last_update = 2 * MS;
        assert_eq!(cpu.iowait_boost, 256);
        // 2 ms + TICK exactly: not more than a tick -> no reset.
        let mut c2 = cpu.clone();
        assert!(!sugov_iowait_reset(&mut c2, 2 * MS + TICK, false, &e));
        // More than a tick later, an iowait wakeup restarts at 128 (pending).
        sugov_iowait_boost(&mut cpu, 2 * MS + TICK + 1, SCHED_CPUFREQ_IOWAIT, &e);
        assert_eq!((cpu.iowait_boost, cpu.iowait_boost_pending), (128, true));
        // A non-iowait callback after another idle tick drops it.
        cpu.last_update = 10 * MS;
        sugov_iowait_boost(&mut cpu, 10 * MS + TICK + 1, 0, &e);
        assert_eq!((cpu.iowait_boost, cpu.iowait_boost_pending), (0, false));
    }

    #[test]
    fn iowait_boost_in_frequency_units_before_v52() {
        const IO: u32 = SCHED_CPUFREQ_IOWAIT;
        let r = run_boost((5, 1), &[IO, IO, IO, IO, 0, 0, 0]);
        let boosts: Vec<u64> = r.iter().map(|x| x.0).collect();
        // policy->min, doubling, capped at cpuinfo.max_freq, halving below policy->min -> 0.
        assert_eq!(
            boosts,
            [800_000, 1_600_000, 3_200_000, 3_900_000, 1_950_000, 975_000, 0]
        );
        let freqs: Vec<Option<u64>> = r.iter().map(|x| x.1).collect();
        // (util, max) = (boost, 3.9 GHz), so 1.25 × boost: 1.0, 2.0, 4.0 -> 3.9, 3.9 (no call),
        // 2437.5 -> 2.5, 1218.75 -> 1.3, 0 -> 0.8 GHz.
        let expect = [
            Some(1_000_000),
            Some(2_000_000),
            Some(3_900_000),
            None,
            Some(2_500_000),
            Some(1_300_000),
            Some(800_000),
        ];
        assert_eq!(freqs, expect);
    }

    #[test]
    fn rate_limit_holds_and_counts_from_the_last_change() {
        let t = table();
        for v in VERSIONS {
            let e = env(&t, v, true, 800_000);
            let mut pol = start(10_000, v); // 10 ms
            let mut cpu = SugovCpu::default();
            let mut call = |time: u64, util: u64, idle: u64| {
                update_single(
                    &mut pol,
                    &mut cpu,
                    &e,
                    time,
                    0,
                    &CpuUtil::cfs(util, 1024),
                    idle,
                )
            };
            assert_eq!(call(10 * MS, 400, 1), Some(2_000_000), "{v:?}");
            // Within 10 ms of the change: rate-limited even though 800 would go to 3.9 GHz.
            assert_eq!(call(15 * MS, 800, 2), None, "{v:?}");
            // 20 ms: evaluated, unchanged -> no call, timer not re-armed.
            assert_eq!(call(20 * MS, 400, 3), None, "{v:?}");
            // 21 ms: 11 ms after the last *change* -> allowed.
            assert_eq!(call(21 * MS, 800, 4), Some(3_900_000), "{v:?}");
        }
    }

    #[test]
    fn need_update_limits_driver_rearms_at_every_evaluation_v510_to_v613() {
        // intel_cpufreq (CPUFREQ_NEED_UPDATE_LIMITS): need_freq_update starts set and stays set
        // in v5.10–v6.13, so every evaluation calls the driver and re-arms the rate limit.
        let t = table();
        let mut e = env(&t, (5, 15), true, 800_000);
        e.need_update_limits = true;
        let mut pol = SugovPolicy::start(
            SugovTunables {
                rate_limit_us: 10_000,
            },
            (5, 15),
            true,
        );
        let mut cpu = SugovCpu::default();
        let u = CpuUtil::cfs(400, 1024);
        assert_eq!(
            update_single(&mut pol, &mut cpu, &e, 10 * MS, 0, &u, 1),
            Some(2_000_000)
        );
        assert_eq!(
            update_single(&mut pol, &mut cpu, &e, 20 * MS, 0, &u, 2),
            Some(2_000_000)
        );
        assert!(pol.need_freq_update);
        let u8 = CpuUtil::cfs(800, 1024);
        assert_eq!(
            update_single(&mut pol, &mut cpu, &e, 21 * MS, 0, &u8, 3),
            None
        );
        // v6.15: the flag is consumed by the first evaluation, then the usual rule applies.
        let mut e = env(&t, (6, 15), true, 800_000);
        e.need_update_limits = true;
        let mut pol = SugovPolicy::start(
            SugovTunables {
                rate_limit_us: 10_000,
            },
            (6, 15),
            true,
        );
        let mut cpu = SugovCpu::default();
        assert_eq!(
            update_single(&mut pol, &mut cpu, &e, 10 * MS, 0, &u, 1),
            Some(2_000_000)
        );
        assert!(!pol.need_freq_update);
        assert_eq!(
            update_single(&mut pol, &mut cpu, &e, 20 * MS, 0, &u, 2),
            None
        );
        assert_eq!(
            update_single(&mut pol, &mut cpu, &e, 21 * MS, 0, &u8, 3),
            Some(3_900_000)
        );
    }

    #[test]
    fn limits_change_bypasses_rate_limit_and_cache() {
        let t = table();
        for v in [(5, 2), (5, 4), (5, 15), (6, 8), (6, 15)] {
            let e = env(&t, v, true, 800_000);
            let mut pol = start(10_000, v);
            let mut cpu = SugovCpu::default();
            let u = CpuUtil::cfs(400, 1024);
            assert_eq!(
                update_single(&mut pol, &mut cpu, &e, 10 * MS, 0, &u, 1),
                Some(2_000_000)
            );
            // scaling_max_freq lowered to 1.5 GHz 1 ms later.
            let mut e2 = e;
            e2.policy.max_khz = 1_500_000;
            pol.limits(v);
            let f = update_single(&mut pol, &mut cpu, &e2, 11 * MS, 0, &u, 2);
            assert_eq!(f, Some(1_500_000), "{v:?}");
            assert!(!pol.limits_changed && !pol.need_freq_update, "{v:?}");
        }
    }

    #[test]
    fn dl_bandwidth_increase_bypasses_rate_limit() {
        let t = table();
        for v in [(5, 4), (6, 8), (6, 15)] {
            let e = env(&t, v, true, 800_000);
            let mut pol = start(10_000, v);
            let mut cpu = SugovCpu::default();
            assert_eq!(
                update_single(
                    &mut pol,
                    &mut cpu,
                    &e,
                    10 * MS,
                    0,
                    &CpuUtil::cfs(400, 1024),
                    1
                ),
                Some(2_000_000)
            );
            let mut u = CpuUtil::cfs(400, 1024);
            u.bw_dl = 300;
            // pre-6.8: 400 + 300 = 700 -> 4_875_000 × 700 / 1024 = 3332.5 MHz -> 3.4 GHz;
            // 6.8+: perf = max(300, 500) = 500 -> 2.0 GHz, unchanged: v6.8 (need_freq_update set
            // by the bypass) re-sends it; v6.15 does not call the driver.
            let f = update_single(&mut pol, &mut cpu, &e, 11 * MS, 0, &u, 2);
            let expect = match v {
                (5, 4) => Some(3_400_000),
                (6, 8) => Some(2_000_000),
                _ => None,
            };
            assert_eq!(f, expect, "{v:?}");
            assert_eq!(cpu.bw_min, 300);
        }
    }

    #[test]
    fn busy_cpu_holds_its_frequency() {
        let t = table();
        for v in VERSIONS {
            let e = env(&t, v, true, 800_000);
            let mut pol = start(500, v);
            let mut cpu = SugovCpu::default();
            assert_eq!(
                update_single(
                    &mut pol,
                    &mut cpu,
                    &e,
                    10 * MS,
                    0,
                    &CpuUtil::cfs(800, 1024),
                    7
                ),
                Some(3_900_000)
            );
            // Same idle counter: the CPU never idled -> no drop.
            assert_eq!(
                update_single(
                    &mut pol,
                    &mut cpu,
                    &e,
                    20 * MS,
                    0,
                    &CpuUtil::cfs(400, 1024),
                    7
                ),
                None,
                "{v:?}"
            );
            // It idled: the drop goes through.
            assert_eq!(
                update_single(
                    &mut pol,
                    &mut cpu,
                    &e,
                    30 * MS,
                    0,
                    &CpuUtil::cfs(400, 1024),
                    8
                ),
                Some(2_000_000),
                "{v:?}"
            );
            // Without NO_HZ there is no hold.
            let mut e2 = e;
            e2.nohz = false;
            let mut pol = start(500, v);
            let mut cpu = SugovCpu::default();
            update_single(
                &mut pol,
                &mut cpu,
                &e2,
                10 * MS,
                0,
                &CpuUtil::cfs(800, 1024),
                7,
            );
            assert_eq!(
                update_single(
                    &mut pol,
                    &mut cpu,
                    &e2,
                    20 * MS,
                    0,
                    &CpuUtil::cfs(400, 1024),
                    7
                ),
                Some(2_000_000)
            );
        }
    }

    #[test]
    fn hold_versus_limits_change_by_version() {
        // A busy CPU at 3.9 GHz whose limit drops to 2.0 GHz.
        let t = table();
        let run = |v: KernelVersion| {
            let e = env(&t, v, true, 800_000);
            let mut pol = start(500, v);
            let mut cpu = SugovCpu::default();
            update_single(
                &mut pol,
                &mut cpu,
                &e,
                10 * MS,
                0,
                &CpuUtil::cfs(1000, 1024),
                7,
            );
            let mut e2 = e;
            e2.policy.max_khz = 2_000_000;
            pol.limits(v);
            update_single(
                &mut pol,
                &mut cpu,
                &e2,
                20 * MS,
                0,
                &CpuUtil::cfs(1000, 1024),
                7,
            )
        };
        // v5.2: the hold wins and next_freq is unchanged: the new limit is not applied
        // (the bug 600f5badb78c fixed).
        assert_eq!(run((5, 2)), None);
        // v5.3–v5.9: busy only if !need_freq_update -> the new limit applies.
        assert_eq!(run((5, 4)), Some(2_000_000));
        // v5.10–v6.5: the hold ignores need_freq_update: next_freq stays 3.9 GHz, but it is
        // re-sent (need_freq_update accepts it); the driver clamps to the new limit.
        assert_eq!(run((5, 15)), Some(3_900_000));
        // v6.6+: no hold while need_freq_update.
        assert_eq!(run((6, 6)), Some(2_000_000));
        assert_eq!(run((6, 15)), Some(2_000_000));
    }

    #[test]
    fn hold_skipped_when_uclamp_capped_from_v62() {
        let t = table();
        let run = |v: KernelVersion| {
            let e = env(&t, v, true, 800_000);
            let mut pol = start(500, v);
            let mut cpu = SugovCpu::default();
            let mut u = CpuUtil::cfs(800, 1024);
            u.uclamp = Some(Uclamp { min: 0, max: 1024 });
            update_single(&mut pol, &mut cpu, &e, 10 * MS, 0, &u, 7);
            u.uclamp = Some(Uclamp { min: 0, max: 400 });
            update_single(&mut pol, &mut cpu, &e, 20 * MS, 0, &u, 7)
        };
        assert_eq!(run((6, 1)), None);
        assert_eq!(run((6, 2)), Some(2_000_000));
    }

    #[test]
    fn effective_util_pre68() {
        let mut u = CpuUtil::cfs(400, 1024);
        assert_eq!(effective_cpu_util_freq_pre68(&u), 400);
        // IRQ: 400 × 768 / 1024 + 256 = 556, + DL bandwidth 100 = 656.
        u.irq = 256;
        u.bw_dl = 100;
        assert_eq!(effective_cpu_util_freq_pre68(&u), 656);
        // RT runnable without uclamp -> max.
        u.rt_runnable = true;
        assert_eq!(effective_cpu_util_freq_pre68(&u), 1024);
        // ... but not with uclamp in use.
        u.uclamp = Some(Uclamp { min: 0, max: 1024 });
        assert_eq!(effective_cpu_util_freq_pre68(&u), 656);
        // CFS + RT + DL saturating -> max.
        let mut s = CpuUtil::cfs(600, 1024);
        s.util_dl = 500;
        assert_eq!(effective_cpu_util_freq_pre68(&s), 1024);
        // uclamp min raises, max caps; inverted clamps return min.
        let mut c = CpuUtil::cfs(300, 1024);
        c.uclamp = Some(Uclamp {
            min: 512,
            max: 1024,
        });
        assert_eq!(effective_cpu_util_freq_pre68(&c), 512);
        c.uclamp = Some(Uclamp { min: 0, max: 200 });
        assert_eq!(effective_cpu_util_freq_pre68(&c), 200);
        c.uclamp = Some(Uclamp { min: 700, max: 600 });
        assert_eq!(effective_cpu_util_freq_pre68(&c), 700);
        // IRQ saturation.
        let mut i = CpuUtil::cfs(10, 1024);
        i.irq = 1024;
        assert_eq!(effective_cpu_util_freq_pre68(&i), 1024);
    }

    #[test]
    fn effective_util_v68_and_perf() {
        let mut u = CpuUtil::cfs(400, 1024);
        u.irq = 256;
        u.bw_dl = 100;
        let e = effective_cpu_util(&u);
        // util 556 (DL bandwidth is not added), min = irq + bw_dl = 356, max = 1024.
        assert_eq!(
            e,
            EffectiveUtil {
                util: 556,
                min: 356,
                max: 1024
            }
        );
        // perf = max(356, min(556 + 139, 1024)) = 695.
        assert_eq!(sugov_effective_cpu_perf(e.util, e.min, e.max), 695);
        // RT runnable without uclamp: the floor is the capacity.
        u.rt_runnable = true;
        assert_eq!(effective_cpu_util(&u).min, 1024);
        // uclamp_max caps the headroom; uclamp_min is a floor without headroom.
        let mut c = CpuUtil::cfs(300, 1024);
        c.uclamp = Some(Uclamp { min: 0, max: 200 });
        let e = effective_cpu_util(&c);
        assert_eq!(sugov_effective_cpu_perf(e.util, e.min, e.max), 200);
        c.uclamp = Some(Uclamp {
            min: 512,
            max: 1024,
        });
        let e = effective_cpu_util(&c);
        assert_eq!(sugov_effective_cpu_perf(e.util, e.min, e.max), 512);
        // DL util counts in the sum: 600 + 500 >= 1024.
        let mut s = CpuUtil::cfs(600, 1024);
        s.util_dl = 500;
        assert_eq!(effective_cpu_util(&s).util, 1024);
    }

    #[test]
    fn shared_policy_takes_the_highest_demand() {
        let t = table();
        for v in [(5, 4), (6, 8)] {
            let e = env(&t, v, true, 800_000);
            let mut pol = start(500, v);
            let mut cpus = vec![SugovCpu::default(); 2];
            let utils = [CpuUtil::cfs(300, 1024), CpuUtil::cfs(600, 1024)];
            // 600: 1.25 × 3.9 GHz × 600 / 1024 = 2856.4 MHz -> 2.9 GHz.
            let f = update_shared(&mut pol, &mut cpus, &utils, 0, &e, 10 * MS, 0);
            assert_eq!(f, Some(2_900_000), "{v:?}");
        }
        // Before v6.8 the comparison is by util/max ratio: 300/512 beats 400/1024.
        let e = env(&t, (5, 4), true, 800_000);
        let mut pol = start(500, (5, 4));
        let mut cpus = vec![SugovCpu::default(); 2];
        let utils = [CpuUtil::cfs(300, 512), CpuUtil::cfs(400, 1024)];
        // 4_875_000 × 300 / 512 = 2_856_445 -> 2.9 GHz.
        assert_eq!(
            next_freq_shared(&mut pol, &mut cpus, &utils, 1, &e, 10 * MS),
            2_900_000
        );
    }

    #[test]
    fn shared_policy_boost_of_another_cpu_decays_at_evaluation() {
        let t = table();
        let e = env(&t, (6, 8), true, 800_000);
        let mut pol = start(0, (6, 8));
        let mut cpus = vec![SugovCpu::default(); 2];
        let utils = [CpuUtil::cfs(0, 1024), CpuUtil::cfs(0, 1024)];
        // CPU 1 gets an iowait wakeup: 128.
        let f = update_shared(&mut pol, &mut cpus, &utils, 1, &e, MS, SCHED_CPUFREQ_IOWAIT);
        assert_eq!(f, Some(800_000));
        // CPU 0's callback evaluates CPU 1 too: no new iowait -> 128 halves to 64 -> dropped.
        update_shared(&mut pol, &mut cpus, &utils, 0, &e, 2 * MS, 0);
        assert_eq!(cpus[1].iowait_boost, 0);
    }

    #[test]
    fn single_perf_hint_for_adjust_perf() {
        let t = table();
        let mut u = CpuUtil::cfs(400, 1024);
        u.bw_dl = 100;
        // v6.8: min = bw_min (100), target = effective perf (500).
        let e = env(&t, (6, 8), true, 800_000);
        let mut pol = start(5_000, (6, 8));
        let mut cpu = SugovCpu::default();
        let r = update_single_perf(&mut pol, &mut cpu, &e, 10 * MS, 0, &u, 1);
        assert_eq!(
            r,
            Some(SugovRequest::Perf {
                min_perf: 100,
                target_perf: 500,
                capacity: 1024
            })
        );
        assert_eq!(pol.last_freq_update_time, 10 * MS);
        // Rate-limited 1 ms later.
        assert_eq!(
            update_single_perf(&mut pol, &mut cpu, &e, 11 * MS, 0, &u, 2),
            None
        );
        // v5.15: util 500 (400 + DL bandwidth), min/target through map_util_perf: 125, 625.
        let e = env(&t, (5, 15), true, 800_000);
        let mut pol = start(5_000, (5, 15));
        let mut cpu = SugovCpu::default();
        let r = update_single_perf(&mut pol, &mut cpu, &e, 10 * MS, 0, &u, 1);
        assert_eq!(
            r,
            Some(SugovRequest::Perf {
                min_perf: 125,
                target_perf: 625,
                capacity: 1024
            })
        );
        // Busy and lower util: the previous target is kept.
        let r = update_single_perf(
            &mut pol,
            &mut cpu,
            &e,
            20 * MS,
            0,
            &CpuUtil::cfs(100, 1024),
            1,
        );
        assert_eq!(
            r,
            Some(SugovRequest::Perf {
                min_perf: 0,
                target_perf: 625,
                capacity: 1024
            })
        );
        // Not invariant: the frequency path.
        let e = env(&t, (6, 8), false, 2_000_000);
        let mut pol = start(5_000, (6, 8));
        let mut cpu = SugovCpu::default();
        let r = update_single_perf(
            &mut pol,
            &mut cpu,
            &e,
            10 * MS,
            0,
            &CpuUtil::cfs(400, 1024),
            1,
        );
        // 2_500_000 × 500 / 1024 = 1_220_703 -> 1.3 GHz.
        assert_eq!(r, Some(SugovRequest::Freq(1_300_000)));
    }

    #[test]
    fn cached_raw_freq_short_cut() {
        let t = table();
        let e = env(&t, (6, 8), true, 800_000);
        let mut pol = start(0, (6, 8));
        assert_eq!(get_next_freq(&mut pol, &e, 500, 1024), 2_000_000);
        assert_eq!(pol.cached_raw_freq, 1_904_296);
        // Same raw frequency: next_freq is returned without resolving (here still 0).
        assert_eq!(get_next_freq(&mut pol, &e, 500, 1024), 0);
    }

    #[test]
    fn start_and_tunables() {
        let p = SugovPolicy::start(SugovTunables { rate_limit_us: 500 }, (6, 1), true);
        assert_eq!(p.freq_update_delay_ns, 500_000);
        assert!(p.need_freq_update);
        assert!(
            !SugovPolicy::start(SugovTunables { rate_limit_us: 500 }, (5, 4), true)
                .need_freq_update
        );
        let mut p = p;
        p.set_rate_limit_us(2_000);
        assert_eq!(p.freq_update_delay_ns, 2_000_000);
        let mut q = SugovPolicy::default();
        q.limits((5, 2));
        assert!(q.need_freq_update && !q.limits_changed);
        let mut q = SugovPolicy::default();
        q.limits((5, 3));
        assert!(!q.need_freq_update && q.limits_changed);
    }
}
