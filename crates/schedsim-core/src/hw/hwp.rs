//! Hardware P-states (Intel HWP, spec/kernel.md §5.4): per-CPU `HWP_REQUEST` {min, max,
//! desired, EPP} written by the OS, and the hardware's autonomous frequency selection.
//!
//! Intel does not publish the selection algorithm. This is a documented, parameterised
//! stand-in (parameters in the preset's `hwp` table): every `sample_ns` the hardware looks at
//! each CPU's C0 residency over the last sample (ΔMPERF/ΔTSC), folds it into a moving average
//! whose time constant is the activity window (`activity_window_ns`; 0 = the last sample
//! alone), and targets `busy × highest × (1 + headroom(EPP))`, with the headroom interpolated
//! linearly between `headroom_epp0` (EPP 0, performance) and `headroom_epp255` (EPP 255,
//! power); EPP 0 with any busy time races to the maximum. A non-zero `desired` replaces the target. The result is
//! clamped to [min, max], rate-limited by `ramp_up_khz` / `ramp_down_khz` per sample, rounded
//! up to a P-state and handed to the frequency domain as the CPU's request.

use crate::config::HwpSpec;
use crate::engine::{Ev, Sim};
use crate::hw::freq::Counters;

/// `MSR_HWP_REQUEST` of one CPU, in kHz.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HwpRequest {
    pub min_khz: u64,
    pub max_khz: u64,
    /// 0 = autonomous.
    pub desired_khz: u64,
    pub epp: u8,
}

/// HWP state of the machine (present when the OS enabled HWP).
#[derive(Clone, Debug)]
pub struct HwpState {
    pub spec: HwpSpec,
    pub req: Vec<HwpRequest>,
    /// Counters at the previous evaluation, per CPU.
    last: Vec<Counters>,
    /// The moving average of each CPU's busy fraction over the activity window.
    busy_avg: Vec<f64>,
}

/// Fold one sample's busy fraction into the activity average: an exponential moving average
/// with time constant `window_ns` over a sample of `sample_ns` (0 = the sample alone).
pub fn activity_average(avg: f64, busy: f64, sample_ns: u64, window_ns: u64) -> f64 {
    if window_ns == 0 {
        return busy;
    }
    let keep = (-(sample_ns as f64) / window_ns as f64).exp();
    let avg = busy + (avg - busy) * keep;
    // an idle CPU's average would only creep towards 0 (and stop at the smallest float),
    // which EPP 0 would read as busy time
    if avg < IDLE_AVERAGE {
        0.0
    } else {
        avg
    }
}

/// A busy average below this counts as idle (one part per million).
pub const IDLE_AVERAGE: f64 = 1e-6;

/// The autonomous target for one CPU (kHz, before rounding and ramp limits).
pub fn hwp_target_khz(spec: &HwpSpec, req: &HwpRequest, busy: f64) -> u64 {
    if req.desired_khz > 0 {
        return req.desired_khz.clamp(req.min_khz, req.max_khz);
    }
    let t = if req.epp == 0 && busy > 0.0 {
        req.max_khz as f64
    } else {
        let x = req.epp as f64 / 255.0;
        let headroom = spec.headroom_epp0 + (spec.headroom_epp255 - spec.headroom_epp0) * x;
        busy * spec.highest_khz as f64 * (1.0 + headroom)
    };
    (t.round() as u64).clamp(req.min_khz, req.max_khz)
}

impl HwpState {
    pub fn new(spec: HwpSpec, ncpus: usize) -> Self {
        let req = HwpRequest {
            min_khz: spec.lowest_khz,
            max_khz: spec.highest_khz,
            desired_khz: 0,
            epp: spec.default_epp,
        };
        HwpState {
            req: vec![req; ncpus],
            last: vec![Counters::default(); ncpus],
            busy_avg: vec![0.0; ncpus],
            spec,
        }
    }
}

impl Sim {
    /// Start the hardware's evaluation loop (one per package).
    pub fn start_hwp(&mut self) {
        let Some(h) = &self.hwp else {
            return;
        };
        let t = h.spec.sample_ns.max(1);
        for pkg in 0..self.topo.package_cpus.len() {
            self.schedule_housekeeping(self.now + t, Ev::HwpSample { pkg });
        }
    }

    /// The OS writes `HWP_REQUEST` of `cpu`. The hardware honours new limits at once (a
    /// frequency outside [min, max] moves to the nearest limit); the autonomous choice within
    /// them waits for the next evaluation.
    pub fn write_hwp_request(&mut self, cpu: usize, req: HwpRequest) {
        let Some(h) = self.hwp.as_mut() else {
            return;
        };
        h.req[cpu] = req;
        let cur = self.hw.cpu_req_khz[cpu];
        let want = if req.desired_khz > 0 {
            req.desired_khz
        } else {
            cur
        };
        let clamped = want.clamp(req.min_khz, req.max_khz.max(req.min_khz));
        if clamped != cur {
            let fd = self.topo.cpus[cpu].freq_domain;
            let khz = self.fds[fd].opp_at_or_above(clamped).khz;
            self.set_cpu_request(cpu, khz);
        }
    }

    /// One evaluation of the package's CPUs.
    pub fn hwp_sample(&mut self, pkg: usize) {
        let Some(h) = &self.hwp else {
            return;
        };
        let sample = h.spec.sample_ns.max(1);
        let cpus = self.topo.package_cpus[pkg].clone();
        for &c in &cpus {
            self.sync_cpu(c);
        }
        for c in cpus {
            let h = self.hwp.as_ref().expect("hwp");
            let (cur, last) = (self.counters[c], h.last[c]);
            let dt = cur.tsc - last.tsc;
            let busy = if dt > 0.0 {
                ((cur.mperf - last.mperf) / dt).clamp(0.0, 1.0)
            } else {
                0.0
            };
            let busy = activity_average(h.busy_avg[c], busy, sample, h.spec.activity_window_ns);
            let req = h.req[c];
            let mut target = hwp_target_khz(&h.spec, &req, busy);
            let prev = self.hw.cpu_req_khz[c];
            if h.spec.ramp_up_khz > 0 && target > prev + h.spec.ramp_up_khz {
                target = prev + h.spec.ramp_up_khz;
            }
            if h.spec.ramp_down_khz > 0 && target + h.spec.ramp_down_khz < prev {
                target = prev - h.spec.ramp_down_khz;
            }
            let fd = self.topo.cpus[c].freq_domain;
            let khz = self.fds[fd].opp_at_or_above(target).khz.min(req.max_khz);
            let h = self.hwp.as_mut().expect("hwp");
            h.last[c] = cur;
            h.busy_avg[c] = busy;
            self.set_cpu_request(c, khz);
        }
        self.schedule_housekeeping(self.now + sample, Ev::HwpSample { pkg });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> HwpSpec {
        HwpSpec {
            highest_khz: 3_900_000,
            guaranteed_khz: 3_500_000,
            efficient_khz: 800_000,
            lowest_khz: 800_000,
            default_epp: 0x80,
            sample_ns: 1_000_000,
            headroom_epp0: 0.5,
            headroom_epp255: 0.0,
            activity_window_ns: 0,
            ramp_up_khz: 0,
            ramp_down_khz: 0,
        }
    }

    #[test]
    fn activity_average_builds_up_over_the_window() {
        // a CPU that turns fully busy after idling: with a 10 ms window and 1 ms samples the
        // average after k samples is 1 - e^(-k/10): 0.0952 after one, 0.632 after ten
        let mut avg = 0.0;
        let mut got = Vec::new();
        for _ in 0..10 {
            avg = activity_average(avg, 1.0, 1_000_000, 10_000_000);
            got.push(avg);
        }
        assert!((got[0] - (1.0 - (-0.1f64).exp())).abs() < 1e-12);
        assert!((got[9] - (1.0 - (-1.0f64).exp())).abs() < 1e-12);
        // and decays the same way when it idles again: e^(-1) of it is left after ten samples
        let start = avg;
        for _ in 0..10 {
            avg = activity_average(avg, 0.0, 1_000_000, 10_000_000);
        }
        assert!((avg - start * (-1.0f64).exp()).abs() < 1e-12);
        // no window: the last sample alone
        assert_eq!(activity_average(0.7, 0.2, 1_000_000, 0), 0.2);
        // an idle CPU's average reaches 0 (EPP 0 races to the top only while it is above 0):
        // from 1.0, e^(-k/3) < 1e-6 after k = 42 samples of a 3 ms window
        let mut avg = 1.0;
        let mut k = 0;
        while avg > 0.0 {
            avg = activity_average(avg, 0.0, 1_000_000, 3_000_000);
            k += 1;
        }
        assert_eq!(k, 42);
    }

    fn req(epp: u8) -> HwpRequest {
        HwpRequest {
            min_khz: 800_000,
            max_khz: 3_900_000,
            desired_khz: 0,
            epp,
        }
    }

    #[test]
    fn target_follows_busy_time_and_epp() {
        let s = spec();
        // EPP 255: no headroom: 40 % busy → 0.4 × 3.9 GHz
        assert_eq!(hwp_target_khz(&s, &req(255), 0.4), 1_560_000);
        // EPP 0x80 (128/255 of the way): headroom 0.5 × (1 − 128/255)
        let h: f64 = 0.5 * (1.0 - 128.0 / 255.0);
        let expect = (0.4 * 3_900_000.0 * (1.0 + h)).round() as u64;
        assert_eq!(hwp_target_khz(&s, &req(0x80), 0.4), expect);
        // EPP 0 races to max, idle stays at min
        assert_eq!(hwp_target_khz(&s, &req(0), 0.01), 3_900_000);
        assert_eq!(hwp_target_khz(&s, &req(0x80), 0.0), 800_000);
        // desired overrides, within [min, max]
        let r = HwpRequest {
            desired_khz: 2_000_000,
            ..req(0x80)
        };
        assert_eq!(hwp_target_khz(&s, &r, 1.0), 2_000_000);
        let r = HwpRequest {
            min_khz: 2_500_000,
            ..req(255)
        };
        assert_eq!(hwp_target_khz(&s, &r, 0.1), 2_500_000);
    }
}
