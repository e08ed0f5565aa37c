//! Power of cores and packages (spec/kernel.md §10.2, a modelling proposal, not kernel code).
//!
//! - `em` (Arm): a busy CPU draws the energy-model power of its OPP (P = dpc·V²·f, given per OPP
//!   in the preset); an idle CPU draws its idle state's power.
//! - `parametric` (x86): a busy core draws `activity_factor·c_eff·V²·f + leakage`, scaled up by
//!   `smt_power_factor` per extra busy hardware thread; an idle core draws its C-state's power.
//! - Package: `package_idle_mw` always, plus `uncore_active_mw × f/f_max` while any core of the
//!   package is busy (the uncore follows core activity and frequency on the Intel server parts).
//!
//! Energy accumulates per package like RAPL (PKG) and per core (PP0).

use crate::config::PowerSpec;

/// What one core is doing, for its power.
#[derive(Clone, Copy, Debug)]
pub struct CoreActivity {
    /// Busy hardware threads.
    pub busy_threads: usize,
    pub khz: u64,
    pub uv: u64,
    /// OPP power from the energy model (mW), when the model is `em`.
    pub opp_power_mw: f64,
    /// Power of the shallowest idle state among the core's threads (used when no thread is busy).
    pub idle_power_mw: f64,
}

/// Power of one core (mW).
pub fn core_power_mw(p: &PowerSpec, a: &CoreActivity) -> f64 {
    if a.busy_threads == 0 {
        return a.idle_power_mw;
    }
    let smt = 1.0 + p.smt_power_factor * (a.busy_threads.saturating_sub(1)) as f64;
    match p.model.as_str() {
        "em" => a.opp_power_mw * a.busy_threads as f64,
        _ => {
            let v = a.uv as f64 * 1e-6;
            let ghz = a.khz as f64 * 1e-6;
            (p.activity_factor * p.c_eff * v * v * ghz) * smt + p.core_leakage_mw
        }
    }
}

/// Uncore and platform power of a package (mW).
pub fn uncore_power_mw(p: &PowerSpec, any_busy: bool, khz: u64, max_khz: u64) -> f64 {
    let active = if any_busy && max_khz > 0 {
        p.uncore_active_mw * khz as f64 / max_khz as f64
    } else {
        0.0
    };
    p.package_idle_mw + active
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(model: &str) -> PowerSpec {
        PowerSpec {
            model: model.into(),
            package_idle_mw: 2000.0,
            uncore_active_mw: 4000.0,
            core_leakage_mw: 500.0,
            c_eff: 5000.0,
            activity_factor: 1.0,
            smt_power_factor: 0.2,
            power_limit_mw: 0.0,
            power_limit_tau_ms: 0.0,
            power_limit2_mw: 0.0,
        }
    }

    #[test]
    fn parametric_core_power_is_cv2f_plus_leakage() {
        let a = CoreActivity {
            busy_threads: 1,
            khz: 3_000_000,
            uv: 1_000_000,
            opp_power_mw: 0.0,
            idle_power_mw: 100.0,
        };
        // 5000 mW/(V²·GHz) × 1 V² × 3 GHz + 500 mW
        assert!((core_power_mw(&spec("parametric"), &a) - 15_500.0).abs() < 1e-9);
        let two = CoreActivity {
            busy_threads: 2,
            ..a
        };
        assert!((core_power_mw(&spec("parametric"), &two) - (15_000.0 * 1.2 + 500.0)).abs() < 1e-9);
        let idle = CoreActivity {
            busy_threads: 0,
            ..a
        };
        assert_eq!(core_power_mw(&spec("parametric"), &idle), 100.0);
    }

    #[test]
    fn activity_factor_scales_only_the_switching_term() {
        let a = CoreActivity {
            busy_threads: 2,
            khz: 2_000_000,
            uv: 900_000,
            opp_power_mw: 0.0,
            idle_power_mw: 100.0,
        };
        let p = PowerSpec {
            activity_factor: 0.6,
            ..spec("parametric")
        };
        // 0.6 × 5000 × 0.81 V² × 2 GHz × (1 + 0.2) + 500 mW leakage, untouched
        let expected = 0.6 * 5000.0 * 0.81 * 2.0 * 1.2 + 500.0;
        assert!((core_power_mw(&p, &a) - expected).abs() < 1e-9);
        let idle = CoreActivity {
            busy_threads: 0,
            ..a
        };
        assert_eq!(core_power_mw(&p, &idle), 100.0);
    }

    #[test]
    fn em_power_is_the_opp_power_and_uncore_scales_with_frequency() {
        let a = CoreActivity {
            busy_threads: 1,
            khz: 1_766_400,
            uv: 828_000,
            opp_power_mw: 351.114,
            idle_power_mw: 0.0,
        };
        assert!((core_power_mw(&spec("em"), &a) - 351.114).abs() < 1e-9);
        assert_eq!(uncore_power_mw(&spec("em"), false, 1, 2), 2000.0);
        assert_eq!(uncore_power_mw(&spec("em"), true, 1_000, 2_000), 4000.0);
    }
}
