//! The menu cpuidle governor (spec/kernel.md §9.3; `drivers/cpuidle/governors/menu.c`).
//!
//! What it models: menu predicts the coming idle duration as the smaller of
//! - the sleep length (time to the next timer) scaled by a per-bucket correction factor, a
//!   decaying average (DECAY 8, fixed point RESOLUTION × DECAY = unity) of measured / sleep
//!   length; buckets are the decades <10 µs … ≥100 ms of the sleep length, doubled by
//!   "iowaiters present" before v6.13;
//! - the "typical interval": the mean of the last 8 measured idle durations (µs) when their
//!   spread is small (variance ≤ 400 µs² or mean² > 36 × variance), dropping the largest
//!   samples while at least 3/4 of them remain;
//!
//! and picks the deepest enabled state whose target residency fits the prediction and whose
//! exit latency fits both PM QoS and the "interactivity" limit prediction / (1 + 10 ×
//! iowaiters). The tick is kept when the state is polling or the prediction is shorter than a
//! tick, and the state is then clamped to the time to the next tick. The correction factor and
//! the ring of intervals use the kernel's integer arithmetic.
//!
//! Versions (the kernel version is passed to [`Menu::new`]):
//! - before v6.13: 12 buckets and the iowait divisor; from v6.13 (38f83090f515 "cpuidle: menu:
//!   Remove iowait influence") 6 buckets and the plain `latency_req = min(latency_req,
//!   predicted)`;
//! - from v6.6 (5484e31bbbff "Skip tick_nohz_get_sleep_length() call in some cases"): the
//!   typical interval is computed first and, if it is at most 15 µs and the tick is running,
//!   the sleep length is not used (it counts as infinite, the next tick as half a period
//!   away, the last bucket is used). The later fix that always queries the sleep length when the
//!   tick is already stopped is applied from v6.6 too.
//! - before v5.4 (32b91ca15353 "Allow tick to be stopped if PM QoS is used"): when the state
//!   search stops at the latency limit (PM QoS, or the prediction divided by 1 + 10 × iowaiters)
//!   the prediction becomes the chosen state's target residency, so the tick is kept whenever
//!   that is shorter than a tick; the state-0 shortcut keeps the tick for a physical state too.
//!
//! Simplifications:
//! - one algorithm (the ns-based v5.8–v6.12 code) serves all versions before v6.13; v5.3's
//!   µs arithmetic and its `expected_interval` tick heuristic differ only in rounding;
//! - an all-zero interval ring (a fresh governor) gives no typical interval, as the `!max` check
//!   of v6.x kernels does (older kernels predicted ~0 for the first few idles);
//! - the time to the next tick is approximated (see `governor.rs`), and the polling state's
//!   time limit (`poll_time_limit`) is not modelled;
//! - the 2025 changes ("Avoid selecting states with too much latency", etc.) are not modelled.
//! - the spec's rule "+RESOLUTION if sleep_length ≥ 50 ms" is implemented as the kernel does
//!   it: +RESOLUTION when the *measured* duration is ≥ MAX_INTERESTING (or the sleep length is
//!   0), otherwise RESOLUTION × measured / sleep_length.

use super::governor::{
    IdleGovernor, IdleState, KernelVersion, Outcome, SelectCtx, Selection, NSEC_PER_USEC,
    RESIDENCY_THRESHOLD_NS,
};

/// Buckets before v6.13 (6 sleep-length decades × {no iowaiters, iowaiters}).
pub const BUCKETS_WITH_IOWAIT: usize = 12;
/// Buckets from v6.13.
pub const BUCKETS_NO_IOWAIT: usize = 6;
const INTERVAL_SHIFT: u32 = 3;
/// Length of the ring of recent idle durations.
pub const INTERVALS: usize = 1 << INTERVAL_SHIFT;
/// Fixed-point resolution of the correction factor.
pub const RESOLUTION: u32 = 1024;
/// Decay of the correction factor; unity is `RESOLUTION * DECAY`.
pub const DECAY: u32 = 8;
/// Idle durations at or above this count as perfectly predicted (50 ms).
pub const MAX_INTERESTING_NS: u64 = 50_000 * NSEC_PER_USEC;
/// First version without the iowait influence (38f83090f515).
pub const IOWAIT_REMOVED_IN: KernelVersion = (6, 13);
/// First version that may skip the sleep length (5484e31bbbff).
pub const SKIP_SLEEP_LENGTH_FROM: KernelVersion = (6, 6);
/// First version in which a latency limit no longer keeps the tick (32b91ca15353, "cpuidle:
/// menu: Allow tick to be stopped if PM QoS is used", v5.4).
pub const LATENCY_STOPS_TICK_FROM: KernelVersion = (5, 4);

/// Per-CPU menu governor state (`struct menu_device`).
#[derive(Clone, Debug)]
pub struct Menu {
    iowait: bool,
    skip_sleep_length: bool,
    /// Before v5.4: a state search stopped by the latency limit predicts the chosen state's
    /// target residency (so the tick is kept when that is shorter than a tick), and the
    /// state-0 shortcut always keeps the tick.
    latency_keeps_tick: bool,
    correction_factor: [u32; BUCKETS_WITH_IOWAIT],
    /// Recent measured idle durations, µs.
    intervals: [u32; INTERVALS],
    interval_ptr: usize,
    /// Sleep length used by the last `select` (`u64::MAX` if not queried).
    next_timer_ns: u64,
    /// Bucket used by the last `select`.
    bucket: usize,
    /// Prediction behind the last `select` (diagnostics).
    last_predicted_ns: u64,
    /// A `select` happened since the last `reflect` (`needs_update` in reverse).
    pending: bool,
}

impl Menu {
    /// A freshly enabled governor (`menu_enable_device`) with the behaviour of `version`.
    pub fn new(version: KernelVersion) -> Self {
        Menu {
            iowait: version < IOWAIT_REMOVED_IN,
            skip_sleep_length: version >= SKIP_SLEEP_LENGTH_FROM,
            latency_keeps_tick: version < LATENCY_STOPS_TICK_FROM,
            correction_factor: [RESOLUTION * DECAY; BUCKETS_WITH_IOWAIT],
            intervals: [0; INTERVALS],
            interval_ptr: 0,
            next_timer_ns: 0,
            bucket: 0,
            last_predicted_ns: 0,
            pending: false,
        }
    }

    /// Number of correction-factor buckets in use (12 before v6.13, then 6).
    pub fn buckets(&self) -> usize {
        if self.iowait {
            BUCKETS_WITH_IOWAIT
        } else {
            BUCKETS_NO_IOWAIT
        }
    }

    /// Correction factor of a bucket (unity = `RESOLUTION * DECAY` = 8192).
    pub fn correction_factor(&self, bucket: usize) -> u32 {
        self.correction_factor[bucket]
    }

    /// The ring of recent idle durations (µs), oldest slot first in ring order.
    pub fn intervals_us(&self) -> [u32; INTERVALS] {
        self.intervals
    }

    /// The bucket the last `select` used.
    pub fn last_bucket(&self) -> usize {
        self.bucket
    }

    /// The predicted idle duration behind the last `select` (ns).
    pub fn last_predicted_ns(&self) -> u64 {
        self.last_predicted_ns
    }

    /// `which_bucket`: decade of the sleep length, offset by half the buckets with iowaiters.
    pub fn which_bucket(&self, duration_ns: u64, nr_iowaiters: u32) -> usize {
        let base = if self.iowait && nr_iowaiters > 0 {
            BUCKETS_WITH_IOWAIT / 2
        } else {
            0
        };
        let us = NSEC_PER_USEC;
        let decade = if duration_ns < 10 * us {
            0
        } else if duration_ns < 100 * us {
            1
        } else if duration_ns < 1_000 * us {
            2
        } else if duration_ns < 10_000 * us {
            3
        } else if duration_ns < 100_000 * us {
            4
        } else {
            5
        };
        base + decade
    }

    /// `get_typical_interval`: the mean of the recorded idle durations (µs) if they are
    /// consistent enough, else `None` (the kernel's `UINT_MAX`).
    pub fn typical_interval_us(&self) -> Option<u32> {
        let mut thresh: u32 = i32::MAX as u32;
        loop {
            let mut max: u32 = 0;
            let mut sum: u64 = 0;
            let mut divisor: u64 = 0;
            for &v in &self.intervals {
                if v <= thresh {
                    sum += u64::from(v);
                    divisor += 1;
                    max = max.max(v);
                }
            }
            if max == 0 {
                return None;
            }
            let avg: u64 = if divisor == INTERVALS as u64 {
                sum >> INTERVAL_SHIFT
            } else {
                sum / divisor
            };
            let mut variance: u64 = 0;
            for &v in &self.intervals {
                if v <= thresh {
                    let diff = i64::from(v) - avg as i64;
                    // The kernel accumulates in a u64 and would wrap the same way.
                    variance = variance.wrapping_add((diff * diff) as u64);
                }
            }
            if divisor == INTERVALS as u64 {
                variance >>= INTERVAL_SHIFT;
            } else {
                variance /= divisor;
            }
            if variance <= u64::MAX / 36
                && ((avg * avg > variance * 36 && divisor * 4 >= INTERVALS as u64 * 3)
                    || variance <= 400)
            {
                return Some(avg as u32);
            }
            if divisor * 4 <= INTERVALS as u64 * 3 {
                return None;
            }
            thresh = max - 1;
        }
    }

    /// `next_timer_ns × cf / (RESOLUTION × DECAY)`, rounded to the nearest µs, in ns.
    fn corrected_sleep_length_ns(&self) -> u64 {
        let unity_ns = u128::from(RESOLUTION * DECAY) * u128::from(NSEC_PER_USEC);
        let timer_us = (unity_ns / 2
            + u128::from(self.next_timer_ns) * u128::from(self.correction_factor[self.bucket]))
            / unity_ns;
        u64::try_from(timer_us * u128::from(NSEC_PER_USEC)).unwrap_or(u64::MAX)
    }
}

impl IdleGovernor for Menu {
    fn name(&self) -> &'static str {
        "menu"
    }

    fn select(&mut self, states: &[IdleState], ctx: &SelectCtx) -> Selection {
        self.pending = true;
        let tick = ctx.tick_ns;
        let nr_iowaiters = if self.iowait { ctx.nr_iowaiters } else { 0 };
        let mut latency_req = ctx.latency_req_ns;
        let mut delta_next = ctx.delta_next_ns();

        // Find the shortest expected idle interval.
        let mut predicted_ns = match self.typical_interval_us() {
            Some(us) => u64::from(us) * NSEC_PER_USEC,
            None => u64::from(u32::MAX) * NSEC_PER_USEC,
        };
        if !self.skip_sleep_length || predicted_ns > RESIDENCY_THRESHOLD_NS || ctx.tick_stopped {
            self.next_timer_ns = ctx.sleep_length_ns;
            self.bucket = self.which_bucket(self.next_timer_ns, nr_iowaiters);
            predicted_ns = predicted_ns.min(self.corrected_sleep_length_ns());
            // With the tick stopped a short misprediction is expensive (the CPU may sit in a
            // shallow state until the next timer), so trust the timer instead.
            if ctx.tick_stopped && predicted_ns < tick {
                predicted_ns = self.next_timer_ns;
            }
        } else {
            // The sleep length is not queried: assume distant timers and a tick half a
            // period away.
            self.next_timer_ns = u64::MAX;
            delta_next = tick / 2;
            self.bucket = self.which_bucket(u64::MAX, nr_iowaiters);
        }
        self.last_predicted_ns = predicted_ns;

        let Some(first) = states.first() else {
            return Selection {
                state: 0,
                stop_tick: false,
            };
        };
        if states.len() <= 1
            || latency_req == 0
            || ((self.next_timer_ns < states[1].target_residency_ns
                || latency_req < states[1].exit_latency_ns)
                && !first.disabled)
        {
            // State 0 will be used anyway; keep the tick only if it is a polling state
            // (before v5.4: always).
            return Selection {
                state: 0,
                stop_tick: !first.polling && !self.latency_keeps_tick,
            };
        }

        if !ctx.tick_stopped {
            // The performance multiplier (1 + 10 per iowaiter; 1 from v6.13).
            let interactivity_req = predicted_ns / (1 + 10 * u64::from(nr_iowaiters));
            latency_req = latency_req.min(interactivity_req);
        }

        // The deepest enabled state that fits the prediction and the latency limits.
        let mut idx: Option<usize> = None;
        for (i, s) in states.iter().enumerate() {
            if s.disabled {
                continue;
            }
            let cur = *idx.get_or_insert(i);
            if s.target_residency_ns > predicted_ns {
                // Use a physical state rather than polling if a timer is due soon enough.
                if states[cur].polling
                    && s.exit_latency_ns <= latency_req
                    && s.target_residency_ns <= self.next_timer_ns
                {
                    predicted_ns = s.target_residency_ns;
                    idx = Some(i);
                    break;
                }
                if predicted_ns < tick {
                    break;
                }
                if !ctx.tick_stopped {
                    // Shallow so far: keep the tick and let the governor run again.
                    predicted_ns = states[cur].target_residency_ns;
                    break;
                }
                // Tick stopped: avoid getting stuck in a shallow state if this deeper one
                // fits the time to the closest timer.
                let state = if states[cur].target_residency_ns < tick
                    && s.target_residency_ns <= delta_next
                {
                    i
                } else {
                    cur
                };
                return Selection {
                    state,
                    stop_tick: true,
                };
            }
            if s.exit_latency_ns > latency_req {
                if self.latency_keeps_tick {
                    // Expect the chosen state's target residency, so that the tick is kept
                    // as long as that is shorter than a tick.
                    predicted_ns = states[cur].target_residency_ns;
                }
                break;
            }
            idx = Some(i);
        }
        let mut idx = idx.unwrap_or(0);

        // Keep the tick for a polling state or a prediction shorter than the tick, and then
        // make the state fit the time to the next tick.
        let mut stop_tick = true;
        if (states[idx].polling || predicted_ns < tick) && !ctx.tick_stopped {
            stop_tick = false;
            if idx > 0 && states[idx].target_residency_ns > delta_next {
                for i in (0..idx).rev() {
                    if states[i].disabled {
                        continue;
                    }
                    idx = i;
                    if states[i].target_residency_ns <= delta_next {
                        break;
                    }
                }
            }
        }
        Selection {
            state: idx,
            stop_tick,
        }
    }

    fn reflect(&mut self, states: &[IdleState], outcome: &Outcome, ctx: &SelectCtx) {
        if !std::mem::take(&mut self.pending) {
            return;
        }
        let exit_latency = states.get(outcome.state).map_or(0, |s| s.exit_latency_ns);
        let mut measured = if outcome.woken_by_tick && self.next_timer_ns > ctx.tick_ns {
            // The tick woke the CPU although no timer was due within a tick: the predictor
            // was wrong, assume a long (not infinite) idle period.
            9 * MAX_INTERESTING_NS / 10
        } else if outcome.residency_ns > exit_latency.saturating_mul(2) {
            outcome.residency_ns - exit_latency
        } else {
            outcome.residency_ns / 2
        };
        // The correction factor must not exceed unity.
        measured = measured.min(self.next_timer_ns);

        let cf = &mut self.correction_factor[self.bucket];
        let mut new_factor = *cf - *cf / DECAY;
        if self.next_timer_ns > 0 && measured < MAX_INTERESTING_NS {
            new_factor += (u128::from(RESOLUTION) * u128::from(measured)
                / u128::from(self.next_timer_ns)) as u32;
        } else {
            // Idle so long that it counts as a perfect prediction.
            new_factor += RESOLUTION;
        }
        *cf = new_factor;

        self.intervals[self.interval_ptr] =
            u32::try_from(measured / NSEC_PER_USEC).unwrap_or(u32::MAX);
        self.interval_ptr = (self.interval_ptr + 1) % INTERVALS;
    }
}

#[cfg(test)]
mod tests {
    use super::super::governor::skylake_client_states;
    use super::*;

    const TICK: u64 = 4_000_000; // HZ=250
    const US: u64 = 1_000;
    const MS: u64 = 1_000_000;
    const C1: usize = 1;
    const C1E: usize = 2;
    const C6: usize = 4;
    const C8: usize = 6;
    const C10: usize = 8;

    fn ctx(sleep_ns: u64) -> SelectCtx {
        SelectCtx::new(sleep_ns, TICK)
    }

    fn sel(state: usize, stop_tick: bool) -> Selection {
        Selection { state, stop_tick }
    }

    fn idle(g: &mut Menu, states: &[IdleState], c: &SelectCtx, residency_ns: u64) -> Selection {
        super::super::governor::select_and_idle(g, states, c, residency_ns)
    }

    #[test]
    fn fresh_governor_follows_the_sleep_length() {
        let states = skylake_client_states();
        for version in [(5, 4), (6, 1), (6, 12), (6, 13)] {
            let mut g = Menu::new(version);
            // 10 ms: unity factor, no history -> C10 (target 5 ms), tick stopped.
            assert_eq!(
                g.select(&states, &ctx(10 * MS)),
                sel(C10, true),
                "{version:?}"
            );
            // 300 µs: C6 (target 200 µs; C7s needs 800), shorter than a tick -> keep it.
            assert_eq!(g.select(&states, &ctx(300 * US)), sel(C6, false));
            // 5 µs: C1 (target 2 µs; C1E needs 20).
            assert_eq!(g.select(&states, &ctx(5 * US)), sel(C1, false));
            // 1 µs: shorter than C1's target residency -> POLL, and polling keeps the tick.
            assert_eq!(g.select(&states, &ctx(US)), sel(0, false));
        }
    }

    #[test]
    fn before_5_4_a_latency_limited_choice_keeps_the_tick() {
        // 10 ms to the next timer with one task in iowait on this CPU: the prediction is 10 ms
        // (bucket 10, unity factor), the latency limit 10 ms / (1 + 10) = 909 µs. C10 (exit
        // 890 µs, target 5 ms) fits both: no latency break, the tick stops in every version.
        let states = skylake_client_states();
        let mut c = ctx(10 * MS);
        c.nr_iowaiters = 1;
        for version in [(5, 2), (5, 4)] {
            assert_eq!(Menu::new(version).select(&states, &c), sel(C10, true));
        }
        // 4.5 ms: the search stops at C9 by its target residency (5 ms), not by latency; C8 is
        // chosen and, being shallow with the tick running, predicts its own 800 µs, so every
        // version keeps the tick.
        c.sleep_length_ns = 4_500 * US;
        for version in [(5, 2), (5, 4)] {
            assert_eq!(Menu::new(version).select(&states, &c), sel(C8, false));
        }
        // Two iowaiters and 8 ms: limit 8 ms / 21 = 380 µs. C9 (exit 480 µs, target 5 ms ≤
        // 8 ms) is excluded by latency with C8 (target 800 µs) chosen: v5.2 then predicts 800
        // µs < 4 ms and keeps the tick (stepping down to a state that fits before the next
        // tick, C8 fits); v5.4 keeps the 8 ms prediction and stops it.
        c.sleep_length_ns = 8 * MS;
        c.nr_iowaiters = 2;
        assert_eq!(Menu::new((5, 2)).select(&states, &c), sel(C8, false));
        assert_eq!(Menu::new((5, 4)).select(&states, &c), sel(C8, true));
    }

    #[test]
    fn state0_shortcut_stops_the_tick_for_a_physical_state() {
        // Without POLL, state 0 is a real C-state: menu lets the tick stop.
        let states: Vec<IdleState> = skylake_client_states().into_iter().skip(1).collect();
        let mut g = Menu::new((6, 1));
        assert_eq!(g.select(&states, &ctx(US)), sel(0, true));
        // Before v5.4 the shortcut kept the tick whatever state 0 was.
        assert_eq!(Menu::new((5, 2)).select(&states, &ctx(US)), sel(0, false));
    }

    #[test]
    fn buckets_are_sleep_length_decades() {
        let old = Menu::new((6, 12));
        let new = Menu::new((6, 13));
        assert_eq!(old.buckets(), 12);
        assert_eq!(new.buckets(), 6);
        assert_eq!(old.which_bucket(9_999, 0), 0);
        assert_eq!(old.which_bucket(10 * US, 0), 1);
        assert_eq!(old.which_bucket(300 * US, 0), 2);
        assert_eq!(old.which_bucket(5 * MS, 0), 3);
        assert_eq!(old.which_bucket(10 * MS, 0), 4);
        assert_eq!(old.which_bucket(100 * MS, 0), 5);
        assert_eq!(old.which_bucket(u64::MAX, 0), 5);
        assert_eq!(old.which_bucket(5 * MS, 2), 9);
        assert_eq!(new.which_bucket(5 * MS, 2), 3);
    }

    #[test]
    fn one_correction_factor_step_by_hand() {
        let states = skylake_client_states();
        let mut g = Menu::new((6, 1));
        let c = ctx(10 * MS); // bucket 4
        assert_eq!(g.select(&states, &c), sel(C10, true));
        assert_eq!(g.last_bucket(), 4);
        // Woken after 2 ms in C10 (exit 890 µs): 2000 > 2 * 890, so measured = 1110 µs.
        g.reflect(
            &states,
            &Outcome {
                state: C10,
                residency_ns: 2 * MS,
                woken_by_tick: false,
            },
            &c,
        );
        // 8192 - 8192/8 + 1024 * 1_110_000 / 10_000_000 = 7168 + 113 = 7281.
        assert_eq!(g.correction_factor(4), 7281);
        assert_eq!(g.intervals_us()[0], 1110);
        // Ring [1110, 0 x 7]: mean 138 µs, variance 134_761 > 400 and 138² < 36 × variance;
        // dropping 1110 leaves only zeros -> no typical interval.
        assert_eq!(g.typical_interval_us(), None);
        // Next prediction: (4_096_000 + 10_000_000 × 7281) / 8_192_000 = 8888 µs.
        assert_eq!(g.select(&states, &c), sel(C10, true));
        assert_eq!(g.last_predicted_ns(), 8_888 * US);
    }

    #[test]
    fn correction_factor_converges_to_measured_over_sleep_length() {
        let states = skylake_client_states();
        let mut g = Menu::new((6, 1));
        let c = ctx(10 * MS);
        for _ in 0..100 {
            // Woken by a device after 5 ms in C10: measured = 5 ms, half the sleep length.
            let s = g.select(&states, &c);
            let exit = states[s.state].exit_latency_ns;
            let outcome = Outcome {
                state: s.state,
                residency_ns: 5 * MS + exit,
                woken_by_tick: false,
            };
            g.reflect(&states, &outcome, &c);
        }
        // cf = cf - cf/8 + 512 has its integer fixed points at cf/8 == 512: 4096..=4103,
        // i.e. measured / sleep_length = 1/2 of unity (8192).
        let cf = g.correction_factor(4);
        assert!((4096..=4103).contains(&cf), "cf = {cf}");
        // The 5 ms idles are also the typical interval now: predicted = 5 ms -> C10 still
        // fits (target 5 ms) and the tick may stop (5 ms >= 4 ms).
        assert_eq!(g.typical_interval_us(), Some(5_000));
        assert_eq!(g.select(&states, &c), sel(C10, true));
        assert_eq!(g.last_predicted_ns(), 5 * MS);
    }

    #[test]
    fn short_idles_pick_a_shallow_state_and_keep_the_tick() {
        let states = skylake_client_states();
        for version in [(6, 1), (6, 12), (6, 13)] {
            let mut g = Menu::new(version);
            let c = ctx(10 * MS);
            // Eight idles of 50 µs (including the exit latency) while the sleep length says
            // 10 ms. Measured = residency - exit if residency > 2 * exit, else residency / 2:
            //  1. fresh -> C10 (exit 890 µs): measured 25 µs.
            //  2. ring [25,0..]: mean 3, variance 68 <= 400 -> typical 3 µs -> C1: 48 µs.
            //  3-7. the zeros keep the typical interval below 20 µs (9, 4, 5, 6, 8) -> C1: 48.
            //  8. ring [25,48x6,0]: mean 39, variance 275 -> typical 39 µs -> C1E: 40 µs.
            let picks: Vec<usize> = (0..8)
                .map(|_| idle(&mut g, &states, &c, 50 * US).state)
                .collect();
            assert_eq!(picks, vec![C10, C1, C1, C1, C1, C1, C1, C1E], "{version:?}");
            assert_eq!(g.intervals_us(), [25, 48, 48, 48, 48, 48, 48, 40]);
            // Ring mean 353 >> 3 = 44, variance 473 >> 3 = 59 -> typical 44 µs.
            assert_eq!(g.typical_interval_us(), Some(44));
            // C1E (target 20 µs, exit 10 µs <= 44) fits, C3 (100 µs) does not; 44 µs is far
            // below a tick, so the tick is kept.
            assert_eq!(g.select(&states, &c), sel(C1E, false));
            assert_eq!(g.last_predicted_ns(), 44 * US);
        }
    }

    #[test]
    fn typical_interval_variance_test_and_outlier_dropping() {
        let mut g = Menu::new((6, 1));
        // Spread small relative to the mean: variance 3125 > 400 but 1000² > 36 × 3125.
        g.intervals = [1000, 1100, 900, 1000, 1050, 950, 1000, 1000];
        assert_eq!(g.typical_interval_us(), Some(1000));
        // One outlier is dropped: seven 50 µs idles and one 10 ms idle -> 50.
        g.intervals = [50, 50, 10_000, 50, 50, 50, 50, 50];
        assert_eq!(g.typical_interval_us(), Some(50));
        // 100..800 µs: still too spread after dropping 800 and 700; stop at 6 of 8 samples.
        g.intervals = [100, 200, 300, 400, 500, 600, 700, 800];
        assert_eq!(g.typical_interval_us(), None);
        // Empty (all-zero) ring: no information.
        g.intervals = [0; INTERVALS];
        assert_eq!(g.typical_interval_us(), None);
    }

    #[test]
    fn latency_req_excludes_deep_states() {
        let states = skylake_client_states();
        let mut g = Menu::new((6, 12));
        let mut c = ctx(10 * MS);
        c.latency_req_ns = 100 * US;
        // C6 (exit 85 µs) is the deepest state within 100 µs; C7s needs 124 µs.
        assert_eq!(g.select(&states, &c), sel(C6, true));
        c.latency_req_ns = US; // below C1's exit latency -> POLL
        assert_eq!(g.select(&states, &c), sel(0, false));
        c.latency_req_ns = 0;
        assert_eq!(g.select(&states, &c), sel(0, false));
    }

    #[test]
    fn iowaiters_make_it_shallower_before_6_13_only() {
        let states = skylake_client_states();
        let mut c = ctx(5 * MS);
        assert_eq!(Menu::new((6, 12)).select(&states, &c), sel(C10, true));
        c.nr_iowaiters = 1;
        // Before v6.13: exit latency limit 5 ms / (1 + 10) = 454 µs -> C8 (200 µs); C9 needs
        // 480 µs. The prediction is still 5 ms >= tick, so the tick may stop.
        let mut old = Menu::new((6, 12));
        assert_eq!(old.select(&states, &c), sel(C8, true));
        assert_eq!(old.last_bucket(), 9); // 6 + decade 3
        let mut new = Menu::new((6, 13));
        assert_eq!(new.select(&states, &c), sel(C10, true));
        assert_eq!(new.last_bucket(), 3);
    }

    #[test]
    fn tick_wakeup_with_a_long_sleep_length_counts_as_a_long_idle() {
        let states = skylake_client_states();
        let mut g = Menu::new((6, 1));
        let c = ctx(10 * MS);
        let s = g.select(&states, &c);
        // Woken by the tick after 4 ms: measured = 45 ms, capped at the 10 ms sleep length,
        // so the factor stays at unity: 8192 - 1024 + 1024 * 10 ms / 10 ms.
        g.reflect(
            &states,
            &Outcome {
                state: s.state,
                residency_ns: TICK,
                woken_by_tick: true,
            },
            &c,
        );
        assert_eq!(g.correction_factor(4), 8192);
        assert_eq!(g.intervals_us()[0], 10_000);
        // A second reflect without a select is ignored.
        g.reflect(
            &states,
            &Outcome {
                state: s.state,
                residency_ns: 10 * US,
                woken_by_tick: false,
            },
            &c,
        );
        assert_eq!(g.intervals_us()[1], 0);
    }

    #[test]
    fn stopped_tick_distrusts_short_predictions() {
        let states = skylake_client_states();
        let mut g = Menu::new((6, 12));
        g.intervals = [44; INTERVALS];
        let mut c = ctx(10 * MS);
        assert_eq!(g.select(&states, &c), sel(C1E, false));
        // With the tick already stopped a 44 µs prediction is replaced by the sleep length.
        c.tick_stopped = true;
        assert_eq!(g.select(&states, &c), sel(C10, true));
        assert_eq!(g.last_predicted_ns(), 10 * MS);
    }

    #[test]
    fn very_short_typical_interval_skips_the_sleep_length_from_6_6() {
        let states = skylake_client_states();
        let c = ctx(10 * MS);
        for (version, bucket) in [((6, 5), 4), ((6, 6), 5)] {
            let mut g = Menu::new(version);
            g.intervals = [10; INTERVALS]; // typical 10 µs <= 15 µs
            assert_eq!(g.select(&states, &c), sel(C1, false), "{version:?}");
            assert_eq!(g.last_bucket(), bucket, "{version:?}");
        }
    }

    #[test]
    fn disabled_states_are_skipped() {
        let mut states = skylake_client_states();
        states[7].disabled = true; // C9
        states[8].disabled = true; // C10
        let mut g = Menu::new((6, 1));
        assert_eq!(g.select(&states, &ctx(10 * MS)), sel(C8, true));
        states[0].disabled = true;
        // POLL disabled: the tiny-sleep shortcut no longer applies; the first enabled state
        // is used instead.
        assert_eq!(g.select(&states, &ctx(US)), sel(C1, false));
    }
}
