//! Task placement (`select_task_rq_fair`, spec/kernel.md §8.7): the wakeup fast path with
//! `wake_wide`, `wake_affine` (WA_IDLE, WA_WEIGHT, WA_BIAS) and `select_idle_sibling` with the
//! SMT-aware idle-core search and the SIS_UTIL scan budget (before v5.12: the separate idle-core
//! scan and SIS_PROP's budget); the fork/exec slow path `find_idlest_cpu` / `find_idlest_group` /
//! `find_idlest_group_cpu`.
//!
//! Simplification: EAS and `select_idle_capacity` (asymmetric CPUs) come with the EAS work.

use super::balance::{GroupType, SgStats};
use super::core::{SdFlag, WakeFlags};
use super::task::TaskId;
use crate::engine::Sim;

impl Sim {
    /// `select_task_rq_fair()`; `this_cpu` is where the selection runs (the waker's or parent's
    /// CPU).
    pub fn select_task_rq_fair(
        &mut self,
        p: TaskId,
        prev_cpu: usize,
        sd_flag: SdFlag,
        wf: WakeFlags,
        this_cpu: usize,
    ) -> usize {
        if self.tasks[p].nr_cpus_allowed == 1 {
            return (0..self.topo.nr_cpus())
                .find(|&c| self.tasks[p].allowed(c))
                .unwrap_or(prev_cpu);
        }
        if sd_flag == SdFlag::Wake {
            let mut ops = super::eas::EasOps::default();
            let eas = if self.eas_active() {
                self.find_energy_efficient_cpu(p, prev_cpu, &mut ops)
            } else {
                None
            };
            self.account_select(this_cpu, &ops);
            if let Some(c) = eas {
                return c;
            }
        }
        let mut want_affine = false;
        if sd_flag == SdFlag::Wake {
            if let Some(waker) = self.rqs[this_cpu].curr {
                self.record_wakee(waker, p);
                want_affine =
                    !self.wake_wide(waker, p, this_cpu) && self.tasks[p].allowed(this_cpu);
            } else {
                want_affine = self.tasks[p].allowed(this_cpu);
            }
        }
        let mut new_cpu = prev_cpu;
        let mut slow_sd: Option<usize> = None;
        let nlevels = self.domains[this_cpu].len();
        let mut fast = false;
        for lvl in 0..nlevels {
            let sd = &self.domains[this_cpu][lvl];
            if want_affine && sd.wake_affine && sd.span.binary_search(&prev_cpu).is_ok() {
                if this_cpu != prev_cpu {
                    new_cpu = self.wake_affine(lvl, p, this_cpu, prev_cpu, wf.sync);
                }
                fast = true;
                break;
            }
            let has_flag = match sd_flag {
                SdFlag::Fork | SdFlag::Exec => sd.balance_fork,
                SdFlag::Wake => false,
            };
            if has_flag {
                slow_sd = Some(lvl);
            } else if !want_affine {
                break;
            }
        }
        if !fast {
            if let Some(lvl) = slow_sd {
                return self.find_idlest_cpu(lvl, p, this_cpu, prev_cpu, sd_flag);
            }
        }
        if sd_flag == SdFlag::Wake {
            if !self.prof.at_least(5, 12) {
                return self.select_idle_sibling_sis_prop(
                    p,
                    prev_cpu,
                    new_cpu,
                    this_cpu,
                    want_affine,
                );
            }
            return self.select_idle_sibling(p, prev_cpu, new_cpu);
        }
        new_cpu
    }

    /// `record_wakee()`: count how often the waker switches wakee (decays every second).
    fn record_wakee(&mut self, waker: TaskId, p: TaskId) {
        let now = self.now;
        let w = &mut self.tasks[waker];
        if now > w.wakee_flip_decay_ts + 1_000_000_000 {
            w.wakee_flips >>= 1;
            w.wakee_flip_decay_ts = now;
        }
        if w.last_wakee != Some(p) {
            w.last_wakee = Some(p);
            w.wakee_flips += 1;
        }
    }

    /// `wake_wide()`: a 1:N waker with many wakees should not pull them all to its LLC.
    fn wake_wide(&self, waker: TaskId, p: TaskId, this_cpu: usize) -> bool {
        let factor = self.topo.llc_cpus[self.topo.cpus[this_cpu].llc].len() as u32;
        let mut master = self.tasks[waker].wakee_flips;
        let mut slave = self.tasks[p].wakee_flips;
        if master < slave {
            std::mem::swap(&mut master, &mut slave);
        }
        !(slave < factor || master < slave * factor)
    }

    /// `wake_affine()`: WA_IDLE then WA_WEIGHT; falls back to prev.
    fn wake_affine(
        &self,
        lvl: usize,
        p: TaskId,
        this_cpu: usize,
        prev: usize,
        sync: bool,
    ) -> usize {
        let mut target = None;
        if self.prof.feat.wa_idle {
            target = self.wake_affine_idle(this_cpu, prev, sync);
        }
        if target.is_none() && self.prof.feat.wa_weight {
            target = self.wake_affine_weight(lvl, p, this_cpu, prev, sync);
        }
        target.unwrap_or(prev)
    }

    fn wake_affine_idle(&self, this_cpu: usize, prev: usize, sync: bool) -> Option<usize> {
        if self.idle_cpu(this_cpu) && self.topo.shares_llc(this_cpu, prev) {
            return Some(if self.idle_cpu(prev) { prev } else { this_cpu });
        }
        if sync && self.rqs[this_cpu].nr_running() == 1 {
            return Some(this_cpu);
        }
        if self.idle_cpu(prev) {
            return Some(prev);
        }
        None
    }

    fn wake_affine_weight(
        &self,
        lvl: usize,
        p: TaskId,
        this_cpu: usize,
        prev: usize,
        sync: bool,
    ) -> Option<usize> {
        let mut this_eff = self.cpu_load(this_cpu) as i128;
        if sync {
            if let Some(cur) = self.rqs[this_cpu].curr {
                let cur_load = self.tasks[cur].se.avg.load_avg as i128;
                if cur_load > this_eff {
                    return Some(this_cpu);
                }
                this_eff -= cur_load;
            }
        }
        let task_load = self.tasks[p].se.avg.load_avg as i128;
        this_eff += task_load;
        let pct = self.domains[this_cpu][lvl].imbalance_pct as i128;
        if self.prof.feat.wa_bias {
            this_eff *= 100;
        }
        this_eff *= self.capacity_of(prev) as i128;
        let mut prev_eff = self.cpu_load(prev) as i128 - task_load;
        if self.prof.feat.wa_bias {
            prev_eff *= 100 + (pct - 100) / 2;
        }
        prev_eff *= self.capacity_of(this_cpu) as i128;
        if sync {
            prev_eff += 1;
        }
        (this_eff < prev_eff).then_some(this_cpu)
    }

    /// `select_idle_sibling()`.
    pub fn select_idle_sibling(&mut self, p: TaskId, prev: usize, target: usize) -> usize {
        if self.idle_cpu(target) && self.tasks[p].allowed(target) {
            return target;
        }
        if prev != target
            && self.topo.shares_llc(prev, target)
            && self.idle_cpu(prev)
            && self.tasks[p].allowed(prev)
        {
            return prev;
        }
        let recent = self.tasks[p].recent_used_cpu;
        self.tasks[p].recent_used_cpu = prev;
        if recent != prev
            && recent != target
            && self.topo.shares_llc(recent, target)
            && self.idle_cpu(recent)
            && self.tasks[p].allowed(recent)
        {
            return recent;
        }
        let llc = self.topo.cpus[target].llc;
        let smt = self.topo.smt_active();
        let has_idle_core = smt && self.llc_has_idle_cores[llc];
        if smt && !has_idle_core && self.topo.shares_llc(prev, target) {
            if let Some(i) = self.select_idle_smt(p, prev) {
                return i;
            }
        }
        if let Some(i) = self.select_idle_cpu(p, target, has_idle_core) {
            return i;
        }
        target
    }

    /// `select_idle_sibling()` before v5.12 (b7a331615d25 merged the core and CPU scans):
    /// target, prev and `recent_used_cpu`, then a full scan for an idle core, a scan for an
    /// idle CPU limited by SIS_PROP, and an idle SMT sibling of the target. Before v5.15 the
    /// waker's `recent_used_cpu` records the CPU it woke a task from (89aafd67f28c moved it
    /// to the wakee's previous CPU).
    fn select_idle_sibling_sis_prop(
        &mut self,
        p: TaskId,
        prev: usize,
        target: usize,
        this_cpu: usize,
        want_affine: bool,
    ) -> usize {
        let chosen = 'pick: {
            if self.idle_cpu(target) {
                break 'pick target;
            }
            if prev != target && self.topo.shares_llc(prev, target) && self.idle_cpu(prev) {
                break 'pick prev;
            }
            let recent = self.tasks[p].recent_used_cpu;
            if recent != prev
                && recent != target
                && self.topo.shares_llc(recent, target)
                && self.idle_cpu(recent)
                && self.tasks[p].allowed(recent)
            {
                self.tasks[p].recent_used_cpu = prev;
                break 'pick recent;
            }
            let llc = self.topo.cpus[target].llc;
            if self.topo.smt_active() && self.llc_has_idle_cores[llc] {
                if let Some(c) = self.select_idle_core(p, target) {
                    break 'pick c;
                }
                self.llc_has_idle_cores[llc] = false;
            }
            if let Some(c) = self.select_idle_cpu_sis_prop(p, target, this_cpu) {
                break 'pick c;
            }
            if self.topo.smt_active() {
                if let Some(c) = self.select_idle_smt(p, target) {
                    break 'pick c;
                }
            }
            target
        };
        if want_affine {
            if let Some(waker) = self.rqs[this_cpu].curr {
                self.tasks[waker].recent_used_cpu = this_cpu;
            }
        }
        chosen
    }

    /// `select_idle_core()` before v5.12: the first fully idle core of the target's LLC, from
    /// the target's core on.
    fn select_idle_core(&self, p: TaskId, target: usize) -> Option<usize> {
        let cpus = &self.topo.llc_cpus[self.topo.cpus[target].llc];
        let start = cpus.iter().position(|&c| c >= target).unwrap_or(0);
        let mut seen_cores: Vec<usize> = Vec::new();
        for k in 0..cpus.len() {
            let cpu = cpus[(start + k) % cpus.len()];
            if !self.tasks[p].allowed(cpu) {
                continue;
            }
            let core = self.topo.cpus[cpu].core;
            if seen_cores.contains(&core) {
                continue;
            }
            seen_cores.push(core);
            if self.topo.siblings(cpu).iter().all(|&s| self.idle_cpu(s)) {
                return Some(cpu);
            }
        }
        None
    }

    /// `select_idle_cpu()` with SIS_PROP (v4.13 to v5.11): scan the target's LLC from the target
    /// for an idle CPU, giving up after `nr` CPUs, where `nr` is proportional to the waking
    /// CPU's average idle time over the average cost of a scan: `span_weight × avg_idle / 512`
    /// over `avg_scan_cost + 1` ns, at least 4. The scan's cost (the CPUs it read, each a remote
    /// runqueue's cache lines at `balance_per_cpu` cycles) updates the waking CPU's
    /// `avg_scan_cost` with weight 1/8.
    fn select_idle_cpu_sis_prop(
        &mut self,
        p: TaskId,
        target: usize,
        this_cpu: usize,
    ) -> Option<usize> {
        let cpus = &self.topo.llc_cpus[self.topo.cpus[target].llc];
        let n = cpus.len();
        let avg_idle = self.rqs[this_cpu].avg_idle / 512;
        let avg_cost = self.rqs[this_cpu].avg_scan_cost + 1;
        let span_avg = n as u64 * avg_idle;
        let mut nr: u64 = if span_avg > 4 * avg_cost {
            span_avg / avg_cost
        } else {
            4
        };
        let start = cpus.iter().position(|&c| c >= target).unwrap_or(0);
        let mut found = None;
        let mut scanned = 0u64;
        for k in 0..n {
            nr -= 1;
            if nr == 0 {
                break;
            }
            let cpu = cpus[(start + k) % n];
            if !self.tasks[p].allowed(cpu) {
                continue;
            }
            scanned += 1;
            if self.idle_cpu(cpu) {
                found = Some(cpu);
                break;
            }
        }
        if found.is_none() && nr == 0 {
            // the kernel returns before timing an abandoned scan
            return None;
        }
        let ct = self.topo.cpus[this_cpu].core_type;
        let time = (scanned as f64 * self.costs[ct].balance_per_cpu
            / self.cpu_rate(this_cpu).max(1e-9)) as i64;
        let cost = self.rqs[this_cpu].avg_scan_cost as i64;
        self.rqs[this_cpu].avg_scan_cost = (cost + (time - cost) / 8).max(0) as u64;
        found
    }

    /// `select_idle_smt()`: an idle sibling of `prev`.
    fn select_idle_smt(&self, p: TaskId, prev: usize) -> Option<usize> {
        self.topo
            .siblings(prev)
            .iter()
            .copied()
            .find(|&c| c != prev && self.idle_cpu(c) && self.tasks[p].allowed(c))
    }

    /// `select_idle_cpu()` over the target's LLC, starting after the target and wrapping: a
    /// fully idle core when the LLC has one, else the first idle CPU within the scan budget.
    fn select_idle_cpu(&mut self, p: TaskId, target: usize, has_idle_core: bool) -> Option<usize> {
        let llc = self.topo.cpus[target].llc;
        let cpus = &self.topo.llc_cpus[llc];
        let n = cpus.len();
        let start = cpus.iter().position(|&c| c > target).unwrap_or(0);
        let mut nr = if self.prof.feat.sis_util && !has_idle_core {
            let budget = self.llc_nr_idle_scan[llc] as i64 + 1;
            if budget == 1 {
                return None;
            }
            budget
        } else {
            i64::MAX
        };
        let mut idle_sibling: Option<usize> = None;
        let mut seen_cores: Vec<usize> = Vec::new();
        for k in 0..n {
            let cpu = cpus[(start + k) % n];
            if !self.tasks[p].allowed(cpu) {
                continue;
            }
            if has_idle_core {
                // select_idle_core(): each core once, from the first of its threads met
                let core = self.topo.cpus[cpu].core;
                if seen_cores.contains(&core) {
                    continue;
                }
                seen_cores.push(core);
                let sibs = self.topo.siblings(cpu);
                let all_idle = sibs.iter().all(|&s| self.idle_cpu(s));
                if all_idle {
                    return Some(cpu);
                }
                if idle_sibling.is_none() {
                    idle_sibling = sibs
                        .iter()
                        .copied()
                        .find(|&s| self.idle_cpu(s) && self.tasks[p].allowed(s));
                }
            } else {
                nr -= 1;
                if nr <= 0 {
                    return None;
                }
                if self.idle_cpu(cpu) {
                    return Some(cpu);
                }
            }
        }
        if has_idle_core {
            self.llc_has_idle_cores[llc] = false;
        }
        idle_sibling
    }

    // ------------------------------------------------------------------ slow path

    /// `find_idlest_cpu()`: walk down from domain level `lvl` of `cpu`.
    fn find_idlest_cpu(
        &self,
        lvl: usize,
        p: TaskId,
        cpu: usize,
        prev: usize,
        sd_flag: SdFlag,
    ) -> usize {
        let span = &self.domains[cpu][lvl].span;
        if !span.iter().any(|&c| self.tasks[p].allowed(c)) {
            return prev;
        }
        let mut cpu = cpu;
        let mut level = Some(lvl);
        while let Some(l) = level {
            let idlest = if self.prof.find_idlest_by_load {
                self.find_idlest_group_by_load(cpu, l, p, sd_flag)
            } else {
                self.find_idlest_group(cpu, l, p)
            };
            let Some(group) = idlest else {
                level = l.checked_sub(1);
                continue;
            };
            let new_cpu = self.find_idlest_group_cpu(&group, p, cpu);
            if new_cpu == cpu {
                level = l.checked_sub(1);
                continue;
            }
            // continue below the level just balanced, from the new CPU's point of view
            let weight = self.domains[cpu][l].span.len();
            cpu = new_cpu;
            level = self.domains[cpu]
                .iter()
                .rposition(|d| d.span.len() < weight);
        }
        cpu
    }

    /// Wakeup statistics of one group (`update_sg_wakeup_stats`), with `p` removed from the
    /// CPU it last ran on.
    fn sg_wakeup_stats(&self, group: &[usize], p: TaskId, imbalance_pct: u32) -> SgStats {
        let mut s = SgStats {
            group_weight: group.len() as u32,
            ..SgStats::default()
        };
        for &c in group {
            let on_c = self.tasks[p].cpu == c && self.tasks[p].se.on_rq;
            let mut load = self.cpu_load(c);
            if self.tasks[p].cpu == c {
                load = load.saturating_sub(self.tasks[p].se.avg.load_avg);
            }
            s.load += load;
            s.util += self.cpu_util(c, Some(p), None, false);
            s.runnable += self.rqs[c].cfs.avg.runnable_avg;
            let nr = self.rqs[c].nr_running() - on_c as u32;
            s.nr_running += nr;
            if nr == 0 && self.rqs[c].curr.is_none_or(|t| t == p) {
                s.idle_cpus += 1;
            }
            s.group_capacity += self.capacity_of(c);
        }
        s.classify(imbalance_pct);
        if matches!(s.group_type, GroupType::FullyBusy | GroupType::Overloaded) {
            s.avg_load = s.load * 1024 / s.group_capacity.max(1);
        }
        s
    }

    /// `find_idlest_group()` (v5.10+ form).
    fn find_idlest_group(&self, cpu: usize, lvl: usize, p: TaskId) -> Option<Vec<usize>> {
        let sd = &self.domains[cpu][lvl];
        let pct = sd.imbalance_pct;
        let mut local: Option<SgStats> = None;
        let mut idlest: Option<(SgStats, usize)> = None;
        for (gi, g) in sd.groups.iter().enumerate() {
            if !g.iter().any(|&c| self.tasks[p].allowed(c)) {
                continue;
            }
            let s = self.sg_wakeup_stats(g, p, pct);
            if gi == 0 {
                local = Some(s);
                continue;
            }
            let better = match &idlest {
                None => true,
                Some((b, _)) => {
                    if s.group_type != b.group_type {
                        s.group_type < b.group_type
                    } else {
                        match s.group_type {
                            GroupType::Overloaded | GroupType::FullyBusy => s.avg_load < b.avg_load,
                            // most idle CPUs, then the lowest utilization
                            _ => {
                                s.idle_cpus > b.idle_cpus
                                    || (s.idle_cpus == b.idle_cpus && s.util < b.util)
                            }
                        }
                    }
                }
            };
            if better {
                idlest = Some((s, gi));
            }
        }
        let (idl, gi) = idlest?;
        let Some(loc) = local else {
            return Some(sd.groups[gi].clone());
        };
        if loc.group_type < idl.group_type {
            return None;
        }
        if idl.group_type < loc.group_type {
            return Some(sd.groups[gi].clone());
        }
        match loc.group_type {
            GroupType::Overloaded | GroupType::FullyBusy => {
                let imbalance = 1024 * (pct as u64 - 100) / 100;
                if sd.numa && idl.avg_load + imbalance >= loc.avg_load {
                    return None;
                }
                if idl.avg_load >= loc.avg_load + imbalance {
                    return None;
                }
                if 100 * loc.avg_load <= pct as u64 * idl.avg_load {
                    return None;
                }
            }
            _ => {
                if sd.numa && loc.idle_cpus > 0 && loc.nr_running < 2 {
                    // adjust_numa_imbalance: allow a small imbalance to stay local
                    return None;
                }
                if loc.idle_cpus >= idl.idle_cpus {
                    return None;
                }
            }
        }
        Some(sd.groups[gi].clone())
    }

    /// `find_idlest_group()` before v5.5: the group with the least runnable load (ties within
    /// `imbalance` broken by the blocked load in `avg_load`), or for exec balancing the one with
    /// the most spare capacity; the local group is kept unless the other is clearly better, and
    /// across NUMA nodes unless the local runnable load exceeds the remote one by `imbalance`.
    fn find_idlest_group_by_load(
        &self,
        cpu: usize,
        lvl: usize,
        p: TaskId,
        sd_flag: SdFlag,
    ) -> Option<Vec<usize>> {
        let sd = &self.domains[cpu][lvl];
        let pct = sd.imbalance_pct as u64;
        let imbalance_scale = 100 + (pct - 100) / 2;
        let imbalance = 1024 * (pct - 100) / 100;
        let (mut min_runnable, mut min_avg) = (u64::MAX, u64::MAX);
        let (mut this_runnable, mut this_avg, mut this_spare) = (u64::MAX, u64::MAX, 0);
        let mut idlest: Option<usize> = None;
        let (mut most_spare, mut most_spare_sg) = (0, None);
        for (gi, g) in sd.groups.iter().enumerate() {
            if !g.iter().any(|&c| self.tasks[p].allowed(c)) {
                continue;
            }
            let (mut runnable, mut avg, mut max_spare, mut capacity) = (0u64, 0u64, 0u64, 0u64);
            for &c in g {
                runnable += self.rqs[c].cfs.avg.runnable_avg;
                avg += self.rqs[c].cfs.avg.load_avg;
                // capacity_spare_without(): the capacity left with p taken off c
                let util = self.cpu_util(c, Some(p), None, false);
                max_spare = max_spare.max(self.capacity_of(c).saturating_sub(util));
                capacity += self.capacity_of(c);
            }
            let capacity = capacity.max(1);
            let (avg, runnable) = (avg * 1024 / capacity, runnable * 1024 / capacity);
            if g.contains(&cpu) {
                (this_runnable, this_avg, this_spare) = (runnable, avg, max_spare);
                continue;
            }
            if min_runnable > runnable.saturating_add(imbalance) {
                // the runnable load is clearly smaller
                (min_runnable, min_avg, idlest) = (runnable, avg, Some(gi));
            } else if runnable < min_runnable.saturating_add(imbalance)
                && 100 * min_avg as u128 > imbalance_scale as u128 * avg as u128
            {
                // close runnable loads: the blocked load decides
                (min_avg, idlest) = (avg, Some(gi));
            }
            if most_spare < max_spare {
                (most_spare, most_spare_sg) = (max_spare, Some(gi));
            }
        }
        // a forked task has no utilization yet: spare capacity is for exec balancing
        if sd_flag != SdFlag::Fork {
            let half_util = self.task_util(p) / 2;
            if this_spare > half_util && imbalance_scale * this_spare > 100 * most_spare {
                return None;
            }
            if most_spare > half_util {
                return most_spare_sg.map(|gi| sd.groups[gi].clone());
            }
        }
        let gi = idlest?;
        if sd.numa && min_runnable.saturating_add(imbalance) >= this_runnable {
            return None;
        }
        if min_runnable > this_runnable.saturating_add(imbalance) {
            return None;
        }
        if this_runnable < min_runnable.saturating_add(imbalance)
            && (100 * this_avg as u128) < imbalance_scale as u128 * min_avg as u128
        {
            return None;
        }
        Some(sd.groups[gi].clone())
    }

    /// `find_idlest_group_cpu()`: the idle CPU in the shallowest idle state (most recently
    /// idled on ties), else the least loaded.
    fn find_idlest_group_cpu(&self, group: &[usize], p: TaskId, this_cpu: usize) -> usize {
        if group.len() == 1 {
            return group[0];
        }
        let mut shallowest: Option<(u64, u64, usize)> = None; // (exit latency, -stamp, cpu)
        let mut least: Option<(u64, usize)> = None;
        for &c in group {
            if !self.tasks[p].allowed(c) {
                continue;
            }
            if self.idle_cpu(c) {
                let ct = self.topo.cpus[c].core_type;
                let lat = self.rqs[c]
                    .idle_state
                    .map(|s| self.idle_states[ct][s].exit_latency_us)
                    .unwrap_or(0);
                let key = (lat, u64::MAX - self.rqs[c].idle_stamp, c);
                if shallowest.is_none_or(|s| key < s) {
                    shallowest = Some(key);
                }
            } else if shallowest.is_none() {
                let load = self.cpu_load(c);
                if least.is_none_or(|(l, _)| load < l) {
                    least = Some((load, c));
                }
            }
        }
        shallowest
            .map(|s| s.2)
            .or(least.map(|l| l.1))
            .unwrap_or(this_cpu)
    }
}
