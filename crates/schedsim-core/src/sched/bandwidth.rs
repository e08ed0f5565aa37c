//! CFS bandwidth control (`cfs_bandwidth`, spec/kernel.md §7): a group's `cpu.max` quota per
//! period shared by all CPUs through a global pool, per-CPU runtime slices
//! (`sched_cfs_bandwidth_slice_us`), throttling at the next `put_prev` once a slice is spent and
//! the pool is empty, the period timer that refills the pool and unthrottles, the slack timer
//! that hands back what emptied cfs_rqs return, `cpu.max.burst`, and `cpu.stat`.
//!
//! The period timer's phase follows §7.4: expiries sit at `offset + k·period` on the monotonic
//! clock, with `offset = 0` before v6.4 (all groups aligned) and `offset ~ U[0, 100 ms)` from
//! v6.4 (41abdba9, drawn from the `cfs_bw_timer` stream when the group is created); the feature
//! `cfs_bw_timer_phase` overrides the version.
//!
//! Simplifications: the old throttle model (the whole group cfs_rq leaves the CPU at `put_prev`,
//! v5.x–v6.17), not the task-work throttle of the latest kernels; unthrottling on a remote CPU
//! is immediate (no CSD latency); timer callbacks run on CPU 0 and cost no CPU time.

use super::cgroup::{GroupId, ROOT_TG};
use super::fair::EnqFlags;
use super::rq::BOOT_CLOCK_NS;
use super::task::TaskId;
use crate::engine::{Ev, Sim};
use crate::sim::event::EventHandle;

/// `min_cfs_rq_runtime`: what a cfs_rq keeps when it returns slack (1 ms).
pub const MIN_CFS_RQ_RUNTIME_NS: i64 = 1_000_000;
/// `min_bandwidth_expiration`: no slack distribution this close to a refill (2 ms).
pub const MIN_BANDWIDTH_EXPIRATION_NS: i64 = 2_000_000;
/// `cfs_bandwidth_slack_period`: the slack timer's delay (5 ms).
pub const CFS_BANDWIDTH_SLACK_PERIOD_NS: u64 = 5_000_000;
/// The period a group has when its timer is initialised (`default_cfs_period()`, 100 ms): the
/// range of the 41abdba9 offset.
pub const DEFAULT_CFS_PERIOD_NS: u64 = 100_000_000;
/// Refill instants kept per group for reports and tests.
const REFILL_LOG: usize = 256;

/// `struct cfs_bandwidth` of one task group.
#[derive(Clone, Debug, Default)]
pub struct CfsBandwidth {
    /// ns per period; `None` = `RUNTIME_INF`.
    pub quota: Option<u64>,
    pub period: u64,
    pub burst: u64,
    /// The global pool (ns).
    pub runtime: u64,
    pub runtime_snap: u64,
    pub period_active: bool,
    pub idle: bool,
    /// The period timer's expiry on the monotonic clock (ns since boot).
    pub expires: u64,
    pub timer_ev: Option<EventHandle>,
    pub slack_started: bool,
    /// `cfs_b->throttled_cfs_rq`: CPUs whose cfs_rq of this group is throttled, oldest first.
    pub throttled_cpus: Vec<usize>,
    // cpu.stat
    pub nr_periods: u64,
    pub nr_throttled: u64,
    pub throttled_time: u64,
    pub nr_burst: u64,
    pub burst_time: u64,
    /// Simulation times of the first refills (the period timer's callbacks).
    pub refills: Vec<u64>,
}

impl CfsBandwidth {
    pub fn unlimited() -> Self {
        CfsBandwidth {
            period: DEFAULT_CFS_PERIOD_NS,
            ..CfsBandwidth::default()
        }
    }

    /// `init_cfs_bandwidth()` with the timer's initial expiry, then the `cpu.max` values.
    pub fn new(quota: Option<u64>, period: u64, burst: u64, offset: u64) -> Self {
        CfsBandwidth {
            quota,
            period,
            burst,
            expires: offset,
            ..CfsBandwidth::default()
        }
    }

    /// `__refill_cfs_bandwidth_runtime()`: v5.14+ carries up to `burst` over and counts bursts;
    /// before, the pool is simply reset to the quota.
    fn refill(&mut self, with_burst: bool) {
        let Some(q) = self.quota else {
            return;
        };
        if !with_burst {
            self.runtime = q;
            return;
        }
        self.runtime += q;
        if self.runtime_snap > self.runtime {
            self.burst_time += self.runtime_snap - self.runtime;
            self.nr_burst += 1;
        }
        self.runtime = self.runtime.min(q + self.burst);
        self.runtime_snap = self.runtime;
    }
}

impl Sim {
    fn mono_now(&self) -> u64 {
        self.now + BOOT_CLOCK_NS
    }

    /// The period timer's initial expiry: 0 (aligned, before v6.4) or a random offset within
    /// the default period (41abdba9).
    pub fn cfs_bw_timer_offset(&mut self) -> u64 {
        if self.prof.cfs_bw_interleave {
            self.rng_cfs_bw.below(DEFAULT_CFS_PERIOD_NS)
        } else {
            0
        }
    }

    /// `tg_set_cfs_bandwidth()`: fill the pool, enable runtime accounting on every CPU, and
    /// start the period timer.
    pub fn tg_set_cfs_bandwidth(&mut self, g: GroupId) {
        let with_burst = self.prof.at_least(5, 14);
        let b = &mut self.tgs[g].cfs_b;
        b.runtime = 0;
        b.runtime_snap = 0;
        b.refill(with_burst);
        if !with_burst {
            b.runtime_snap = b.runtime;
        }
        for grq in &mut self.tgs[g].rqs {
            grq.runtime_enabled = true;
            grq.runtime_remaining = 0;
        }
        self.start_cfs_bandwidth(g);
    }

    /// `hrtimer_forward_now()`: move the expiry by whole periods past now; the overrun count.
    fn forward_period_timer(&mut self, g: GroupId) -> u64 {
        let now = self.mono_now();
        let b = &mut self.tgs[g].cfs_b;
        crate::sim::time::hrtimer_forward(&mut b.expires, now, b.period)
    }

    fn arm_period_timer(&mut self, g: GroupId) {
        let at = self.tgs[g].cfs_b.expires - BOOT_CLOCK_NS;
        let h = self.events.schedule(at, Ev::CfsPeriodTimer { tg: g });
        self.tgs[g].cfs_b.timer_ev = Some(h);
    }

    /// `start_cfs_bandwidth()`: (re)start an inactive period timer on its phase.
    pub fn start_cfs_bandwidth(&mut self, g: GroupId) {
        if self.tgs[g].cfs_b.period_active {
            return;
        }
        self.tgs[g].cfs_b.period_active = true;
        self.forward_period_timer(g);
        self.arm_period_timer(g);
    }

    /// `sched_cfs_period_timer()`: run the period body once per expired period; stop when the
    /// group stayed idle for a whole period.
    pub fn on_cfs_period_timer(&mut self, g: GroupId) {
        self.tgs[g].cfs_b.timer_ev = None;
        let mut idle = false;
        loop {
            let overrun = self.forward_period_timer(g);
            if overrun == 0 {
                break;
            }
            idle = self.do_sched_cfs_period_timer(g, overrun);
        }
        if idle {
            self.tgs[g].cfs_b.period_active = false;
        } else {
            self.arm_period_timer(g);
        }
    }

    /// `do_sched_cfs_period_timer()`: refill, then hand runtime to throttled cfs_rqs.
    fn do_sched_cfs_period_timer(&mut self, g: GroupId, overrun: u64) -> bool {
        let with_burst = self.prof.at_least(5, 14);
        let now = self.now;
        let b = &mut self.tgs[g].cfs_b;
        if b.quota.is_none() {
            return true;
        }
        let throttled = !b.throttled_cpus.is_empty();
        b.nr_periods += overrun;
        if b.refills.len() < REFILL_LOG {
            b.refills.push(now);
        }
        if !with_burst && b.idle && !throttled {
            // v5.4–v5.13: an idle group's timer stops before the refill
            return true;
        }
        b.refill(with_burst);
        if b.idle && !throttled {
            return true;
        }
        if !throttled {
            b.idle = true;
            return false;
        }
        b.nr_throttled += overrun;
        while self.tgs[g].cfs_b.runtime > 0 && !self.tgs[g].cfs_b.throttled_cpus.is_empty() {
            self.distribute_cfs_runtime(g);
        }
        self.tgs[g].cfs_b.idle = false;
        false
    }

    /// `distribute_cfs_runtime()`: oldest throttled cfs_rq first, each gets what it overran
    /// plus 1 ns, and runs again.
    fn distribute_cfs_runtime(&mut self, g: GroupId) {
        let cpus = self.tgs[g].cfs_b.throttled_cpus.clone();
        for cpu in cpus {
            let pool = self.tgs[g].cfs_b.runtime;
            if pool == 0 {
                break;
            }
            let grq = &mut self.tgs[g].rqs[cpu];
            let need = (1 - grq.runtime_remaining).max(0) as u64;
            let give = need.min(pool);
            grq.runtime_remaining += give as i64;
            self.tgs[g].cfs_b.runtime -= give;
            if self.tgs[g].rqs[cpu].runtime_remaining > 0 {
                self.unthrottle_cfs_rq(cpu, g);
            }
        }
    }

    /// `__assign_cfs_rq_runtime()`: top the cfs_rq up to `target` from the pool.
    fn assign_cfs_rq_runtime(&mut self, cpu: usize, g: GroupId, target: i64) -> bool {
        let min_amount = (target - self.tgs[g].rqs[cpu].runtime_remaining).max(0) as u64;
        let amount = match self.tgs[g].cfs_b.quota {
            None => min_amount,
            Some(_) => {
                self.start_cfs_bandwidth(g);
                let b = &mut self.tgs[g].cfs_b;
                let a = b.runtime.min(min_amount);
                b.runtime -= a;
                b.idle = false;
                a
            }
        };
        let grq = &mut self.tgs[g].rqs[cpu];
        grq.runtime_remaining += amount as i64;
        grq.runtime_remaining > 0
    }

    fn cfs_bandwidth_slice(&self) -> i64 {
        self.tun.sched_cfs_bandwidth_slice_us as i64 * 1000
    }

    /// `account_cfs_rq_runtime()` at every level of the running task's hierarchy, from
    /// `update_curr()`. Quota is charged in on-CPU time.
    pub fn account_cfs_rq_runtime(&mut self, cpu: usize, t: TaskId, delta_exec: u64) {
        let slice = self.cfs_bandwidth_slice();
        let mut g = self.tasks[t].tg;
        while g != ROOT_TG {
            self.tgs[g].usage_ns += delta_exec;
            let grq = &mut self.tgs[g].rqs[cpu];
            if grq.runtime_enabled {
                grq.runtime_remaining -= delta_exec as i64;
                let out = grq.runtime_remaining <= 0 && !grq.throttled;
                if out && !self.assign_cfs_rq_runtime(cpu, g, slice) {
                    // throttled at the next put_prev
                    self.resched_curr(cpu);
                }
            }
            g = self.tg_up(g);
        }
    }

    /// `check_cfs_rq_runtime()` from `put_prev_entity()`: throttle the levels that ran out.
    pub fn check_cfs_rq_runtime(&mut self, cpu: usize, t: TaskId) {
        let mut g = self.tasks[t].tg;
        while g != ROOT_TG {
            let grq = &self.tgs[g].rqs[cpu];
            if grq.runtime_enabled && grq.runtime_remaining <= 0 && !grq.throttled {
                self.throttle_cfs_rq(cpu, g);
            }
            g = self.tg_up(g);
        }
    }

    /// `check_enqueue_throttle()`: the first task enqueued into a group cfs_rq that has no
    /// runtime left throttles it at once.
    pub fn check_enqueue_throttle(&mut self, cpu: usize, t: TaskId) {
        let mut g = self.tasks[t].tg;
        while g != ROOT_TG {
            self.check_enqueue_throttle_level(cpu, t, g);
            g = self.tg_up(g);
        }
    }

    fn check_enqueue_throttle_level(&mut self, cpu: usize, t: TaskId, g: GroupId) {
        let grq = &self.tgs[g].rqs[cpu];
        if !grq.runtime_enabled || grq.h_nr_running != 1 || grq.throttled {
            return;
        }
        let curr_inside = self.rqs[cpu]
            .cfs
            .curr
            .is_some_and(|c| c != t && self.tgs_contains(g, c));
        if curr_inside {
            return;
        }
        if grq.runtime_remaining <= 0 {
            let slice = self.cfs_bandwidth_slice();
            self.assign_cfs_rq_runtime(cpu, g, slice);
        }
        if self.tgs[g].rqs[cpu].runtime_remaining <= 0 {
            self.throttle_cfs_rq(cpu, g);
        }
    }

    /// `throttle_cfs_rq()`: unless 1 ns can still be had, queue the cfs_rq on the throttled
    /// list and take the subtree's queued tasks off the CPU.
    fn throttle_cfs_rq(&mut self, cpu: usize, g: GroupId) {
        if self.assign_cfs_rq_runtime(cpu, g, 1) {
            return;
        }
        self.update_rq_clock(cpu);
        let b = &mut self.tgs[g].cfs_b;
        b.throttled_cpus.push(cpu);
        let grq = &mut self.tgs[g].rqs[cpu];
        grq.throttled = true;
        grq.throttled_clock = self.now;
        let victims: Vec<TaskId> = self.rqs[cpu]
            .cfs_tasks
            .iter()
            .copied()
            .filter(|&x| self.tgs_contains(g, x))
            .collect();
        for x in victims {
            self.dequeue_task_fair_throttle(cpu, x);
            self.tasks[x].throttled = true;
            self.tgs[g].rqs[cpu].held.push(x);
        }
        self.update_cfs_group(cpu);
        self.resched_curr(cpu);
    }

    fn tgs_contains(&self, g: GroupId, t: TaskId) -> bool {
        self.tasks[t].tg != ROOT_TG && self.tg_is_below(self.tasks[t].tg, g)
    }

    /// `unthrottle_cfs_rq()`: account the throttled time and put the held tasks back (those
    /// still under a throttled ancestor move to it).
    fn unthrottle_cfs_rq(&mut self, cpu: usize, g: GroupId) {
        let now = self.now;
        let grq = &mut self.tgs[g].rqs[cpu];
        grq.throttled = false;
        let held = std::mem::take(&mut grq.held);
        let since = grq.throttled_clock;
        let b = &mut self.tgs[g].cfs_b;
        b.throttled_time += now - since;
        b.throttled_cpus.retain(|&c| c != cpu);
        self.update_rq_clock(cpu);
        for t in held {
            if let Some(a) = self.throttled_ancestor(self.tasks[t].tg, cpu) {
                self.tgs[a].rqs[cpu].held.push(t);
                continue;
            }
            self.tasks[t].throttled = false;
            self.activate_task(
                cpu,
                t,
                EnqFlags {
                    wakeup: true,
                    ..EnqFlags::default()
                },
            );
            self.check_preempt_curr(cpu, t, false);
        }
    }

    /// `return_cfs_rq_runtime()`: a cfs_rq that emptied gives back all but 1 ms, and the slack
    /// timer may hand it to throttled CPUs.
    pub fn return_cfs_rq_runtime(&mut self, cpu: usize, g: GroupId) {
        let grq = &self.tgs[g].rqs[cpu];
        if !grq.runtime_enabled || grq.h_nr_running > 0 {
            return;
        }
        let slack = grq.runtime_remaining - MIN_CFS_RQ_RUNTIME_NS;
        if slack <= 0 {
            return;
        }
        let slice = self.cfs_bandwidth_slice() as u64;
        let b = &mut self.tgs[g].cfs_b;
        if b.quota.is_some() {
            b.runtime += slack as u64;
            if b.runtime > slice && !b.throttled_cpus.is_empty() {
                self.start_cfs_slack_bandwidth(g);
            }
        }
        self.tgs[g].rqs[cpu].runtime_remaining -= slack;
    }

    /// `runtime_refresh_within()`: the period timer fires within `min_expire`.
    fn runtime_refresh_within(&self, g: GroupId, min_expire: i64) -> bool {
        let remaining = self.tgs[g].cfs_b.expires as i64 - self.mono_now() as i64;
        remaining < min_expire
    }

    /// `start_cfs_slack_bandwidth()`: not when a refill is near, and never pushed forward.
    fn start_cfs_slack_bandwidth(&mut self, g: GroupId) {
        let near = CFS_BANDWIDTH_SLACK_PERIOD_NS as i64 + MIN_BANDWIDTH_EXPIRATION_NS;
        if self.runtime_refresh_within(g, near) || self.tgs[g].cfs_b.slack_started {
            return;
        }
        self.tgs[g].cfs_b.slack_started = true;
        let at = self.now + CFS_BANDWIDTH_SLACK_PERIOD_NS;
        self.events.schedule(at, Ev::CfsSlackTimer { tg: g });
    }

    /// `do_sched_cfs_slack_timer()`.
    pub fn on_cfs_slack_timer(&mut self, g: GroupId) {
        self.tgs[g].cfs_b.slack_started = false;
        if self.runtime_refresh_within(g, MIN_BANDWIDTH_EXPIRATION_NS) {
            return;
        }
        let slice = self.cfs_bandwidth_slice() as u64;
        let b = &self.tgs[g].cfs_b;
        if b.quota.is_some() && b.runtime > slice {
            self.distribute_cfs_runtime(g);
        }
    }
}
