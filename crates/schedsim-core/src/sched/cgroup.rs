//! Task groups: the cgroup v2 cpu controller's `cpu.weight` and `cpu.uclamp.*` (spec/kernel.md
//! §8.6 group scheduling, §1.9 hierarchy), and the per-CPU group runqueues that CFS bandwidth
//! control ([`super::bandwidth`]) throttles.
//!
//! Simplifications: the hierarchy is flattened. Every fair task stays on its CPU's root cfs_rq
//! with its hierarchical weight — its own weight times, at each level, the group entity's weight
//! (`calc_group_shares`) over the weight queued on the group's cfs_rq — so the CPU time a group
//! gets on a CPU is what its group entity would get, and the root's load, util and runnable sums
//! are the kernel's (a group entity's util equals its cfs_rq's, the sum of its tasks'). A group
//! cfs_rq's `load_avg` is the sum of its tasks' decayed loads at their own weights (nested
//! groups count their whole subtree). Weights are refreshed when a grouped task is enqueued or
//! dequeued and at the tick (`update_cfs_group`). Throttled tasks keep decaying while held.

use super::bandwidth::CfsBandwidth;
use super::pelt;
use super::task::{TaskId, NICE_0_LOAD};
use crate::config::CgroupSpec;
use crate::engine::Sim;
use crate::sim::time::Time;

/// Index of a task group; 0 is the root group.
pub type GroupId = usize;
pub const ROOT_TG: GroupId = 0;

/// `MIN_SHARES`: the smallest weight a group entity gets (user-visible units).
pub const MIN_SHARES: u64 = 2;

/// How often a CPU recomputes its group cfs_rqs' load sums (`update_tg_load_avg()` is rate
/// limited to once per millisecond).
pub const TG_LOAD_RATE_LIMIT_NS: u64 = 1_000_000;

/// `cpu.weight` → `tg->shares`: 100 ⇔ 1024 (`sched_weight_from_cgroup`, rounded to nearest).
pub fn weight_to_shares(weight: u32) -> u64 {
    (weight as u64 * NICE_0_LOAD + 50) / 100
}

/// A task group's state on one CPU: its cfs_rq (`tg->cfs_rq[cpu]`) and group entity.
#[derive(Clone, Debug, Default)]
pub struct GroupRq {
    /// `h_nr_running`: the subtree's tasks queued on this CPU (not counting throttled ones).
    pub h_nr_running: u32,
    /// `cfs_rq->load.weight`: own weights of the directly queued tasks plus the weights of
    /// queued child group entities.
    pub load_weight: u64,
    /// `cfs_rq->avg.load_avg` (see the module note).
    pub load_avg: u64,
    /// `cfs_rq->tg_load_avg_contrib`.
    pub tg_load_avg_contrib: u64,
    /// The group entity's weight on this CPU (`calc_group_shares`).
    pub se_weight: u64,
    // ---- CFS bandwidth (spec §7.2)
    pub runtime_enabled: bool,
    /// ns; negative once overrun.
    pub runtime_remaining: i64,
    pub throttled: bool,
    pub throttled_clock: Time,
    /// Tasks held while this cfs_rq (or one of its ancestors) is throttled.
    pub held: Vec<TaskId>,
}

/// `struct task_group`.
#[derive(Clone, Debug)]
pub struct TaskGroup {
    pub path: String,
    pub parent: Option<GroupId>,
    pub children: Vec<GroupId>,
    /// `tg->shares` (user-visible; 1024 = cpu.weight 100).
    pub shares: u64,
    /// `cpu.uclamp.min` / `cpu.uclamp.max` in capacity units.
    pub uclamp_min: u64,
    pub uclamp_max: u64,
    /// `tg->load_avg`: Σ of the per-CPU contributions.
    pub load_avg: u64,
    pub rqs: Vec<GroupRq>,
    pub cfs_b: CfsBandwidth,
    /// `cpu.stat` usage (ns of CPU time of the subtree's tasks).
    pub usage_ns: u64,
    /// Live tasks directly in this group.
    pub members: Vec<TaskId>,
}

impl TaskGroup {
    pub fn root(nr_cpus: usize) -> Self {
        TaskGroup {
            path: "/".into(),
            parent: None,
            children: Vec::new(),
            shares: NICE_0_LOAD,
            uclamp_min: 0,
            uclamp_max: 1024,
            load_avg: 0,
            rqs: vec![GroupRq::default(); nr_cpus],
            cfs_b: CfsBandwidth::unlimited(),
            usage_ns: 0,
            members: Vec::new(),
        }
    }
}

/// `calc_group_shares()`: the group entity's weight on one CPU, from the group's weight and this
/// CPU's share of the group's load.
pub fn calc_group_shares(tg_shares: u64, tg_load_avg: u64, grq: &GroupRq) -> u64 {
    let load = grq.load_weight.max(grq.load_avg);
    let tg_weight = (tg_load_avg + load).saturating_sub(grq.tg_load_avg_contrib);
    let shares = if tg_weight > 0 {
        (tg_shares as u128 * load as u128 / tg_weight as u128) as u64
    } else {
        tg_shares
    };
    shares.clamp(MIN_SHARES, tg_shares)
}

fn percent_to_capacity(pct: f64) -> u64 {
    ((pct / 100.0) * 1024.0).round() as u64
}

impl Sim {
    /// Create the configured groups (parents first, as validated) and their bandwidth.
    pub fn init_task_groups(&mut self, specs: &[CgroupSpec]) -> Result<(), String> {
        let n = self.topo.nr_cpus();
        self.tgs = vec![TaskGroup::root(n)];
        for s in specs {
            // the cgroup files came with 2480c093130f (v5.4)
            let clamps = s.uclamp_min > 0.0 || s.uclamp_max < 100.0;
            if clamps && !self.prof.at_least(5, 4) {
                return Err(format!(
                    "cgroup '{}': cpu.uclamp.min/max need kernel 5.4 or later (the profile is \
                     {}.{}); leave them out or pick a later kernel",
                    s.path, self.prof.version.0, self.prof.version.1
                ));
            }
            self.create_task_group(s);
        }
        // sched_setattr()'s SCHED_FLAG_UTIL_CLAMP came with a509a7cd7974 (v5.3)
        if !self.prof.at_least(5, 3) {
            let clamped = self.compiled.programs.iter().find(|p| p.sets_uclamp());
            if let Some(p) = clamped {
                return Err(format!(
                    "task '{}': per-task utilization clamps (uclamp_min/uclamp_max, set_uclamp) \
                     need kernel 5.3 or later (the profile is {}.{})",
                    p.name, self.prof.version.0, self.prof.version.1
                ));
            }
        }
        Ok(())
    }

    fn create_task_group(&mut self, s: &CgroupSpec) -> GroupId {
        let n = self.topo.nr_cpus();
        let parent = match s.path.rsplit_once('/') {
            Some((p, _)) => self.group_by_path(p).unwrap_or(ROOT_TG),
            None => ROOT_TG,
        };
        let id = self.tgs.len();
        let cfs_b = CfsBandwidth::new(
            s.quota_us.map(|q| q * 1000),
            s.period_us * 1000,
            s.burst_us * 1000,
            self.cfs_bw_timer_offset(),
        );
        let tg = TaskGroup {
            path: s.path.clone(),
            parent: Some(parent),
            children: Vec::new(),
            shares: weight_to_shares(s.weight),
            uclamp_min: percent_to_capacity(s.uclamp_min),
            uclamp_max: percent_to_capacity(s.uclamp_max),
            load_avg: 0,
            rqs: vec![GroupRq::default(); n],
            cfs_b,
            usage_ns: 0,
            members: Vec::new(),
        };
        self.tgs.push(tg);
        self.tgs[parent].children.push(id);
        if self.tgs[id].cfs_b.quota.is_some() {
            self.tg_set_cfs_bandwidth(id);
        }
        id
    }

    /// A group by its path; `/` and the empty path name the root.
    pub fn group_by_path(&self, path: &str) -> Option<GroupId> {
        let p = path.trim_matches('/');
        if p.is_empty() {
            return Some(ROOT_TG);
        }
        self.tgs.iter().position(|g| g.path == p)
    }

    /// Resolve a template's cgroup: a configured path, or (rt-app's `taskgroup`, written with a
    /// leading `/`) a group created with default settings as rt-app creates it.
    pub fn resolve_cgroup(&mut self, path: &str) -> Result<GroupId, String> {
        if let Some(g) = self.group_by_path(path) {
            return Ok(g);
        }
        if !path.starts_with('/') {
            return Err(format!(
                "task cgroup '{path}' is not defined in the config's cgroups"
            ));
        }
        let mut sofar = String::new();
        let mut g = ROOT_TG;
        for part in path.trim_matches('/').split('/') {
            if !sofar.is_empty() {
                sofar.push('/');
            }
            sofar.push_str(part);
            g = match self.group_by_path(&sofar) {
                Some(g) => g,
                None => self.create_task_group(&CgroupSpec::new(&sofar)),
            };
        }
        Ok(g)
    }

    /// Whether any group below the root exists (the `cfs_bandwidth_used()`-like fast path).
    pub fn has_task_groups(&self) -> bool {
        self.tgs.len() > 1
    }

    /// The group's parent (the root for a top-level group and for the root itself).
    pub fn tg_up(&self, g: GroupId) -> GroupId {
        self.tgs[g].parent.unwrap_or(ROOT_TG)
    }

    /// The group and its ancestors below the root, innermost first (`for_each_sched_entity`).
    /// Loops that change the groups walk with [`Sim::tg_up`] instead.
    pub fn tg_ancestors(&self, g: GroupId) -> impl Iterator<Item = GroupId> + '_ {
        std::iter::successors(Some(g), move |&x| Some(self.tg_up(x))).take_while(|&x| x != ROOT_TG)
    }

    /// The innermost throttled cfs_rq on the task's path to the root on `cpu`.
    pub fn throttled_ancestor(&self, g: GroupId, cpu: usize) -> Option<GroupId> {
        self.tg_ancestors(g)
            .find(|&x| self.tgs[x].rqs[cpu].throttled)
    }

    /// `is_descendant`: `g` is `anc` or below it.
    pub fn tg_is_below(&self, g: GroupId, anc: GroupId) -> bool {
        anc == ROOT_TG || self.tg_ancestors(g).any(|x| x == anc)
    }

    /// Count a task entering (+1) or leaving (−1) the queued set on `cpu` at every level.
    pub fn account_group_nr_running(&mut self, cpu: usize, t: TaskId, enter: bool) {
        let mut g = self.tasks[t].tg;
        while g != ROOT_TG {
            let grq = &mut self.tgs[g].rqs[cpu];
            if enter {
                grq.h_nr_running += 1;
            } else {
                grq.h_nr_running -= 1;
            }
            g = self.tg_up(g);
        }
    }

    /// `update_cfs_group()` for every group on `cpu`: refresh the group cfs_rqs' loads, the
    /// `tg->load_avg` contributions, the group entities' weights, and reweight the queued
    /// tasks to their hierarchical weights.
    pub fn update_cfs_group(&mut self, cpu: usize) {
        if !self.has_task_groups() {
            return;
        }
        self.sum_group_queued_weights(cpu);
        // the group cfs_rqs' load sums, at most once per millisecond per CPU (the rate limit
        // of `update_tg_load_avg()`)
        let stamp = self.rqs[cpu].tg_load_stamp;
        if stamp == 0 || self.now >= stamp + TG_LOAD_RATE_LIMIT_NS {
            self.rqs[cpu].tg_load_stamp = self.now.max(1);
            self.sum_group_loads(cpu);
        }
        // children before parents: groups are created parents first
        for g in (1..self.tgs.len()).rev() {
            let child_w: u64 = self.tgs[g]
                .children
                .iter()
                .filter(|&&c| self.tgs[c].rqs[cpu].h_nr_running > 0)
                .map(|&c| self.tgs[c].rqs[cpu].se_weight)
                .sum();
            let tg = &mut self.tgs[g];
            let grq = &mut tg.rqs[cpu];
            grq.load_weight += child_w;
            // update_tg_load_avg(): publish changes larger than 1/64
            let delta = grq.load_avg as i64 - grq.tg_load_avg_contrib as i64;
            if delta.unsigned_abs() > grq.tg_load_avg_contrib / 64 {
                tg.load_avg = (tg.load_avg as i64 + delta).max(0) as u64;
                grq.tg_load_avg_contrib = grq.load_avg;
            }
            let w = calc_group_shares(tg.shares, tg.load_avg, &tg.rqs[cpu]);
            tg.rqs[cpu].se_weight = w;
        }
        // reweighting leaves the CPU's task list as it is
        for i in 0..self.rqs[cpu].cfs_tasks.len() {
            let t = self.rqs[cpu].cfs_tasks[i];
            if self.tasks[t].tg == ROOT_TG {
                continue;
            }
            let w = self.task_h_weight(cpu, t);
            if w != self.tasks[t].se.weight {
                self.reweight_task_fair(cpu, t, w);
            }
        }
    }

    /// Each group cfs_rq's `load.weight` from the tasks queued directly in it on `cpu`.
    fn sum_group_queued_weights(&mut self, cpu: usize) {
        for g in 1..self.tgs.len() {
            self.tgs[g].rqs[cpu].load_weight = 0;
        }
        for i in 0..self.rqs[cpu].cfs_tasks.len() {
            let task = &self.tasks[self.rqs[cpu].cfs_tasks[i]];
            let (g, w) = (task.tg, task.own_weight);
            if g != ROOT_TG {
                self.tgs[g].rqs[cpu].load_weight += w;
            }
        }
    }

    /// Each group cfs_rq's `load_avg` on `cpu`: the decayed loads, at their own weights, of the
    /// fair tasks of its subtree attached to this CPU.
    fn sum_group_loads(&mut self, cpu: usize) {
        for g in 1..self.tgs.len() {
            self.tgs[g].rqs[cpu].load_avg = 0;
        }
        let now = self.rqs[cpu].clock_pelt();
        for g in 1..self.tgs.len() {
            for k in 0..self.tgs[g].members.len() {
                let task = &self.tasks[self.tgs[g].members[k]];
                let rt = matches!(
                    task.policy,
                    super::task::Policy::Fifo | super::task::Policy::Rr
                );
                if task.cpu != cpu || task.se.avg.last_update_time == 0 || rt {
                    continue;
                }
                let periods = now.saturating_sub(task.se.avg.last_update_time) >> 20;
                let sum = pelt::decay_load(task.se.avg.load_sum, periods);
                let own = task.own_weight * sum / task.se.avg.divider();
                let mut x = g;
                while x != ROOT_TG {
                    self.tgs[x].rqs[cpu].load_avg += own;
                    x = self.tg_up(x);
                }
            }
        }
    }

    /// The task's weight as the root sees it: own weight × Π se_weight / load_weight.
    fn task_h_weight(&self, cpu: usize, t: TaskId) -> u64 {
        let mut w = self.tasks[t].own_weight as u128;
        for g in self.tg_ancestors(self.tasks[t].tg) {
            let grq = &self.tgs[g].rqs[cpu];
            w = w * grq.se_weight as u128 / grq.load_weight.max(1) as u128;
        }
        (w as u64).max(MIN_SHARES)
    }

    /// A group's effective clamps (`cpu_util_update_eff()`): each of its requests capped by
    /// its parent's effective value, then min ≤ max. The root's are (1024, 1024); a group's
    /// `cpu.uclamp.min` cannot protect more than its parent's.
    pub fn tg_uclamp_eff(&self, g: GroupId) -> (u64, u64) {
        let Some(parent) = self.tgs[g].parent else {
            return (1024, 1024);
        };
        let (pmin, pmax) = self.tg_uclamp_eff(parent);
        let tg = &self.tgs[g];
        let max = tg.uclamp_max.min(pmax);
        (tg.uclamp_min.min(pmin).min(max), max)
    }
}
