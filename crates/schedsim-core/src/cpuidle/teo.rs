//! The teo ("timer events oriented") cpuidle governor (spec/kernel.md §9.4;
//! `drivers/cpuidle/governors/teo.c`).
//!
//! What it models: one bin per idle state, covering idle durations from that state's target
//! residency up to the next state's. After every wakeup all `hits` and `intercepts` decay by
//! 1/8 (DECAY_SHIFT 3) and PULSE (1024) is added to one of them: a **hit** in the sleep
//! length's bin if the measured idle duration (residency − exit latency / 2) fell into the same
//! bin, else an **intercept** in the measured duration's bin. To select, teo takes a candidate
//! state, sums the intercepts of the shallower bins and, if they dominate the hits + intercepts
//! of the candidate and deeper bins, walks down to the deepest state whose cumulative
//! intercepts (counted from the candidate down) exceed half. A wakeup by the tick while the
//! sleep length exceeded a tick, or at/after the sleep length, counts as "infinitely long".
//!
//! Two variants, chosen by the kernel version passed to [`Teo::new`]:
//! - **before v6.9** (as the spec splits it; the v6.2-era algorithm): the candidate is the
//!   deepest enabled state whose target residency fits the sleep length; a `recent` count of
//!   intercepts among the last NR_RECENT (9) wakeups also triggers the search when it exceeds
//!   NR_RECENT / 2; a state picked from the intercepts sets the expected idle duration to the
//!   middle of its bin. The bail-out paths follow 04bae4e2267d (v6.6: never stop the tick when
//!   bailing out with a shallow state) from v6.6.
//! - **from v6.9** (simplified later variant, as in v6.11/v6.12 teo.c): no `recent` metric; the
//!   candidate is the deepest enabled state and the pattern data are consulted first; the sleep
//!   length is only looked at when the result is not state 0 and not a sub-15 µs state after a
//!   polling state 0 (otherwise it is recorded as infinite, so the next wakeup counts as an
//!   intercept); a deeper state is then cut back to the sleep length; the tick is kept if
//!   intercepts are more than 5/8 of all events and the state is shallower than a tick; if the
//!   deepest state is shallower than a tick, wakeups after a tick are counted as "tick hits".
//!
//! Util awareness (9ce0f7c4bc64, v6.3): a CPU whose `sched_cpu_util` exceeds capacity >> 6 is
//! "utilized" and goes one non-polling state shallower (with only two states, straight to
//! state 0 if it is a physical state). Upstream it was reverted in v6.11 (0a2998fa48f0, also in
//! 6.6.y/6.10.y stable), so it applies to 6.3 ≤ version < 6.11 here. Within 6.3–6.5 it uses the
//! original form (first non-polling state for 2-state tables, no duration update); from v6.6
//! the reworked form (middle-of-bin duration and the stopped-tick guard).
//!
//! Deciding the tick (as teo.c does it; the spec's "target residency ≥ TICK" paraphrases
//! it): the tick is stopped only if the chosen state is not polling and the expected idle
//! duration is at least a tick, or if the tick is already stopped. The expected duration is
//! the sleep length, except: before v6.9, the middle of the chosen bin when the state came
//! from the intercepts (or the utilization rule); from v6.9, half a tick when intercepts make
//! up more than 5/8 of all events and the state is shallower than a tick; with a single usable
//! state, that state's target residency. When the tick is kept, the state is clamped to the
//! time to the next tick.
//!
//! Simplifications: `time_span_ns` (select-to-reflect wall time) is taken as the reported
//! residency; the time to the next tick is approximated (see `governor.rs`); the polling time
//! limit is not modelled; upstream's 6.11 removal of `recent` lands at 6.9 per the spec; the
//! v6.14+ reworks (decaying total, `tick_intercepts`, `short_idles`) are not modelled.

use super::governor::{
    IdleGovernor, IdleState, KernelVersion, Outcome, SelectCtx, Selection, RESIDENCY_THRESHOLD_NS,
};

/// Added to a metric when it "wins".
pub const PULSE: u32 = 1024;
/// Every update multiplies all metrics by 7/8.
pub const DECAY_SHIFT: u32 = 3;
/// Length of the recent-intercepts window (variant before v6.9).
pub const NR_RECENT: usize = 9;
/// Utilized when `util > capacity >> UTIL_THRESHOLD_SHIFT` (~1.6 %).
pub const UTIL_THRESHOLD_SHIFT: u32 = 6;
/// First version with util awareness (9ce0f7c4bc64).
pub const UTIL_AWARE_FROM: KernelVersion = (6, 3);
/// First version after the util-awareness revert (0a2998fa48f0).
pub const UTIL_AWARE_REVERTED_IN: KernelVersion = (6, 11);
/// First version of the later variant (spec §9.4: reworks from v6.9).
pub const LATER_VARIANT_FROM: KernelVersion = (6, 9);
/// First version with the bail-out tick fix and reworked util awareness (v6.6).
pub const REWORK_V6_6: KernelVersion = (6, 6);

/// Metrics of one bin (`struct teo_bin`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TeoBin {
    pub intercepts: u32,
    pub hits: u32,
    /// Intercepts among the last NR_RECENT wakeups (variant before v6.9 only).
    pub recent: u32,
}

/// Which algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TeoVariant {
    /// Before v6.9: sleep-length candidate, `recent` metric.
    Recent,
    /// From v6.9: pattern data first, no `recent`, tick hits.
    Later,
}

/// Per-CPU teo governor state (`struct teo_cpu`).
#[derive(Clone, Debug)]
pub struct Teo {
    variant: TeoVariant,
    util_aware: bool,
    rework_v6_6: bool,
    bins: Vec<TeoBin>,
    /// Sum of all metrics after the last update.
    total: u32,
    /// Wakeups after a tick when the deepest state is shallower than a tick (later variant).
    tick_hits: u32,
    recent_idx: [Option<usize>; NR_RECENT],
    next_recent_idx: usize,
    /// Sleep length seen by the last `select` (`u64::MAX` = not queried).
    sleep_length_ns: u64,
    pending: bool,
}

/// Middle of bin `i` (`teo_middle_of_bin`); past the last state the next residency reads as 0,
/// as the kernel's zero-filled state array does.
fn middle_of_bin(states: &[IdleState], i: usize) -> u64 {
    let next = states.get(i + 1).map_or(0, |s| s.target_residency_ns);
    states[i].target_residency_ns.saturating_add(next) / 2
}

/// `teo_find_shallower_state`: walking down from `idx`, the first enabled (and, with
/// `no_poll`, non-polling) state whose target residency fits `duration_ns`, else the
/// shallowest such state seen; `idx` if there is none.
fn find_shallower_state(
    states: &[IdleState],
    idx: usize,
    duration_ns: u64,
    no_poll: bool,
) -> usize {
    let mut state_idx = idx;
    for i in (0..idx).rev() {
        if states[i].disabled || (no_poll && states[i].polling) {
            continue;
        }
        state_idx = i;
        if states[i].target_residency_ns <= duration_ns {
            break;
        }
    }
    state_idx
}

/// `teo_time_ok`: a duration is usable unless the tick is stopped and it is below a tick.
fn time_ok(ctx: &SelectCtx, duration_ns: u64) -> bool {
    !ctx.tick_stopped || duration_ns >= ctx.tick_ns
}

fn keep_tick(state: usize) -> Selection {
    Selection {
        state,
        stop_tick: false,
    }
}

/// The common tail of `teo_select` (label `end`).
fn finish(
    states: &[IdleState],
    ctx: &SelectCtx,
    idx: usize,
    idx0: usize,
    duration_ns: u64,
    delta_tick: u64,
) -> Selection {
    if (!states[idx].polling && duration_ns >= ctx.tick_ns) || ctx.tick_stopped {
        return Selection {
            state: idx,
            stop_tick: true,
        };
    }
    // The tick stays: make the state fit the time to the next timer or tick.
    let idx = if idx > idx0 && states[idx].target_residency_ns > delta_tick {
        find_shallower_state(states, idx, delta_tick, false)
    } else {
        idx
    };
    keep_tick(idx)
}

impl Teo {
    /// A freshly enabled governor (`teo_enable_device`) with the behaviour of `version`.
    pub fn new(version: KernelVersion, nr_states: usize) -> Self {
        Teo {
            variant: if version >= LATER_VARIANT_FROM {
                TeoVariant::Later
            } else {
                TeoVariant::Recent
            },
            util_aware: version >= UTIL_AWARE_FROM && version < UTIL_AWARE_REVERTED_IN,
            rework_v6_6: version >= REWORK_V6_6,
            bins: vec![TeoBin::default(); nr_states],
            total: 0,
            tick_hits: 0,
            recent_idx: [None; NR_RECENT],
            next_recent_idx: 0,
            sleep_length_ns: u64::MAX,
            pending: false,
        }
    }

    pub fn variant(&self) -> TeoVariant {
        self.variant
    }

    /// Whether util awareness is active for this version.
    pub fn util_aware(&self) -> bool {
        self.util_aware
    }

    /// The per-state bins.
    pub fn bins(&self) -> &[TeoBin] {
        &self.bins
    }

    /// Grand total of the metrics after the last update.
    pub fn total(&self) -> u32 {
        self.total
    }

    /// Tick hits (later variant, deepest state shallower than a tick).
    pub fn tick_hits(&self) -> u32 {
        self.tick_hits
    }

    fn ensure_bins(&mut self, n: usize) {
        if self.bins.len() < n {
            self.bins.resize(n, TeoBin::default());
        }
    }

    fn utilized(&self, ctx: &SelectCtx) -> bool {
        self.util_aware && ctx.cpu_util > ctx.cpu_capacity >> UTIL_THRESHOLD_SHIFT
    }

    /// The algorithm before v6.9 (v6.2-era, with util awareness from v6.3).
    fn select_recent(&mut self, states: &[IdleState], ctx: &SelectCtx) -> Selection {
        let n = states.len();
        let latency_req = ctx.latency_req_ns;
        let delta_tick = ctx.delta_next_ns();
        let mut duration_ns = ctx.sleep_length_ns;
        self.sleep_length_ns = duration_ns;
        let rework = self.rework_v6_6;
        // Early exits: from v6.6 they never stop the tick; before, they went through `end`
        // with the sleep length as the expected duration.
        let bail = |idx: usize| {
            if rework {
                keep_tick(idx)
            } else {
                finish(states, ctx, idx, 0, ctx.sleep_length_ns, delta_tick)
            }
        };

        if n < 2 {
            return bail(0);
        }
        let mut idx: Option<usize> = None;
        if !states[0].disabled {
            idx = Some(0);
            if states[1].target_residency_ns > duration_ns {
                return bail(0);
            }
        }

        let utilized = self.utilized(ctx);
        if n < 3 && utilized {
            if rework {
                // Assume a short idle period: state 0 if it is a physical state (and the
                // tick is running), else state 1.
                let span = middle_of_bin(states, 0);
                if (idx == Some(0) && !states[0].polling && time_ok(ctx, span))
                    || states[1].disabled
                {
                    return keep_tick(0);
                }
                return finish(states, ctx, 1, 0, span, delta_tick);
            }
            // v6.3–v6.5: the shallowest enabled non-polling state.
            if let Some(i) = (0..n).find(|&i| !states[i].disabled && !states[i].polling) {
                return finish(states, ctx, i, 0, duration_ns, delta_tick);
            }
        }

        // Candidate: the deepest enabled state fitting the sleep length; the deepest one
        // within the latency limit; the metric sums below the candidate.
        let mut intercept_sum: u32 = 0;
        let mut hit_sum: u32 = 0;
        let mut recent_sum: u32 = 0;
        let mut idx_intercept_sum: u32 = 0;
        let mut idx_hit_sum: u32 = 0;
        let mut idx_recent_sum: u32 = 0;
        let mut constraint_idx = 0;
        let mut idx0 = 0;
        for (i, s) in states.iter().enumerate().skip(1) {
            let prev = self.bins[i - 1];
            intercept_sum += prev.intercepts;
            hit_sum += prev.hits;
            recent_sum += prev.recent;
            if s.disabled {
                continue;
            }
            if idx.is_none() {
                idx = Some(i);
                idx0 = i;
            }
            if s.target_residency_ns > duration_ns {
                break;
            }
            idx = Some(i);
            if s.exit_latency_ns <= latency_req {
                constraint_idx = i;
            }
            idx_intercept_sum = intercept_sum;
            idx_hit_sum = hit_sum;
            idx_recent_sum = recent_sum;
        }
        let Some(mut idx) = idx else {
            return bail(0);
        };
        if idx == idx0 {
            // The first enabled state: nothing shallower to consider. From v6.6 its own
            // target residency decides about the tick.
            if rework {
                duration_ns = states[idx].target_residency_ns;
            }
            return finish(states, ctx, idx, idx0, duration_ns, delta_tick);
        }

        // Early wakeups likely: look for a shallower state.
        let alt_intercepts = 2 * idx_intercept_sum > self.total.saturating_sub(idx_hit_sum);
        let alt_recent = idx_recent_sum > (NR_RECENT / 2) as u32;
        if alt_recent || alt_intercepts {
            let mut first_suitable_span = duration_ns;
            let mut first_suitable_idx = idx;
            let mut isum: u32 = 0;
            let mut rsum: u32 = 0;
            for i in (0..idx).rev() {
                isum += self.bins[i].intercepts;
                rsum += self.bins[i].recent;
                let span = middle_of_bin(states, i);
                if (!alt_recent || 2 * rsum > idx_recent_sum)
                    && (!alt_intercepts || 2 * isum > idx_intercept_sum)
                {
                    if time_ok(ctx, span) && !states[i].disabled {
                        idx = i;
                        duration_ns = span;
                    } else {
                        // Too shallow (tick stopped) or disabled: the first suitable deeper
                        // state found on the way down.
                        idx = first_suitable_idx;
                        duration_ns = first_suitable_span;
                    }
                    break;
                }
                if states[i].disabled {
                    continue;
                }
                if !time_ok(ctx, span) {
                    if first_suitable_idx != idx {
                        continue;
                    }
                    break;
                }
                first_suitable_span = span;
                first_suitable_idx = i;
            }
        }

        if idx > constraint_idx {
            idx = constraint_idx;
        }

        if utilized {
            let i = find_shallower_state(states, idx, duration_ns, true);
            if rework {
                let span = middle_of_bin(states, i);
                if time_ok(ctx, span) {
                    idx = i;
                    duration_ns = span;
                }
            } else {
                idx = i;
            }
        }

        finish(states, ctx, idx, idx0, duration_ns, delta_tick)
    }

    /// The algorithm from v6.9 (v6.11/v6.12 form; util awareness until v6.11).
    fn select_later(&mut self, states: &[IdleState], ctx: &SelectCtx) -> Selection {
        let n = states.len();
        let tick = ctx.tick_ns;
        let latency_req = ctx.latency_req_ns;
        // Not knowing the sleep length: timers far away, the tick half a period away.
        let mut delta_tick = tick / 2;
        self.sleep_length_ns = u64::MAX;
        let state_ok = |i: usize| !ctx.tick_stopped || states[i].target_residency_ns >= tick;

        if n < 2 {
            return keep_tick(0);
        }
        let mut idx: Option<usize> = if states[0].disabled { None } else { Some(0) };

        let utilized = self.utilized(ctx);
        if n < 3 && utilized {
            if (idx == Some(0) && !states[0].polling && state_ok(0)) || states[1].disabled {
                return keep_tick(0);
            }
            // Assume state 1 is not a polling one and use it.
            return finish(states, ctx, 1, 0, states[1].target_residency_ns, delta_tick);
        }

        // Candidate: the deepest enabled state; metric sums below it.
        let mut intercept_sum: u32 = 0;
        let mut hit_sum: u32 = 0;
        let mut idx_intercept_sum: u32 = 0;
        let mut idx_hit_sum: u32 = 0;
        let mut constraint_idx = 0;
        let mut idx0 = 0;
        for (i, s) in states.iter().enumerate().skip(1) {
            let prev = self.bins[i - 1];
            intercept_sum += prev.intercepts;
            hit_sum += prev.hits;
            if s.disabled {
                continue;
            }
            if idx.is_none() {
                idx0 = i;
            }
            idx = Some(i);
            if s.exit_latency_ns <= latency_req {
                constraint_idx = i;
            }
            idx_intercept_sum = intercept_sum;
            idx_hit_sum = hit_sum;
        }
        let Some(mut idx) = idx else {
            return keep_tick(0);
        };
        if idx == idx0 {
            // Only one state is enabled; its target residency decides about the tick.
            return finish(
                states,
                ctx,
                idx,
                idx0,
                states[idx].target_residency_ns,
                delta_tick,
            );
        }

        let tick_intercept_sum = intercept_sum + self.bins[n - 1].intercepts;

        let prev_intercept_idx = idx;
        if 2 * idx_intercept_sum > self.total.saturating_sub(idx_hit_sum) {
            let mut first_suitable_idx = idx;
            let mut isum: u32 = 0;
            for i in (0..idx).rev() {
                isum += self.bins[i].intercepts;
                if 2 * isum > idx_intercept_sum {
                    idx = if state_ok(i) && !states[i].disabled {
                        i
                    } else {
                        first_suitable_idx
                    };
                    break;
                }
                if states[i].disabled {
                    continue;
                }
                if !state_ok(i) {
                    if first_suitable_idx != idx {
                        continue;
                    }
                    break;
                }
                first_suitable_idx = i;
            }
        }
        if idx == 0 && prev_intercept_idx != 0 {
            // Query the sleep length anyway, so that the wakeup can be classified.
            self.sleep_length_ns = ctx.sleep_length_ns;
            return keep_tick(0);
        }

        if idx > constraint_idx {
            idx = constraint_idx;
        }

        if utilized {
            let i = find_shallower_state(states, idx, u64::MAX, true);
            if state_ok(i) {
                idx = i;
            }
        }

        // State 0, or a very shallow state after a polling state 0: skip the timers.
        if idx == 0
            || (states[0].polling && states[idx].target_residency_ns < RESIDENCY_THRESHOLD_NS)
        {
            return keep_tick(idx);
        }

        let mut duration_ns = ctx.sleep_length_ns;
        self.sleep_length_ns = duration_ns;
        delta_tick = ctx.delta_next_ns();

        // A timer due before the candidate's target residency: find a shallower state.
        if states[idx].target_residency_ns > duration_ns {
            let i = find_shallower_state(states, idx, duration_ns, false);
            if state_ok(i) {
                idx = i;
            }
        }

        // Intercepts dominate and the state is shallower than a tick: keep the tick.
        if states[idx].target_residency_ns < tick
            && tick_intercept_sum > self.total / 2 + self.total / 8
        {
            duration_ns = tick / 2;
        }

        finish(states, ctx, idx, idx0, duration_ns, delta_tick)
    }
}

impl IdleGovernor for Teo {
    fn name(&self) -> &'static str {
        "teo"
    }

    fn select(&mut self, states: &[IdleState], ctx: &SelectCtx) -> Selection {
        self.pending = true;
        self.ensure_bins(states.len());
        if states.is_empty() {
            self.sleep_length_ns = ctx.sleep_length_ns;
            return keep_tick(0);
        }
        match self.variant {
            TeoVariant::Recent => self.select_recent(states, ctx),
            TeoVariant::Later => self.select_later(states, ctx),
        }
    }

    fn reflect(&mut self, states: &[IdleState], outcome: &Outcome, ctx: &SelectCtx) {
        if !std::mem::take(&mut self.pending) || states.is_empty() {
            return;
        }
        self.ensure_bins(states.len());
        let tick = ctx.tick_ns;
        let sleep_length = self.sleep_length_ns;

        // teo_reflect: a tick wakeup while the sleep length exceeded a tick is a safety net,
        // not a real wakeup: assume the CPU could have slept the whole sleep length.
        let time_span = if outcome.woken_by_tick && sleep_length > tick {
            sleep_length
        } else {
            outcome.residency_ns
        };
        // teo_update.
        let measured = if time_span >= sleep_length {
            u64::MAX
        } else {
            let lat = states.get(outcome.state).map_or(0, |s| s.exit_latency_ns);
            // Half the exit latency approximates the average wakeup delay.
            if outcome.residency_ns >= lat {
                outcome.residency_ns - lat / 2
            } else {
                outcome.residency_ns / 2
            }
        };

        self.total = 0;
        let mut idx_timer = 0;
        let mut idx_duration = 0;
        for (i, s) in states.iter().enumerate() {
            let bin = &mut self.bins[i];
            bin.hits -= bin.hits >> DECAY_SHIFT;
            bin.intercepts -= bin.intercepts >> DECAY_SHIFT;
            self.total += bin.hits + bin.intercepts;
            if s.target_residency_ns <= sleep_length {
                idx_timer = i;
                if s.target_residency_ns <= measured {
                    idx_duration = i;
                }
            }
        }

        match self.variant {
            TeoVariant::Recent => {
                let slot = self.next_recent_idx;
                self.next_recent_idx = (slot + 1) % NR_RECENT;
                if let Some(old) = self.recent_idx[slot].take() {
                    let bin = &mut self.bins[old];
                    bin.recent = bin.recent.saturating_sub(1);
                }
                if idx_timer == idx_duration {
                    self.bins[idx_timer].hits += PULSE;
                } else {
                    self.bins[idx_duration].intercepts += PULSE;
                    self.bins[idx_duration].recent += 1;
                    self.recent_idx[slot] = Some(idx_duration);
                }
            }
            TeoVariant::Later => {
                // If the deepest state is shallower than a tick, an extra hits-only bin
                // beyond it records wakeups after a tick.
                let deepest = states[states.len() - 1].target_residency_ns;
                let mut tick_bin = false;
                if deepest < tick {
                    self.tick_hits -= self.tick_hits >> DECAY_SHIFT;
                    self.total += self.tick_hits;
                    if tick <= sleep_length {
                        tick_bin = true;
                        if tick <= measured {
                            self.tick_hits += PULSE;
                            self.total += PULSE;
                            return;
                        }
                    }
                }
                if idx_timer == idx_duration && !tick_bin {
                    self.bins[idx_timer].hits += PULSE;
                } else {
                    self.bins[idx_duration].intercepts += PULSE;
                }
            }
        }
        self.total += PULSE;
    }
}

#[cfg(test)]
mod tests {
    use super::super::governor::skylake_client_states;
    use super::*;

    const TICK: u64 = 4_000_000; // HZ=250
    const US: u64 = 1_000;
    const MS: u64 = 1_000_000;
    const C1E: usize = 2;
    const C3: usize = 3;
    const C6: usize = 4;
    const C8: usize = 6;
    const C9: usize = 7;
    const C10: usize = 8;
    const OLD: KernelVersion = (6, 2);
    const NEW: KernelVersion = (6, 12);

    fn ctx(sleep_ns: u64) -> SelectCtx {
        SelectCtx::new(sleep_ns, TICK)
    }

    fn sel(state: usize, stop_tick: bool) -> Selection {
        Selection { state, stop_tick }
    }

    fn idle(g: &mut Teo, states: &[IdleState], c: &SelectCtx, residency_ns: u64) -> Selection {
        super::super::governor::select_and_idle(g, states, c, residency_ns)
    }

    /// `hits` wakeups by the 10 ms timer, then `intercepts` wakeups after 50 µs.
    fn history(version: KernelVersion, hits: usize, intercepts: usize) -> Teo {
        let states = skylake_client_states();
        let mut g = Teo::new(version, states.len());
        let c = ctx(10 * MS);
        for _ in 0..hits {
            // Residency >= sleep length: "infinite", a hit in the sleep length's bin (C10).
            assert_eq!(
                idle(&mut g, &states, &c, 10 * MS + 890 * US),
                sel(C10, true)
            );
        }
        for _ in 0..intercepts {
            // 50 µs in C10 (exit 890 µs, longer than the residency): measured = 25 µs, which
            // falls into C1E's bin [20, 100) µs.
            idle(&mut g, &states, &c, 50 * US);
        }
        g
    }

    #[test]
    fn no_history_follows_the_sleep_length() {
        let states = skylake_client_states();
        for version in [(5, 15), OLD, (6, 6), NEW, (6, 14)] {
            let mut g = Teo::new(version, states.len());
            assert_eq!(
                g.select(&states, &ctx(10 * MS)),
                sel(C10, true),
                "{version:?}"
            );
            assert_eq!(
                g.select(&states, &ctx(300 * US)),
                sel(C6, false),
                "{version:?}"
            );
            assert_eq!(
                g.select(&states, &ctx(50 * US)),
                sel(C1E, false),
                "{version:?}"
            );
            assert_eq!(g.select(&states, &ctx(US)), sel(0, false), "{version:?}");
            // 3 ms: C8 (800 µs) fits; 3 ms < tick -> keep it. With HZ=1000 it may stop.
            assert_eq!(
                g.select(&states, &ctx(3 * MS)),
                sel(C8, false),
                "{version:?}"
            );
            let mut c = ctx(3 * MS);
            c.tick_ns = MS;
            assert_eq!(g.select(&states, &c), sel(C8, true), "{version:?}");
        }
    }

    #[test]
    fn hits_and_intercepts_update_by_hand() {
        let states = skylake_client_states();
        let g = history(OLD, 3, 0);
        // 1024; 1024 - 128 + 1024 = 1920; 1920 - 240 + 1024 = 2704.
        assert_eq!(g.bins()[C10].hits, 2704);
        assert_eq!(g.total(), 2704);
        let g = history(OLD, 3, 1);
        assert_eq!(g.bins()[C10].hits, 2366);
        assert_eq!(g.bins()[C1E].intercepts, 1024);
        assert_eq!(g.bins()[C1E].recent, 1);
        assert_eq!(g.total(), 3390);
        // A wakeup by the tick while the sleep length exceeded a tick is a hit, not an
        // intercept at 4 ms.
        let mut g = Teo::new(OLD, states.len());
        let c = ctx(10 * MS);
        let s = g.select(&states, &c);
        g.reflect(
            &states,
            &Outcome {
                state: s.state,
                residency_ns: TICK,
                woken_by_tick: true,
            },
            &c,
        );
        assert_eq!(g.bins()[C10].hits, PULSE);
        assert!(g.bins().iter().all(|b| b.intercepts == 0));
    }

    #[test]
    fn repeated_intercepts_pick_a_shallower_state() {
        // After 3 hits in C10's bin:
        //   intercepts  hits[C10]  intercepts[C1E]  total   2 × intercepts > total?
        //   1           2366       1024             3390    no
        //   2           2071       1920             3991    no
        //   3           1813       2704             4517    yes
        //   4           1587       3390             4977    yes
        let states = skylake_client_states();
        let c = ctx(10 * MS);
        for version in [OLD, NEW] {
            assert_eq!(history(version, 3, 2).select(&states, &c), sel(C10, true));
        }
        // Before v6.9: the walk down stops at C1E's bin (2 × 2704 > 2704); the expected
        // duration becomes the middle of that bin, (20 + 100) / 2 = 60 µs < tick: keep it.
        assert_eq!(history(OLD, 3, 3).select(&states, &c), sel(C1E, false));
        // From v6.9: same state, but the duration is the sleep length (10 ms) unless all
        // intercepts exceed 5/8 of the total: 2704 <= 4517/2 + 4517/8 = 2822 -> stop;
        // after the 4th, 3390 > 4977/2 + 4977/8 = 3110 -> keep the tick.
        assert_eq!(history(NEW, 3, 3).select(&states, &c), sel(C1E, true));
        assert_eq!(history(NEW, 3, 4).select(&states, &c), sel(C1E, false));
    }

    #[test]
    fn recent_intercepts_trigger_before_6_9_only() {
        // After 30 hits, intercepts k = 5 gives hits 4129, intercepts 3991, total 8120:
        // 2 × 3991 <= 8120, but 5 recent intercepts > NR_RECENT / 2 = 4.
        let states = skylake_client_states();
        let c = ctx(10 * MS);
        assert_eq!(history(OLD, 30, 4).select(&states, &c), sel(C10, true));
        let g = history(OLD, 30, 5);
        assert_eq!(g.bins()[C1E].recent, 5);
        assert_eq!(g.bins()[C1E].intercepts, 3991);
        assert_eq!(g.total(), 8120);
        assert_eq!(history(OLD, 30, 5).select(&states, &c), sel(C1E, false));
        // Without `recent` the 5th intercept is not enough; the 6th is (2 × 4517 > 8130).
        assert_eq!(history(NEW, 30, 5).select(&states, &c), sel(C10, true));
        assert_eq!(history(NEW, 30, 6).select(&states, &c), sel(C1E, true));
    }

    #[test]
    fn recent_window_forgets_after_nr_recent_wakeups() {
        // 5 intercepts then 9 hits: the recent window holds only hits again.
        let states = skylake_client_states();
        let mut g = history(OLD, 0, 5);
        let c = ctx(10 * MS);
        for _ in 0..NR_RECENT {
            let s = g.select(&states, &c);
            g.reflect(
                &states,
                &Outcome {
                    state: s.state,
                    residency_ns: 10 * MS + 890 * US,
                    woken_by_tick: false,
                },
                &c,
            );
        }
        assert!(g.bins().iter().all(|b| b.recent == 0));
    }

    #[test]
    fn stopped_tick_limits_how_shallow_it_goes() {
        // With the tick already stopped only bins whose middle is at least a tick qualify:
        // C9's (5 ms) does, C8's ((800 + 5000) / 2 µs) does not, so the walk ends at C9.
        let states = skylake_client_states();
        let mut c = ctx(10 * MS);
        c.tick_stopped = true;
        assert_eq!(history(OLD, 3, 3).select(&states, &c), sel(C9, true));
        // Later variant: states shallower than a tick are not OK either; the first suitable
        // one on the way down is C9 (target residency 5 ms >= tick).
        assert_eq!(history(NEW, 3, 3).select(&states, &c), sel(C9, true));
    }

    #[test]
    fn latency_req_excludes_deep_states() {
        let states = skylake_client_states();
        let mut c = ctx(10 * MS);
        c.latency_req_ns = 100 * US;
        for version in [OLD, NEW] {
            let mut g = Teo::new(version, states.len());
            // C6 (exit 85 µs) is the deepest state within 100 µs.
            assert_eq!(g.select(&states, &c), sel(C6, true), "{version:?}");
        }
    }

    #[test]
    fn util_awareness_from_6_3_until_the_revert() {
        let states = skylake_client_states();
        let mut c = ctx(300 * US);
        c.cpu_util = 100; // > 1024 >> 6 = 16
        let pick = |version: KernelVersion, c: &SelectCtx| {
            Teo::new(version, states.len()).select(&states, c)
        };
        // v6.2: no util awareness -> C6.
        assert_eq!(pick(OLD, &c), sel(C6, false));
        // v6.3: one non-polling state shallower -> C3 (target 100 µs <= 300 µs).
        assert_eq!(pick((6, 3), &c), sel(C3, false));
        assert_eq!(pick((6, 6), &c), sel(C3, false));
        // At the threshold itself the CPU is not utilized.
        c.cpu_util = 16;
        assert_eq!(pick((6, 3), &c), sel(C6, false));
        // 10 ms: C9 instead of C10. v6.6+: duration = middle of C9's bin = 5 ms >= tick.
        let mut c = ctx(10 * MS);
        c.cpu_util = 100;
        assert_eq!(pick((6, 3), &c), sel(C9, true));
        assert_eq!(pick((6, 6), &c), sel(C9, true));
        assert_eq!(pick((6, 10), &c), sel(C9, true));
        // Reverted in v6.11.
        assert_eq!(pick((6, 11), &c), sel(C10, true));
        assert!(!Teo::new((6, 11), 9).util_aware());
    }

    #[test]
    fn util_awareness_with_two_states_prefers_state_0() {
        // An Arm-like table: WFI and CPU off.
        let states = vec![
            IdleState::from_us("WFI", 1, 1),
            IdleState::from_us("cpu-off", 150, 500),
        ];
        let mut c = ctx(10 * MS);
        c.cpu_util = 100;
        for version in [(6, 3), (6, 6), (6, 10)] {
            let mut g = Teo::new(version, states.len());
            let s = g.select(&states, &c);
            assert_eq!(s.state, 0, "{version:?}");
            // v6.3 went through `end` with the 10 ms sleep length and stopped the tick;
            // from v6.6 the tick is kept.
            assert_eq!(s.stop_tick, version < (6, 6), "{version:?}");
        }
        c.cpu_util = 10;
        assert_eq!(Teo::new((6, 6), 2).select(&states, &c), sel(1, true));
        c.cpu_util = 100;
        assert_eq!(Teo::new(NEW, 2).select(&states, &c), sel(1, true));
    }

    #[test]
    fn later_variant_skips_the_sleep_length_for_state_0() {
        // Intercepts in bin 0 (POLL): the pattern data alone pick state 0; the sleep length
        // is still recorded because the candidate was deeper.
        let states = skylake_client_states();
        let mut g = Teo::new(NEW, states.len());
        let c = ctx(10 * MS);
        for _ in 0..3 {
            // 1 µs in whatever was chosen: measured 0.5 µs -> POLL's bin.
            idle(&mut g, &states, &c, US);
        }
        assert_eq!(g.bins()[0].intercepts, 2704);
        assert_eq!(g.select(&states, &c), sel(0, false));
        assert_eq!(g.sleep_length_ns, 10 * MS);
    }

    #[test]
    fn later_variant_counts_tick_hits_when_states_are_shallow() {
        // Deepest state (300 µs) shallower than the tick (4 ms): a 10 ms idle is a tick hit.
        let states = vec![
            IdleState::from_us("WFI", 1, 1),
            IdleState::from_us("cpu-off", 100, 200),
            IdleState::from_us("cluster-off", 150, 300),
        ];
        let mut g = Teo::new(NEW, states.len());
        let c = ctx(10 * MS);
        assert_eq!(idle(&mut g, &states, &c, 10 * MS), sel(2, true));
        assert_eq!(g.tick_hits(), PULSE);
        assert!(g.bins().iter().all(|b| b.hits == 0 && b.intercepts == 0));
        assert_eq!(g.total(), PULSE);
        // A 2 ms idle (below the tick) with a 10 ms sleep length is an intercept in the
        // deepest bin, not a hit.
        idle(&mut g, &states, &c, 2 * MS);
        assert_eq!(g.bins()[2].intercepts, PULSE);
        assert_eq!(g.tick_hits(), 896);
        assert_eq!(g.total(), 896 + PULSE);
    }

    #[test]
    fn disabled_states_are_skipped() {
        let mut states = skylake_client_states();
        states[C9].disabled = true;
        states[C10].disabled = true;
        for version in [OLD, NEW] {
            let mut g = Teo::new(version, states.len());
            assert_eq!(
                g.select(&states, &ctx(10 * MS)),
                sel(C8, true),
                "{version:?}"
            );
        }
    }
}
