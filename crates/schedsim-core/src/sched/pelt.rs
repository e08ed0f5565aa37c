//! PELT: per-entity load tracking, and util_est.
//!
//! Models the kernel's decaying averages of how much a scheduling entity or runqueue is loaded
//! (`load`), runnable (`runnable`) and running (`util`), in the kernel's integer arithmetic so
//! that the signals match the kernel's to the unit. Follows `spec/kernel.md` §1 (§1.1–§1.9):
//! `decay_load`, `accumulate_sum`, `___update_load_sum`, `___update_load_avg`, the
//! attach/detach/removal bookkeeping of `fair.c`, `post_init_entity_util_avg`, and both util_est
//! generations (v4.17–v6.8 `{enqueued, ewma}` and the v6.9+ single ewma).
//!
//! What it simplifies or leaves to the caller:
//! - `now` is already on the PELT clock (ns). Frequency/capacity invariance (`clock_pelt`),
//!   lost idle time and throttled-clock freezing (§1.6) are the caller's job; [`cap_scale`] is
//!   provided for that.
//! - Group scheduling propagation (`update_tg_cfs_*`, `prop_runnable_sum`) is not modelled here.
//! - Removal needs no lock; the caller syncs the entity to the cfs_rq before [`SchedAvg::remove_from`].
//! - Every sum is a `u64`. The kernel keeps `util_sum` in a `u32` and clamps with
//!   `max_t(u32, ...)`, which only differs once a sum exceeds 2^32 (a cfs_rq `load_sum` with
//!   about 90 nice-0 tasks); we do not reproduce that truncation.
//! - Attach/detach/removal move `runnable_*` with load and util in the v5.7+ (count-based)
//!   layout; in the v5.1–v5.6 (weighted `runnable_load`) layout the cfs_rq carries only the
//!   queued entities' runnable load, added and taken at enqueue and dequeue.
//! - Consumers (`cpu_util`, §1.10) and cfs_rq util_est sums live with the scheduler.
//!
//! Where this differs from the spec's pseudo-code, the kernel is followed: in `accumulate_sum`
//! a step that crosses no period boundary contributes the new time only (§1.4 writes `delta`
//! after `period_contrib` was added to it); v6.9+ util_est also skips learning above
//! `capacity_orig`; v6.8 util_est already had the runnable test ([`UtilEstVersion::V1Runnable`]).

/// Capacity and utilization scale: the biggest CPU at its maximum frequency is 1024.
pub const SCHED_CAPACITY_SHIFT: u32 = 10;
pub const SCHED_CAPACITY_SCALE: u64 = 1 << SCHED_CAPACITY_SHIFT;
/// `scale_load()`'s shift: a 64-bit kernel keeps `load.weight` at this much more resolution
/// than the PELT averages.
pub const SCHED_FIXEDPOINT_SHIFT: u32 = 10;

/// Half-life in periods: y^LOAD_AVG_PERIOD = 1/2.
pub const LOAD_AVG_PERIOD: u64 = 32;
/// Largest value of `1024 * Σ y^n` in integer arithmetic.
pub const LOAD_AVG_MAX: u64 = 47742;
/// Smallest `get_pelt_divider()` value (period_contrib == 0).
pub const PELT_MIN_DIVIDER: u64 = LOAD_AVG_MAX - 1024;

/// Length of one PELT period in 1024-ns units (one period is 1024 * 1024 ns).
const PERIOD_UNITS: u64 = 1024;

/// `runnable_avg_yN_inv[n] = floor((2^32 - 1) * y^n)`, n = 0..31.
pub const RUNNABLE_AVG_YN_INV: [u32; 32] = [
    0xffffffff, 0xfa83b2da, 0xf5257d14, 0xefe4b99a, 0xeac0c6e6, 0xe5b906e6, 0xe0ccdeeb, 0xdbfbb796,
    0xd744fcc9, 0xd2a81d91, 0xce248c14, 0xc9b9bd85, 0xc5672a10, 0xc12c4cc9, 0xbd08a39e, 0xb8fbaf46,
    0xb504f333, 0xb123f581, 0xad583ee9, 0xa9a15ab4, 0xa5fed6a9, 0xa2704302, 0x9ef5325f, 0x9b8d39b9,
    0x9837f050, 0x94f4efa8, 0x91c3d373, 0x8ea4398a, 0x8b95c1e3, 0x88980e80, 0x85aac367, 0x82cd8698,
];

/// util_est: changes smaller than ~1% of the capacity scale are ignored.
pub const UTIL_EST_MARGIN: u32 = (SCHED_CAPACITY_SCALE / 100) as u32;
/// util_est EWMA weight of a new sample: 1/4.
pub const UTIL_EST_WEIGHT_SHIFT: u32 = 2;
/// Set in util_est when it was updated at dequeue and PELT has not run since. The MSB form is
/// v5.13+; v4.17–v5.12 used the LSB (0x1) of `enqueued`. We use the MSB for every version: the
/// LSB form only perturbed the stored value by one unit.
pub const UTIL_AVG_UNCHANGED: u32 = 0x8000_0000;

/// `v * s >> 10`: scale a value (e.g. a time delta) by a capacity or frequency factor.
pub fn cap_scale(v: u64, s: u64) -> u64 {
    (v * s) >> SCHED_CAPACITY_SHIFT
}

/// `val * y^n` in the kernel's fixed point: whole half-lives as a shift, the rest as a 32.32
/// multiply. Note `n % 32 == 0` still multiplies by 0xffffffff, so `decay_load(x, 0)` is
/// `x - 1` for 0 < x < 2^32; the kernel never decays by 0 periods.
pub fn decay_load(val: u64, n: u64) -> u64 {
    if n > LOAD_AVG_PERIOD * 63 {
        return 0;
    }
    let val = val >> (n / LOAD_AVG_PERIOD);
    let inv = RUNNABLE_AVG_YN_INV[(n % LOAD_AVG_PERIOD) as usize];
    ((u128::from(val) * u128::from(inv)) >> 32) as u64
}

/// Contribution of a step that crosses `periods` boundaries: `d1` (rest of the first, partial
/// period) decayed over `periods`, the full periods in between, and `d3` (start of the current
/// period) undecayed.
pub fn accumulate_pelt_segments(periods: u64, d1: u32, d3: u32) -> u32 {
    let c1 = decay_load(u64::from(d1), periods);
    let c2 = LOAD_AVG_MAX - decay_load(LOAD_AVG_MAX, periods) - PERIOD_UNITS;
    (c1 + c2 + u64::from(d3)) as u32
}

/// Meaning of the second PELT signal (`runnable_sum` / `runnable_avg`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RunnableKind {
    /// v5.7+: count-based `runnable`; `runnable_sum += (runnable * contrib) << 10`,
    /// `runnable_avg = runnable_sum / divider`.
    #[default]
    Count,
    /// v5.1–v5.6: weighted `runnable_load`; `runnable_load_sum += runnable * contrib`,
    /// `runnable_load_avg = runnable_weight * runnable_load_sum / divider`.
    Weighted,
}

/// `struct sched_avg`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedAvg {
    /// ns on the PELT clock; only advanced in whole 1024-ns units.
    pub last_update_time: u64,
    pub load_sum: u64,
    pub runnable_sum: u64,
    pub util_sum: u64,
    /// Part of the current period already accumulated, 0..1023 (1024-ns units).
    pub period_contrib: u32,
    pub load_avg: u64,
    pub runnable_avg: u64,
    pub util_avg: u64,
}

/// `cfs_rq->removed`: averages of entities detached remotely, applied at the next cfs_rq update.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RemovedAvg {
    pub util_avg: u64,
    pub load_avg: u64,
    pub runnable_avg: u64,
    pub nr: u32,
}

fn sub_positive(v: &mut u64, d: u64) {
    *v = v.saturating_sub(d);
}

/// Keep a cfs_rq sum above the lower bound implied by its average: rounding can leave an
/// entity's sum a unit above the cfs_rq's, and repeated removals would drive the sum to zero
/// while the average stays positive.
fn floor_sum(sum: &mut u64, avg: u64) {
    *sum = (*sum).max(avg * PELT_MIN_DIVIDER);
}

impl SchedAvg {
    /// `get_pelt_divider()`: the maximum sum reachable at the current `period_contrib`.
    pub fn divider(&self) -> u64 {
        PELT_MIN_DIVIDER + u64::from(self.period_contrib)
    }

    /// `___update_load_sum`: advance to `now` (PELT clock, ns) with the given levels. Returns
    /// true when at least one period boundary was crossed (the averages should be recomputed).
    pub fn update_load_sum(
        &mut self,
        now: u64,
        load: u64,
        runnable: u64,
        running: u64,
        kind: RunnableKind,
    ) -> bool {
        if now < self.last_update_time {
            // The clock went backwards (e.g. across a migration): resync, accumulate nothing.
            self.last_update_time = now;
            return false;
        }
        let delta = (now - self.last_update_time) >> 10;
        if delta == 0 {
            return false;
        }
        // Keep the sub-1024-ns remainder for the next update.
        self.last_update_time += delta << 10;

        // running and runnable are subsets of "on the runqueue".
        let (runnable, running) = if load == 0 {
            (0, 0)
        } else {
            (runnable, running)
        };
        self.accumulate_sum(delta, load, runnable, running, kind) != 0
    }

    /// `accumulate_sum`: returns the number of period boundaries crossed.
    fn accumulate_sum(
        &mut self,
        delta: u64,
        load: u64,
        runnable: u64,
        running: u64,
        kind: RunnableKind,
    ) -> u64 {
        // Without a boundary the contribution is the new time only (delta < 1024 then).
        let mut contrib = delta as u32;
        let delta = delta + u64::from(self.period_contrib);
        let periods = delta / PERIOD_UNITS;
        let mut rest = delta;

        if periods != 0 {
            self.load_sum = decay_load(self.load_sum, periods);
            self.runnable_sum = decay_load(self.runnable_sum, periods);
            self.util_sum = decay_load(self.util_sum, periods);
            rest = delta % PERIOD_UNITS;
            if load != 0 {
                let d1 = PERIOD_UNITS as u32 - self.period_contrib;
                contrib = accumulate_pelt_segments(periods, d1, rest as u32);
            }
        }
        self.period_contrib = rest as u32;

        let contrib = u64::from(contrib);
        if load != 0 {
            self.load_sum += load * contrib;
        }
        if runnable != 0 {
            self.runnable_sum += match kind {
                RunnableKind::Count => (runnable * contrib) << SCHED_CAPACITY_SHIFT,
                RunnableKind::Weighted => runnable * contrib,
            };
        }
        if running != 0 {
            self.util_sum += contrib << SCHED_CAPACITY_SHIFT;
        }
        periods
    }

    /// `___update_load_avg`. `load_weight`: the entity's user-visible weight, 1 for a runqueue.
    /// `runnable_weight` is used only by [`RunnableKind::Weighted`].
    pub fn update_load_avg(&mut self, load_weight: u64, runnable_weight: u64, kind: RunnableKind) {
        let divider = self.divider();
        self.load_avg = load_weight * self.load_sum / divider;
        self.runnable_avg = match kind {
            RunnableKind::Count => self.runnable_sum / divider,
            RunnableKind::Weighted => runnable_weight * self.runnable_sum / divider,
        };
        self.util_avg = self.util_sum / divider;
    }

    /// Sums, then averages when a period boundary was crossed (as the kernel's
    /// `__update_load_avg_*` do). Returns whether the averages were recomputed.
    pub fn update(
        &mut self,
        now: u64,
        load: u64,
        runnable: u64,
        running: u64,
        load_weight: u64,
        runnable_weight: u64,
        kind: RunnableKind,
    ) -> bool {
        if !self.update_load_sum(now, load, runnable, running, kind) {
            return false;
        }
        self.update_load_avg(load_weight, runnable_weight, kind);
        true
    }

    /// `attach_entity_load_avg`: align `self` (an entity) to `cfs`, rebuild its sums from its
    /// averages with the cfs_rq divider, and add it to `cfs`.
    ///
    /// Sums and averages relate as `avg = sum / divider` for util and (count) runnable, whose
    /// sums already carry the `<< 10`, so no extra shift is applied here; load carries the
    /// weight: `load_avg = weight * load_sum / divider`.
    pub fn attach_to(&mut self, cfs: &mut SchedAvg, se_weight: u64, kind: RunnableKind) {
        let divider = cfs.divider();
        self.last_update_time = cfs.last_update_time;
        self.period_contrib = cfs.period_contrib;
        self.util_sum = self.util_avg * divider;
        let load_sum = self.load_avg * divider;
        self.load_sum = if se_weight < load_sum {
            load_sum / se_weight.max(1)
        } else {
            1
        };

        // enqueue_load_avg
        cfs.load_avg += self.load_avg;
        cfs.load_sum += se_weight * self.load_sum;
        cfs.util_avg += self.util_avg;
        cfs.util_sum += self.util_sum;
        match kind {
            RunnableKind::Count => {
                self.runnable_sum = (self.runnable_avg * divider).max(1);
                cfs.runnable_avg += self.runnable_avg;
                cfs.runnable_sum += self.runnable_sum;
            }
            // v5.1–v5.6: `runnable_load_sum = load_sum`; the runnable load joins the cfs_rq
            // at enqueue ([`SchedAvg::enqueue_runnable_load`]), not at attach
            RunnableKind::Weighted => self.runnable_sum = self.load_sum,
        }
    }

    /// `enqueue_runnable_load_avg()` (v5.1–v5.6): a queued entity's runnable load counts in the
    /// cfs_rq's `runnable_load_avg` only while it is queued.
    pub fn enqueue_runnable_load(&self, cfs: &mut SchedAvg, se_weight: u64) {
        cfs.runnable_avg += self.runnable_avg;
        cfs.runnable_sum += se_weight * self.runnable_sum;
    }

    /// `dequeue_runnable_load_avg()` (v5.1–v5.6), each value clamped at 0.
    pub fn dequeue_runnable_load(&self, cfs: &mut SchedAvg, se_weight: u64) {
        sub_positive(&mut cfs.runnable_avg, self.runnable_avg);
        sub_positive(&mut cfs.runnable_sum, se_weight * self.runnable_sum);
    }

    /// `detach_entity_load_avg` (with `dequeue_load_avg`): subtract `self` from `cfs`, each
    /// value clamped at 0, each cfs sum kept at least `avg * PELT_MIN_DIVIDER` (the load floor
    /// is v5.18+, util/runnable v5.17+). `se_weight` is needed because the cfs_rq's
    /// `load_sum` holds `weight * load_sum` of each entity.
    pub fn detach_from(&self, cfs: &mut SchedAvg, se_weight: u64, kind: RunnableKind) {
        sub_positive(&mut cfs.load_avg, self.load_avg);
        sub_positive(&mut cfs.load_sum, se_weight * self.load_sum);
        floor_sum(&mut cfs.load_sum, cfs.load_avg);

        sub_positive(&mut cfs.util_avg, self.util_avg);
        sub_positive(&mut cfs.util_sum, self.util_sum);
        floor_sum(&mut cfs.util_sum, cfs.util_avg);

        if kind == RunnableKind::Count {
            sub_positive(&mut cfs.runnable_avg, self.runnable_avg);
            sub_positive(&mut cfs.runnable_sum, self.runnable_sum);
            floor_sum(&mut cfs.runnable_sum, cfs.runnable_avg);
        }
    }

    /// `remove_entity_load_avg`, after the caller has synced `self` to the source cfs_rq's
    /// `last_update_time` (a blocked update: load = runnable = running = 0).
    pub fn remove_from(&self, removed: &mut RemovedAvg, kind: RunnableKind) {
        removed.nr += 1;
        removed.util_avg += self.util_avg;
        removed.load_avg += self.load_avg;
        if kind == RunnableKind::Count {
            removed.runnable_avg += self.runnable_avg;
        }
    }
}

/// The "removed" part of `update_cfs_rq_load_avg`: `sum -= avg * divider` (clamped at 0, then
/// floored at `avg * PELT_MIN_DIVIDER`), `avg -= removed`. Resets `removed`; returns true if
/// anything was pending (the kernel counts it as "decayed").
pub fn apply_removed(cfs: &mut SchedAvg, removed: &mut RemovedAvg) -> bool {
    if removed.nr == 0 {
        return false;
    }
    let r = std::mem::take(removed);
    let divider = cfs.divider();

    sub_positive(&mut cfs.load_avg, r.load_avg);
    sub_positive(&mut cfs.load_sum, r.load_avg * divider);
    floor_sum(&mut cfs.load_sum, cfs.load_avg);

    sub_positive(&mut cfs.util_avg, r.util_avg);
    sub_positive(&mut cfs.util_sum, r.util_avg * divider);
    floor_sum(&mut cfs.util_sum, cfs.util_avg);

    sub_positive(&mut cfs.runnable_avg, r.runnable_avg);
    sub_positive(&mut cfs.runnable_sum, r.runnable_avg * divider);
    floor_sum(&mut cfs.runnable_sum, cfs.runnable_avg);
    true
}

/// `post_init_entity_util_avg`: initial util_avg of a new fair task (its runnable_avg is set to
/// the same value). Half the CPU's spare capacity at most, else the cfs_rq's util per unit of
/// load times the task's weight. `cpu_capacity` is `arch_scale_cpu_capacity`.
pub fn post_init_util(
    cfs_util_avg: u64,
    cfs_load_avg: u64,
    se_weight: u64,
    cpu_capacity: u64,
) -> u64 {
    let cap = (cpu_capacity as i64 - cfs_util_avg as i64) / 2;
    if cap <= 0 {
        return 0;
    }
    let cap = cap as u64;
    if cfs_util_avg == 0 {
        return cap;
    }
    (cfs_util_avg * se_weight / (cfs_load_avg + 1)).min(cap)
}

/// A task's util_est. V1 uses both fields; V2 keeps its single value (with the flag) in `ewma`
/// and leaves `enqueued` at 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UtilEst {
    pub enqueued: u32,
    pub ewma: u32,
}

/// util_est generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UtilEstVersion {
    /// v4.17–v6.7: `{enqueued, ewma}`, with the `UTIL_EST_FASTUP` feature from v5.5 (the
    /// `fastup` argument). The "nothing changed" test on the last enqueued value is the v5.13+ form.
    V1,
    /// v6.8: V1 plus the "task waited too long" runnable test (commit 50181c0cff31).
    V1Runnable,
    /// v6.9+: a single ewma that jumps up at once and decays by 1/4 (commit 11137d384996).
    V2,
}

impl UtilEst {
    /// `cfs_se_util_change`: PELT has updated the entity, so the next dequeue may learn again.
    /// V1 flags `enqueued`, V2 flags `ewma`; clearing both covers either version.
    pub fn clear_unchanged(&mut self) {
        self.enqueued &= !UTIL_AVG_UNCHANGED;
        self.ewma &= !UTIL_AVG_UNCHANGED;
    }
}

/// `_task_util_est`: the estimate without the task's current util_avg.
pub fn _task_util_est(ue: &UtilEst, version: UtilEstVersion) -> u64 {
    match version {
        UtilEstVersion::V1 | UtilEstVersion::V1Runnable => {
            u64::from(ue.ewma.max(ue.enqueued & !UTIL_AVG_UNCHANGED))
        }
        UtilEstVersion::V2 => u64::from(ue.ewma & !UTIL_AVG_UNCHANGED),
    }
}

/// `task_util_est`: max(util_avg, _task_util_est).
pub fn task_util_est(util_avg: u64, ue: &UtilEst, version: UtilEstVersion) -> u64 {
    util_avg.max(_task_util_est(ue, version))
}

/// `util_est_update` at a dequeue to sleep (the caller checks `task_sleep` and the UTIL_EST
/// feature). `task_util`/`task_runnable` are the task's util_avg/runnable_avg,
/// `capacity_orig` is `arch_scale_cpu_capacity` of its CPU. `fastup` only affects V1.
pub fn util_est_update(
    ue: &mut UtilEst,
    task_util: u64,
    task_runnable: u64,
    capacity_orig: u64,
    fastup: bool,
    version: UtilEstVersion,
) {
    let new = match version {
        UtilEstVersion::V1 | UtilEstVersion::V1Runnable => {
            let runnable_check = version == UtilEstVersion::V1Runnable;
            util_est_update_v1(
                *ue,
                task_util,
                task_runnable,
                capacity_orig,
                fastup,
                runnable_check,
            )
        }
        UtilEstVersion::V2 => util_est_update_v2(*ue, task_util, task_runnable, capacity_orig),
    };
    if let Some(new) = new {
        *ue = new;
    }
}

/// The kernel's `within_margin`: |value| < margin, computed on the low 32 bits.
fn within_margin(value: i64, margin: u32) -> bool {
    ((value + i64::from(margin) - 1) as u32) < 2 * margin - 1
}

/// `None`: return without storing anything. `Some`: the "done" label (store, with the flag).
fn util_est_update_v1(
    ue: UtilEst,
    task_util: u64,
    task_runnable: u64,
    capacity_orig: u64,
    fastup: bool,
    runnable_check: bool,
) -> Option<UtilEst> {
    if ue.enqueued & UTIL_AVG_UNCHANGED != 0 {
        return None;
    }
    let last_enqueued = ue.enqueued;
    let mut ue = UtilEst {
        enqueued: task_util as u32,
        ewma: ue.ewma,
    };
    let done = |mut ue: UtilEst| {
        ue.enqueued |= UTIL_AVG_UNCHANGED;
        Some(ue)
    };

    if fastup && ue.ewma < ue.enqueued {
        ue.ewma = ue.enqueued;
        return done(ue);
    }

    let last_ewma_diff = i64::from(ue.enqueued) - i64::from(ue.ewma);
    let last_enqueued_diff = i64::from(last_enqueued) - i64::from(ue.enqueued);
    if within_margin(last_ewma_diff, UTIL_EST_MARGIN) {
        if !within_margin(last_enqueued_diff, UTIL_EST_MARGIN) {
            return done(ue);
        }
        return None;
    }

    // Don't learn from a saturated CPU: there may have been no idle time.
    if task_util > capacity_orig {
        return None;
    }
    if runnable_check && u64::from(ue.enqueued.wrapping_add(UTIL_EST_MARGIN)) < task_runnable {
        return done(ue);
    }

    // ewma += (enqueued - ewma) / 4, in the kernel's shifted u32 form (rounds down).
    ue.ewma = (ue.ewma << UTIL_EST_WEIGHT_SHIFT).wrapping_add(last_ewma_diff as u32)
        >> UTIL_EST_WEIGHT_SHIFT;
    done(ue)
}

fn util_est_update_v2(
    ue: UtilEst,
    task_util: u64,
    task_runnable: u64,
    capacity_orig: u64,
) -> Option<UtilEst> {
    let mut ewma = ue.ewma;
    if ewma & UTIL_AVG_UNCHANGED != 0 {
        return None;
    }
    let dequeued = task_util as u32;
    let done = |ewma: u32| {
        Some(UtilEst {
            enqueued: ue.enqueued,
            ewma: ewma | UTIL_AVG_UNCHANGED,
        })
    };

    if ewma <= dequeued {
        return done(dequeued);
    }
    let last_ewma_diff = ewma - dequeued;
    if last_ewma_diff < UTIL_EST_MARGIN {
        return done(ewma);
    }
    if u64::from(dequeued) > capacity_orig {
        return None;
    }
    // The task waited a lot while runnable: its util underestimates its need.
    if u64::from(dequeued.wrapping_add(UTIL_EST_MARGIN)) < task_runnable {
        return done(ewma);
    }
    ewma = (ewma << UTIL_EST_WEIGHT_SHIFT).wrapping_sub(last_ewma_diff) >> UTIL_EST_WEIGHT_SHIFT;
    done(ewma)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One PELT period in ns.
    const PERIOD_NS: u64 = 1024 * 1024;
    const NICE_0: u64 = 1024;
    const COUNT: RunnableKind = RunnableKind::Count;

    /// y = 0.5^(1/32), in f64, independent of the tables.
    fn y_pow(n: f64) -> f64 {
        0.5f64.powf(n / 32.0)
    }

    fn within_pct(actual: u64, expected: f64, pct: f64) -> bool {
        (actual as f64 - expected).abs() <= expected * pct / 100.0
    }

    /// A task entity: running implies runnable implies on_rq.
    fn task_update(sa: &mut SchedAvg, now: u64, running: bool) -> bool {
        let l = u64::from(running);
        sa.update(now, l, l, l, NICE_0, 1, COUNT)
    }

    /// Drive a task from `from` to `to` in steps of at most `step` ns.
    fn drive(sa: &mut SchedAvg, from: u64, to: u64, step: u64, running: bool) {
        let mut t = from;
        while t < to {
            t = (t + step).min(to);
            task_update(sa, t, running);
        }
    }

    #[test]
    fn yn_inv_table_matches_closed_form() {
        for (n, &v) in RUNNABLE_AVG_YN_INV.iter().enumerate() {
            let expected = ((u32::MAX as f64) * y_pow(n as f64)).floor() as u32;
            assert_eq!(v, expected, "n = {n}");
        }
    }

    #[test]
    fn constants() {
        assert_eq!(SCHED_CAPACITY_SCALE, 1024);
        assert_eq!(PELT_MIN_DIVIDER, 46718);
        assert_eq!(UTIL_EST_MARGIN, 10);
        assert_eq!(cap_scale(1000, 512), 500);
        assert_eq!(cap_scale(3, 1024), 3);
    }

    #[test]
    fn decay_load_half_life_and_bounds() {
        // Below 2^32 the 0xffffffff multiplier costs at most one unit (larger values are
        // covered by the float comparison below).
        for x in [2u64, 1000, 47742, 1 << 20, 123_456_789, u64::from(u32::MAX)] {
            // Exactly one half-life: a shift, then the multiplier.
            let d = decay_load(x, 32);
            assert!(d == x / 2 || d + 1 == x / 2, "x = {x}: {d}");
            // n = 0 is never used by the kernel; the same multiplier gives x - 1.
            let d0 = decay_load(x, 0);
            assert!(d0 == x || d0 + 1 == x, "x = {x}: {d0}");
            assert_eq!(decay_load(x, 32 * 63 + 1), 0);
        }
        assert_eq!(decay_load(u64::MAX, 32 * 63 + 1), 0);
        assert_eq!(decay_load(0, 5), 0);
    }

    #[test]
    fn decay_load_matches_float_y_pow_n() {
        let x: u64 = 1 << 50;
        for n in (0..=2016).step_by(7) {
            let expected = x as f64 * y_pow(n as f64);
            let got = decay_load(x, n) as f64;
            assert!(
                (got - expected).abs() <= 1.0 + expected * 1e-9,
                "n = {n}: {got} vs {expected}"
            );
        }
    }

    #[test]
    fn load_avg_max_is_the_integer_series_limit() {
        // s(n+1) = s(n) * y + 1024, with the kernel's floor((2^32-1) y) multiplier, written
        // without decay_load.
        let step = |s: u64| ((s * 0xfa83_b2da_u64) >> 32) + 1024;
        let mut s = 0;
        let mut n = 0;
        while s != LOAD_AVG_MAX {
            s = step(s);
            n += 1;
            assert!(n < 1000, "series does not reach LOAD_AVG_MAX");
        }
        assert!((330..=360).contains(&n), "reached after {n} periods");
        // Same with decay_load, and nothing grows any more afterwards.
        let mut s2 = 0;
        for _ in 0..n {
            s2 = decay_load(s2, 1) + 1024;
        }
        assert_eq!(s2, LOAD_AVG_MAX);
        for _ in 0..400 {
            s2 = decay_load(s2, 1) + 1024;
            assert_eq!(s2, LOAD_AVG_MAX);
        }
        // The real-number limit 1024/(1-y) is higher: truncation costs ~1 per step.
        assert!(1024.0 / (1.0 - y_pow(1.0)) > LOAD_AVG_MAX as f64 + 40.0);
    }

    #[test]
    fn accumulate_pelt_segments_hand_cases() {
        // One boundary, whole first period: 1024 * y = 1002.06, no middle periods.
        assert_eq!(accumulate_pelt_segments(1, 1024, 0), 1002);
        // d3 is added undecayed.
        assert_eq!(accumulate_pelt_segments(1, 1024, 100), 1102);
        // 32 periods from a boundary: 1024 * y^32 = 512 (-1), middle = 47742 - 23870 - 1024.
        assert_eq!(accumulate_pelt_segments(32, 1024, 0), 511 + 22848);
    }

    #[test]
    fn partial_periods_accumulate_the_new_time_only() {
        let mut sa = SchedAvg::default();
        assert!(!sa.update_load_sum(300 << 10, 1, 1, 1, COUNT));
        assert!(!sa.update_load_sum(700 << 10, 1, 1, 1, COUNT));
        assert_eq!(sa.period_contrib, 700);
        assert_eq!(sa.util_sum, 700 << 10);
        assert_eq!(sa.runnable_sum, 700 << 10);
        assert_eq!(sa.load_sum, 700);
        // Crossing the boundary: d1 = 324 decayed once, d3 = 76 undecayed.
        assert!(sa.update_load_sum(1100 << 10, 1, 1, 1, COUNT));
        assert_eq!(sa.period_contrib, 76);
        let expected = decay_load(700, 1) + decay_load(324, 1) + 76;
        assert_eq!(sa.load_sum, expected);
    }

    #[test]
    fn half_life_rise_from_zero() {
        let expected = 1024.0 * (1.0 - y_pow(32.0));
        // Period by period.
        let mut a = SchedAvg::default();
        drive(&mut a, 0, 32 * PERIOD_NS, PERIOD_NS, true);
        assert!(within_pct(a.util_avg, expected, 2.0), "{}", a.util_avg);
        // One big step.
        let mut b = SchedAvg::default();
        assert!(task_update(&mut b, 32 * PERIOD_NS, true));
        assert!(within_pct(b.util_avg, expected, 2.0), "{}", b.util_avg);
        // Ticks of 1 ms (not aligned with periods).
        let mut c = SchedAvg::default();
        drive(&mut c, 0, 32 * PERIOD_NS, 1_000_000, true);
        assert!(within_pct(c.util_avg, expected, 2.0), "{}", c.util_avg);
        // 80 % after 74.3 periods (spec §1.1).
        let mut d = SchedAvg::default();
        drive(&mut d, 0, 75 * PERIOD_NS, PERIOD_NS, true);
        assert!(within_pct(d.util_avg, 1024.0 * (1.0 - y_pow(75.0)), 2.0));
    }

    #[test]
    fn half_life_decay_from_saturation() {
        let mut sa = SchedAvg::default();
        let busy_end = 1000 * PERIOD_NS;
        drive(&mut sa, 0, busy_end, PERIOD_NS, true);
        assert!(sa.util_avg >= 1023);
        drive(
            &mut sa,
            busy_end,
            busy_end + 32 * PERIOD_NS,
            PERIOD_NS,
            false,
        );
        assert!(
            within_pct(sa.util_avg, 1024.0 * y_pow(32.0), 2.0),
            "{}",
            sa.util_avg
        );
        assert!(
            within_pct(sa.load_avg, 1024.0 * y_pow(32.0), 2.0),
            "{}",
            sa.load_avg
        );
        // One big idle step gives the same.
        let mut big = SchedAvg::default();
        drive(&mut big, 0, busy_end, PERIOD_NS, true);
        task_update(&mut big, busy_end + 32 * PERIOD_NS, false);
        assert!(within_pct(big.util_avg, 512.0, 2.0), "{}", big.util_avg);
    }

    #[test]
    fn saturation() {
        for step in [PERIOD_NS, 1_000_000, 300_000, 4_000_000, 400 * PERIOD_NS] {
            let mut sa = SchedAvg::default();
            drive(&mut sa, 0, 400 * PERIOD_NS + 12_345, step, true);
            assert!(
                sa.util_sum <= LOAD_AVG_MAX * 1024,
                "step {step}: {}",
                sa.util_sum
            );
            assert!(
                (1023..=1024).contains(&sa.util_avg),
                "step {step}: util {}",
                sa.util_avg
            );
            assert!((1023..=1024).contains(&sa.runnable_avg));
            assert!(sa.load_sum <= LOAD_AVG_MAX);
        }
    }

    #[test]
    fn load_avg_tends_to_weight() {
        for w in [1024u64, 335, 88761, 15] {
            let mut sa = SchedAvg::default();
            let mut t = 0;
            while t < 500 * PERIOD_NS {
                t += 700_000;
                sa.update(t, 1, 1, 0, w, 1, COUNT);
            }
            // The saturated load_sum falls short of the divider by a few units of 46718.
            assert!(
                sa.load_avg <= w && w - sa.load_avg <= 1 + w / 10_000,
                "w {w}: {}",
                sa.load_avg
            );
            if w <= 1024 {
                assert!(
                    sa.load_avg == w || sa.load_avg + 1 == w,
                    "w {w}: {}",
                    sa.load_avg
                );
            }
            assert_eq!(sa.util_avg, 0);
        }
    }

    #[test]
    fn weighted_runnable_load() {
        // v5.4: runnable_load_avg = weight * runnable_load_sum / divider, no << 10.
        let mut sa = SchedAvg::default();
        drive_kind(&mut sa, 500 * PERIOD_NS, 335);
        assert!(sa.runnable_avg == 335 || sa.runnable_avg == 334);
        assert!(sa.runnable_sum <= LOAD_AVG_MAX);
        assert_eq!(sa.runnable_avg, sa.load_avg);
    }

    fn drive_kind(sa: &mut SchedAvg, to: u64, w: u64) {
        let mut t = 0;
        while t < to {
            t += 1_000_000;
            sa.update(t, 1, 1, 1, w, w, RunnableKind::Weighted);
        }
    }

    /// Run `run_ns` every `period_ns` for ~1.5 s, then sample util at the end of a run and at
    /// the end of the following sleep, against the closed form in PELT periods.
    fn periodic_case(run_ns: u64, period_ns: u64, tick_ns: u64) {
        let mut sa = SchedAvg::default();
        let mut t = 0;
        let (mut at_max, mut at_min) = (0, 0);
        while t < 1_500_000_000 {
            drive(&mut sa, t, t + run_ns, tick_ns, true);
            at_max = sa.util_avg;
            drive(&mut sa, t + run_ns, t + period_ns, period_ns, false);
            at_min = sa.util_avg;
            t += period_ns;
        }
        let r = run_ns as f64 / PERIOD_NS as f64;
        let p = period_ns as f64 / PERIOD_NS as f64;
        let max = 1024.0 * (1.0 - y_pow(r)) / (1.0 - y_pow(p));
        let min = max * y_pow(p - r);
        let ok = |v: u64, e: f64| (v as f64 - e).abs() <= (e * 0.01).max(2.0);
        assert!(
            ok(at_max, max),
            "{run_ns}/{period_ns}: max {at_max} vs {max:.1}"
        );
        assert!(
            ok(at_min, min),
            "{run_ns}/{period_ns}: min {at_min} vs {min:.1}"
        );
    }

    #[test]
    fn periodic_task_8_of_16_ms() {
        periodic_case(8_000_000, 16_000_000, 8_000_000);
        periodic_case(8_000_000, 16_000_000, 1_000_000);
    }

    #[test]
    fn periodic_task_4_of_16_ms() {
        periodic_case(4_000_000, 16_000_000, 4_000_000);
        periodic_case(4_000_000, 16_000_000, 1_000_000);
    }

    #[test]
    fn clock_backwards_and_sub_unit_deltas() {
        let mut sa = SchedAvg::default();
        drive(&mut sa, 0, 10 * PERIOD_NS, PERIOD_NS, true);
        let before = sa;
        // Backwards: only the timestamp moves.
        assert!(!task_update(&mut sa, 5 * PERIOD_NS, true));
        assert_eq!(sa.last_update_time, 5 * PERIOD_NS);
        assert_eq!(
            SchedAvg {
                last_update_time: before.last_update_time,
                ..sa
            },
            before
        );
        // Forward again from the new timestamp.
        assert!(task_update(&mut sa, 6 * PERIOD_NS, true));
        assert!(sa.util_sum > 0 && sa.util_avg >= before.util_avg);

        // Sub-1024-ns deltas neither update nor lose time.
        let mut sa = SchedAvg {
            last_update_time: 1_000_000,
            ..SchedAvg::default()
        };
        assert!(!sa.update_load_sum(1_000_600, 1, 1, 1, COUNT));
        assert_eq!(
            sa,
            SchedAvg {
                last_update_time: 1_000_000,
                ..SchedAvg::default()
            }
        );
        assert!(!sa.update_load_sum(1_001_200, 1, 1, 1, COUNT));
        assert_eq!(sa.last_update_time, 1_001_024);
        assert_eq!(sa.period_contrib, 1);
        assert_eq!(sa.util_sum, 1024);
    }

    #[test]
    fn averages_only_recomputed_on_period_boundaries() {
        let mut sa = SchedAvg::default();
        drive(&mut sa, 0, 10 * PERIOD_NS, PERIOD_NS, true);
        let avg = sa.util_avg;
        assert!(!task_update(&mut sa, 10 * PERIOD_NS + PERIOD_NS / 2, true));
        assert_eq!(sa.util_avg, avg);
        assert!(sa.util_sum > avg * sa.divider());
    }

    #[test]
    fn load_zero_forces_runnable_and_running_zero() {
        let mut sa = SchedAvg::default();
        sa.update(3 * PERIOD_NS, 0, 1, 1, NICE_0, 1, COUNT);
        assert_eq!(sa.util_sum + sa.runnable_sum + sa.load_sum, 0);
        assert_eq!(sa.period_contrib, 0);
        assert_eq!(sa.last_update_time, 3 * PERIOD_NS);
    }

    fn some_cfs() -> SchedAvg {
        // A runqueue with one nice-0 task running 60 % of the time.
        let mut cfs = SchedAvg::default();
        let mut t = 0;
        for _ in 0..30 {
            t += 6_000_000;
            cfs.update(t, NICE_0, 1, 1, 1, 1, COUNT);
            t += 4_000_000;
            cfs.update(t, 0, 0, 0, 1, 1, COUNT);
        }
        t += 123_456;
        cfs.update(t, NICE_0, 1, 1, 1, 1, COUNT);
        cfs
    }

    #[test]
    fn attach_detach_round_trip() {
        let cfs0 = some_cfs();
        assert!(cfs0.period_contrib != 0);
        let mut cfs = cfs0;
        let mut se = SchedAvg {
            util_avg: 200,
            runnable_avg: 250,
            load_avg: 300,
            last_update_time: 1,
            period_contrib: 999,
            ..SchedAvg::default()
        };
        se.attach_to(&mut cfs, NICE_0, RunnableKind::Count);
        let div = cfs0.divider();
        assert_eq!(se.last_update_time, cfs0.last_update_time);
        assert_eq!(se.period_contrib, cfs0.period_contrib);
        assert_eq!(se.util_sum, 200 * div);
        assert_eq!(se.runnable_sum, 250 * div);
        assert_eq!(se.load_sum, 300 * div / 1024);
        assert_eq!(cfs.util_avg, cfs0.util_avg + 200);
        assert_eq!(cfs.runnable_avg, cfs0.runnable_avg + 250);
        assert_eq!(cfs.load_avg, cfs0.load_avg + 300);
        assert_eq!(cfs.util_sum, cfs0.util_sum + 200 * div);
        assert_eq!(cfs.load_sum, cfs0.load_sum + 1024 * (300 * div / 1024));
        se.detach_from(&mut cfs, NICE_0, RunnableKind::Count);
        assert_eq!(cfs, cfs0);
    }

    #[test]
    fn weighted_runnable_load_joins_at_enqueue_and_leaves_at_dequeue() {
        // v5.1-v5.6: attach adds load and util only, and resets runnable_load_sum to the
        // rebuilt load_sum (300 × divider / 1024); enqueue adds the runnable load, dequeue
        // takes exactly that off again.
        let cfs0 = some_cfs();
        let mut cfs = cfs0;
        let mut se = SchedAvg {
            util_avg: 200,
            runnable_avg: 250,
            load_avg: 300,
            ..SchedAvg::default()
        };
        se.attach_to(&mut cfs, NICE_0, RunnableKind::Weighted);
        let div = cfs0.divider();
        assert_eq!(se.runnable_sum, 300 * div / 1024);
        assert_eq!(se.runnable_sum, se.load_sum);
        assert_eq!(
            (cfs.runnable_avg, cfs.runnable_sum),
            (cfs0.runnable_avg, cfs0.runnable_sum)
        );
        assert_eq!(cfs.load_avg, cfs0.load_avg + 300);
        se.enqueue_runnable_load(&mut cfs, NICE_0);
        assert_eq!(cfs.runnable_avg, cfs0.runnable_avg + 250);
        assert_eq!(
            cfs.runnable_sum,
            cfs0.runnable_sum + NICE_0 * se.runnable_sum
        );
        se.dequeue_runnable_load(&mut cfs, NICE_0);
        assert_eq!(
            (cfs.runnable_avg, cfs.runnable_sum),
            (cfs0.runnable_avg, cfs0.runnable_sum)
        );
        // detach and removal leave the runnable load alone
        se.detach_from(&mut cfs, NICE_0, RunnableKind::Weighted);
        assert_eq!(cfs, cfs0);
        let mut removed = RemovedAvg::default();
        se.remove_from(&mut removed, RunnableKind::Weighted);
        assert_eq!((removed.runnable_avg, removed.load_avg), (0, 300));
    }

    #[test]
    fn attach_tiny_load_sum_is_one() {
        let mut cfs = SchedAvg::default();
        let mut se = SchedAvg::default();
        se.attach_to(&mut cfs, NICE_0, RunnableKind::Count);
        assert_eq!(se.load_sum, 1);
        assert_eq!(cfs.load_sum, 1024);
    }

    #[test]
    fn detach_clamps_and_floors() {
        let mut cfs = SchedAvg {
            util_avg: 100,
            util_sum: 90 * PELT_MIN_DIVIDER,
            runnable_avg: 50,
            runnable_sum: 10,
            ..SchedAvg::default()
        };
        let se = SchedAvg {
            util_avg: 40,
            util_sum: 40 * PELT_MIN_DIVIDER,
            runnable_avg: 80,
            runnable_sum: 80 * PELT_MIN_DIVIDER,
            ..SchedAvg::default()
        };
        se.detach_from(&mut cfs, NICE_0, RunnableKind::Count);
        // 90 - 40 = 50 units of sum would be below 60 units of avg: floored.
        assert_eq!(cfs.util_avg, 60);
        assert_eq!(cfs.util_sum, 60 * PELT_MIN_DIVIDER);
        assert_eq!(cfs.runnable_avg, 0);
        assert_eq!(cfs.runnable_sum, 0);
    }

    #[test]
    fn removed_apply_floors() {
        let mut cfs = SchedAvg {
            util_avg: 100,
            util_sum: 4_000_000,
            runnable_avg: 50,
            runnable_sum: 100,
            load_avg: 1024,
            load_sum: 1024 * 46_718,
            ..SchedAvg::default()
        };
        let mut removed = RemovedAvg::default();
        assert!(!apply_removed(&mut cfs, &mut removed));
        SchedAvg {
            util_avg: 40,
            runnable_avg: 70,
            load_avg: 1024,
            ..SchedAvg::default()
        }
        .remove_from(&mut removed, RunnableKind::Count);
        assert_eq!(removed.nr, 1);
        assert!(apply_removed(&mut cfs, &mut removed));
        assert_eq!(removed, RemovedAvg::default());
        // 4_000_000 - 40 * 46718 = 2_131_280 < 60 * 46718 = 2_803_080.
        assert_eq!(cfs.util_avg, 60);
        assert_eq!(cfs.util_sum, 2_803_080);
        assert_eq!((cfs.runnable_avg, cfs.runnable_sum), (0, 0));
        assert_eq!((cfs.load_avg, cfs.load_sum), (0, 0));
        assert!(!apply_removed(&mut cfs, &mut removed));
    }

    #[test]
    fn removed_uses_cfs_divider() {
        let mut cfs = SchedAvg {
            period_contrib: 500,
            util_avg: 100,
            util_sum: 100 * (46_718 + 500),
            ..SchedAvg::default()
        };
        let mut removed = RemovedAvg {
            util_avg: 30,
            nr: 2,
            ..RemovedAvg::default()
        };
        assert!(apply_removed(&mut cfs, &mut removed));
        assert_eq!(cfs.util_avg, 70);
        assert_eq!(cfs.util_sum, 70 * (46_718 + 500));
    }

    #[test]
    fn post_init_util_hand_cases() {
        assert_eq!(post_init_util(0, 0, 1024, 1024), 512);
        // 300 * 1024 / 1025 = 299.7 -> 299, below the cap (1024 - 300) / 2 = 362.
        assert_eq!(post_init_util(300, 1024, 1024, 1024), 299);
        // 800 * 1024 / 1025 = 799, capped at (1024 - 800) / 2 = 112.
        assert_eq!(post_init_util(800, 1024, 1024, 1024), 112);
        // No spare capacity.
        assert_eq!(post_init_util(1024, 1024, 1024, 1024), 0);
        assert_eq!(post_init_util(500, 1024, 1024, 446), 0);
        // (1025 - 1024) / 2 = 0 in integer division.
        assert_eq!(post_init_util(1024, 1024, 1024, 1025), 0);
        // Little CPU, light task: 100 * 335 / 2049 = 16.
        assert_eq!(post_init_util(100, 2048, 335, 446), 16);
        // Before v6.10 on 64 bits the weight is scale_load(1024) = 1,048,576: 300 * 1,048,576 /
        // 1025 = 306,906, so the cap (1024 - 300) / 2 = 362 decides.
        assert_eq!(post_init_util(300, 1024, 1024 << 10, 1024), 362);
        // A lightly used idle CPU: 20 * 1,048,576 / 2049 = 10,235 > cap 502.
        assert_eq!(post_init_util(20, 2048, 1024 << 10, 1024), 502);
    }

    const F: u32 = UTIL_AVG_UNCHANGED;
    const V1: UtilEstVersion = UtilEstVersion::V1;
    const V2: UtilEstVersion = UtilEstVersion::V2;

    fn ue(enqueued: u32, ewma: u32) -> UtilEst {
        UtilEst { enqueued, ewma }
    }

    fn v1(u: UtilEst, util: u64, cap: u64, fastup: bool) -> UtilEst {
        let mut u = u;
        util_est_update(&mut u, util, 0, cap, fastup, V1);
        u
    }

    fn v2(ewma: u32, util: u64, runnable: u64, cap: u64) -> UtilEst {
        let mut u = ue(0, ewma);
        util_est_update(&mut u, util, runnable, cap, false, V2);
        u
    }

    #[test]
    fn util_est_v1_cases() {
        // Fast-up: jump to the new value.
        assert_eq!(v1(ue(0, 100), 300, 1024, true), ue(300 | F, 300));
        // Without fast-up: 100 + (300 - 100) / 4 = 150.
        assert_eq!(v1(ue(0, 100), 300, 1024, false), ue(300 | F, 150));
        // EWMA step down: 400 + (200 - 400) / 4 = 350.
        assert_eq!(v1(ue(0, 400), 200, 1024, true), ue(200 | F, 350));
        // Shifted form rounds down: (4 * 401 + (200 - 401)) >> 2 = 1403 >> 2 = 350.
        assert_eq!(v1(ue(0, 401), 200, 1024, true), ue(200 | F, 350));
        // Within margin of ewma (|395 - 400| < 10) and of the last enqueued: nothing stored.
        assert_eq!(v1(ue(398, 400), 395, 1024, true), ue(398, 400));
        // Within margin of ewma but enqueued moved by 10: store enqueued, keep ewma.
        assert_eq!(v1(ue(405, 400), 395, 1024, true), ue(395 | F, 400));
        // A difference of exactly 10 is outside the margin.
        assert_eq!(
            v1(ue(0, 400), 390, 1024, true),
            ue(390 | F, (1600 - 10) >> 2)
        );
        // Saturated CPU (util above capacity_orig): don't learn.
        assert_eq!(v1(ue(0, 600), 500, 446, false), ue(0, 600));
        // ...but fast-up comes first.
        assert_eq!(v1(ue(0, 400), 500, 446, true), ue(500 | F, 500));
        // UNCHANGED flag: no update until PELT has run.
        assert_eq!(v1(ue(200 | F, 400), 100, 1024, true), ue(200 | F, 400));
        let mut u = ue(200 | F, 400);
        u.clear_unchanged();
        assert_eq!(u, ue(200, 400));
        assert_eq!(v1(u, 100, 1024, true), ue(100 | F, (1600 - 300) >> 2));
        // Estimates.
        assert_eq!(_task_util_est(&ue(500 | F, 300), V1), 500);
        assert_eq!(_task_util_est(&ue(200 | F, 300), V1), 300);
        assert_eq!(task_util_est(350, &ue(200 | F, 300), V1), 350);
    }

    #[test]
    fn util_est_v1_runnable_check() {
        let run = |runnable| {
            let mut u = ue(0, 400);
            util_est_update(
                &mut u,
                200,
                runnable,
                1024,
                true,
                UtilEstVersion::V1Runnable,
            );
            u
        };
        // 200 + 10 < 211: the task waited, keep ewma.
        assert_eq!(run(211), ue(200 | F, 400));
        assert_eq!(run(210), ue(200 | F, 350));
        // Plain V1 ignores runnable.
        assert_eq!(v1(ue(0, 400), 200, 1024, true), ue(200 | F, 350));
    }

    #[test]
    fn util_est_v2_cases() {
        // Jump up at once.
        assert_eq!(v2(100, 300, 300, 1024), ue(0, 300 | F));
        assert_eq!(v2(300, 300, 300, 1024), ue(0, 300 | F));
        // EWMA step: (4 * 400 - 200) >> 2 = 350.
        assert_eq!(v2(400, 200, 200, 1024), ue(0, 350 | F));
        // (4 * 401 - 201) >> 2 = 350.
        assert_eq!(v2(401, 200, 200, 1024), ue(0, 350 | F));
        // Margin: diff 5 < 10, flag set, ewma kept.
        assert_eq!(v2(400, 395, 395, 1024), ue(0, 400 | F));
        // Runnable test: 200 + 10 < 211 keeps ewma; 210 does not.
        assert_eq!(v2(400, 200, 211, 1024), ue(0, 400 | F));
        assert_eq!(v2(400, 200, 210, 1024), ue(0, 350 | F));
        // Above capacity_orig: return without storing.
        assert_eq!(v2(600, 500, 500, 446), ue(0, 600));
        // UNCHANGED flag blocks the update; clear_unchanged re-arms it.
        assert_eq!(v2(400 | F, 100, 100, 1024), ue(0, 400 | F));
        let mut u = ue(0, 400 | F);
        u.clear_unchanged();
        assert_eq!(u, ue(0, 400));
        // Estimates mask the flag; `enqueued` is ignored.
        assert_eq!(_task_util_est(&ue(999, 400 | F), V2), 400);
        assert_eq!(task_util_est(450, &ue(0, 400 | F), V2), 450);
        assert_eq!(task_util_est(350, &ue(0, 400 | F), V2), 400);
    }

    #[test]
    fn within_margin_is_strict() {
        assert!(within_margin(9, 10));
        assert!(within_margin(-9, 10));
        assert!(!within_margin(10, 10));
        assert!(!within_margin(-10, 10));
        assert!(within_margin(0, 10));
    }
}
