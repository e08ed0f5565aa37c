//! cpufreq core pieces shared by the governors (spec/kernel.md §4.1, §4.2;
//! `drivers/cpufreq/cpufreq.c`, `include/linux/cpufreq.h`, `drivers/cpufreq/cpufreq_governor.c`).
//!
//! What it models:
//! - frequency resolution against a driver's frequency table (`__resolve_freq`,
//!   `cpufreq_frequency_table_target` with the `cpufreq_table_find_index_{al,ah,ac}` helpers of a
//!   table sorted in ascending order): clamp to `[policy->min, policy->max]`, then the lowest
//!   entry ≥ target (`RELATION_L`), the highest entry ≤ target (`RELATION_H`) or the closest one
//!   (`RELATION_C`, ties go to the lower entry); with no table the clamped target is returned (the
//!   intel_cpufreq case, where the driver rounds to P-states itself);
//! - the default transition delay (`cpufreq_policy_transition_delay_us`) by version, which is
//!   schedutil's default `rate_limit_us` and the lower bound of the ondemand/conservative
//!   sampling rate;
//! - the `SCHED_CPUFREQ_IOWAIT` flag passed with `cpufreq_update_util`.
//!
//! Simplifications:
//! - `CPUFREQ_RELATION_E` (v5.16, skip inefficient OPPs) is not modelled: without an Energy
//!   Model marking inefficiencies it behaves like the plain relation;
//! - when `policy->max` is not itself a table entry, `RELATION_L` may return an entry above it,
//!   as the v5.x–v6.x lookup helpers do (the 2025 "in limits" rework is not modelled);
//! - unsorted tables (`cpufreq_table_index_unsorted`) are not supported: tables must be sorted
//!   ascending without duplicates.
//!
//! Everything here is integer arithmetic on kHz and µs, as in the kernel. The file depends on
//! nothing else in the crate.

/// Kernel version as (major, minor), e.g. `(6, 12)`.
pub type KernelVersion = (u32, u32);

/// `SCHED_CPUFREQ_IOWAIT` (`include/linux/sched/cpufreq.h`): the task being enqueued was in
/// iowait.
pub const SCHED_CPUFREQ_IOWAIT: u32 = 1 << 0;

/// Nanoseconds per microsecond.
pub const NSEC_PER_USEC: u64 = 1_000;
/// Nanoseconds per millisecond.
pub const NSEC_PER_MSEC: u64 = 1_000_000;
/// Microseconds per millisecond (`USEC_PER_MSEC`).
pub const USEC_PER_MSEC: u64 = 1_000;

/// `LATENCY_MULTIPLIER` (removed in v6.12).
pub const LATENCY_MULTIPLIER: u64 = 1_000;

/// `CPUFREQ_ETERNAL`: a `transition_latency` of "unknown" (`(unsigned int)-1` ns). cpufreq-dt
/// reports it when the DT has no `clock-latency-ns`.
pub const CPUFREQ_ETERNAL_NS: u64 = u32::MAX as u64;

/// Frequency relation for table lookups (`CPUFREQ_RELATION_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Relation {
    /// Lowest frequency at or above the target.
    L,
    /// Highest frequency at or below the target.
    H,
    /// Closest frequency to the target (ties to the lower one).
    C,
}

/// `clamp_val(target, min, max)` = `min(max(target, min), max)`.
pub fn clamp_to_limits(target: u64, min: u64, max: u64) -> u64 {
    target.max(min).min(max)
}

/// Index of the table entry picked for an already clamped target (`cpufreq_table_find_index_al`,
/// `_ah`, `_ac` for an ascending table). `None` for an empty table.
pub fn find_index(table_khz: &[u64], target: u64, rel: Relation) -> Option<usize> {
    if table_khz.is_empty() {
        return None;
    }
    debug_assert!(
        table_khz.windows(2).all(|w| w[0] < w[1]),
        "frequency table must be sorted ascending without duplicates"
    );
    // First entry at or above the target, if any.
    let above = table_khz.iter().position(|&f| f >= target);
    let last = table_khz.len() - 1;
    Some(match rel {
        // al: first entry >= target, else the highest entry.
        Relation::L => above.unwrap_or(last),
        // ah: an exact match, else the entry below the first one above, else the lowest.
        Relation::H => match above {
            Some(i) if table_khz[i] == target => i,
            Some(0) => 0,
            Some(i) => i - 1,
            None => last,
        },
        // ac: exact match, else the closer of the two neighbours; a tie keeps the lower one.
        Relation::C => match above {
            Some(i) if table_khz[i] == target => i,
            Some(0) => 0,
            Some(i) => {
                let lo = table_khz[i - 1];
                let hi = table_khz[i];
                if target - lo > hi - target {
                    i
                } else {
                    i - 1
                }
            }
            None => last,
        },
    })
}

/// Resolve a target frequency as `__resolve_freq` / `__cpufreq_driver_target` do: clamp to
/// `[min, max]` (the policy limits), then pick a table entry by `rel`. An empty table returns the
/// clamped target.
pub fn resolve(table_khz: &[u64], min: u64, max: u64, target: u64, rel: Relation) -> u64 {
    let t = clamp_to_limits(target, min, max);
    match find_index(table_khz, t, rel) {
        Some(i) => table_khz[i],
        None => t,
    }
}

/// A read-only view of one cpufreq policy as the governors see it (`struct cpufreq_policy`).
/// All frequencies in kHz.
#[derive(Clone, Copy, Debug)]
pub struct PolicyView<'a> {
    /// The driver's frequency table, ascending; empty for table-less drivers (intel_cpufreq).
    pub table_khz: &'a [u64],
    /// `policy->min` (`scaling_min_freq` after QoS).
    pub min_khz: u64,
    /// `policy->max` (`scaling_max_freq` after QoS).
    pub max_khz: u64,
    /// `policy->cpuinfo.min_freq`.
    pub cpuinfo_min_khz: u64,
    /// `policy->cpuinfo.max_freq` (on intel_pstate/intel_cpufreq: the 1-core turbo when turbo is
    /// on).
    pub cpuinfo_max_khz: u64,
    /// `policy->cur`: the last frequency recorded by the core (requested, not delivered).
    pub cur_khz: u64,
}

impl PolicyView<'_> {
    /// `cpufreq_driver_resolve_freq` (always `RELATION_L`) or, with another relation, the
    /// resolution step of `__cpufreq_driver_target`.
    pub fn resolve(&self, target: u64, rel: Relation) -> u64 {
        resolve(self.table_khz, self.min_khz, self.max_khz, target, rel)
    }

    /// `__cpufreq_driver_target(policy, target, rel)`: the resolved frequency, or `None` when it
    /// equals `policy->cur` (the core then skips the driver call).
    pub fn driver_target(&self, target: u64, rel: Relation) -> Option<u64> {
        let f = self.resolve(target, rel);
        (f != self.cur_khz).then_some(f)
    }
}

/// First version with the 2 ms cap (e13aa799c2a6, "cpufreq: Change default transition delay to
/// 2ms") and a755d0e2d41b ("Honour transition_latency over transition_delay_us").
pub const TRANSITION_DELAY_2MS_FROM: KernelVersion = (6, 9);
/// First version without `LATENCY_MULTIPLIER` (37c6dccd6837): 1.5 × latency.
pub const TRANSITION_DELAY_1_5X_FROM: KernelVersion = (6, 12);

/// `cpufreq_policy_transition_delay_us(policy)` (§4.2).
///
/// - A driver-set `policy->transition_delay_us` wins (intel_cpufreq: 5000 µs with HWP, 500 µs
///   without).
/// - Otherwise, with `latency_us = transition_latency_ns / 1000`:
///   - v4.14–v6.8: `latency_us ? min(latency_us × 1000, 10000) : 1000`;
///   - v6.9–v6.11: `latency_us > 2000 ? latency_us : min(latency_us × 1000, 2000)`, 1000 if 0;
///   - v6.12+: `latency_us + latency_us / 2`, 1000 if 0.
///
/// Not modelled: the 2025 stable fix for `CPUFREQ_ETERNAL` (cpufreq-dt's default latency /
/// the restored 10 ms cap), whose final merged form is not verified (spec §4.2 (R)); pass a
/// realistic `transition_latency_ns` instead of [`CPUFREQ_ETERNAL_NS`] for such platforms.
pub fn transition_delay_us(
    version: KernelVersion,
    driver_transition_delay_us: Option<u64>,
    transition_latency_ns: u64,
) -> u64 {
    if let Some(d) = driver_transition_delay_us.filter(|&d| d > 0) {
        return d;
    }
    // `transition_latency` is an unsigned int in ns.
    let latency_us = (transition_latency_ns & u64::from(u32::MAX)) / NSEC_PER_USEC;
    if latency_us == 0 {
        return USEC_PER_MSEC;
    }
    if version >= TRANSITION_DELAY_1_5X_FROM {
        latency_us + (latency_us >> 1)
    } else if version >= TRANSITION_DELAY_2MS_FROM {
        let max_delay_us = 2 * USEC_PER_MSEC;
        if latency_us > max_delay_us {
            latency_us
        } else {
            (latency_us * LATENCY_MULTIPLIER).min(max_delay_us)
        }
    } else {
        (latency_us * LATENCY_MULTIPLIER).min(10_000)
    }
}

/// `CPUFREQ_DBS_MIN_SAMPLING_INTERVAL` = 2 ticks in µs (`2 * TICK_NSEC / NSEC_PER_USEC`).
pub fn dbs_min_sampling_interval_us(tick_ns: u64) -> u64 {
    2 * tick_ns / NSEC_PER_USEC
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 0.8–3.9 GHz in 100 MHz steps (kHz).
    fn table() -> Vec<u64> {
        (8..=39).map(|r| r * 100_000).collect()
    }

    #[test]
    fn relation_l_picks_lowest_at_or_above() {
        let t = table();
        assert_eq!(
            resolve(&t, 800_000, 3_900_000, 1_904_296, Relation::L),
            2_000_000
        );
        assert_eq!(
            resolve(&t, 800_000, 3_900_000, 2_000_000, Relation::L),
            2_000_000
        );
        assert_eq!(
            resolve(&t, 800_000, 3_900_000, 2_000_001, Relation::L),
            2_100_000
        );
    }

    #[test]
    fn relation_h_picks_highest_at_or_below() {
        let t = table();
        assert_eq!(
            resolve(&t, 800_000, 3_900_000, 1_999_999, Relation::H),
            1_900_000
        );
        assert_eq!(
            resolve(&t, 800_000, 3_900_000, 2_000_000, Relation::H),
            2_000_000
        );
    }

    #[test]
    fn relation_c_picks_closest_and_ties_go_low() {
        let t = table();
        assert_eq!(
            resolve(&t, 800_000, 3_900_000, 2_049_999, Relation::C),
            2_000_000
        );
        assert_eq!(
            resolve(&t, 800_000, 3_900_000, 2_050_000, Relation::C),
            2_000_000
        );
        assert_eq!(
            resolve(&t, 800_000, 3_900_000, 2_050_001, Relation::C),
            2_100_000
        );
    }

    #[test]
    fn clamps_to_policy_limits_first() {
        let t = table();
        // Above the policy max: clamp to 3.0 GHz, an entry.
        assert_eq!(
            resolve(&t, 800_000, 3_000_000, 5_000_000, Relation::L),
            3_000_000
        );
        // Below the policy min.
        assert_eq!(resolve(&t, 1_200_000, 3_000_000, 0, Relation::H), 1_200_000);
        // A non-OPP max: RELATION_L goes one entry above it, as the kernel helpers do.
        assert_eq!(
            resolve(&t, 800_000, 2_050_000, 9_999_999, Relation::L),
            2_100_000
        );
        assert_eq!(
            resolve(&t, 800_000, 2_050_000, 9_999_999, Relation::H),
            2_000_000
        );
    }

    #[test]
    fn out_of_table_targets_take_the_end_entries() {
        let t = [1_000_000, 2_000_000];
        assert_eq!(resolve(&t, 0, u64::MAX, 3_000_000, Relation::L), 2_000_000);
        assert_eq!(resolve(&t, 0, u64::MAX, 500_000, Relation::H), 1_000_000);
        assert_eq!(resolve(&t, 0, u64::MAX, 500_000, Relation::C), 1_000_000);
        assert_eq!(resolve(&t, 0, u64::MAX, 3_000_000, Relation::C), 2_000_000);
    }

    #[test]
    fn no_table_returns_clamped_target() {
        assert_eq!(
            resolve(&[], 800_000, 3_900_000, 1_904_296, Relation::L),
            1_904_296
        );
        assert_eq!(
            resolve(&[], 800_000, 3_900_000, 9_000_000, Relation::L),
            3_900_000
        );
    }

    #[test]
    fn driver_target_skips_current() {
        let t = table();
        let p = PolicyView {
            table_khz: &t,
            min_khz: 800_000,
            max_khz: 3_900_000,
            cpuinfo_min_khz: 800_000,
            cpuinfo_max_khz: 3_900_000,
            cur_khz: 2_000_000,
        };
        assert_eq!(p.driver_target(1_950_000, Relation::L), None);
        assert_eq!(p.driver_target(1_950_000, Relation::H), Some(1_900_000));
    }

    #[test]
    fn transition_delay_driver_value_wins() {
        assert_eq!(transition_delay_us((5, 4), Some(500), 20_000), 500);
        assert_eq!(transition_delay_us((6, 12), Some(5000), 20_000), 5000);
    }

    #[test]
    fn transition_delay_by_version() {
        // 20 µs latency (intel_cpufreq's value, were the driver delay unset).
        assert_eq!(transition_delay_us((5, 4), None, 20_000), 10_000); // min(20 ms, 10 ms)
        assert_eq!(transition_delay_us((6, 9), None, 20_000), 2_000); // min(20 ms, 2 ms)
        assert_eq!(transition_delay_us((6, 12), None, 20_000), 30); // 20 + 10
                                                                    // 1 µs latency.
        assert_eq!(transition_delay_us((6, 8), None, 1_000), 1_000);
        assert_eq!(transition_delay_us((6, 9), None, 1_000), 1_000);
        assert_eq!(transition_delay_us((6, 12), None, 1_000), 1);
        // Unknown latency (0): 1 ms everywhere.
        assert_eq!(transition_delay_us((5, 4), None, 0), 1_000);
        assert_eq!(transition_delay_us((6, 12), None, 999), 1_000);
        // High latency (3 ms): v6.9 honours it as is.
        assert_eq!(transition_delay_us((6, 8), None, 3_000_000), 10_000);
        assert_eq!(transition_delay_us((6, 9), None, 3_000_000), 3_000);
        assert_eq!(transition_delay_us((6, 12), None, 3_000_000), 4_500);
        // CPUFREQ_ETERNAL: the v6.12 regression (6442450 µs).
        assert_eq!(
            transition_delay_us((6, 12), None, CPUFREQ_ETERNAL_NS),
            6_442_450
        );
        assert_eq!(
            transition_delay_us((6, 6), None, CPUFREQ_ETERNAL_NS),
            10_000
        );
    }

    #[test]
    fn dbs_min_interval_is_two_ticks() {
        assert_eq!(dbs_min_sampling_interval_us(4_000_000), 8_000); // HZ=250
        assert_eq!(dbs_min_sampling_interval_us(1_000_000), 2_000); // HZ=1000
    }
}
