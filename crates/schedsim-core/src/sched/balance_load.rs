//! The load-based load balancer of the kernels before v5.5 (spec/kernel.md §8.8; replaced by
//! 0b0695f2b34a, "sched/fair: Rework load_balance"): `update_sg_lb_stats`,
//! `update_sd_pick_busiest`, `find_busiest_group`, `calculate_imbalance` and
//! `fix_small_imbalance` of that era.
//!
//! Groups are compared by `avg_load`, the runnable load (`weighted_cpuload()`, without the
//! blocked load of sleeping tasks) per unit of capacity. A group is `group_other`,
//! `group_misfit_task` or `group_overloaded` (more tasks than CPUs and its utilization above
//! capacity / imbalance_pct, or more than one task above the local group's count when the child
//! domain prefers siblings). An idle CPU balances only when the busiest group is overloaded or
//! has at least two idle CPUs fewer; a busy or newly idle one only when the busiest group's
//! avg_load exceeds its own by imbalance_pct. The imbalance is always weighted load: the load
//! that brings both groups towards the domain average, or one task's load when that is smaller
//! and moving it helps (`fix_small_imbalance`). The rest of `load_balance()`
//! (`find_busiest_queue`, `detach_tasks` with its `load / 2` test, active balancing) is shared
//! with [`super::balance`].
//!
//! Simplifications: no `group_imbalanced` (affinity), asym packing or NUMA `fbq_type`; a
//! misfit group is balanced by moving its misfit task, as from v5.5.

use super::balance::{GroupType, Imbalance, MigrationType};
use super::rq::IdleType;
use crate::engine::Sim;

/// `capacity_margin` of that era: a capacity is smaller when it is below 1024/1280 of another.
const CAPACITY_MARGIN: u64 = 1280;

/// `struct sg_lb_stats` before v5.5.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LbStats {
    /// Σ runnable load × 1024 / group_capacity.
    pub avg_load: u64,
    pub group_load: u64,
    pub load_per_task: u64,
    pub group_capacity: u64,
    pub group_util: u64,
    /// Σ `cfs.h_nr_running`.
    pub sum_nr_running: u32,
    pub idle_cpus: u32,
    pub group_weight: u32,
    pub group_type: GroupType,
    pub group_no_capacity: bool,
    pub misfit_load: u64,
    pub max_capacity: u64,
    pub min_capacity: u64,
}

impl LbStats {
    /// `group_has_capacity()` before v5.5 (utilization only, no runnable test).
    pub fn has_capacity(&self, pct: u32) -> bool {
        self.sum_nr_running < self.group_weight
            || self.group_capacity * 100 > self.group_util * pct as u64
    }

    /// `group_is_overloaded()` before v5.5.
    pub fn is_overloaded(&self, pct: u32) -> bool {
        self.sum_nr_running > self.group_weight
            && self.group_capacity * 100 < self.group_util * pct as u64
    }

    /// `group_classify()` before v5.5; `group_other` is [`GroupType::HasSpare`].
    fn classify(&mut self) {
        self.group_type = if self.group_no_capacity {
            GroupType::Overloaded
        } else if self.misfit_load > 0 {
            GroupType::Misfit
        } else {
            GroupType::HasSpare
        };
    }

    /// The averages `update_sg_lb_stats()` derives from the sums.
    fn finish(&mut self, pct: u32) {
        self.avg_load = self.group_load * 1024 / self.group_capacity.max(1);
        if self.sum_nr_running > 0 {
            self.load_per_task = self.group_load / self.sum_nr_running as u64;
        }
        self.group_no_capacity = self.is_overloaded(pct);
        self.classify();
    }
}

/// `update_sd_pick_busiest()` before v5.5: the most loaded group of the busiest type. `None` is
/// the initial `busiest_stat` (type other, avg_load 0), which a group beats only with load.
fn pick_busiest(
    sg: &LbStats,
    busiest: Option<&LbStats>,
    local: &LbStats,
    pct: u32,
    asym_cpucapacity: bool,
) -> bool {
    // a misfit task only moves to a bigger CPU with room
    if sg.group_type == GroupType::Misfit
        && (sg.max_capacity * CAPACITY_MARGIN >= local.max_capacity * 1024
            || !local.has_capacity(pct))
    {
        return false;
    }
    let (b_type, b_avg, b_misfit) = busiest.map_or((GroupType::HasSpare, 0, 0), |b| {
        (b.group_type, b.avg_load, b.misfit_load)
    });
    if sg.group_type != b_type {
        return sg.group_type > b_type;
    }
    if sg.avg_load <= b_avg {
        return false;
    }
    if !asym_cpucapacity {
        return true;
    }
    // no more than one task per CPU on bigger CPUs: leave them there
    if sg.sum_nr_running <= sg.group_weight
        && local.min_capacity * CAPACITY_MARGIN < sg.min_capacity * 1024
    {
        return false;
    }
    !(sg.group_type == GroupType::Misfit && sg.misfit_load < b_misfit)
}

/// `calculate_imbalance()` before v5.5: the weighted load to move from `busiest` to `local`,
/// `sds_avg` being the domain's load per unit of capacity (× 1024).
pub fn calculate_imbalance(local: &LbStats, busiest: &LbStats, sds_avg: u64) -> u64 {
    if busiest.avg_load <= sds_avg || local.avg_load >= sds_avg {
        return fix_small_imbalance(local, busiest).unwrap_or(0);
    }
    // if there are no idle CPUs, do not create any: pull no more than the load above capacity
    let mut load_above_capacity = u64::MAX;
    if busiest.group_type == GroupType::Overloaded && local.group_type == GroupType::Overloaded {
        let load = busiest.sum_nr_running as u64 * 1024;
        if load > busiest.group_capacity {
            load_above_capacity = (load - busiest.group_capacity) * 1024 / busiest.group_capacity;
        }
    }
    let max_pull = (busiest.avg_load - sds_avg).min(load_above_capacity);
    let pull = max_pull as u128 * busiest.group_capacity as u128;
    let push = (sds_avg - local.avg_load) as u128 * local.group_capacity as u128;
    let imbalance = (pull.min(push) / 1024) as u64;
    if imbalance < busiest.load_per_task {
        return fix_small_imbalance(local, busiest).unwrap_or(imbalance);
    }
    imbalance
}

/// `fix_small_imbalance()`: one task's load (`busiest.load_per_task`) when moving it does not
/// merely swap the imbalance, or when it raises the capacity used; `None` leaves the imbalance
/// as it was. An empty local group's load per task is 0 (`cpu_avg_load_per_task()` of an empty
/// CPU).
pub fn fix_small_imbalance(local: &LbStats, busiest: &LbStats) -> Option<u64> {
    let lpt = busiest.load_per_task;
    let local_lpt = local.load_per_task;
    let imbn = if local.sum_nr_running > 0 && lpt > local_lpt {
        1
    } else {
        2
    };
    let (b_cap, l_cap) = (busiest.group_capacity.max(1), local.group_capacity.max(1));
    let scaled_lpt = lpt * 1024 / b_cap;
    if busiest.avg_load + scaled_lpt >= local.avg_load + scaled_lpt * imbn {
        return Some(lpt);
    }
    // not enough imbalance to move a task, unless moving one raises the capacity used
    let capa_now =
        (b_cap * lpt.min(busiest.avg_load) + l_cap * local_lpt.min(local.avg_load)) / 1024;
    let mut capa_move = 0;
    if busiest.avg_load > scaled_lpt {
        capa_move += b_cap * lpt.min(busiest.avg_load - scaled_lpt);
    }
    let added = if busiest.avg_load * b_cap < lpt * 1024 {
        busiest.avg_load * b_cap / l_cap
    } else {
        lpt * 1024 / l_cap
    };
    capa_move += l_cap * local_lpt.min(local.avg_load + added);
    (capa_move / 1024 > capa_now).then_some(lpt)
}

impl Sim {
    /// `update_sg_lb_stats()` before v5.5. Loads are summed over the group's CPUs not
    /// excluded (all-pinned retries); capacity and weight are the whole group's
    /// (`sgc->capacity`, `group_weight`).
    fn sg_lb_stats_load(
        &self,
        group: &[usize],
        pct: u32,
        asym: bool,
        excluded: &[usize],
    ) -> LbStats {
        let mut s = LbStats {
            group_weight: group.len() as u32,
            min_capacity: u64::MAX,
            ..LbStats::default()
        };
        for &c in group {
            let cap = self.capacity_of(c);
            s.group_capacity += cap;
            s.max_capacity = s.max_capacity.max(cap);
            s.min_capacity = s.min_capacity.min(cap);
            if excluded.contains(&c) {
                continue;
            }
            s.group_load += self.cpu_load(c);
            s.group_util += self.cpu_util_cfs(c);
            s.sum_nr_running += self.rqs[c].cfs.nr_running;
            if self.rqs[c].nr_running() == 0 && self.idle_cpu(c) {
                s.idle_cpus += 1;
            }
            if asym {
                s.misfit_load = s.misfit_load.max(self.rqs[c].misfit_task_load);
            }
        }
        s.finish(pct);
        s
    }

    /// `find_busiest_group()` before v5.5, with its `calculate_imbalance()`.
    pub(super) fn find_busiest_group_load(
        &mut self,
        cpu: usize,
        lvl: usize,
        idle: IdleType,
        excluded: &[usize],
    ) -> Option<Imbalance> {
        let sd = &self.domains[cpu][lvl];
        let (pct, prefer_sibling, asym) =
            (sd.imbalance_pct, sd.prefer_sibling, sd.asym_cpucapacity);
        let mut stats: Vec<LbStats> = sd
            .groups
            .iter()
            .map(|g| self.sg_lb_stats_load(g, pct, asym, excluded))
            .collect();
        let local = stats[0];
        let mut busiest: Option<usize> = None;
        for i in 1..stats.len() {
            let sg = &mut stats[i];
            // the child prefers siblings: a group with two tasks more than an unfilled local
            // group counts as overloaded, so that the excess moves
            if prefer_sibling
                && local.has_capacity(pct)
                && sg.sum_nr_running > local.sum_nr_running + 1
            {
                sg.group_no_capacity = true;
                sg.classify();
            }
            let sg = stats[i];
            if pick_busiest(&sg, busiest.map(|b| &stats[b]), &local, pct, asym) {
                busiest = Some(i);
            }
        }
        if self.eas_active() {
            // not overutilized: EAS placed the tasks
            return None;
        }
        let bi = busiest?;
        let b = stats[bi];
        if b.sum_nr_running == 0 {
            return None;
        }
        let total_load: u64 = stats.iter().map(|s| s.group_load).sum();
        let total_cap: u64 = stats.iter().map(|s| s.group_capacity).sum();
        let sds_avg = total_load * 1024 / total_cap.max(1);
        let force = (idle != IdleType::NotIdle && local.has_capacity(pct) && b.group_no_capacity)
            || b.group_type == GroupType::Misfit;
        if !force {
            if local.avg_load >= b.avg_load || local.avg_load >= sds_avg {
                return None;
            }
            if idle == IdleType::Idle {
                // an imbalance of one idle CPU would only move to the other group
                if b.group_type != GroupType::Overloaded && local.idle_cpus <= b.idle_cpus + 1 {
                    return None;
                }
            } else if 100 * b.avg_load <= pct as u64 * local.avg_load {
                return None;
            }
        }
        if b.group_type == GroupType::Misfit {
            return Some(Imbalance {
                group: bi,
                mtype: MigrationType::Misfit,
                imbalance: 1,
            });
        }
        let imbalance = calculate_imbalance(&local, &b, sds_avg);
        (imbalance > 0).then_some(Imbalance {
            group: bi,
            mtype: MigrationType::Load,
            imbalance: imbalance as i64,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One CPU of capacity 1024 with `loads` queued; util saturates at 1024 when busy.
    fn cpu_group(loads: &[u64]) -> LbStats {
        let mut s = LbStats {
            group_weight: 1,
            group_capacity: 1024,
            max_capacity: 1024,
            min_capacity: 1024,
            group_load: loads.iter().sum(),
            group_util: if loads.is_empty() { 0 } else { 1024 },
            sum_nr_running: loads.len() as u32,
            idle_cpus: loads.is_empty() as u32,
            ..LbStats::default()
        };
        s.finish(117);
        s
    }

    fn sds_avg(groups: &[&LbStats]) -> u64 {
        let load: u64 = groups.iter().map(|g| g.group_load).sum();
        let cap: u64 = groups.iter().map(|g| g.group_capacity).sum();
        load * 1024 / cap
    }

    #[test]
    fn two_tasks_and_an_idle_cpu_move_one_task() {
        let (local, busiest) = (cpu_group(&[]), cpu_group(&[1024, 1024]));
        assert_eq!(busiest.group_type, GroupType::Overloaded);
        assert_eq!((busiest.avg_load, busiest.load_per_task), (2048, 1024));
        // domain average 1024: pull min(2048 − 1024, 1024 − 0) = 1024
        let avg = sds_avg(&[&local, &busiest]);
        assert_eq!(avg, 1024);
        assert_eq!(calculate_imbalance(&local, &busiest, avg), 1024);
    }

    #[test]
    fn three_against_two_moves_one_tasks_load() {
        // both overloaded: load above capacity (3 × 1024 − 1024) × 1024 / 1024 = 2048; the
        // average pull is 512 < one task's 1024, and 3072 + 1024 ≥ 2048 + 2 × 1024
        let (local, busiest) = (cpu_group(&[1024, 1024]), cpu_group(&[1024; 3]));
        let avg = sds_avg(&[&local, &busiest]);
        assert_eq!(avg, 2560);
        assert_eq!(fix_small_imbalance(&local, &busiest), Some(1024));
        assert_eq!(calculate_imbalance(&local, &busiest, avg), 1024);
    }

    #[test]
    fn a_small_imbalance_stays_when_moving_a_task_gains_no_capacity() {
        // busiest 1024 + 512 (lpt 768), local one task of 1024: average 1280, pull 256.
        // 1536 + 768 < 1024 + 2 × 768; capacity now 768 + 1024 = 1792, after a move
        // 768 + 1024 = 1792: no gain, the imbalance stays at 256.
        let (local, busiest) = (cpu_group(&[1024]), cpu_group(&[1024, 512]));
        assert_eq!(busiest.load_per_task, 768);
        let avg = sds_avg(&[&local, &busiest]);
        assert_eq!(avg, 1280);
        assert_eq!(fix_small_imbalance(&local, &busiest), None);
        assert_eq!(calculate_imbalance(&local, &busiest, avg), 256);
    }

    #[test]
    fn a_light_task_moves_to_an_empty_cpu_for_the_capacity() {
        // busiest: two tasks of 200 on one CPU (avg 400, lpt 200); local empty, average 200.
        // The average pull is min(200, 200) = 200 ≥ 200: one task's load.
        let (local, busiest) = (cpu_group(&[]), cpu_group(&[200, 200]));
        let avg = sds_avg(&[&local, &busiest]);
        assert_eq!(avg, 200);
        assert_eq!(calculate_imbalance(&local, &busiest, avg), 200);
        // already at the average: fix_small_imbalance decides, 400 + 200 ≥ 0 + 400
        assert_eq!(calculate_imbalance(&local, &busiest, 400), 200);
    }

    #[test]
    fn overload_needs_more_tasks_than_cpus_and_util_above_capacity() {
        let mut g = cpu_group(&[1024]);
        assert!(!g.is_overloaded(117) && !g.has_capacity(117));
        g.sum_nr_running = 2;
        assert!(g.is_overloaded(117));
        // util 870 × 117 = 101,790 < 102,400: room left
        g.group_util = 870;
        assert!(!g.is_overloaded(117) && g.has_capacity(117));
    }

    #[test]
    fn the_busiest_group_needs_load_and_the_highest_type() {
        let local = cpu_group(&[]);
        let empty = cpu_group(&[]);
        let one = cpu_group(&[300]);
        let two = cpu_group(&[300, 300]);
        assert!(!pick_busiest(&empty, None, &local, 117, false));
        assert!(pick_busiest(&one, None, &local, 117, false));
        // overloaded beats any other group, whatever the load
        let mut heavy = cpu_group(&[2000]);
        heavy.group_load = 5000;
        heavy.finish(117);
        assert!(pick_busiest(&two, Some(&heavy), &local, 117, false));
        assert!(!pick_busiest(&heavy, Some(&two), &local, 117, false));
    }
}
