//! Load balancing over the scheduling domains (spec/kernel.md §8.8, the v5.10+ form):
//! periodic balancing from the tick (`rebalance_domains`), NOHZ idle balancing on behalf of idle
//! CPUs (with the 32 ms blocked-load decay), new-idle balancing when a CPU is about to idle;
//! group statistics and classification (`update_sg_lb_stats`, `group_classify`),
//! `find_busiest_group`, `calculate_imbalance`, `find_busiest_queue`, `detach_tasks` with
//! `can_migrate_task` (affinity, running, cache hot), and active balancing through a stopper
//! that moves the running task.
//!
//! Before v5.5 `find_busiest_group` is the load-based one of [`super::balance_load`], and
//! `detach_tasks` moves a task whose load is at most twice the imbalance.
//!
//! Simplifications: no asym-packing, SMT-balance or imbalanced-affinity group types; the NUMA
//! imbalance left alone follows the version ([`NumaImbalance`]); the balancing work itself
//! costs no simulated CPU time.

use super::domain::SchedDomain;
use super::rq::{IdleType, Stopper};
use super::task::TaskId;
use crate::engine::Sim;
use crate::sim::profile::NumaImbalance;

/// `enum group_type`, from least to most busy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum GroupType {
    #[default]
    HasSpare,
    FullyBusy,
    Misfit,
    Imbalanced,
    Overloaded,
}

/// `struct sg_lb_stats`.
#[derive(Clone, Copy, Debug, Default)]
pub struct SgStats {
    pub load: u64,
    pub util: u64,
    pub runnable: u64,
    pub nr_running: u32,
    pub idle_cpus: u32,
    pub group_weight: u32,
    pub group_capacity: u64,
    pub avg_load: u64,
    pub group_type: GroupType,
    /// Largest `misfit_task_load` in the group and the group's largest CPU capacity.
    pub misfit_load: u64,
    pub max_capacity: u64,
}

impl SgStats {
    /// `group_is_overloaded()`.
    fn is_overloaded(&self, pct: u32) -> bool {
        if self.nr_running <= self.group_weight {
            return false;
        }
        let pct = pct as u64;
        self.group_capacity * 100 < self.util * pct
            || self.group_capacity * pct < self.runnable * 100
    }

    /// `group_has_capacity()`.
    fn has_capacity(&self, pct: u32) -> bool {
        if self.nr_running < self.group_weight {
            return true;
        }
        let pct = pct as u64;
        if self.group_capacity * pct < self.runnable * 100 {
            return false;
        }
        self.group_capacity * 100 > self.util * pct
    }

    /// `group_classify()`.
    pub fn classify(&mut self, pct: u32) {
        self.group_type = if self.is_overloaded(pct) {
            GroupType::Overloaded
        } else if self.misfit_load > 0 {
            GroupType::Misfit
        } else if !self.has_capacity(pct) {
            GroupType::FullyBusy
        } else {
            GroupType::HasSpare
        };
    }
}

/// `enum migration_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MigrationType {
    Load,
    Util,
    Task,
    Misfit,
}

/// The outcome of `find_busiest_group`.
pub(super) struct Imbalance {
    pub(super) group: usize,
    pub(super) mtype: MigrationType,
    pub(super) imbalance: i64,
}

/// The balance interval after a `load_balance` that moved nothing: a plain failure or a
/// voluntary active balance (a misfit task) resets it; an active balance forced by failures
/// backs it off before v5.12 and leaves it from v5.12 (e9b9734b7465, "sched/fair: Reduce cases
/// for active balance").
fn interval_after_failure(sd: &SchedDomain, active: bool, voluntary: bool, v5_12: bool) -> u64 {
    if !active || voluntary {
        sd.min_interval_ms
    } else if !v5_12 && sd.balance_interval_ms < sd.max_interval_ms {
        sd.balance_interval_ms * 2
    } else {
        sd.balance_interval_ms
    }
}

impl Sim {
    // ------------------------------------------------------------------ triggers

    /// `trigger_load_balance()` from the tick of a busy CPU.
    pub fn trigger_load_balance(&mut self, cpu: usize) {
        if self.now >= self.rqs[cpu].next_balance {
            let idle = self.idle_type(cpu);
            self.rebalance_domains(cpu, idle);
        }
        self.nohz_balancer_kick(cpu);
    }

    fn balance_interval_ns(&self, cpu: usize, lvl: usize, busy: bool) -> u64 {
        let sd = &self.domains[cpu][lvl];
        let mut ms = sd.balance_interval_ms;
        if busy {
            ms *= sd.busy_factor as u64;
        }
        let tick = self.prof.tick_ns();
        let max = (self.prof.hz as u64 * self.topo.nr_cpus() as u64 / 10).max(1) * tick;
        (ms * 1_000_000).clamp(tick, max)
    }

    /// `rebalance_domains()` (`sched_balance_domains`).
    pub fn rebalance_domains(&mut self, cpu: usize, mut idle: IdleType) {
        self.update_blocked_averages(cpu);
        self.update_cpu_capacity(cpu);
        let mut next = self.now + 60 * 1_000_000_000;
        for lvl in 0..self.domains[cpu].len() {
            let busy = idle == IdleType::NotIdle;
            let interval = self.balance_interval_ns(cpu, lvl, busy);
            if self.now >= self.domains[cpu][lvl].last_balance + interval {
                let outcome = self.load_balance(cpu, lvl, idle);
                self.domains[cpu][lvl].last_balance = self.now;
                match outcome {
                    // we pulled work: no longer idle for the levels above
                    Some(true) => idle = IdleType::NotIdle,
                    Some(false) => {}
                    None => {
                        let interval =
                            self.balance_interval_ns(cpu, lvl, idle == IdleType::NotIdle);
                        next = next.min(self.now + interval);
                        break;
                    }
                }
            }
            let interval = self.balance_interval_ns(cpu, lvl, idle == IdleType::NotIdle);
            next = next.min(self.domains[cpu][lvl].last_balance + interval);
        }
        self.rqs[cpu].next_balance = next;
    }

    /// `update_cpu_capacity()` → `scale_rt_capacity()`: the capacity left for CFS after the
    /// RT class's utilization (no irq or DL time is modelled).
    pub fn update_cpu_capacity(&mut self, cpu: usize) {
        let max = self.topo.cpus[cpu].capacity_orig;
        let used = self.cpu_util_rt(cpu);
        self.rqs[cpu].cpu_capacity = if used >= max { 1 } else { (max - used).max(1) };
    }

    /// `nohz_balancer_kick()`: a busy CPU asks an idle one to balance for all idle CPUs.
    fn nohz_balancer_kick(&mut self, cpu: usize) {
        if self.now < self.nohz_next_blocked && self.now < self.nohz_next_balance {
            return;
        }
        let n = self.topo.nr_cpus();
        if !(0..n).any(|c| c != cpu && self.idle_cpu(c)) {
            return;
        }
        if self.now >= self.nohz_next_blocked {
            self.nohz_stats_update();
        }
        if self.now < self.nohz_next_balance {
            return;
        }
        // the kick conditions: ≥ 2 tasks; on asymmetric machines a misfit task (and no LLC
        // logic); otherwise more than one busy CPU in the LLC
        let kick = if self.rqs[cpu].nr_running() >= 2 {
            true
        } else if self.topo.asym_capacity() {
            self.rqs[cpu].misfit_task_load > 0
        } else {
            let llc = self.topo.cpus[cpu].llc;
            self.topo.llc_cpus[llc]
                .iter()
                .filter(|&&c| !self.idle_cpu(c))
                .count()
                > 1
        };
        if kick {
            self.nohz_idle_balance();
        }
    }

    /// NOHZ_STATS_KICK: decay the blocked load of idle CPUs (at most every 32 ms).
    fn nohz_stats_update(&mut self) {
        for c in 0..self.topo.nr_cpus() {
            if self.idle_cpu(c) && self.rqs[c].has_blocked_load {
                self.update_blocked_averages(c);
            }
        }
        self.nohz_next_blocked = self.now + crate::sched::pelt::LOAD_AVG_PERIOD * 1_000_000;
    }

    /// `nohz_idle_balance()`: rebalance every idle CPU whose balance is due.
    fn nohz_idle_balance(&mut self) {
        let mut next = self.now + 60 * 1_000_000_000;
        for c in 0..self.topo.nr_cpus() {
            if !self.idle_cpu(c) {
                continue;
            }
            if self.now >= self.rqs[c].next_balance {
                self.rebalance_domains(c, IdleType::Idle);
            }
            next = next.min(self.rqs[c].next_balance);
        }
        self.nohz_next_balance = next.max(self.now + self.prof.tick_ns());
    }

    /// `newidle_balance()` (`sched_balance_newidle`): pull work before going idle. The gate is
    /// `avg_idle < sysctl_sched_migration_cost` before v5.16 and the lowest domain's
    /// `max_newidle_lb_cost` from v5.16; each level is tried while the expected idle time covers
    /// the cost so far plus that level's cost.
    pub fn newidle_balance(&mut self, cpu: usize) -> bool {
        self.rqs[cpu].idle_stamp = self.now;
        self.decay_newidle_max_lb_cost(cpu);
        let avg_idle = self.rqs[cpu].avg_idle;
        let gate = if self.prof.at_least(5, 16) {
            self.domains[cpu]
                .first()
                .map_or(0, |d| d.max_newidle_lb_cost)
        } else {
            self.tun.sched_migration_cost_ns.max(0) as u64
        };
        if avg_idle < gate || self.nr_overloaded == 0 {
            self.update_next_balance_idle(cpu, 0);
            // nohz_newidle_balance(): a CPU going idle refreshes the idle CPUs' blocked load
            if self.now >= self.nohz_next_blocked {
                self.nohz_stats_update();
            }
            return false;
        }
        self.stats.newidle_balances += 1;
        self.update_blocked_averages(cpu);
        let mut curr_cost = 0;
        let mut pulled = false;
        let mut visited = 0;
        for lvl in 0..self.domains[cpu].len() {
            if avg_idle < curr_cost + self.domains[cpu][lvl].max_newidle_lb_cost {
                break;
            }
            visited = lvl + 1;
            pulled = self.load_balance(cpu, lvl, IdleType::NewlyIdle) == Some(true)
                || self.rqs[cpu].cfs.nr_running > 0;
            let cost = self.newidle_domain_cost(cpu, lvl);
            let sd = &mut self.domains[cpu][lvl];
            sd.max_newidle_lb_cost = sd.max_newidle_lb_cost.max(cost);
            curr_cost += cost;
            if pulled {
                break;
            }
        }
        self.update_next_balance_idle(cpu, visited.max(1));
        pulled
    }

    /// Modelled duration of one new-idle `load_balance` pass over a domain: the preset's
    /// `balance_per_cpu` cycles for every CPU whose statistics are read, at this CPU's speed.
    fn newidle_domain_cost(&self, cpu: usize, lvl: usize) -> u64 {
        let ct = self.topo.cpus[cpu].core_type;
        let cycles = self.costs[ct].balance_per_cpu * self.domains[cpu][lvl].span.len() as f64;
        let rate = self.cpu_rate(cpu).max(1e-9);
        (cycles / rate) as u64
    }

    /// `max_newidle_lb_cost` decays by 1 % per second (253/256).
    fn decay_newidle_max_lb_cost(&mut self, cpu: usize) {
        let now = self.now;
        for sd in self.domains[cpu].iter_mut() {
            if now >= sd.next_decay_max_lb_cost {
                sd.max_newidle_lb_cost = sd.max_newidle_lb_cost * 253 / 256;
                sd.next_decay_max_lb_cost = now + 1_000_000_000;
            }
        }
    }

    /// `update_next_balance()` for a CPU about to idle: its next balance follows the idle
    /// (not the busy) intervals of the first `levels` domains.
    fn update_next_balance_idle(&mut self, cpu: usize, levels: usize) {
        let mut next = self.rqs[cpu].next_balance;
        for lvl in 0..levels.min(self.domains[cpu].len()) {
            let t = self.domains[cpu][lvl].last_balance + self.balance_interval_ns(cpu, lvl, false);
            next = next.min(t);
        }
        self.rqs[cpu].next_balance = next;
        self.nohz_next_balance = self.nohz_next_balance.min(next);
    }

    // ------------------------------------------------------------------ load_balance

    /// `should_we_balance()`: new-idle always; otherwise only the first idle CPU of the local
    /// group (or its first CPU when none is idle) balances this domain.
    fn should_we_balance(&self, cpu: usize, lvl: usize, idle: IdleType) -> bool {
        if idle == IdleType::NewlyIdle {
            return true;
        }
        let local = &self.domains[cpu][lvl].groups[0];
        match local.iter().find(|&&c| self.idle_cpu(c)) {
            Some(&first_idle) => first_idle == cpu,
            None => local[0] == cpu,
        }
    }

    /// `update_sg_lb_stats()`, over the group's CPUs not excluded (all-pinned retries).
    fn sg_lb_stats(&self, group: &[usize], pct: u32, excluded: &[usize]) -> SgStats {
        let mut s = SgStats::default();
        for &c in group.iter().filter(|c| !excluded.contains(c)) {
            s.group_weight += 1;
            s.load += self.cpu_load(c);
            s.util += self.cpu_util_cfs(c);
            s.runnable += self.rqs[c].cfs.avg.runnable_avg;
            s.nr_running += self.rqs[c].nr_running();
            if self.idle_cpu(c) {
                s.idle_cpus += 1;
            }
            s.group_capacity += self.capacity_of(c);
            s.max_capacity = s.max_capacity.max(self.capacity_of(c));
            s.misfit_load = s.misfit_load.max(self.rqs[c].misfit_task_load);
        }
        if s.group_weight == 0 {
            return s;
        }
        s.classify(pct);
        // computing avg_load makes sense only when the group is overloaded
        if s.group_type == GroupType::Overloaded {
            s.avg_load = s.load * 1024 / s.group_capacity.max(1);
        }
        s
    }

    /// `update_sd_pick_busiest()`.
    fn pick_busiest(s: &SgStats, busiest: &SgStats) -> bool {
        if s.nr_running == 0 {
            return false;
        }
        if s.group_type != busiest.group_type {
            return s.group_type > busiest.group_type;
        }
        match s.group_type {
            GroupType::Overloaded => s.avg_load > busiest.avg_load,
            // avg_load is 0 for fully busy groups: the later group wins
            GroupType::FullyBusy => s.avg_load >= busiest.avg_load,
            _ => {
                s.idle_cpus < busiest.idle_cpus
                    || (s.idle_cpus == busiest.idle_cpus && s.nr_running > busiest.nr_running)
            }
        }
    }

    /// `update_idle_cpu_scan()` (SIS_UTIL): scan budget from the LLC's average utilization.
    fn update_idle_cpu_scan(&mut self, cpu: usize, lvl: usize, sum_util: u64) {
        let sd = &self.domains[cpu][lvl];
        let llc = self.topo.cpus[cpu].llc;
        let w = self.topo.llc_cpus[llc].len() as u64;
        if sd.span.len() as u64 != w || !self.prof.feat.sis_util {
            return;
        }
        let pct = sd.imbalance_pct as u64;
        let x = sum_util / w;
        let y = 1024 - (x * x * pct * pct / (10000 * 1024)).min(1024);
        self.llc_nr_idle_scan[llc] = (y * w / 1024) as u32;
    }

    /// `find_busiest_group()` + `calculate_imbalance()` of the profile's kernel: the
    /// load-based form before v5.5 ([`super::balance_load`]), the group types after.
    fn find_busiest_group(
        &mut self,
        cpu: usize,
        lvl: usize,
        idle: IdleType,
        excluded: &[usize],
    ) -> Option<Imbalance> {
        if lvl + 1 == self.domains[cpu].len() {
            // update_sd_lb_stats() at the root domain rewrites the overutilized flag
            self.refresh_overutilized();
        }
        if self.prof.lb_load_based {
            self.find_busiest_group_load(cpu, lvl, idle, excluded)
        } else {
            self.find_busiest_group_typed(cpu, lvl, idle, excluded)
        }
    }

    /// `find_busiest_group()` + `calculate_imbalance()` from v5.5 (the v5.10 form).
    fn find_busiest_group_typed(
        &mut self,
        cpu: usize,
        lvl: usize,
        idle: IdleType,
        excluded: &[usize],
    ) -> Option<Imbalance> {
        let sd = &self.domains[cpu][lvl];
        let pct = sd.imbalance_pct;
        let stats: Vec<SgStats> = sd
            .groups
            .iter()
            .map(|g| self.sg_lb_stats(g, pct, excluded))
            .collect();
        let (numa, prefer_sibling, share_llc) = (sd.numa, sd.prefer_sibling, sd.share_llc);
        if idle != IdleType::NewlyIdle {
            let sum_util: u64 = stats.iter().map(|s| s.util).sum();
            self.update_idle_cpu_scan(cpu, lvl, sum_util);
        }
        let local = stats[0];
        let dst_cap = self.capacity_of(cpu);
        let mut busiest: Option<usize> = None;
        for (i, s) in stats.iter().enumerate().skip(1) {
            if s.nr_running == 0 {
                continue;
            }
            // a misfit task only moves to a CPU of greater capacity
            if s.group_type == GroupType::Misfit && dst_cap * 1024 <= s.max_capacity * 1078 {
                continue;
            }
            if busiest.is_none_or(|b| Self::pick_busiest(s, &stats[b])) {
                busiest = Some(i);
            }
        }
        let bi = busiest?;
        let b = stats[bi];
        if b.group_type == GroupType::Misfit {
            return Some(Imbalance {
                group: bi,
                mtype: MigrationType::Misfit,
                imbalance: 1,
            });
        }
        if self.eas_active() {
            // not overutilized: EAS placed the tasks, only misfits are balanced
            return None;
        }
        if b.nr_running == 0 || local.group_type > b.group_type {
            return None;
        }
        let total_load: u64 = stats.iter().map(|s| s.load).sum();
        let total_cap: u64 = stats.iter().map(|s| s.group_capacity).sum();
        let sds_avg = total_load * 1024 / total_cap.max(1);
        if local.group_type == GroupType::Overloaded
            && (local.avg_load >= b.avg_load
                || local.avg_load >= sds_avg
                || 100 * b.avg_load <= pct as u64 * local.avg_load)
        {
            return None;
        }
        let force_sibling = prefer_sibling
            && local.group_type == GroupType::HasSpare
            && b.nr_running > local.nr_running + 1;
        if !force_sibling && b.group_type != GroupType::Overloaded {
            if idle == IdleType::NotIdle {
                return None;
            }
            if b.group_weight > 1 && local.idle_cpus <= b.idle_cpus + 1 {
                return None;
            }
            if b.nr_running == 1 {
                return None;
            }
        }
        // calculate_imbalance()
        if local.group_type == GroupType::HasSpare {
            if b.group_type > GroupType::FullyBusy && !share_llc {
                let spare = local.group_capacity.max(local.util) - local.util;
                return Some(if spare == 0 {
                    Imbalance {
                        group: bi,
                        mtype: MigrationType::Task,
                        imbalance: 1,
                    }
                } else {
                    Imbalance {
                        group: bi,
                        mtype: MigrationType::Util,
                        imbalance: spare as i64,
                    }
                });
            }
            let mut imb = if b.group_weight == 1 || prefer_sibling {
                (b.nr_running.saturating_sub(local.nr_running) >> 1) as i64
            } else {
                ((local.idle_cpus as i64 - b.idle_cpus as i64).max(0)) >> 1
            };
            if numa {
                imb = self.adjust_numa_imbalance(imb, &local, &b);
            }
            return (imb > 0).then_some(Imbalance {
                group: bi,
                mtype: MigrationType::Task,
                imbalance: imb,
            });
        }
        let local_avg = local.load * 1024 / local.group_capacity.max(1);
        if local.group_type < GroupType::Overloaded && local_avg >= b.avg_load {
            return None;
        }
        let a = (b.avg_load.saturating_sub(sds_avg)) as u128 * b.group_capacity as u128;
        let c = (sds_avg.saturating_sub(local_avg)) as u128 * local.group_capacity as u128;
        let imb = (a.min(c) / 1024) as i64;
        (imb > 0).then_some(Imbalance {
            group: bi,
            mtype: MigrationType::Load,
            imbalance: imb,
        })
    }

    /// The NUMA imbalance the profile's kernel leaves alone ([`NumaImbalance`]).
    fn adjust_numa_imbalance(&self, imb: i64, local: &SgStats, busiest: &SgStats) -> i64 {
        match self.prof.numa_imbalance {
            NumaImbalance::None => imb,
            NumaImbalance::SmallSource if busiest.nr_running <= 2 => 0,
            NumaImbalance::SmallSource => imb,
            NumaImbalance::LightDestination => {
                let dst_running = local.nr_running + 1;
                if dst_running < local.group_weight / 4 && imb <= 2 {
                    0
                } else {
                    imb
                }
            }
        }
    }

    /// `find_busiest_queue()`.
    fn find_busiest_queue(
        &self,
        cpu: usize,
        lvl: usize,
        env: &Imbalance,
        excluded: &[usize],
    ) -> Option<usize> {
        let group = &self.domains[cpu][lvl].groups[env.group];
        let mut best: Option<usize> = None;
        let mut best_val: (u64, u64) = (0, 1);
        for &c in group.iter().filter(|c| !excluded.contains(c)) {
            let nr = self.rqs[c].cfs.nr_running;
            if nr == 0 {
                continue;
            }
            let (val, cap) = match env.mtype {
                MigrationType::Load => {
                    let load = self.cpu_load(c);
                    if nr == 1 && load as i64 > env.imbalance {
                        continue;
                    }
                    (load, self.capacity_of(c))
                }
                MigrationType::Util => {
                    if nr <= 1 {
                        continue;
                    }
                    (self.cpu_util(c, None, None, self.prof.runnable_boost), 1)
                }
                MigrationType::Task => (nr as u64, 1),
                MigrationType::Misfit => {
                    if self.rqs[c].misfit_task_load == 0 {
                        continue;
                    }
                    (self.rqs[c].misfit_task_load, 1)
                }
            };
            // val/cap > best_val.0/best_val.1
            if best.is_none() || val as u128 * best_val.1 as u128 > best_val.0 as u128 * cap as u128
            {
                best = Some(c);
                best_val = (val, cap);
            }
        }
        best
    }

    /// `task_hot()`.
    fn task_hot(&self, t: TaskId, src: usize, cpu: usize, lvl: usize) -> bool {
        if self.domains[cpu][lvl].share_cpucapacity
            || self.tasks[t].policy == super::task::Policy::Idle
        {
            return false;
        }
        // CACHE_HOT_BUDDY: a buddy is hot when the destination has work
        let cfs = &self.rqs[src].cfs;
        if self.prof.feat.cache_hot_buddy
            && self.rqs[cpu].nr_running() > 0
            && (cfs.next_buddy == Some(t) || cfs.last_buddy == Some(t))
        {
            return true;
        }
        let cost = self.tun.sched_migration_cost_ns;
        if cost == -1 {
            return true;
        }
        if cost == 0 {
            return false;
        }
        let start = self.tasks[t].se.exec_start;
        start != 0 && self.rqs[src].clock_task.saturating_sub(start) < cost as u64
    }

    /// `can_migrate_task()`.
    fn can_migrate_task(&self, t: TaskId, src: usize, dst: usize, lvl: usize) -> bool {
        if !self.tasks[t].allowed(dst) || self.rqs[src].curr == Some(t) {
            return false;
        }
        let failed = self.domains[dst][lvl].nr_balance_failed;
        !(self.task_hot(t, src, dst, lvl) && failed <= self.domains[dst][lvl].cache_nice_tries)
    }

    /// `detach_tasks()` + `attach_tasks()`: move up to the imbalance from `src` to `dst`.
    /// Returns the number moved and whether every candidate was pinned away from `dst`.
    fn detach_tasks(
        &mut self,
        dst: usize,
        src: usize,
        lvl: usize,
        idle: IdleType,
        env: &mut Imbalance,
    ) -> (u32, bool) {
        if self.rqs[src].cfs.nr_running <= 1 {
            return (0, false);
        }
        self.update_rq_clock(src);
        let candidates: Vec<TaskId> = self.rqs[src].cfs_tasks.clone();
        let loop_max =
            (self.tun.sched_nr_migrate as usize).min(self.rqs[src].cfs.nr_running as usize);
        let failed = self.domains[dst][lvl].nr_balance_failed;
        let mut moved = 0;
        let mut all_pinned = true;
        for &t in candidates.iter().take(loop_max) {
            if idle != IdleType::NotIdle && self.rqs[src].cfs.nr_running <= 1 {
                break;
            }
            if self.tasks[t].cpu != src || !self.tasks[t].se.on_rq {
                continue;
            }
            if self.tasks[t].allowed(dst) {
                all_pinned = false;
            }
            if !self.can_migrate_task(t, src, dst, lvl) {
                continue;
            }
            match env.mtype {
                MigrationType::Load => {
                    let load = self.tasks[t].se.avg.load_avg;
                    if self.prof.feat.lb_min && load < 16 && failed == 0 {
                        continue;
                    }
                    // before v5.5 a task up to twice the imbalance moves; from v5.5 the
                    // allowance grows with the failures instead
                    let counted = if self.prof.lb_load_based {
                        load / 2
                    } else {
                        load >> failed.min(63)
                    };
                    if counted as i64 > env.imbalance {
                        continue;
                    }
                    env.imbalance -= load as i64;
                }
                MigrationType::Util => {
                    let util = self.task_util_est(t);
                    if util as i64 > env.imbalance {
                        continue;
                    }
                    env.imbalance -= util as i64;
                }
                MigrationType::Task => env.imbalance -= 1,
                MigrationType::Misfit => {
                    if self.task_fits_cpu(t, src) {
                        continue;
                    }
                    env.imbalance = 0;
                }
            }
            self.move_queued_task(t, src, dst);
            moved += 1;
            // CONFIG_PREEMPTION: new-idle balancing stops after the first task it detaches
            if (idle == IdleType::NewlyIdle && self.prof.preempt.config_preemption())
                || env.imbalance <= 0
            {
                break;
            }
        }
        (moved, all_pinned)
    }

    /// `load_balance()` (`sched_balance_rq`) at domain level `lvl` of `cpu`. Returns whether
    /// work was pulled, or `None` when another CPU of the group balances this domain
    /// (`should_we_balance()`; the caller then stops going up, `continue_balancing = 0`).
    pub fn load_balance(&mut self, cpu: usize, lvl: usize, idle: IdleType) -> Option<bool> {
        self.stats.load_balance_calls += 1;
        if !self.should_we_balance(cpu, lvl, idle) {
            self.out_balanced(cpu, lvl, idle, false);
            return None;
        }
        Some(self.load_balance_body(cpu, lvl, idle))
    }

    fn load_balance_body(&mut self, cpu: usize, lvl: usize, idle: IdleType) -> bool {
        let mut excluded: Vec<usize> = Vec::new();
        let Some(mut env) = self.find_busiest_group(cpu, lvl, idle, &excluded) else {
            self.out_balanced(cpu, lvl, idle, false);
            return false;
        };
        let Some(mut busiest) = self.find_busiest_queue(cpu, lvl, &env, &excluded) else {
            self.out_balanced(cpu, lvl, idle, false);
            return false;
        };
        loop {
            let (moved, all_pinned) = self.detach_tasks(cpu, busiest, lvl, idle, &mut env);
            if moved > 0 {
                self.stats.load_balance_pulled += moved as u64;
                let sd = &mut self.domains[cpu][lvl];
                sd.nr_balance_failed = 0;
                sd.balance_interval_ms = sd.min_interval_ms;
                return true;
            }
            if !all_pinned {
                break;
            }
            // LBF_ALL_PINNED: retry without this CPU while others remain outside the local group
            excluded.push(busiest);
            let local = &self.domains[cpu][lvl].groups[0];
            let span = &self.domains[cpu][lvl].span;
            if span
                .iter()
                .all(|c| local.contains(c) || excluded.contains(c))
            {
                self.out_balanced(cpu, lvl, idle, true);
                return false;
            }
            let next = self
                .find_busiest_group(cpu, lvl, idle, &excluded)
                .and_then(|e| {
                    self.find_busiest_queue(cpu, lvl, &e, &excluded)
                        .map(|b| (e, b))
                });
            match next {
                Some((e, b)) => {
                    env = e;
                    busiest = b;
                }
                None => {
                    self.out_balanced(cpu, lvl, idle, true);
                    return false;
                }
            }
        }
        let sd = &mut self.domains[cpu][lvl];
        if idle != IdleType::NewlyIdle {
            sd.nr_balance_failed += 1;
        }
        // need_active_balance(): from v5.12 the failure count alone triggers it only for
        // migrate_task (imbalanced_active_balance)
        let by_failures = sd.nr_balance_failed > sd.cache_nice_tries + 2;
        let need_active = env.mtype == MigrationType::Misfit
            || (by_failures && (!self.prof.at_least(5, 12) || env.mtype == MigrationType::Task));
        let active = need_active && self.active_balance(busiest, cpu);
        let sd = &mut self.domains[cpu][lvl];
        if active {
            sd.nr_balance_failed = sd.cache_nice_tries + 1;
        }
        sd.balance_interval_ms = interval_after_failure(
            sd,
            active,
            env.mtype == MigrationType::Misfit,
            self.prof.at_least(5, 12),
        );
        false
    }

    /// `out_balanced` / `out_all_pinned` → `out_one_pinned`: reset the failure count and back
    /// the interval off (up to MAX_PINNED_INTERVAL when everything was pinned).
    fn out_balanced(&mut self, cpu: usize, lvl: usize, idle: IdleType, all_pinned: bool) {
        const MAX_PINNED_INTERVAL_MS: u64 = 512;
        let sd = &mut self.domains[cpu][lvl];
        sd.nr_balance_failed = 0;
        if idle == IdleType::NewlyIdle {
            return;
        }
        if (all_pinned && sd.balance_interval_ms < MAX_PINNED_INTERVAL_MS)
            || sd.balance_interval_ms < sd.max_interval_ms
        {
            sd.balance_interval_ms *= 2;
        }
    }

    /// Active balancing: the stopper on `src` preempts the running task and pushes the least
    /// recently run task that may run on `dst` (`active_load_balance_cpu_stop`).
    fn active_balance(&mut self, src: usize, dst: usize) -> bool {
        let Some(t) = self.rqs[src].curr else {
            return false;
        };
        if !self.tasks[t].allowed(dst) || self.rqs[src].stopper.is_some() {
            return false;
        }
        self.stats.active_balances += 1;
        self.rqs[src].stopper = Some(Stopper::PushAny { dst });
        self.queue_schedule(src);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::domain::Level;

    fn domain(interval: u64) -> SchedDomain {
        SchedDomain {
            level: Level::Mc,
            span: vec![0, 1, 2, 3],
            groups: vec![vec![0], vec![1], vec![2], vec![3]],
            imbalance_pct: 117,
            cache_nice_tries: 1,
            busy_factor: 32,
            min_interval_ms: 4,
            max_interval_ms: 8,
            balance_interval_ms: interval,
            nr_balance_failed: 0,
            last_balance: 0,
            max_newidle_lb_cost: 0,
            next_decay_max_lb_cost: 0,
            share_cpucapacity: false,
            share_llc: true,
            numa: false,
            prefer_sibling: false,
            balance_fork: true,
            wake_affine: true,
            asym_cpucapacity: false,
        }
    }

    #[test]
    fn a_forced_active_balance_backs_the_interval_off_before_5_12() {
        // min 4 ms, max 8 ms (sd_weight 4): a failure resets to 4; a forced active balance
        // doubles 4 to 8 and stops at 8 before v5.12, leaves 4 or 8 as they are from v5.12;
        // a misfit task's active balance resets.
        assert_eq!(interval_after_failure(&domain(8), false, false, false), 4);
        assert_eq!(interval_after_failure(&domain(4), true, false, false), 8);
        assert_eq!(interval_after_failure(&domain(8), true, false, false), 8);
        assert_eq!(interval_after_failure(&domain(4), true, false, true), 4);
        assert_eq!(interval_after_failure(&domain(8), true, false, true), 8);
        assert_eq!(interval_after_failure(&domain(8), true, true, false), 4);
        assert_eq!(interval_after_failure(&domain(8), true, true, true), 4);
    }
}
