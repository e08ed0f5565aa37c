//! Frequency invariance (spec/kernel.md §2.1–§2.3): where `arch_scale_freq_capacity()` comes
//! from.
//!
//! What it models:
//! - the x86 APERF/MPERF source (`arch/x86/kernel/smpboot.c` v5.7–v6.x, later
//!   `arch/x86/kernel/cpu/aperfmperf.c`): the boot-time reference ratio
//!   `arch_max_freq_ratio = turbo_ratio × 1024 / base_ratio` (ratios in 100 MHz units, integer
//!   division), the AMD EPYC midpoint `((highest × 1024 / nominal) + 1024) >> 1`, and the
//!   per-tick `arch_scale_freq_tick` update `freq_scale = (ΔA << 20) / (ΔM × ratio)` clamped at
//!   1024, with its version-dependent edge cases;
//! - the arm/arm64 non-AMU source (`topology_set_freq_scale`): `cur × 1024 / max` on every
//!   frequency transition ([`cpufreq_freq_scale`]).
//!
//! The reference is chosen explicitly by the [`Invariance`] setting
//! (`none | turbo:N | base | max | amd-midpoint | cpufreq`) rather than from CPU model IDs:
//! `turbo:4` is the kernel's rule for Intel client and older Xeon parts (4-core turbo, 1-core if
//! that field is 0), `turbo:1`/`max` the Silvermont/Goldmont/KNL rule, `turbo:N` the SKX group
//! rule, `base` the turbo-disabled case (ratio 1024).
//!
//! Versions of the per-tick update ([`ArchFreqScale::tick`]):
//! - before v5.7: no x86 frequency invariance;
//! - v5.7, v5.8: if ΔM == 0 the tick is skipped, keeping the old scale *and* the old counter
//!   references (the next tick's deltas span both ticks); no overflow checks (wrapping
//!   arithmetic, a zero divisor would oops);
//! - v5.9+: overflow of `ΔA << 20` or of `ΔM × ratio`, a zero divisor or a zero quotient
//!   disables invariance ("went wobbly"); v5.9–v6.2 keep every CPU's last scale, v6.3+ reset
//!   every CPU's scale to 1024.
//!
//! Simplifications:
//! - the kernel disables the static key from a workqueue shortly after the failing tick; here the
//!   failing CPU is disabled at once and the caller must call [`disable_freq_invariance`] on the
//!   others (it is a global key);
//! - the 5.8.y stable backport of the v5.9 checks is not distinguished (mainline releases only);
//! - hybrid per-CPU `freq_ratio` (v6.12+) is supported by giving each CPU its own ratio; the
//!   values are the caller's (`cap_freq × 1024 / base_freq`).
//!
//! Integer arithmetic throughout, as the kernel's. Depends only on `super::policy`.

use std::fmt;
use std::str::FromStr;

use super::policy::KernelVersion;

/// `SCHED_CAPACITY_SHIFT`.
pub const SCHED_CAPACITY_SHIFT: u32 = 10;
/// `SCHED_CAPACITY_SCALE`.
pub const SCHED_CAPACITY_SCALE: u64 = 1 << SCHED_CAPACITY_SHIFT;
/// kHz per x86 ratio unit (100 MHz, `core_get_scaling`).
pub const KHZ_PER_RATIO: u64 = 100_000;

/// First version with x86 APERF/MPERF frequency invariance (1567c3e3467c).
pub const X86_FIE_FROM: KernelVersion = (5, 7);
/// First version with the overflow/zero checks (e2b0d619b400) and the turbo = 0 / ratio = 0
/// checks at boot.
pub const X86_FIE_CHECKS_FROM: KernelVersion = (5, 9);
/// First version where disabling resets every `arch_freq_scale` to 1024.
pub const X86_FIE_RESET_FROM: KernelVersion = (6, 3);
/// First version with AMD frequency invariance (41ea667227ba + 976df7e5730e, the midpoint).
pub const AMD_FIE_FROM: KernelVersion = (5, 11);

/// A version after every change modelled here.
const LATEST: KernelVersion = (u32::MAX, 0);

/// Allowed forms of the invariance setting, for error messages.
pub const INVARIANCE_FORMS: &str =
    "none, turbo:N (N >= 1 active cores), base, max, amd-midpoint, cpufreq";

/// Where `arch_scale_freq_capacity()` comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Invariance {
    /// Not frequency invariant (`arch_scale_freq_capacity` = 1024, schedutil's non-invariant
    /// formula).
    None,
    /// x86 APERF/MPERF against the turbo frequency with N active cores (Intel `turbo:4` is the
    /// kernel default on client parts; falls back to 1-core turbo when the N-core value is
    /// unknown or 0).
    Turbo(u32),
    /// x86 APERF/MPERF against the base frequency (ratio 1024: what turbo-disabled systems get).
    Base,
    /// x86 APERF/MPERF against the maximum (1-core turbo / `cpuinfo.max_freq`).
    Max,
    /// AMD APERF/MPERF against the midpoint of max boost and nominal (v5.11+).
    AmdMidpoint,
    /// arm-style cpufreq-driven scale: requested `cur × 1024 / max` at each transition.
    Cpufreq,
}

impl Invariance {
    /// Parse `none | turbo:N | base | max | amd-midpoint | cpufreq`.
    pub fn parse(s: &str) -> Result<Invariance, String> {
        let err = || format!("cpufreq.invariance = '{s}': allowed values are {INVARIANCE_FORMS}");
        match s {
            "none" => Ok(Invariance::None),
            "base" => Ok(Invariance::Base),
            "max" => Ok(Invariance::Max),
            "amd-midpoint" => Ok(Invariance::AmdMidpoint),
            "cpufreq" => Ok(Invariance::Cpufreq),
            _ => {
                let n = s.strip_prefix("turbo:").ok_or_else(err)?;
                match n.parse::<u32>() {
                    Ok(n) if n >= 1 => Ok(Invariance::Turbo(n)),
                    _ => Err(err()),
                }
            }
        }
    }

    /// Whether the source is the x86 APERF/MPERF counters.
    pub fn uses_aperf_mperf(self) -> bool {
        matches!(
            self,
            Invariance::Turbo(_) | Invariance::Base | Invariance::Max | Invariance::AmdMidpoint
        )
    }
}

impl FromStr for Invariance {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Invariance::parse(s)
    }
}

impl fmt::Display for Invariance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Invariance::None => write!(f, "none"),
            Invariance::Turbo(n) => write!(f, "turbo:{n}"),
            Invariance::Base => write!(f, "base"),
            Invariance::Max => write!(f, "max"),
            Invariance::AmdMidpoint => write!(f, "amd-midpoint"),
            Invariance::Cpufreq => write!(f, "cpufreq"),
        }
    }
}

/// ACPI CPPC performance levels used by the AMD reference (`amd_set_max_freq_ratio`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AmdPerf {
    /// The boost numerator: CPPC `highest_perf` (v5.11/v5.12), a fixed 166 or 255
    /// (~v5.13–v6.11, `amd_get_highest_perf`), or per [`amd_boost_numerator`].
    pub highest_perf: u64,
    /// CPPC `nominal_perf` (P0).
    pub nominal_perf: u64,
}

/// An x86 ratio (100 MHz units) from kHz, truncating as reading the MSR field would.
pub fn khz_to_ratio(khz: u64) -> u64 {
    khz / KHZ_PER_RATIO
}

/// `turbo_ratio × 1024 / base_ratio` (`intel_set_max_freq_ratio`); `None` for base = 0.
pub fn intel_turbo_freq_ratio(base_ratio: u64, turbo_ratio: u64) -> Option<u64> {
    (base_ratio != 0).then(|| turbo_ratio * SCHED_CAPACITY_SCALE / base_ratio)
}

/// The AMD EPYC midpoint `((highest × 1024 / nominal) + 1024) >> 1`; `None` if either input
/// is 0.
pub fn amd_midpoint_ratio(highest_perf: u64, nominal_perf: u64) -> Option<u64> {
    if highest_perf == 0 || nominal_perf == 0 {
        return None;
    }
    let perf_ratio = highest_perf * SCHED_CAPACITY_SCALE / nominal_perf;
    Some((perf_ratio + SCHED_CAPACITY_SCALE) >> 1)
}

/// The AMD boost numerator by version (spec §2.3): CPPC `highest_perf` in v5.11/v5.12; from
/// about v5.13 to v6.11 a fixed value (166 on the listed family 17h/19h models, else 255 —
/// `fixed_numerator` is the caller's choice), with no CPPC read; from v6.12 the fixed value on
/// preferred-core parts, else CPPC `highest_perf`. The model list is the caller's.
pub fn amd_boost_numerator(
    version: KernelVersion,
    cppc_highest_perf: u64,
    fixed_numerator: u64,
    preferred_core: bool,
) -> u64 {
    if version < (5, 13) {
        cppc_highest_perf
    } else if version < (6, 12) || preferred_core {
        fixed_numerator
    } else {
        cppc_highest_perf
    }
}

/// `arch_set_max_freq_ratio(turbo_disabled)`: 1024 (reference = base) when turbo is disabled,
/// else the boot-time turbo ratio. (On AMD the kernel always passes `false`.)
pub fn arch_set_max_freq_ratio(turbo_disabled: bool, turbo_freq_ratio: u64) -> u64 {
    if turbo_disabled {
        SCHED_CAPACITY_SCALE
    } else {
        turbo_freq_ratio
    }
}

/// The turbo frequency used as reference for `turbo:N`: the N-active-core entry, falling back to
/// the 1-core entry when the N-core one is missing or 0 (as `core_set_max_freq_ratio` falls back
/// from the 4C to the 1C field).
fn turbo_khz_for(n: u32, turbo_khz_by_active_cores: &[u64]) -> u64 {
    let idx = (n as usize).saturating_sub(1);
    match turbo_khz_by_active_cores.get(idx) {
        Some(&k) if k != 0 => k,
        _ => turbo_khz_by_active_cores.first().copied().unwrap_or(0),
    }
}

/// `arch_max_freq_ratio` for `reference` with the current (v5.9+) enabling rules: `None` when
/// invariance is not enabled (no APERF/MPERF source, base or turbo 0, a 0 ratio, AMD without
/// CPPC data).
///
/// - `turbo_khz_by_active_cores[i]` is the turbo frequency with `i + 1` active cores
///   (`MSR_TURBO_RATIO_LIMIT` fields; `[0]` = 1C);
/// - `max_khz` is the reference for [`Invariance::Max`] (the 1C turbo / `cpuinfo.max_freq`).
///
/// Turbo being disabled at boot is not handled here: apply [`arch_set_max_freq_ratio`].
pub fn x86_max_freq_ratio(
    reference: Invariance,
    base_khz: u64,
    turbo_khz_by_active_cores: &[u64],
    max_khz: u64,
    amd: AmdPerf,
) -> Option<u64> {
    x86_max_freq_ratio_at(
        LATEST,
        reference,
        base_khz,
        turbo_khz_by_active_cores,
        max_khz,
        amd,
    )
}

/// [`x86_max_freq_ratio`] with the enabling rules of `version`:
/// - before v5.7 (AMD: v5.11): `None`;
/// - v5.7, v5.8: `None` only for base = 0; a turbo value of 0 installs ratio 0 (`Some(0)`),
///   which makes every later tick divide by zero (see [`TickOutcome::DivideByZero`]);
/// - v5.9+: `None` for base = 0, turbo = 0 or a ratio of 0.
pub fn x86_max_freq_ratio_at(
    version: KernelVersion,
    reference: Invariance,
    base_khz: u64,
    turbo_khz_by_active_cores: &[u64],
    max_khz: u64,
    amd: AmdPerf,
) -> Option<u64> {
    if version < X86_FIE_FROM {
        return None;
    }
    let checks = version >= X86_FIE_CHECKS_FROM;
    let ratio = match reference {
        Invariance::None | Invariance::Cpufreq => return None,
        Invariance::AmdMidpoint => {
            if version < AMD_FIE_FROM {
                return None;
            }
            amd_midpoint_ratio(amd.highest_perf, amd.nominal_perf)?
        }
        Invariance::Base | Invariance::Max | Invariance::Turbo(_) => {
            let base = khz_to_ratio(base_khz);
            let turbo = khz_to_ratio(match reference {
                Invariance::Base => base_khz,
                Invariance::Max => max_khz,
                Invariance::Turbo(n) => turbo_khz_for(n, turbo_khz_by_active_cores),
                _ => unreachable!(),
            });
            if base == 0 || (checks && turbo == 0) {
                return None;
            }
            intel_turbo_freq_ratio(base, turbo)?
        }
    };
    if checks && ratio == 0 {
        return None;
    }
    Some(ratio)
}

/// What the last [`ArchFreqScale::tick`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TickOutcome {
    /// No tick yet.
    None,
    /// `arch_freq_scale` updated.
    Updated,
    /// v5.7/v5.8: ΔM was 0; scale and references kept.
    SkippedZeroMperf,
    /// Invariance is (already) disabled: the tick returned at once.
    Disabled,
    /// v5.9+: an overflow or zero check failed; invariance was disabled ("went wobbly"). The
    /// caller must disable the other CPUs ([`disable_freq_invariance`]).
    WentWobbly,
    /// v5.7/v5.8: the divisor was 0 (ratio 0 or a wrapped product): the kernel would oops;
    /// the scale is kept.
    DivideByZero,
}

/// Per-CPU x86 APERF/MPERF frequency-invariance state (`arch_prev_aperf`, `arch_prev_mperf`,
/// `arch_freq_scale` and the global `arch_scale_freq_key` as seen by this CPU).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArchFreqScale {
    /// `arch_max_freq_ratio` (or the hybrid per-CPU `freq_ratio`).
    pub ratio: u64,
    /// `arch_freq_scale`, 0..=1024 (1024 initially).
    pub scale: u64,
    /// `arch_scale_freq_invariant()`: the static key.
    pub enabled: bool,
    /// Counter deltas not yet consumed because a v5.7/v5.8 tick skipped (the kernel kept the old
    /// references, so the next tick's deltas include these).
    pub carry_aperf: u64,
    pub carry_mperf: u64,
    /// What the last tick did.
    pub last: TickOutcome,
}

impl ArchFreqScale {
    /// Invariance enabled with `ratio` (from [`x86_max_freq_ratio`]); `None` gives a disabled
    /// source whose scale stays 1024.
    pub fn new(ratio: Option<u64>) -> Self {
        ArchFreqScale {
            ratio: ratio.unwrap_or(SCHED_CAPACITY_SCALE),
            scale: SCHED_CAPACITY_SCALE,
            enabled: ratio.is_some(),
            carry_aperf: 0,
            carry_mperf: 0,
            last: TickOutcome::None,
        }
    }

    /// `arch_scale_freq_invariant()`.
    pub fn invariant(&self) -> bool {
        self.enabled
    }

    /// `arch_scale_freq_tick()` with the counter deltas since the previous tick; returns
    /// `arch_freq_scale` afterwards.
    pub fn tick(&mut self, d_aperf: u64, d_mperf: u64, version: KernelVersion) -> u64 {
        if !self.enabled {
            self.last = TickOutcome::Disabled;
            return self.scale;
        }
        let acnt = d_aperf.wrapping_add(self.carry_aperf);
        let mcnt = d_mperf.wrapping_add(self.carry_mperf);
        self.carry_aperf = 0;
        self.carry_mperf = 0;
        if version < X86_FIE_CHECKS_FROM {
            if mcnt == 0 {
                // References not advanced: the next deltas span this tick too.
                self.carry_aperf = acnt;
                self.carry_mperf = mcnt;
                self.last = TickOutcome::SkippedZeroMperf;
                return self.scale;
            }
            // No overflow checks: C's u64 shift and multiply wrap.
            let a = acnt << (2 * SCHED_CAPACITY_SHIFT);
            let m = mcnt.wrapping_mul(self.ratio);
            if m == 0 {
                self.last = TickOutcome::DivideByZero;
                return self.scale;
            }
            self.scale = (a / m).min(SCHED_CAPACITY_SCALE);
            self.last = TickOutcome::Updated;
            return self.scale;
        }
        // v5.9+: check_shl_overflow / check_mul_overflow / zero checks.
        let a = (acnt.leading_zeros() >= 2 * SCHED_CAPACITY_SHIFT)
            .then_some(acnt << (2 * SCHED_CAPACITY_SHIFT));
        let m = mcnt.checked_mul(self.ratio).filter(|&m| m != 0);
        let q = match (a, m) {
            (Some(a), Some(m)) => a / m,
            _ => 0,
        };
        if q == 0 {
            self.went_wobbly(version);
            return self.scale;
        }
        self.scale = q.min(SCHED_CAPACITY_SCALE);
        self.last = TickOutcome::Updated;
        self.scale
    }

    fn went_wobbly(&mut self, version: KernelVersion) {
        self.disable(version);
        self.last = TickOutcome::WentWobbly;
    }

    /// The effect of `disable_freq_invariance_workfn` on this CPU.
    pub fn disable(&mut self, version: KernelVersion) {
        self.enabled = false;
        if version >= X86_FIE_RESET_FROM {
            self.scale = SCHED_CAPACITY_SCALE;
        }
    }
}

/// Turn the (global) static key off on every CPU, as the kernel's work item does after a
/// "went wobbly" tick; v6.3+ also resets every `arch_freq_scale` to 1024.
pub fn disable_freq_invariance(cpus: &mut [ArchFreqScale], version: KernelVersion) {
    for c in cpus {
        c.disable(version);
    }
}

/// arm/arm64 without AMU (`topology_set_freq_scale`): `cur × 1024 / max` at each frequency
/// transition, where `max` is the capacity reference frequency (`cpuinfo.max_freq`). Returns
/// 1024 when `max` is 0 (no information).
pub fn cpufreq_freq_scale(cur_khz: u64, max_khz: u64) -> u64 {
    if max_khz == 0 {
        return SCHED_CAPACITY_SCALE;
    }
    (cur_khz << SCHED_CAPACITY_SHIFT) / max_khz
}

#[cfg(test)]
mod tests {
    use super::*;

    const NO_AMD: AmdPerf = AmdPerf {
        highest_perf: 0,
        nominal_perf: 0,
    };

    /// Skylake client: base 3.5 GHz, turbo 1C/2C/3C/4C = 4.0/3.9/3.8/3.7 GHz.
    const SKL_TURBO: [u64; 4] = [4_000_000, 3_900_000, 3_800_000, 3_700_000];

    #[test]
    fn parse_all_forms() {
        assert_eq!(Invariance::parse("none"), Ok(Invariance::None));
        assert_eq!(Invariance::parse("turbo:4"), Ok(Invariance::Turbo(4)));
        assert_eq!(Invariance::parse("base"), Ok(Invariance::Base));
        assert_eq!(Invariance::parse("max"), Ok(Invariance::Max));
        assert_eq!(
            Invariance::parse("amd-midpoint"),
            Ok(Invariance::AmdMidpoint)
        );
        assert_eq!(Invariance::parse("cpufreq"), Ok(Invariance::Cpufreq));
        for s in [
            "none",
            "turbo:1",
            "turbo:4",
            "base",
            "max",
            "amd-midpoint",
            "cpufreq",
        ] {
            assert_eq!(Invariance::parse(s).unwrap().to_string(), s);
        }
        assert_eq!("turbo:2".parse::<Invariance>(), Ok(Invariance::Turbo(2)));
    }

    #[test]
    fn parse_errors_name_value_and_forms() {
        for bad in [
            "", "turbo", "turbo:", "turbo:0", "turbo:x", "Turbo:4", "amd",
        ] {
            let e = Invariance::parse(bad).unwrap_err();
            assert!(e.contains(&format!("'{bad}'")), "{e}");
            assert!(e.contains("turbo:N") && e.contains("amd-midpoint"), "{e}");
        }
    }

    #[test]
    fn skylake_turbo4_ratio() {
        // 37 × 1024 / 35 = 37888 / 35 = 1082.5 -> 1082.
        let r = x86_max_freq_ratio(
            Invariance::Turbo(4),
            3_500_000,
            &SKL_TURBO,
            4_000_000,
            NO_AMD,
        );
        assert_eq!(r, Some(1082));
        // 1C: 40 × 1024 / 35 = 1170.3 -> 1170; max is the same reference.
        let r1 = x86_max_freq_ratio(
            Invariance::Turbo(1),
            3_500_000,
            &SKL_TURBO,
            4_000_000,
            NO_AMD,
        );
        assert_eq!(r1, Some(1170));
        let rm = x86_max_freq_ratio(Invariance::Max, 3_500_000, &SKL_TURBO, 4_000_000, NO_AMD);
        assert_eq!(rm, Some(1170));
        let rb = x86_max_freq_ratio(Invariance::Base, 3_500_000, &SKL_TURBO, 4_000_000, NO_AMD);
        assert_eq!(rb, Some(1024));
    }

    #[test]
    fn turbo_n_falls_back_to_one_core() {
        // A dual-core part: no 4C field -> 1C (38 × 1024 / 30 = 1297.07 -> 1297).
        let two = [3_800_000, 3_600_000];
        let r = x86_max_freq_ratio(Invariance::Turbo(4), 3_000_000, &two, 3_800_000, NO_AMD);
        assert_eq!(r, Some(1297));
        // 4C field present but 0.
        let zero4 = [3_800_000, 3_600_000, 3_500_000, 0];
        let r = x86_max_freq_ratio(Invariance::Turbo(4), 3_000_000, &zero4, 3_800_000, NO_AMD);
        assert_eq!(r, Some(1297));
    }

    #[test]
    fn enabling_rules_by_version() {
        let none = x86_max_freq_ratio_at(
            (5, 6),
            Invariance::Turbo(4),
            3_500_000,
            &SKL_TURBO,
            0,
            NO_AMD,
        );
        assert_eq!(none, None);
        // Base 0 (hypervisor): never enabled from v5.7.
        for v in [(5, 7), (5, 9), (6, 12)] {
            let r = x86_max_freq_ratio_at(v, Invariance::Turbo(4), 0, &SKL_TURBO, 0, NO_AMD);
            assert_eq!(r, None);
        }
        // All-zero turbo MSR: v5.7/5.8 install ratio 0; v5.9+ refuse.
        let r57 = x86_max_freq_ratio_at(
            (5, 7),
            Invariance::Turbo(4),
            3_500_000,
            &[0, 0, 0, 0],
            0,
            NO_AMD,
        );
        assert_eq!(r57, Some(0));
        let r59 = x86_max_freq_ratio_at(
            (5, 9),
            Invariance::Turbo(4),
            3_500_000,
            &[0, 0, 0, 0],
            0,
            NO_AMD,
        );
        assert_eq!(r59, None);
        // None / cpufreq are not APERF/MPERF sources.
        assert_eq!(
            x86_max_freq_ratio(Invariance::None, 3_500_000, &SKL_TURBO, 0, NO_AMD),
            None
        );
        assert_eq!(
            x86_max_freq_ratio(Invariance::Cpufreq, 3_500_000, &SKL_TURBO, 0, NO_AMD),
            None
        );
    }

    #[test]
    fn amd_midpoint() {
        // highest 255 (the fixed numerator), nominal 200:
        // 255 × 1024 / 200 = 261120 / 200 = 1305.6 -> 1305; (1305 + 1024) >> 1 = 2329 >> 1 = 1164.
        let amd = AmdPerf {
            highest_perf: 255,
            nominal_perf: 200,
        };
        assert_eq!(
            x86_max_freq_ratio(Invariance::AmdMidpoint, 0, &[], 0, amd),
            Some(1164)
        );
        // highest 166, nominal 120: 169984 / 120 = 1416; (1416 + 1024) >> 1 = 1220.
        assert_eq!(amd_midpoint_ratio(166, 120), Some(1220));
        assert_eq!(amd_midpoint_ratio(0, 120), None);
        assert_eq!(amd_midpoint_ratio(166, 0), None);
        // Not before v5.11.
        assert_eq!(
            x86_max_freq_ratio_at((5, 10), Invariance::AmdMidpoint, 0, &[], 0, amd),
            None
        );
        assert_eq!(
            x86_max_freq_ratio_at((5, 11), Invariance::AmdMidpoint, 0, &[], 0, amd),
            Some(1164)
        );
    }

    #[test]
    fn amd_numerator_by_version() {
        assert_eq!(amd_boost_numerator((5, 11), 228, 166, true), 228);
        assert_eq!(amd_boost_numerator((5, 15), 228, 166, false), 166);
        assert_eq!(amd_boost_numerator((6, 12), 228, 166, true), 166);
        assert_eq!(amd_boost_numerator((6, 12), 228, 166, false), 228);
    }

    #[test]
    fn turbo_disabled_ratio_is_1024() {
        assert_eq!(arch_set_max_freq_ratio(true, 1082), 1024);
        assert_eq!(arch_set_max_freq_ratio(false, 1082), 1082);
    }

    #[test]
    fn tick_formula_and_clamp() {
        let mut s = ArchFreqScale::new(Some(1082));
        // Running at base for the whole tick: dA = dM -> 2^20 / 1082 = 969.1 -> 969.
        assert_eq!(s.tick(3_500_000, 3_500_000, (6, 1)), 969);
        // At 3.7 GHz (the 4C reference): (3_700_000 << 20) / (3_500_000 × 1082)
        // = 3_879_731_200_000 / 3_787_000_000 = 1024.49 -> 1024.
        assert_eq!(s.tick(3_700_000, 3_500_000, (6, 1)), 1024);
        // At 4.0 GHz (1C turbo): 1107.6 -> clamped to 1024.
        assert_eq!(s.tick(4_000_000, 3_500_000, (6, 1)), 1024);
        // At 1.75 GHz: 1_835_008_000_000 / 3_787_000_000 = 484.5 -> 484.
        assert_eq!(s.tick(1_750_000, 3_500_000, (6, 1)), 484);
        assert_eq!(s.last, TickOutcome::Updated);
    }

    #[test]
    fn v57_skips_zero_mperf_and_keeps_references() {
        let mut s = ArchFreqScale::new(Some(1024));
        assert_eq!(s.tick(2_000, 4_000, (5, 7)), 512);
        // dM = 0: skipped, scale kept, the APERF delta carried into the next tick.
        assert_eq!(s.tick(1_000, 0, (5, 8)), 512);
        assert_eq!(s.last, TickOutcome::SkippedZeroMperf);
        // Next tick sees dA = 1000 + 3000 = 4000 against dM = 4000.
        assert_eq!(s.tick(3_000, 4_000, (5, 8)), 1024);
        assert!(s.invariant());
    }

    #[test]
    fn v57_zero_ratio_divides_by_zero() {
        let mut s = ArchFreqScale::new(Some(0));
        assert_eq!(s.tick(1_000, 1_000, (5, 7)), 1024);
        assert_eq!(s.last, TickOutcome::DivideByZero);
    }

    #[test]
    fn v59_wobbly_keeps_last_scale_until_v63() {
        // dM = 0 -> divisor 0 -> wobbly.
        let mut s = ArchFreqScale::new(Some(1024));
        assert_eq!(s.tick(2_000, 4_000, (5, 9)), 512);
        assert_eq!(s.tick(1_000, 0, (5, 9)), 512);
        assert_eq!(s.last, TickOutcome::WentWobbly);
        assert!(!s.invariant());
        // Further ticks do nothing; the stale 512 stays (PELT keeps using it).
        assert_eq!(s.tick(4_000, 4_000, (5, 9)), 512);
        assert_eq!(s.last, TickOutcome::Disabled);

        let mut s = ArchFreqScale::new(Some(1024));
        assert_eq!(s.tick(2_000, 4_000, (6, 3)), 512);
        assert_eq!(s.tick(1_000, 0, (6, 3)), 1024);
        assert!(!s.invariant());
    }

    #[test]
    fn v59_overflow_and_zero_quotient_go_wobbly() {
        // dA << 20 overflows u64 when dA >= 2^44.
        let mut s = ArchFreqScale::new(Some(1082));
        s.tick(1 << 44, 1 << 44, (6, 1));
        assert_eq!(s.last, TickOutcome::WentWobbly);
        // dM × ratio overflows.
        let mut s = ArchFreqScale::new(Some(1082));
        s.tick(1, u64::MAX / 1000, (6, 1));
        assert_eq!(s.last, TickOutcome::WentWobbly);
        // APERF stood still: quotient 0.
        let mut s = ArchFreqScale::new(Some(1082));
        s.tick(0, 1_000, (6, 1));
        assert_eq!(s.last, TickOutcome::WentWobbly);
        // Just below the shift limit is fine.
        let mut s = ArchFreqScale::new(Some(1024));
        assert_eq!(s.tick((1 << 44) - 1, (1 << 44) - 1, (6, 1)), 1024);
    }

    #[test]
    fn global_disable_resets_from_v63() {
        let mut cpus = vec![
            ArchFreqScale::new(Some(1024)),
            ArchFreqScale::new(Some(1024)),
        ];
        cpus[0].tick(1_000, 2_000, (6, 1));
        cpus[1].tick(3_000, 4_000, (6, 1));
        let mut old = cpus.clone();
        disable_freq_invariance(&mut old, (6, 2));
        assert_eq!((old[0].scale, old[1].scale), (512, 768));
        assert!(old.iter().all(|c| !c.invariant()));
        disable_freq_invariance(&mut cpus, (6, 3));
        assert_eq!((cpus[0].scale, cpus[1].scale), (1024, 1024));
    }

    #[test]
    fn disabled_source_stays_at_1024() {
        let mut s = ArchFreqScale::new(None);
        assert!(!s.invariant());
        assert_eq!(s.tick(1_000, 2_000, (6, 12)), 1024);
    }

    #[test]
    fn arm_cpufreq_scale() {
        // 1.4 of 2.8 GHz -> 512; 2.0 of 2.8 GHz -> 2_048_000_000 / 2_800_000 = 731.4 -> 731.
        assert_eq!(cpufreq_freq_scale(1_400_000, 2_800_000), 512);
        assert_eq!(cpufreq_freq_scale(2_000_000, 2_800_000), 731);
        assert_eq!(cpufreq_freq_scale(2_800_000, 2_800_000), 1024);
        assert_eq!(cpufreq_freq_scale(1, 0), 1024);
    }
}
