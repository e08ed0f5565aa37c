//! The fair server (`kernel/sched/deadline.c`, v6.12; spec/kernel.md §7.6): a per-CPU
//! SCHED_DEADLINE reservation of 50 ms every 1 s that runs fair tasks ahead of RT tasks when
//! RT would starve them. It replaced RT throttling (`rt_bandwidth.rs`) in v6.12.
//!
//! The reservation is a deferred constant-bandwidth server (`dl_defer`):
//! - `dl_server_start()` when the CPU's first fair task is enqueued, `dl_server_stop()` when the
//!   last one leaves. A start opens a new period (deadline now + period, full runtime) unless
//!   the current one can still be used, and *arms* the server: it waits, throttled, until the
//!   zero-laxity instant `deadline - runtime`.
//! - Every fair task's run time on the CPU, and its idle time, is charged to the server's
//!   runtime, scaled by frequency and capacity (`dl_scaled_delta_exec()`). A fair class that
//!   gets its runtime on its own while the server waits does not need it: the server starts a
//!   new period from now and waits again (`update_curr_dl_se()`).
//! - At the zero-laxity instant (`dl_server_timer()`), if fair tasks are still runnable, the
//!   server becomes a deadline entity, which the core picks before any RT task, and serves the
//!   fair class until its runtime is used; it is then throttled until its deadline, replenished
//!   and, still in the starvation state (`dl_defer_running`), served again at once.
//!
//! Simplified: the server is the only deadline entity (no SCHED_DEADLINE tasks, so no EDF
//! between entities, no push/pull of deadline tasks and no admission control); the revised
//! wakeup rule of constrained deadlines does not apply (the server's deadline is its period).
//! The later refinements of the server (v6.13+: `dl_server_idle`, the less aggressive start
//! and stop of cccb45d7c429, the timer's charge of the running task's pending time) are not
//! modelled; a stopped server is not charged (the v6.13 accounting fix).

use crate::engine::{Ev, Sim};
use crate::sim::event::EventHandle;
use crate::sim::time::Time;

/// `dl_server_min_res`: the zero-laxity timer is not pushed back by less than this.
const DL_SERVER_MIN_RES_NS: i128 = 1_000_000;
/// `DL_SCALE`: `dl_entity_overflow()` compares products of values shifted by this.
const DL_SCALE: u32 = 10;

/// `rq->fair_server`.
#[derive(Clone, Debug, Default)]
pub struct FairServer {
    /// `dl_server()`: the parameters were applied at the first start.
    pub setup: bool,
    /// `dl_server_active`: started (the CPU has fair tasks).
    pub active: bool,
    /// On the deadline runqueue: the core picks the fair class before RT.
    pub queued: bool,
    pub throttled: bool,
    pub defer_armed: bool,
    pub defer_running: bool,
    /// Remaining runtime (ns of capacity-scaled time) and absolute deadline (simulated time).
    pub runtime: i64,
    pub deadline: Time,
    pub timer_ev: Option<EventHandle>,
    /// `exec_start` of the idle task: when the CPU last went idle (`clock_task`).
    pub idle_exec_start: Time,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum EnqueueFlag {
    Wakeup,
    Replenish,
}

impl Sim {
    /// The server runs (v6.12+, with a non-zero runtime).
    pub fn fair_server_enabled(&self) -> bool {
        self.prof.fair_server() && self.tun.fair_server_runtime_ns > 0
    }

    /// The server is on the deadline runqueue: the fair class runs ahead of RT.
    pub fn fair_server_queued(&self, cpu: usize) -> bool {
        self.rqs[cpu].fair_server.queued
    }

    fn dl_runtime(&self) -> i64 {
        self.tun.fair_server_runtime_ns as i64
    }

    /// `dl_deadline` = `dl_period` (an implicit-deadline reservation).
    fn dl_period(&self) -> u64 {
        self.tun.fair_server_period_ns
    }

    /// `dl_scaled_delta_exec()`: run time scaled by the CPU's frequency and capacity.
    fn dl_scaled_delta_exec(&self, cpu: usize, delta: u64) -> i64 {
        let scaled = (delta as u128 * self.freq_scale(cpu) as u128) >> 10;
        let scaled = (scaled * self.topo.cpus[cpu].capacity_orig as u128) >> 10;
        scaled as i64
    }

    /// `dl_server_start()`: the CPU's first fair task was enqueued.
    pub fn dl_server_start(&mut self, cpu: usize) {
        if !self.fair_server_enabled() {
            return;
        }
        if !self.rqs[cpu].fair_server.setup {
            self.rqs[cpu].fair_server.setup = true;
            // setup_new_dl_entity()
            if !self.rqs[cpu].fair_server.throttled {
                self.replenish_dl_new_period(cpu);
            }
        }
        self.rqs[cpu].fair_server.active = true;
        self.enqueue_dl_entity(cpu, EnqueueFlag::Wakeup);
        if self.rqs[cpu].fair_server.queued {
            self.resched_curr(cpu);
        }
    }

    /// `dl_server_stop()`: the CPU's last fair task left. The starvation state
    /// (`dl_defer_running`) is kept for the next start.
    pub fn dl_server_stop(&mut self, cpu: usize) {
        if !self.fair_server_enabled() {
            return;
        }
        self.cancel_dl_timer(cpu);
        let fs = &mut self.rqs[cpu].fair_server;
        fs.queued = false;
        fs.defer_armed = false;
        fs.throttled = false;
        fs.active = false;
    }

    fn cancel_dl_timer(&mut self, cpu: usize) {
        if let Some(h) = self.rqs[cpu].fair_server.timer_ev.take() {
            self.events.cancel(h);
        }
    }

    /// `enqueue_dl_entity()`: a throttled server whose timer could be started waits for it;
    /// otherwise it is queued.
    fn enqueue_dl_entity(&mut self, cpu: usize, flag: EnqueueFlag) {
        match flag {
            EnqueueFlag::Wakeup => self.update_dl_entity(cpu),
            EnqueueFlag::Replenish => self.replenish_dl_entity(cpu),
        }
        if self.rqs[cpu].fair_server.throttled && self.start_dl_timer(cpu) {
            return;
        }
        if self.rqs[cpu].fair_server.throttled {
            // the defer time has passed: queue now
            self.cancel_dl_timer(cpu);
            let fs = &mut self.rqs[cpu].fair_server;
            fs.defer_armed = false;
            fs.throttled = false;
        }
        self.rqs[cpu].fair_server.queued = true;
    }

    /// `update_dl_entity()` at a start: a new period if the deadline passed or the remaining
    /// runtime would exceed the reserved bandwidth; else keep it, armed unless starving.
    fn update_dl_entity(&mut self, cpu: usize) {
        let now = self.now;
        if self.rqs[cpu].fair_server.deadline < now || self.dl_entity_overflow(cpu, now) {
            self.replenish_dl_new_period(cpu);
        } else if !self.rqs[cpu].fair_server.defer_running {
            let fs = &mut self.rqs[cpu].fair_server;
            fs.defer_armed = true;
            fs.throttled = true;
        }
    }

    /// `dl_entity_overflow()`: runtime / (deadline - t) > dl_runtime / dl_deadline, with the
    /// kernel's `DL_SCALE` shifts.
    fn dl_entity_overflow(&self, cpu: usize, t: Time) -> bool {
        let fs = &self.rqs[cpu].fair_server;
        if fs.runtime < 0 {
            return true; // a negative s64 runtime is a huge u64 in the product
        }
        let left = (self.dl_period() >> DL_SCALE) as u128 * (fs.runtime as u64 >> DL_SCALE) as u128;
        let right = (fs.deadline.saturating_sub(t) >> DL_SCALE) as u128
            * (self.dl_runtime() as u64 >> DL_SCALE) as u128;
        right < left
    }

    /// `replenish_dl_new_period()`: deadline now + period, full runtime; armed unless starving.
    fn replenish_dl_new_period(&mut self, cpu: usize) {
        let deadline = self.now + self.dl_period();
        let runtime = self.dl_runtime();
        let fs = &mut self.rqs[cpu].fair_server;
        fs.deadline = deadline;
        fs.runtime = runtime;
        if !fs.defer_running {
            fs.throttled = true;
            fs.defer_armed = true;
        }
    }

    /// `replenish_dl_entity()`.
    fn replenish_dl_entity(&mut self, cpu: usize) {
        let now = self.now;
        let (period, dl_runtime) = (self.dl_period(), self.dl_runtime());
        if self.rqs[cpu].fair_server.defer_armed && self.dl_entity_overflow(cpu, now) {
            // a deferred reservation that could not run in background: a new period
            let fs = &mut self.rqs[cpu].fair_server;
            fs.deadline = now + period;
            fs.runtime = dl_runtime;
        }
        let fs = &mut self.rqs[cpu].fair_server;
        while fs.runtime <= 0 {
            fs.deadline += period;
            fs.runtime += dl_runtime;
        }
        if fs.deadline < now {
            // "DL replenish lagged too much"
            self.replenish_dl_new_period(cpu);
        }
        let fs = &mut self.rqs[cpu].fair_server;
        fs.throttled = false;
        if fs.defer_armed {
            fs.defer_armed = false;
            return;
        }
        let zero_laxity = fs.deadline as i128 - fs.runtime as i128;
        if !fs.defer_running && (now as i128) < zero_laxity && self.rqs[cpu].cfs.nr_running > 0 {
            let fs = &mut self.rqs[cpu].fair_server;
            fs.defer_armed = true;
            fs.throttled = true;
            if !self.start_dl_timer(cpu) {
                self.cancel_dl_timer(cpu);
                let fs = &mut self.rqs[cpu].fair_server;
                fs.defer_armed = false;
                fs.throttled = false;
            }
        }
    }

    /// `start_dl_timer()`: an armed server wakes at its zero-laxity instant, a throttled one
    /// at its next period. False if that instant has passed. A pending timer is left as is.
    fn start_dl_timer(&mut self, cpu: usize) -> bool {
        let fs = &self.rqs[cpu].fair_server;
        let act = if fs.defer_armed {
            fs.deadline as i128 - fs.runtime as i128
        } else {
            fs.deadline as i128
        };
        if act < self.now as i128 {
            return false;
        }
        if fs.timer_ev.is_none() {
            let h = self.events.schedule(act as Time, Ev::DlServerTimer { cpu });
            self.rqs[cpu].fair_server.timer_ev = Some(h);
        }
        true
    }

    /// `dl_server_timer()`: the zero-laxity instant (armed) or the next period (throttled).
    pub fn dl_server_timer(&mut self, cpu: usize) {
        if !self.rqs[cpu].fair_server.throttled || !self.fair_server_enabled() {
            return;
        }
        self.update_rq_clock(cpu);
        if self.rqs[cpu].cfs.nr_running == 0 {
            self.replenish_dl_entity(cpu);
            return;
        }
        let fs = &self.rqs[cpu].fair_server;
        if fs.defer_armed {
            let zero_laxity = fs.deadline as i128 - fs.runtime as i128;
            if (self.now as i128) < zero_laxity - DL_SERVER_MIN_RES_NS {
                // the fair class ran in background: the zero-laxity instant moved later
                let h = self
                    .events
                    .schedule(zero_laxity as Time, Ev::DlServerTimer { cpu });
                self.rqs[cpu].fair_server.timer_ev = Some(h);
                return;
            }
            self.rqs[cpu].fair_server.defer_running = true;
        }
        self.enqueue_dl_entity(cpu, EnqueueFlag::Replenish);
        if self.rqs[cpu].fair_server.queued {
            self.stats.fair_server_activations += 1;
            self.resched_curr(cpu);
        }
    }

    /// `dl_server_update()` from the fair class's `update_curr()`: charge a fair task's run
    /// time.
    pub fn dl_server_update(&mut self, cpu: usize, delta: u64) {
        if !self.fair_server_enabled() || delta == 0 {
            return;
        }
        self.update_curr_dl_se(cpu, delta);
    }

    /// `update_curr_dl_se()` for the server.
    fn update_curr_dl_se(&mut self, cpu: usize, delta: u64) {
        if !self.rqs[cpu].fair_server.active {
            return;
        }
        let scaled = self.dl_scaled_delta_exec(cpu, delta);
        let fs = &mut self.rqs[cpu].fair_server;
        fs.runtime -= scaled;
        if fs.runtime > 0 {
            return;
        }
        if fs.throttled {
            // the fair class got its runtime in background: not needed this period
            fs.defer_running = false;
            self.cancel_dl_timer(cpu);
            self.replenish_dl_new_period(cpu);
            self.start_dl_timer(cpu);
            return;
        }
        // served its runtime: throttled until the next period
        fs.throttled = true;
        fs.queued = false;
        if !self.start_dl_timer(cpu) {
            self.enqueue_dl_entity(cpu, EnqueueFlag::Replenish);
        }
        if !self.rqs[cpu].fair_server.queued {
            self.resched_curr(cpu);
        }
    }

    /// `dl_server_update_idle_time()`: the CPU's idle time counts as run time of the fair
    /// class (RT did not need it), down to an empty runtime, which also ends starvation.
    pub fn dl_server_update_idle_time(&mut self, cpu: usize) {
        if !self.fair_server_enabled() || !self.rqs[cpu].fair_server.setup {
            return;
        }
        if self.rqs[cpu].fair_server.runtime < 0 {
            return;
        }
        let now = self.rqs[cpu].clock_task;
        let delta = now.saturating_sub(self.rqs[cpu].fair_server.idle_exec_start);
        let scaled = self.dl_scaled_delta_exec(cpu, delta);
        let fs = &mut self.rqs[cpu].fair_server;
        fs.runtime -= scaled;
        if fs.runtime < 0 {
            fs.defer_running = false;
            fs.runtime = 0;
        }
        fs.idle_exec_start = now;
    }
}
