//! The fair class (`kernel/sched/fair.c`): entity accounting, enqueue/dequeue, pick, wakeup
//! and tick preemption in both flavours — CFS (before v6.6: vruntime, `sched_slice`,
//! `check_preempt_tick`, sleeper credit) and EEVDF (v6.6+: lag, virtual deadlines, eligibility,
//! RUN_TO_PARITY) — and the PELT updates at the kernel's call sites (spec/kernel.md §1, §8).
//!
//! Task groups are flattened onto the root cfs_rq with hierarchical weights
//! ([`super::cgroup`]); CFS bandwidth hooks in at `update_curr`, enqueue, dequeue and
//! `put_prev` ([`super::bandwidth`]).
//!
//! Simplifications: no delayed
//! dequeue or custom slices (v6.12), the queued entities are scanned linearly instead of kept
//! in an rbtree (identical decisions, cheaper for the small runqueues simulated).

use super::pelt::{self, RunnableKind, UtilEstVersion};
use super::task::{Policy, TaskId, NICE_0_LOAD};
use crate::engine::Sim;
use crate::sim::profile::FairFlavor;

/// Enqueue flags (`ENQUEUE_WAKEUP`, `ENQUEUE_INITIAL`, `ENQUEUE_MIGRATED`).
#[derive(Clone, Copy, Debug, Default)]
pub struct EnqFlags {
    pub wakeup: bool,
    pub initial: bool,
    pub migrated: bool,
    /// The task comes out of iowait (`SCHED_CPUFREQ_IOWAIT` for cpufreq).
    pub iowait: bool,
}

/// `update_load_avg()` flags.
#[derive(Clone, Copy, Debug, Default)]
pub struct UpdFlags {
    pub do_attach: bool,
    pub do_detach: bool,
}

/// `calc_delta_fair()`: `delta × NICE_0_LOAD / weight`.
pub fn calc_delta_fair(delta: u64, weight: u64) -> u64 {
    if weight == NICE_0_LOAD {
        delta
    } else {
        ((delta as u128 * NICE_0_LOAD as u128) / weight.max(1) as u128) as u64
    }
}

impl Sim {
    pub fn util_est_version(&self) -> UtilEstVersion {
        if self.prof.util_est_v2 {
            UtilEstVersion::V2
        } else if self.prof.at_least(6, 8) {
            UtilEstVersion::V1Runnable
        } else {
            UtilEstVersion::V1
        }
    }

    /// The layout of the second PELT signal: the weighted `runnable_load` before v5.7, the
    /// count-based `runnable` from v5.7.
    pub(crate) fn pelt_kind(&self) -> RunnableKind {
        if self.prof.pelt_runnable_weighted {
            RunnableKind::Weighted
        } else {
            RunnableKind::Count
        }
    }

    // ------------------------------------------------------------------ clocks

    /// `update_rq_clock()` with `update_rq_clock_pelt()`: the PELT clock advances scaled by CPU
    /// capacity and frequency while busy and catches up with the task clock while idle.
    pub fn update_rq_clock(&mut self, cpu: usize) {
        let now = self.now + super::rq::BOOT_CLOCK_NS;
        let cap = self.topo.cpus[cpu].capacity_orig;
        let fscale = self.freq_scale(cpu);
        let rq = &mut self.rqs[cpu];
        let delta = now - rq.clock_task;
        if delta == 0 {
            return;
        }
        rq.clock_task = now;
        if rq.curr.is_none() {
            rq.clock_pelt = rq.clock_task;
        } else {
            rq.clock_pelt += pelt::cap_scale(pelt::cap_scale(delta, cap), fscale);
        }
    }

    /// `update_idle_rq_clock_pelt()`: on entering idle, count the time a saturated CPU's scaled
    /// clock fell behind as lost, then resync.
    pub fn update_idle_rq_clock_pelt(&mut self, cpu: usize) {
        let rq = &mut self.rqs[cpu];
        let divider = ((pelt::LOAD_AVG_MAX - 1024) << 10) - pelt::LOAD_AVG_MAX;
        if rq.cfs.avg.util_sum >= divider {
            rq.lost_idle_time += rq.clock_task.saturating_sub(rq.clock_pelt);
        }
        rq.clock_pelt = rq.clock_task;
    }

    // ------------------------------------------------------------------ PELT call sites

    /// `update_load_avg(cfs_rq, se, flags)` for the root cfs_rq of `cpu`.
    pub fn update_load_avg(&mut self, cpu: usize, se: Option<TaskId>, f: UpdFlags) {
        let now = self.rqs[cpu].clock_pelt();
        let kind = self.pelt_kind();
        if let Some(t) = se {
            let running = self.rqs[cpu].cfs.curr == Some(t);
            let task = &mut self.tasks[t];
            if task.se.avg.last_update_time != 0 {
                let on = task.se.on_rq as u64;
                let w = task.se.weight;
                if task.se.avg.update(now, on, on, running as u64, w, w, kind) {
                    task.util_est.clear_unchanged();
                }
            }
        }
        let mut decayed = self.update_cfs_rq_load_avg(cpu, now);
        if let Some(t) = se {
            let w = self.tasks[t].se.weight;
            if f.do_attach && self.tasks[t].se.avg.last_update_time == 0 {
                let cfs = &mut self.rqs[cpu].cfs.avg;
                self.tasks[t].se.avg.attach_to(cfs, w, kind);
                decayed = true;
            } else if f.do_detach {
                let cfs = &mut self.rqs[cpu].cfs.avg;
                self.tasks[t].se.avg.detach_from(cfs, w, kind);
                decayed = true;
            }
        }
        if decayed {
            self.cpufreq_update_util(cpu, 0);
        }
    }

    /// `update_cfs_rq_load_avg()`: apply removed load, then accumulate the cfs_rq signal.
    pub fn update_cfs_rq_load_avg(&mut self, cpu: usize, now: u64) -> bool {
        let kind = self.pelt_kind();
        let cfs = &mut self.rqs[cpu].cfs;
        let mut decayed = pelt::apply_removed(&mut cfs.avg, &mut cfs.removed);
        let runnable = match kind {
            RunnableKind::Count => cfs.nr_running as u64,
            RunnableKind::Weighted => cfs.load_weight,
        };
        decayed |= cfs.avg.update(
            now,
            cfs.load_weight,
            runnable,
            cfs.curr.is_some() as u64,
            1,
            1,
            kind,
        );
        if cfs.avg.load_avg > 0 || cfs.avg.util_avg > 0 || cfs.avg.runnable_avg > 0 {
            self.rqs[cpu].has_blocked_load = true;
        }
        decayed
    }

    /// `update_blocked_averages()`: decay an idle CPU's signals.
    pub fn update_blocked_averages(&mut self, cpu: usize) {
        self.update_rq_clock(cpu);
        self.update_rt_rq_load_avg(cpu);
        let now = self.rqs[cpu].clock_pelt();
        let decayed = self.update_cfs_rq_load_avg(cpu, now);
        let a = &self.rqs[cpu].cfs.avg;
        if a.load_avg == 0 && a.util_avg == 0 && a.runnable_avg == 0 {
            self.rqs[cpu].has_blocked_load = false;
        }
        if decayed {
            self.cpufreq_update_util(cpu, 0);
        }
    }

    /// `task_util(p)`.
    pub fn task_util(&self, t: TaskId) -> u64 {
        self.tasks[t].se.avg.util_avg
    }

    /// `task_util_est(p)`.
    pub fn task_util_est(&self, t: TaskId) -> u64 {
        let task = &self.tasks[t];
        if !self.prof.feat.util_est {
            return task.se.avg.util_avg;
        }
        pelt::task_util_est(
            task.se.avg.util_avg,
            &task.util_est,
            self.util_est_version(),
        )
    }

    fn own_util_est(&self, t: TaskId) -> u64 {
        pelt::_task_util_est(&self.tasks[t].util_est, self.util_est_version())
    }

    /// `cpu_util(cpu, p, dst_cpu, boost)` (spec §1.10).
    pub fn cpu_util(&self, cpu: usize, p: Option<TaskId>, dst: Option<usize>, boost: bool) -> u64 {
        let cfs = &self.rqs[cpu].cfs;
        let mut util = cfs.avg.util_avg;
        if boost {
            util = util.max(cfs.avg.runnable_avg);
        }
        if let Some(p) = p {
            let tu = self.task_util(p);
            let on_cpu = self.tasks[p].cpu == cpu;
            if on_cpu && dst != Some(cpu) {
                util = util.saturating_sub(tu);
            } else if !on_cpu && dst == Some(cpu) {
                util += tu;
            }
        }
        if self.prof.feat.util_est {
            let mut est = cfs.util_est;
            if let Some(p) = p {
                if dst == Some(cpu) {
                    est += self.own_util_est(p);
                } else if self.tasks[p].se.on_rq && self.tasks[p].cpu == cpu {
                    est = est.saturating_sub(self.own_util_est(p));
                }
            }
            util = util.max(est);
        }
        util.min(self.topo.cpus[cpu].capacity_orig)
    }

    /// `cpu_util_cfs(cpu)`.
    pub fn cpu_util_cfs(&self, cpu: usize) -> u64 {
        self.cpu_util(cpu, None, None, false)
    }

    /// `cpu_load(rq)`: the root cfs_rq's load_avg (v5.7+). Before v5.7 the same callers read
    /// `weighted_cpuload()` / `cpu_runnable_load()`: the runnable load of the queued entities
    /// only, without the blocked load of sleeping tasks.
    pub fn cpu_load(&self, cpu: usize) -> u64 {
        let avg = &self.rqs[cpu].cfs.avg;
        match self.pelt_kind() {
            RunnableKind::Weighted => avg.runnable_avg,
            RunnableKind::Count => avg.load_avg,
        }
    }

    /// `capacity_of(cpu)`.
    pub fn capacity_of(&self, cpu: usize) -> u64 {
        self.rqs[cpu].cpu_capacity
    }

    // ------------------------------------------------------------------ vruntime bookkeeping

    /// `update_curr()`: charge the running entity for the time since `exec_start`.
    pub fn update_curr(&mut self, cpu: usize) {
        let Some(t) = self.rqs[cpu].cfs.curr else {
            return;
        };
        let now = self.rqs[cpu].clock_task;
        let se = &mut self.tasks[t].se;
        let delta = now.saturating_sub(se.exec_start);
        if delta == 0 {
            return;
        }
        se.exec_start = now;
        se.sum_exec_runtime += delta;
        se.vruntime += calc_delta_fair(delta, se.weight);
        self.tasks[t].stats.cpu_ns += delta;
        if self.prof.fair == FairFlavor::Eevdf {
            self.update_deadline(cpu, t);
        }
        self.update_min_vruntime(cpu);
        if self.tasks[t].tg != super::cgroup::ROOT_TG {
            self.account_cfs_rq_runtime(cpu, t, delta);
        }
        self.dl_server_update(cpu, delta);
    }

    /// `update_min_vruntime()`: monotonic, follows min(curr, leftmost).
    fn update_min_vruntime(&mut self, cpu: usize) {
        let cfs = &self.rqs[cpu].cfs;
        let curr = cfs
            .curr
            .filter(|&c| self.tasks[c].se.on_rq)
            .map(|c| self.tasks[c].se.vruntime);
        let left = cfs.queued.iter().map(|&t| self.tasks[t].se.vruntime).min();
        let v = match (curr, left) {
            (Some(c), Some(l)) => c.min(l),
            (Some(c), None) => c,
            (None, Some(l)) => l,
            (None, None) => return,
        };
        let cfs = &mut self.rqs[cpu].cfs;
        if (v as i64).wrapping_sub(cfs.min_vruntime as i64) > 0 {
            cfs.min_vruntime = v;
        }
    }

    /// Entities that count for V: the queued ones and an on-rq curr.
    fn eevdf_members(&self, cpu: usize) -> impl Iterator<Item = TaskId> + '_ {
        let cfs = &self.rqs[cpu].cfs;
        cfs.queued
            .iter()
            .copied()
            .chain(cfs.curr.filter(|&c| self.tasks[c].se.on_rq))
    }

    /// (Σ key·w, Σ w) with keys relative to min_vruntime.
    fn avg_vruntime_sums(&self, cpu: usize) -> (i128, i128) {
        let origin = self.rqs[cpu].cfs.min_vruntime as i128;
        let mut sum = 0i128;
        let mut load = 0i128;
        for t in self.eevdf_members(cpu) {
            let se = &self.tasks[t].se;
            let w = se.weight as i128;
            sum += (se.vruntime as i128 - origin) * w;
            load += w;
        }
        (sum, load)
    }

    /// `avg_vruntime()`: V, the weighted average vruntime (floor division).
    pub fn avg_vruntime(&self, cpu: usize) -> u64 {
        let origin = self.rqs[cpu].cfs.min_vruntime as i128;
        let (sum, load) = self.avg_vruntime_sums(cpu);
        let avg = if load > 0 { sum.div_euclid(load) } else { 0 };
        (origin + avg).max(0) as u64
    }

    /// `entity_eligible()`: v ≤ V without division.
    pub fn entity_eligible(&self, cpu: usize, t: TaskId) -> bool {
        let sums = self.avg_vruntime_sums(cpu);
        self.eligible_with(cpu, sums, t)
    }

    fn eligible_with(&self, cpu: usize, (sum, load): (i128, i128), t: TaskId) -> bool {
        let origin = self.rqs[cpu].cfs.min_vruntime as i128;
        let key = self.tasks[t].se.vruntime as i128 - origin;
        sum >= key * load
    }

    /// `update_deadline()`: a request is done when vruntime passes the deadline.
    fn update_deadline(&mut self, cpu: usize, t: TaskId) {
        let slice = self.tun.sched_base_slice_ns;
        let se = &mut self.tasks[t].se;
        if (se.vruntime as i64).wrapping_sub(se.deadline as i64) < 0 {
            return;
        }
        se.slice = slice;
        se.deadline = se.vruntime + calc_delta_fair(slice, se.weight);
        if self.rqs[cpu].cfs.nr_running > 1 {
            self.resched_curr(cpu);
            self.clear_buddies(cpu);
        }
    }

    /// `update_entity_lag()`: save V − v, clamped.
    fn update_entity_lag(&mut self, cpu: usize, t: TaskId) {
        let v = self.avg_vruntime(cpu) as i128;
        let tick = self.prof.tick_ns();
        let se = &self.tasks[t].se;
        let limit = calc_delta_fair((2 * se.slice).max(tick), se.weight) as i128;
        let lag = (v - se.vruntime as i128).clamp(-limit, limit);
        self.tasks[t].se.vlag = lag as i64;
    }

    /// `sched_slice()` (CFS): the entity's share of the period.
    pub fn sched_slice(&self, cpu: usize, t: TaskId) -> u64 {
        let cfs = &self.rqs[cpu].cfs;
        let se = &self.tasks[t].se;
        let nr = cfs.nr_running as u64 + (!se.on_rq) as u64;
        let tun = &self.tun;
        let period = if nr > tun.sched_nr_latency {
            nr * tun.sched_min_granularity_ns
        } else {
            tun.sched_latency_ns
        };
        let load = cfs.load_weight + if se.on_rq { 0 } else { se.weight };
        let mut slice = (period as u128 * se.weight as u128 / load.max(1) as u128) as u64;
        if self.prof.feat.base_slice {
            slice = slice.max(tun.sched_min_granularity_ns);
        }
        slice
    }

    /// `place_entity()`.
    fn place_entity(&mut self, cpu: usize, t: TaskId, f: EnqFlags) {
        match self.prof.fair {
            FairFlavor::Eevdf => self.place_entity_eevdf(cpu, t, f),
            FairFlavor::Cfs => self.place_entity_cfs(cpu, t, f),
        }
    }

    fn place_entity_eevdf(&mut self, cpu: usize, t: TaskId, f: EnqFlags) {
        let v = self.avg_vruntime(cpu) as i128;
        let slice = self.tun.sched_base_slice_ns;
        let w = self.tasks[t].se.weight;
        let mut vslice = calc_delta_fair(slice, w);
        let mut lag: i128 = 0;
        if self.prof.feat.place_lag && self.rqs[cpu].cfs.nr_running > 0 {
            let (_, load) = self.avg_vruntime_sums(cpu);
            lag = self.tasks[t].se.vlag as i128;
            if load > 0 {
                lag = lag * (load + w as i128) / load;
            }
        }
        if f.initial && self.prof.feat.place_deadline_initial {
            vslice /= 2;
        }
        let se = &mut self.tasks[t].se;
        se.vruntime = (v - lag).max(0) as u64;
        se.slice = slice;
        se.deadline = se.vruntime + vslice;
    }

    fn place_entity_cfs(&mut self, cpu: usize, t: TaskId, f: EnqFlags) {
        let mut v = self.rqs[cpu].cfs.min_vruntime;
        if f.initial && self.prof.feat.start_debit {
            v += calc_delta_fair(self.sched_slice(cpu, t), self.tasks[t].se.weight);
        }
        if !f.initial {
            let mut thresh = self.tun.sched_latency_ns;
            if self.prof.feat.gentle_fair_sleepers {
                thresh /= 2;
            }
            v = v.saturating_sub(thresh);
        }
        let se = &mut self.tasks[t].se;
        // max_vruntime(): never gain from sleeping beyond the credit
        if (v as i64).wrapping_sub(se.vruntime as i64) > 0 {
            se.vruntime = v;
        }
    }

    // ------------------------------------------------------------------ enqueue / dequeue

    /// `enqueue_task_fair()` (with `enqueue_entity()`).
    pub fn enqueue_task_fair(&mut self, cpu: usize, t: TaskId, f: EnqFlags) {
        let grouped = self.tasks[t].tg != super::cgroup::ROOT_TG;
        if grouped {
            if let Some(g) = self.throttled_ancestor(self.tasks[t].tg, cpu) {
                // enqueued into a throttled hierarchy: it waits for the unthrottle
                self.tasks[t].throttled = true;
                self.tgs[g].rqs[cpu].held.push(t);
                return;
            }
        }
        self.enqueue_task_fair_inner(cpu, t, f);
        if grouped {
            self.account_group_nr_running(cpu, t, true);
            self.update_cfs_group(cpu);
            self.check_enqueue_throttle(cpu, t);
        }
    }

    fn enqueue_task_fair_inner(&mut self, cpu: usize, t: TaskId, f: EnqFlags) {
        let is_curr = self.rqs[cpu].cfs.curr == Some(t);
        let cfs_flavor = self.prof.fair == FairFlavor::Cfs;
        // CFS keeps a migrating or new task's vruntime relative to its old min_vruntime.
        let renorm = cfs_flavor && (!f.wakeup || f.migrated);
        if renorm && is_curr {
            let min = self.rqs[cpu].cfs.min_vruntime;
            let se = &mut self.tasks[t].se;
            se.vruntime = se.vruntime.wrapping_add(min);
        }
        self.update_curr(cpu);
        if renorm && !is_curr {
            let min = self.rqs[cpu].cfs.min_vruntime;
            let se = &mut self.tasks[t].se;
            se.vruntime = se.vruntime.wrapping_add(min);
        }
        self.update_load_avg(
            cpu,
            Some(t),
            UpdFlags {
                do_attach: true,
                ..UpdFlags::default()
            },
        );
        if self.pelt_kind() == RunnableKind::Weighted {
            let w = self.tasks[t].se.weight;
            let avg = self.tasks[t].se.avg;
            avg.enqueue_runnable_load(&mut self.rqs[cpu].cfs.avg, w);
        }
        if self.prof.feat.util_est {
            self.rqs[cpu].cfs.util_est += self.own_util_est(t);
        }
        if !cfs_flavor || f.wakeup || f.initial {
            self.place_entity(cpu, t, f);
        }
        let w = self.tasks[t].se.weight;
        let first_fair = self.rqs[cpu].cfs.nr_running == 0;
        let cfs = &mut self.rqs[cpu].cfs;
        cfs.load_weight += w;
        cfs.nr_running += 1;
        if !is_curr {
            cfs.queued.push(t);
        }
        if first_fair && self.fair_server_enabled() {
            if self.rqs[cpu].rt.nr_queued() == 0 && self.rqs[cpu].curr.is_none() {
                self.dl_server_update_idle_time(cpu);
            }
            self.dl_server_start(cpu);
        }
        self.tasks[t].se.on_rq = true;
        let rq = &mut self.rqs[cpu];
        rq.cfs_tasks.push(t);
        if rq.nr_running() == 2 {
            self.nr_overloaded += 1;
        }
        if f.iowait {
            self.cpufreq_update_util(cpu, crate::cpufreq::SCHED_CPUFREQ_IOWAIT);
        }
        if !f.initial {
            self.update_overutilized_status(cpu);
        }
    }

    /// `dequeue_task_fair()` (with `dequeue_entity()` and `util_est_update()`).
    pub fn dequeue_task_fair(&mut self, cpu: usize, t: TaskId, sleep: bool, detach: bool) {
        if self.tasks[t].throttled {
            self.unhold_task(cpu, t);
            return;
        }
        self.dequeue_task_fair_inner(cpu, t, sleep, detach, sleep);
        let g = self.tasks[t].tg;
        if g != super::cgroup::ROOT_TG {
            self.account_group_nr_running(cpu, t, false);
            let mut x = g;
            while x != super::cgroup::ROOT_TG {
                self.return_cfs_rq_runtime(cpu, x);
                x = self.tg_up(x);
            }
            self.update_cfs_group(cpu);
        }
    }

    /// Take a task off the CPU because its group cfs_rq is throttled: a sleep-like dequeue
    /// that leaves its util_est alone.
    pub fn dequeue_task_fair_throttle(&mut self, cpu: usize, t: TaskId) {
        self.dequeue_task_fair_inner(cpu, t, true, false, false);
        self.account_group_nr_running(cpu, t, false);
    }

    /// Drop a held task from its throttled cfs_rq's list.
    fn unhold_task(&mut self, cpu: usize, t: TaskId) {
        self.tasks[t].throttled = false;
        let mut g = self.tasks[t].tg;
        while g != super::cgroup::ROOT_TG {
            self.tgs[g].rqs[cpu].held.retain(|&x| x != t);
            g = self.tg_up(g);
        }
    }

    /// `reweight_entity()` for a task's hierarchical weight: the root's load and PELT load
    /// follow, and EEVDF keeps the lag and the deadline's distance in real time.
    pub fn reweight_task_fair(&mut self, cpu: usize, t: TaskId, w: u64) {
        let old = self.tasks[t].se.weight;
        let on_rq = self.tasks[t].se.on_rq;
        if on_rq {
            self.update_curr(cpu);
        }
        let eevdf = self.prof.fair == FairFlavor::Eevdf;
        let v_avg = if on_rq && eevdf {
            Some(self.avg_vruntime(cpu) as i128)
        } else {
            None
        };
        let weighted = self.pelt_kind() == RunnableKind::Weighted;
        let se = &mut self.tasks[t].se;
        if se.avg.last_update_time != 0 {
            let cfs = &mut self.rqs[cpu].cfs.avg;
            cfs.load_avg = cfs.load_avg.saturating_sub(se.avg.load_avg);
            cfs.load_sum = cfs.load_sum.saturating_sub(old * se.avg.load_sum);
            se.avg.load_avg = w * se.avg.load_sum / se.avg.divider();
            cfs.load_avg += se.avg.load_avg;
            cfs.load_sum += w * se.avg.load_sum;
            if weighted {
                // the runnable load is re-weighted too, and re-queued at the new weight
                if on_rq {
                    se.avg.dequeue_runnable_load(cfs, old);
                }
                se.avg.runnable_avg = w * se.avg.runnable_sum / se.avg.divider();
                if on_rq {
                    se.avg.enqueue_runnable_load(cfs, w);
                }
            }
        }
        if let Some(v) = v_avg {
            let lag = v - se.vruntime as i128;
            let vr = v - lag * old as i128 / w as i128;
            let rel = (se.deadline as i128 - se.vruntime as i128) * old as i128 / w as i128;
            se.vruntime = vr.max(0) as u64;
            se.deadline = (vr + rel).max(0) as u64;
        }
        se.weight = w;
        if on_rq {
            let cfs = &mut self.rqs[cpu].cfs;
            cfs.load_weight = cfs.load_weight - old + w;
        }
    }

    fn dequeue_task_fair_inner(
        &mut self,
        cpu: usize,
        t: TaskId,
        sleep: bool,
        detach: bool,
        util_est_update: bool,
    ) {
        self.update_curr(cpu);
        self.update_load_avg(
            cpu,
            Some(t),
            UpdFlags {
                do_detach: detach,
                ..UpdFlags::default()
            },
        );
        if self.pelt_kind() == RunnableKind::Weighted {
            let w = self.tasks[t].se.weight;
            let avg = self.tasks[t].se.avg;
            avg.dequeue_runnable_load(&mut self.rqs[cpu].cfs.avg, w);
        }
        if self.prof.feat.util_est {
            let own = self.own_util_est(t);
            let cfs = &mut self.rqs[cpu].cfs;
            cfs.util_est = cfs.util_est.saturating_sub(own);
        }
        if self.prof.fair == FairFlavor::Eevdf {
            self.update_entity_lag(cpu, t);
        }
        self.clear_buddy_of(cpu, t);
        let w = self.tasks[t].se.weight;
        let cfs = &mut self.rqs[cpu].cfs;
        if cfs.curr != Some(t) {
            if let Some(i) = cfs.queued.iter().position(|&x| x == t) {
                cfs.queued.swap_remove(i);
            }
        }
        cfs.load_weight -= w;
        cfs.nr_running -= 1;
        if self.rqs[cpu].nr_running() == 1 {
            self.nr_overloaded -= 1;
        }
        if self.rqs[cpu].cfs.nr_running == 0 {
            self.dl_server_stop(cpu);
        }
        self.tasks[t].se.on_rq = false;
        if self.prof.fair == FairFlavor::Cfs && !sleep {
            let min = self.rqs[cpu].cfs.min_vruntime;
            let se = &mut self.tasks[t].se;
            se.vruntime = se.vruntime.wrapping_sub(min);
        }
        self.update_min_vruntime(cpu);
        if let Some(i) = self.rqs[cpu].cfs_tasks.iter().position(|&x| x == t) {
            self.rqs[cpu].cfs_tasks.remove(i);
        }
        if util_est_update && self.prof.feat.util_est {
            let task = &self.tasks[t];
            let util = task.se.avg.util_avg;
            let runnable = task.se.avg.runnable_avg;
            let cap = self.topo.cpus[cpu].capacity_orig;
            let fastup = self.prof.feat.util_est_fastup;
            let version = self.util_est_version();
            pelt::util_est_update(
                &mut self.tasks[t].util_est,
                util,
                runnable,
                cap,
                fastup,
                version,
            );
        }
    }

    // ------------------------------------------------------------------ pick / put

    /// `set_next_entity()`.
    pub fn set_next_entity(&mut self, cpu: usize, t: TaskId) {
        if self.tasks[t].se.on_rq {
            let cfs = &mut self.rqs[cpu].cfs;
            if let Some(i) = cfs.queued.iter().position(|&x| x == t) {
                cfs.queued.swap_remove(i);
            }
            self.update_load_avg(cpu, Some(t), UpdFlags::default());
        }
        self.rqs[cpu].cfs.curr = Some(t);
        let now = self.rqs[cpu].clock_task;
        let se = &mut self.tasks[t].se;
        se.exec_start = now;
        se.prev_sum_exec_runtime = se.sum_exec_runtime;
        // RUN_TO_PARITY marker: curr is protected until it reaches this deadline.
        se.vlag = se.deadline as i64;
        let tasks = &mut self.rqs[cpu].cfs_tasks;
        if let Some(i) = tasks.iter().position(|&x| x == t) {
            tasks.remove(i);
            tasks.push(t);
        }
    }

    /// `put_prev_entity()`.
    pub fn put_prev_task_fair(&mut self, cpu: usize, t: TaskId) {
        if self.tasks[t].se.on_rq {
            self.update_curr(cpu);
            self.update_load_avg(cpu, Some(t), UpdFlags::default());
            self.rqs[cpu].cfs.queued.push(t);
        }
        self.rqs[cpu].cfs.curr = None;
    }

    /// `pick_next_entity()` after prev was put back.
    pub fn pick_next_task_fair(&mut self, cpu: usize) -> Option<TaskId> {
        if self.rqs[cpu].cfs.nr_running == 0 {
            return None;
        }
        let next = match self.prof.fair {
            FairFlavor::Eevdf => self.pick_eevdf(cpu, false),
            FairFlavor::Cfs => self.pick_cfs(cpu),
        }?;
        self.set_next_entity(cpu, next);
        Some(next)
    }

    fn leftmost(&self, cpu: usize) -> Option<TaskId> {
        self.rqs[cpu]
            .cfs
            .queued
            .iter()
            .copied()
            .min_by_key(|&t| (self.tasks[t].se.vruntime, self.tasks[t].pid))
    }

    fn pick_cfs(&mut self, cpu: usize) -> Option<TaskId> {
        let picked = self.pick_cfs_entity(cpu)?;
        // pick_next_entity() ends with clear_buddies(cfs_rq, se)
        self.clear_buddy_of(cpu, picked);
        Some(picked)
    }

    fn pick_cfs_entity(&self, cpu: usize) -> Option<TaskId> {
        let mut left = self.leftmost(cpu)?;
        let cfs = &self.rqs[cpu].cfs;
        if cfs.skip_buddy == Some(left) {
            // avoid the task that yielded if the next one is close enough
            let second = cfs
                .queued
                .iter()
                .copied()
                .filter(|&t| t != left)
                .min_by_key(|&t| (self.tasks[t].se.vruntime, self.tasks[t].pid));
            if let Some(s) = second {
                if self.wakeup_preempt_entity(s, left) < 1 {
                    left = s;
                }
            }
        }
        if let Some(n) = cfs
            .next_buddy
            .filter(|&n| self.tasks[n].se.on_rq && n != left)
        {
            if self.wakeup_preempt_entity(n, left) < 1 {
                return Some(n);
            }
        }
        if let Some(l) = cfs
            .last_buddy
            .filter(|&l| self.tasks[l].se.on_rq && l != left)
        {
            if self.wakeup_preempt_entity(l, left) < 1 {
                return Some(l);
            }
        }
        Some(left)
    }

    /// `pick_eevdf()`: the eligible entity with the earliest deadline; with `protect`, a curr
    /// still within its RUN_TO_PARITY protection wins.
    pub fn pick_eevdf(&self, cpu: usize, protect: bool) -> Option<TaskId> {
        let cfs = &self.rqs[cpu].cfs;
        let curr = cfs.curr.filter(|&c| self.tasks[c].se.on_rq);
        if cfs.queued.len() == 1 && curr.is_none() {
            return Some(cfs.queued[0]);
        }
        let sums = self.avg_vruntime_sums(cpu);
        let curr = curr.filter(|&c| self.eligible_with(cpu, sums, c));
        if protect && self.prof.feat.run_to_parity {
            if let Some(c) = curr {
                if self.tasks[c].se.vlag == self.tasks[c].se.deadline as i64 {
                    return Some(c);
                }
            }
        }
        let best = cfs
            .queued
            .iter()
            .copied()
            .filter(|&t| self.eligible_with(cpu, sums, t))
            .min_by_key(|&t| (self.tasks[t].se.deadline, self.tasks[t].pid));
        match (curr, best) {
            (Some(c), Some(b)) if self.tasks[c].se.deadline < self.tasks[b].se.deadline => Some(c),
            (Some(c), None) => Some(c),
            (_, Some(b)) => Some(b),
            (None, None) => self.leftmost(cpu),
        }
    }

    // ------------------------------------------------------------------ buddies

    fn clear_buddies(&mut self, cpu: usize) {
        let cfs = &mut self.rqs[cpu].cfs;
        cfs.last_buddy = None;
        cfs.next_buddy = None;
        cfs.skip_buddy = None;
    }

    /// `yield_task_fair()`: CFS marks the task as the skip buddy; EEVDF (v6.6–v6.11 form) pushes
    /// its deadline one slice later. Then the CPU reschedules.
    pub fn yield_task_fair(&mut self, cpu: usize, t: TaskId) {
        self.update_rq_clock(cpu);
        self.update_curr(cpu);
        match self.prof.fair {
            FairFlavor::Cfs => {
                self.clear_buddies(cpu);
                if self.rqs[cpu].cfs.nr_running > 1 {
                    self.rqs[cpu].cfs.skip_buddy = Some(t);
                }
            }
            FairFlavor::Eevdf => {
                let se = &mut self.tasks[t].se;
                se.deadline += calc_delta_fair(se.slice, se.weight);
            }
        }
        self.queue_schedule(cpu);
    }

    fn clear_buddy_of(&mut self, cpu: usize, t: TaskId) {
        let cfs = &mut self.rqs[cpu].cfs;
        if cfs.last_buddy == Some(t) {
            cfs.last_buddy = None;
        }
        if cfs.skip_buddy == Some(t) {
            cfs.skip_buddy = None;
        }
        if cfs.next_buddy == Some(t) {
            cfs.next_buddy = None;
        }
    }

    /// `wakeup_preempt_entity(curr, se)` (CFS): 1 if `se` should preempt `curr`.
    fn wakeup_preempt_entity(&self, curr: TaskId, se: TaskId) -> i32 {
        let vdiff = self.tasks[curr].se.vruntime as i64 - self.tasks[se].se.vruntime as i64;
        if vdiff <= 0 {
            return -1;
        }
        let gran = calc_delta_fair(
            self.tun.sched_wakeup_granularity_ns,
            self.tasks[se].se.weight,
        );
        if vdiff > gran as i64 {
            1
        } else {
            0
        }
    }

    // ------------------------------------------------------------------ preemption

    /// `check_preempt_wakeup()` / `wakeup_preempt_fair()`: should `p`, just enqueued on `cpu`,
    /// preempt the running task?
    pub fn check_preempt_wakeup(&mut self, cpu: usize, p: TaskId, fork: bool) {
        let Some(curr) = self.rqs[cpu].curr else {
            self.resched_curr(cpu);
            return;
        };
        if curr == p || self.rqs[cpu].need_resched || self.is_rt(curr) {
            return;
        }
        let (cpol, ppol) = (self.tasks[curr].policy, self.tasks[p].policy);
        if cpol == Policy::Idle && ppol != Policy::Idle {
            self.resched_curr(cpu);
            return;
        }
        if ppol != Policy::Normal || !self.prof.feat.wakeup_preemption {
            return;
        }
        self.update_rq_clock(cpu);
        self.update_curr(cpu);
        match self.prof.fair {
            FairFlavor::Cfs => {
                if self.wakeup_preempt_entity(curr, p) == 1 {
                    if self.prof.feat.next_buddy && !fork {
                        self.rqs[cpu].cfs.next_buddy = Some(p);
                    }
                    self.resched_curr(cpu);
                    if self.prof.feat.last_buddy
                        && self.rqs[cpu].cfs.nr_running as u64 >= self.tun.sched_nr_latency
                        && self.tasks[curr].se.on_rq
                    {
                        self.rqs[cpu].cfs.last_buddy = Some(curr);
                    }
                }
            }
            FairFlavor::Eevdf => {
                if self.prof.at_least(6, 12) && fork {
                    return;
                }
                if self.pick_eevdf(cpu, true) == Some(p) {
                    self.resched_curr(cpu);
                }
            }
        }
    }

    /// `task_tick_fair()` → `entity_tick()`.
    pub fn task_tick_fair(&mut self, cpu: usize, curr: TaskId) {
        self.update_curr(cpu);
        self.update_load_avg(cpu, Some(curr), UpdFlags::default());
        self.update_cfs_group(cpu);
        if self.prof.fair == FairFlavor::Cfs && self.rqs[cpu].cfs.nr_running > 1 {
            self.check_preempt_tick(cpu, curr);
        }
    }

    /// `check_preempt_tick()` (CFS).
    fn check_preempt_tick(&mut self, cpu: usize, curr: TaskId) {
        let ideal = self.sched_slice(cpu, curr);
        let se = &self.tasks[curr].se;
        let ran = se.sum_exec_runtime - se.prev_sum_exec_runtime;
        if ran > ideal {
            self.resched_curr(cpu);
            self.clear_buddies(cpu);
            return;
        }
        if ran < self.tun.sched_min_granularity_ns {
            return;
        }
        let Some(left) = self.leftmost(cpu) else {
            return;
        };
        let delta = self.tasks[curr].se.vruntime as i64 - self.tasks[left].se.vruntime as i64;
        if delta > ideal as i64 {
            self.resched_curr(cpu);
        }
    }
}
