//! RT throttling (`kernel/sched/rt.c` without RT_GROUP_SCHED, before v6.12; spec/kernel.md
//! §7.6): every CPU's RT runqueue may run RT tasks for `sched_rt_runtime_us` (950 ms) in each
//! `sched_rt_period_us` (1 s). `update_curr_rt()` adds the running RT task's time to the
//! runqueue's `rt_time`; past the runtime the runqueue is throttled (its tasks stay queued but
//! count for nothing, so fair tasks or idle run) until the period timer takes one runtime's
//! worth off `rt_time`. With `RT_RUNTIME_SHARE` (on before v5.10) a CPU out of runtime first
//! borrows from the unused runtime of the others (`do_balance_runtime()`), up to the whole
//! period, and keeps what it borrowed. From v6.12 the fair server (`dl_server`) replaces it.
//!
//! Simplified: the root domain is every CPU (no exclusive cpusets), so runtime is borrowed
//! from all of them; CPUs never go offline, so borrowed runtime is never handed back
//! (`__disable_runtime()`).

use crate::engine::{Ev, Sim};
use crate::sim::event::EventHandle;
use crate::sim::time::Time;

/// `RUNTIME_INF`: `sched_rt_runtime_us = -1`.
pub const RUNTIME_INF: u64 = u64::MAX;

/// `def_rt_bandwidth`: the period timer shared by every CPU.
#[derive(Clone, Debug, Default)]
pub struct RtBandwidth {
    pub period_active: bool,
    /// The timer's next expiry (simulated time).
    pub expires: Time,
    pub timer_ev: Option<EventHandle>,
}

impl Sim {
    /// `rt_bandwidth_enabled()`: RT throttling applies (before v6.12, runtime not -1).
    pub fn rt_bandwidth_enabled(&self) -> bool {
        !self.prof.fair_server() && self.tun.sched_rt_runtime_us >= 0
    }

    fn rt_period_ns(&self) -> u64 {
        self.tun.sched_rt_period_us * 1000
    }

    /// `def_rt_bandwidth.rt_runtime` (ns).
    pub fn def_rt_runtime(&self) -> u64 {
        if self.tun.sched_rt_runtime_us < 0 {
            RUNTIME_INF
        } else {
            self.tun.sched_rt_runtime_us as u64 * 1000
        }
    }

    /// `start_rt_bandwidth()` (from `inc_rt_group()` at every RT enqueue): an inactive period
    /// timer restarts (`hrtimer_forward_now(timer, 0)`): at once if its last expiry has passed,
    /// else at that expiry, keeping its phase.
    pub fn start_rt_bandwidth(&mut self) {
        if !self.rt_bandwidth_enabled()
            || self.def_rt_runtime() == RUNTIME_INF
            || self.rt_bw.period_active
        {
            return;
        }
        self.rt_bw.period_active = true;
        self.rt_bw.expires = self.rt_bw.expires.max(self.now);
        self.arm_rt_period_timer();
    }

    fn arm_rt_period_timer(&mut self) {
        let h = self.events.schedule(self.rt_bw.expires, Ev::RtPeriodTimer);
        self.rt_bw.timer_ev = Some(h);
    }

    /// `hrtimer_forward_now()` by whole periods past now: the overrun count.
    fn forward_rt_period_timer(&mut self) -> u64 {
        let period = self.rt_period_ns();
        crate::sim::time::hrtimer_forward(&mut self.rt_bw.expires, self.now, period)
    }

    /// `sched_rt_period_timer()`.
    pub fn on_rt_period_timer(&mut self) {
        self.rt_bw.timer_ev = None;
        let mut idle = false;
        loop {
            let overrun = self.forward_rt_period_timer();
            if overrun == 0 {
                break;
            }
            idle = self.do_sched_rt_period_timer(overrun);
        }
        if idle {
            self.rt_bw.period_active = false;
        } else {
            self.arm_rt_period_timer();
        }
    }

    /// `do_sched_rt_period_timer()`: take `overrun` runtimes off every CPU's `rt_time` and
    /// unthrottle those back under their runtime. Returns whether the timer can stop.
    fn do_sched_rt_period_timer(&mut self, overrun: u64) -> bool {
        let share = self.prof.feat.rt_runtime_share;
        let def = self.def_rt_runtime();
        let mut idle = true;
        let mut throttled = false;
        for cpu in 0..self.rqs.len() {
            let rt = &mut self.rqs[cpu].rt;
            if !share && rt.rt_runtime != RUNTIME_INF {
                rt.rt_runtime = def;
            }
            if rt.rt_time == 0 && rt.queue.is_empty() {
                continue;
            }
            let mut enqueue = false;
            if self.rqs[cpu].rt.rt_time > 0 {
                if self.rqs[cpu].rt.rt_throttled {
                    self.balance_runtime(cpu);
                }
                let rt = &mut self.rqs[cpu].rt;
                let runtime = rt.rt_runtime;
                rt.rt_time -= rt.rt_time.min(overrun.saturating_mul(runtime));
                if rt.rt_throttled && rt.rt_time < runtime {
                    enqueue = true;
                }
                if rt.rt_time > 0 || !rt.queue.is_empty() {
                    idle = false;
                }
            } else {
                idle = false;
                enqueue = !self.rqs[cpu].rt.rt_throttled;
            }
            if enqueue {
                self.set_rt_throttled(cpu, false);
                if !self.rqs[cpu].rt.queue.is_empty() {
                    // sched_rt_rq_enqueue()
                    self.resched_curr(cpu);
                }
            }
            if self.rqs[cpu].rt.rt_throttled {
                throttled = true;
            }
        }
        if !throttled && def == RUNTIME_INF {
            return true;
        }
        idle
    }

    /// The RT part of `update_curr_rt()`: charge `delta` to the runqueue and throttle it past
    /// its runtime.
    pub fn account_rt_runtime(&mut self, cpu: usize, delta: u64) {
        if !self.rt_bandwidth_enabled() || self.rqs[cpu].rt.rt_runtime == RUNTIME_INF {
            return;
        }
        self.rqs[cpu].rt.rt_time += delta;
        if self.sched_rt_runtime_exceeded(cpu) {
            self.resched_curr(cpu);
        }
    }

    /// `sched_rt_runtime_exceeded()`.
    fn sched_rt_runtime_exceeded(&mut self, cpu: usize) -> bool {
        if self.rqs[cpu].rt.rt_throttled {
            return true;
        }
        if self.rqs[cpu].rt.rt_runtime >= self.rt_period_ns() {
            return false;
        }
        self.balance_runtime(cpu);
        let rt = &self.rqs[cpu].rt;
        if rt.rt_runtime == RUNTIME_INF || rt.rt_time <= rt.rt_runtime {
            return false;
        }
        if self.def_rt_runtime() == 0 {
            // a group with no runtime only accrues time through boosting: not throttled
            self.rqs[cpu].rt.rt_time = 0;
            return false;
        }
        self.set_rt_throttled(cpu, true);
        true
    }

    /// `balance_runtime()` → `do_balance_runtime()`: with RT_RUNTIME_SHARE, a CPU over its
    /// runtime takes 1/n of every other CPU's spare runtime, in CPU order, until it holds a
    /// whole period.
    fn balance_runtime(&mut self, cpu: usize) {
        if !self.prof.feat.rt_runtime_share {
            return;
        }
        if self.rqs[cpu].rt.rt_time <= self.rqs[cpu].rt.rt_runtime {
            return;
        }
        let period = self.rt_period_ns();
        let weight = self.rqs.len() as u64;
        for i in 0..self.rqs.len() {
            if i == cpu || self.rqs[i].rt.rt_runtime == RUNTIME_INF {
                continue;
            }
            let spare = self.rqs[i].rt.rt_runtime as i128 - self.rqs[i].rt.rt_time as i128;
            if spare <= 0 {
                continue;
            }
            let mut diff = (spare as u64) / weight;
            let mine = self.rqs[cpu].rt.rt_runtime;
            if mine + diff > period {
                diff = period - mine;
            }
            self.rqs[i].rt.rt_runtime -= diff;
            self.rqs[cpu].rt.rt_runtime += diff;
            if self.rqs[cpu].rt.rt_runtime == period {
                break;
            }
        }
    }

    /// `sched_rt_rq_dequeue()` / the unthrottle half of `sched_rt_rq_enqueue()`: the RT tasks
    /// of a throttled runqueue stop counting in `rq->nr_running`.
    fn set_rt_throttled(&mut self, cpu: usize, on: bool) {
        if self.rqs[cpu].rt.rt_throttled == on {
            return;
        }
        let overloaded = self.rqs[cpu].nr_running() >= 2;
        self.rqs[cpu].rt.rt_throttled = on;
        match (overloaded, self.rqs[cpu].nr_running() >= 2) {
            (true, false) => self.nr_overloaded -= 1,
            (false, true) => self.nr_overloaded += 1,
            _ => {}
        }
        if on {
            self.stats.rt_throttles += 1;
        }
    }
}
