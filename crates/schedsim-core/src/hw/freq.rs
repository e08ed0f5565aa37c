//! Frequency domains: the OPP / P-state table, the policy limits, the frequency requested by the
//! governor and the frequency the hardware delivers (spec/kernel.md §2.3 and §9.5: on x86 the
//! highest deliverable turbo frequency depends on how many cores of the package are active).

use crate::config::{FreqDomainSpec, OppSpec};

/// Runtime state of one frequency domain.
#[derive(Clone, Debug)]
pub struct FreqDomain {
    pub id: usize,
    pub cpus: Vec<usize>,
    pub package: usize,
    pub opps: Vec<OppSpec>,
    pub base_khz: u64,
    pub turbo_khz: Vec<u64>,
    /// A legacy request above base licenses the whole turbo range (`turbo_grant = "range"`).
    pub turbo_grants_range: bool,
    pub transition_latency_ns: u64,
    /// `max-active` or `max` (see `FreqDomainSpec::coordination`).
    pub coordination: String,
    /// Policy limits (scaling_min_freq / scaling_max_freq).
    pub policy_min_khz: u64,
    pub policy_max_khz: u64,
    /// Last frequency the governor requested (`policy->cur` on the fast-switch path).
    pub requested_khz: u64,
    /// What the hardware runs at now.
    pub delivered_khz: u64,
}

impl FreqDomain {
    pub fn new(id: usize, spec: &FreqDomainSpec, cpus: Vec<usize>, package: usize) -> Self {
        let min = spec.opps[0].khz;
        let max = spec.opps.last().map(|o| o.khz).unwrap_or(min);
        FreqDomain {
            id,
            cpus,
            package,
            opps: spec.opps.clone(),
            base_khz: spec.base_khz,
            turbo_khz: spec.turbo_khz.clone(),
            turbo_grants_range: spec.turbo_grant == "range",
            transition_latency_ns: spec.transition_latency_ns,
            coordination: spec.coordination.clone(),
            policy_min_khz: min,
            policy_max_khz: max,
            requested_khz: max,
            delivered_khz: max,
        }
    }

    /// `cpuinfo.max_freq`.
    pub fn cpuinfo_max_khz(&self) -> u64 {
        self.opps.last().map(|o| o.khz).unwrap_or(0)
    }

    pub fn cpuinfo_min_khz(&self) -> u64 {
        self.opps[0].khz
    }

    /// `cpufreq_driver_resolve_freq` with RELATION_L: clamp to the policy, then the lowest OPP at
    /// or above the target.
    pub fn resolve_freq(&self, target_khz: u64) -> u64 {
        let t = target_khz.clamp(self.policy_min_khz, self.policy_max_khz);
        self.opps
            .iter()
            .map(|o| o.khz)
            .find(|&k| k >= t)
            .unwrap_or(self.policy_max_khz)
            .min(self.policy_max_khz)
    }

    /// Highest frequency the hardware grants with `active_cores` active cores in the package.
    pub fn turbo_limit_khz(&self, active_cores: usize) -> u64 {
        if self.turbo_khz.is_empty() {
            return self.cpuinfo_max_khz();
        }
        let k = active_cores.clamp(1, self.turbo_khz.len());
        self.turbo_khz[k - 1]
    }

    /// The delivered frequency for a request, given the package's active core count. A request
    /// in the turbo range is a licence, not a target, where the part grants the whole range
    /// (`turbo_grants_range`) and the request is a legacy P-state (`legacy`: no HWP): the
    /// hardware then runs at the highest turbo bin the active cores allow, whatever turbo
    /// P-state was asked for.
    pub fn deliver(&self, requested_khz: u64, active_cores: usize, legacy: bool) -> u64 {
        if requested_khz > self.base_khz && !self.turbo_khz.is_empty() {
            let limit = self.turbo_limit_khz(active_cores);
            let granted = if legacy && self.turbo_grants_range {
                limit
            } else {
                requested_khz.min(limit)
            };
            granted.max(self.base_khz)
        } else {
            requested_khz
        }
    }

    /// Voltage (µV) of the lowest OPP at or above `khz`.
    pub fn voltage_uv(&self, khz: u64) -> u64 {
        self.opp_at_or_above(khz).uv
    }

    pub fn opp_at_or_above(&self, khz: u64) -> &OppSpec {
        self.opps
            .iter()
            .find(|o| o.khz >= khz)
            .unwrap_or_else(|| self.opps.last().expect("a domain has OPPs"))
    }
}

/// APERF, MPERF and TSC of one CPU, in cycles. APERF counts at the delivered frequency and MPERF
/// at the TSC frequency, both only in C0; the TSC always counts.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counters {
    pub aperf: f64,
    pub mperf: f64,
    pub tsc: f64,
}

impl Counters {
    pub fn advance(&mut self, dt_ns: u64, busy: bool, khz: u64, tsc_khz: u64) {
        let dt = dt_ns as f64 * 1e-6;
        self.tsc += dt * tsc_khz as f64;
        if busy {
            self.aperf += dt * khz as f64;
            self.mperf += dt * tsc_khz as f64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skylake() -> FreqDomain {
        skylake_granting("request")
    }

    fn skylake_granting(turbo_grant: &str) -> FreqDomain {
        let opps = (8..=39)
            .map(|r| OppSpec {
                khz: r * 100_000,
                uv: 0,
                power_mw: 0.0,
            })
            .collect();
        let spec = FreqDomainSpec {
            granularity: "package".into(),
            coordination: "max-active".into(),
            opps,
            base_khz: 3_500_000,
            turbo_khz: vec![3_900_000, 3_900_000, 3_800_000, 3_700_000],
            turbo_grant: turbo_grant.into(),
            transition_latency_ns: 0,
        };
        FreqDomain::new(0, &spec, vec![0, 1, 2, 3], 0)
    }

    #[test]
    fn turbo_follows_active_cores() {
        let d = skylake();
        assert_eq!(d.deliver(3_900_000, 1, true), 3_900_000);
        assert_eq!(d.deliver(3_900_000, 3, true), 3_800_000);
        assert_eq!(d.deliver(3_900_000, 4, true), 3_700_000);
        assert_eq!(d.deliver(2_000_000, 4, true), 2_000_000);
        // Sandy Bridge's reading: a turbo P-state is a ceiling
        assert_eq!(d.deliver(3_600_000, 1, true), 3_600_000);
    }

    /// intel_pstate.rst, "Turbo P-states Support": after Sandy Bridge, any legacy request above
    /// the turbo threshold (base) lets the core use every turbo P-state the active cores allow;
    /// base itself and below are honoured as asked, and HWP requests are never licences.
    #[test]
    fn a_turbo_request_licenses_the_range_after_sandy_bridge() {
        let d = skylake_granting("range");
        assert_eq!(d.deliver(3_600_000, 1, true), 3_900_000);
        assert_eq!(d.deliver(3_600_000, 3, true), 3_800_000);
        assert_eq!(d.deliver(3_600_000, 4, true), 3_700_000);
        assert_eq!(d.deliver(3_500_000, 1, true), 3_500_000);
        assert_eq!(d.deliver(2_000_000, 1, true), 2_000_000);
        assert_eq!(d.deliver(3_600_000, 1, false), 3_600_000);
    }

    #[test]
    fn resolve_picks_lowest_opp_at_or_above() {
        let d = skylake();
        assert_eq!(d.resolve_freq(2_050_000), 2_100_000);
        assert_eq!(d.resolve_freq(100), 800_000);
        assert_eq!(d.resolve_freq(9_000_000), 3_900_000);
    }

    #[test]
    fn counters_count_only_busy_time_except_tsc() {
        let mut c = Counters::default();
        c.advance(1_000_000, true, 3_900_000, 3_500_000);
        c.advance(1_000_000, false, 3_900_000, 3_500_000);
        assert!((c.aperf - 3_900_000.0).abs() < 1e-6);
        assert!((c.mperf - 3_500_000.0).abs() < 1e-6);
        assert!((c.tsc - 7_000_000.0).abs() < 1e-6);
        assert!((c.aperf / c.mperf - 3.9 / 3.5).abs() < 1e-12);
    }
}
