//! Utilization clamping (`kernel/sched/core.c`, spec/kernel.md §1.9): every task's effective
//! `[uclamp_min, uclamp_max]` from its own requests (`sched_setattr()` with
//! `SCHED_FLAG_UTIL_CLAMP`, v5.3+), its cgroup's effective `cpu.uclamp.*` (v5.4+) and the
//! system-wide limits (`sched_util_clamp_min/max`); the runqueue's max-aggregated clamps that
//! schedutil applies (`uclamp_rq_util_with()`); and the clamped fit of a task on a CPU that
//! misfit detection and Energy Aware Scheduling use (v5.6 `uclamp_task_util()`, v6.2
//! `util_fits_cpu()`).
//!
//! The requests of a task nobody set are the defaults: min 0 for fair tasks and
//! `sched_util_clamp_min_rt_default` (1024) for RT tasks, max 1024. A task in a group is
//! restricted by the group as each version does (`uclamp_tg_restrict()`): before v5.13 a
//! request not set by the user, or above the group's value, takes the group's value; from
//! v5.13 (0c18f2ecfcc2) every request is clamped into the group's `[min, max]`.
//!
//! An idle runqueue keeps the max clamp of its last task (`UCLAMP_FLAG_IDLE`), so its blocked
//! utilization does not push the frequency up; from v5.14 a task about to be placed on it is
//! judged by its own clamps alone.
//!
//! Simplified: `util_fits_cpu()` is the v6.2 boolean form (no thermal pressure, no
//! capacity-inversion return of v6.3+); forked tasks take their template's requests (no
//! `SCHED_RESET_ON_FORK`).

use super::cgroup::ROOT_TG;
use super::eas::fits_capacity;
use super::task::{Policy, TaskId};
use crate::cpufreq::schedutil::Uclamp;
use crate::engine::Sim;

/// `UCLAMP_MIN`, `UCLAMP_MAX`.
const MIN: usize = 0;
const MAX: usize = 1;

impl Sim {
    /// The task's effective clamps (`uclamp_eff_get()` for both clamp ids).
    pub fn task_uclamp(&self, t: TaskId) -> (u64, u64) {
        let task = &self.tasks[t];
        let req = task.uclamp_req;
        let [mut min, mut max] = self.uclamp_req_values(t);
        if task.tg != ROOT_TG {
            // uclamp_tg_restrict()
            let (gmin, gmax) = self.tg_uclamp_eff(task.tg);
            if self.prof.at_least(5, 13) {
                min = min.clamp(gmin, gmax);
                max = max.clamp(gmin, gmax);
            } else {
                if req[MIN].is_none() || min > gmin {
                    min = gmin;
                }
                if req[MAX].is_none() || max > gmax {
                    max = gmax;
                }
            }
        }
        // system default restrictions always apply
        (
            min.min(self.tun.sched_util_clamp_min),
            max.min(self.tun.sched_util_clamp_max),
        )
    }

    /// The `sched_uclamp_used` static key: some group or task sets a clamp, or the system
    /// limits were lowered; kept in `Sim::uclamp_in_use` once the groups exist.
    pub fn uclamp_used(&self) -> bool {
        let groups = self
            .tgs
            .iter()
            .skip(1)
            .any(|g| g.uclamp_min > 0 || g.uclamp_max < 1024);
        let tasks = self.compiled.programs.iter().any(|p| p.sets_uclamp());
        // sysctl_sched_uclamp_handler() enables the key when any of the three changes
        let t = &self.tun;
        let limits = t.sched_util_clamp_min < 1024
            || t.sched_util_clamp_max < 1024
            || t.sched_util_clamp_min_rt_default < 1024;
        groups || tasks || limits
    }

    /// `uclamp_rq_inc()`: count a task in its rq's clamps (only while uclamp is in use).
    pub fn uclamp_rq_inc(&mut self, cpu: usize, t: TaskId) {
        if self.uclamp_in_use && !self.rqs[cpu].uclamp_tasks.contains(&t) {
            self.rqs[cpu].uclamp_tasks.push(t);
        }
    }

    /// `uclamp_rq_dec()`: the last task to leave leaves its max clamp on the idle rq.
    pub fn uclamp_rq_dec(&mut self, cpu: usize, t: TaskId) {
        if self.uclamp_in_use {
            let had = self.rqs[cpu].uclamp_tasks.len();
            self.rqs[cpu].uclamp_tasks.retain(|&x| x != t);
            if had > 0 && self.rqs[cpu].uclamp_tasks.is_empty() {
                self.rqs[cpu].uclamp_idle_max = self.task_uclamp(t).1;
            }
        }
    }

    /// `rq->uclamp[]`: the max-aggregated clamps of the runnable tasks (fair and RT); an idle
    /// rq has no min clamp and keeps its last task's max clamp.
    pub fn rq_uclamp(&self, cpu: usize) -> Uclamp {
        if self.rqs[cpu].uclamp_tasks.is_empty() {
            return Uclamp {
                min: 0,
                max: self.rqs[cpu].uclamp_idle_max,
            };
        }
        let mut min = 0;
        let mut max = 0;
        for &t in &self.rqs[cpu].uclamp_tasks {
            let (lo, hi) = self.task_uclamp(t);
            min = min.max(lo);
            max = max.max(hi);
        }
        Uclamp { min, max }
    }

    /// `uclamp_rq_util_with(rq, util, p)`: `util` clamped by the rq's clamps, max-aggregated
    /// with `p`'s when given (the task about to be placed there); unchanged when uclamp is not
    /// in use.
    pub fn uclamp_rq_util_with(&self, cpu: usize, util: u64, p: Option<TaskId>) -> u64 {
        if !self.uclamp_in_use {
            return util;
        }
        let mut c = self.rq_uclamp(cpu);
        if let Some(p) = p {
            let (lo, hi) = self.task_uclamp(p);
            if self.rqs[cpu].uclamp_tasks.is_empty() && self.prof.at_least(5, 14) {
                // v5.14 (3e1493f46390): the idle rq's kept max is the last task's, which p
                // will reset; only p's clamps count
                c = Uclamp { min: lo, max: hi };
            } else {
                c.min = c.min.max(lo);
                c.max = c.max.max(hi);
            }
        }
        crate::cpufreq::schedutil::uclamp_rq_util_with(util, Some(c))
    }

    /// `task_fits_cpu()`: before v5.6 the task's estimated utilization within 80 % of the
    /// CPU's capacity; v5.6-v6.1 the same for the estimate clamped by the task's clamps
    /// (`uclamp_task_util()`); from v6.2 `util_fits_cpu()`.
    pub fn task_fits_cpu(&self, t: TaskId, cpu: usize) -> bool {
        let util = self.task_util_est(t);
        if !self.uclamp_in_use || !self.prof.at_least(5, 6) {
            return fits_capacity(util, self.capacity_of(cpu));
        }
        let (min, max) = self.task_uclamp(t);
        if self.prof.at_least(6, 2) {
            self.util_fits_cpu(util, min, max, cpu)
        } else {
            // uclamp_task_util(): the kernel's clamp(), min(max(v, lo), hi)
            fits_capacity(util.max(min).min(max), self.capacity_of(cpu))
        }
    }

    /// `util_fits_cpu()` (v6.2): the real utilization fits the capacity left for CFS, or a
    /// `uclamp_max` at or below a smaller CPU's original capacity lets it fit there; a boost
    /// (`uclamp_min` above the utilization) must fit the original capacity of a CPU that is
    /// not the biggest.
    pub fn util_fits_cpu(&self, util: u64, uclamp_min: u64, uclamp_max: u64, cpu: usize) -> bool {
        let mut fits = fits_capacity(util, self.capacity_of(cpu));
        if !self.uclamp_in_use {
            return fits;
        }
        let capacity_orig = self.topo.cpus[cpu].capacity_orig;
        let biggest = capacity_orig == 1024;
        let uclamp_max_fits = !(biggest && uclamp_max == 1024) && uclamp_max <= capacity_orig;
        fits = fits || uclamp_max_fits;
        let uclamp_min = uclamp_min.min(uclamp_max);
        if util < uclamp_min && !biggest {
            fits = fits && uclamp_min <= capacity_orig;
        }
        fits
    }

    /// `find_energy_efficient_cpu()`'s test that placing `p` on `cpu` (its utilization then
    /// `util`) leaves the CPU not overutilized: before v5.6 the plain 80 % rule; v5.6-v6.1 the
    /// utilization clamped by the rq's and `p`'s clamps (`uclamp_rq_util_with()`); from v6.2
    /// `util_fits_cpu()` of the real utilization with the max-aggregated clamps (the rq's only
    /// while it has runnable tasks).
    pub fn feec_fits(&self, p: TaskId, cpu: usize, util: u64) -> bool {
        let cap = self.capacity_of(cpu);
        if !self.uclamp_in_use || !self.prof.at_least(5, 6) {
            return fits_capacity(util, cap);
        }
        if !self.prof.at_least(6, 2) {
            return fits_capacity(self.uclamp_rq_util_with(cpu, util, Some(p)), cap);
        }
        let (mut min, mut max) = self.task_uclamp(p);
        if !self.rqs[cpu].uclamp_tasks.is_empty() {
            let c = self.rq_uclamp(cpu);
            min = min.max(c.min);
            max = max.max(c.max);
        }
        self.util_fits_cpu(util, min, max, cpu)
    }

    /// A task's requests as `sched_setattr()` sees them: its own, or the defaults (min 0, or the
    /// RT default for RT tasks; max 1024).
    fn uclamp_req_values(&self, t: TaskId) -> [u64; 2] {
        let req = self.tasks[t].uclamp_req;
        [
            req[MIN].unwrap_or(self.default_uclamp_min(self.is_rt(t))),
            req[MAX].unwrap_or(1024),
        ]
    }

    /// The `uclamp_min` request of a task that set none: 0, or for RT tasks
    /// `sched_util_clamp_min_rt_default`.
    fn default_uclamp_min(&self, rt: bool) -> u64 {
        if rt {
            self.tun.sched_util_clamp_min_rt_default
        } else {
            0
        }
    }

    /// `sched_setattr()` of the running task `t` with `SCHED_FLAG_UTIL_CLAMP`: the new requests
    /// take effect in its rq's clamps at once (`uclamp_update_active()`). A clamp left out
    /// keeps its current request, and `uclamp_validate()` refuses a min above the max that
    /// results (EINVAL): an error naming the task.
    pub fn sched_setattr_uclamp(
        &mut self,
        t: TaskId,
        cpu: usize,
        req: [Option<u32>; 2],
    ) -> Result<(), String> {
        let cur = self.uclamp_req_values(t);
        let lo = req[MIN].map_or(cur[MIN], u64::from);
        let hi = req[MAX].map_or(cur[MAX], u64::from);
        if lo > hi {
            return Err(format!(
                "task '{}': set_uclamp: uclamp_min {lo} would exceed uclamp_max {hi} \
                 (sched_setattr() refuses it with EINVAL)",
                self.tasks[t].comm
            ));
        }
        for (id, v) in req.into_iter().enumerate() {
            if let Some(v) = v {
                self.tasks[t].uclamp_req[id] = Some(v as u64);
            }
        }
        // the clamps count at once in the frequency request
        self.cpufreq_update_util(cpu, 0);
        Ok(())
    }

    /// The requests each task template starts with must pass `uclamp_validate()` against the
    /// defaults they replace (an RT task's min request is the RT default, 1024).
    pub fn check_initial_uclamp(&self) -> Result<(), String> {
        for p in &self.compiled.programs {
            let rt = Policy::parse(&p.policy).is_ok_and(Policy::is_rt);
            let lo = p.uclamp[MIN].map_or(self.default_uclamp_min(rt), u64::from);
            let hi = p.uclamp[MAX].map_or(1024, u64::from);
            if lo > hi {
                return Err(format!(
                    "task '{}': uclamp_max = {hi} is below its default uclamp_min of {lo} \
                     (sched_setattr() refuses it with EINVAL); set uclamp_min too",
                    p.name
                ));
            }
        }
        Ok(())
    }
}
