//! The RT class (`kernel/sched/rt.c`, spec/kernel.md §8.11): SCHED_FIFO and SCHED_RR with
//! priorities 1..99, which always preempt the fair class; a FIFO task runs until it blocks or
//! a higher priority preempts it, an RR task round-robins with equals every 100 ms; wakeup
//! placement on the lowest-priority CPU (`select_task_rq_rt` / `find_lowest_rq`), push of a
//! queued task that cannot run to such a CPU and pull of higher-priority waiting tasks by a
//! CPU about to run something lower; the RT utilization signal (`update_rt_rq_load_avg`), which
//! reduces the capacity left for CFS and makes schedutil run at maximum.
//!
//! RT throttling (`sched_rt_runtime_us`, before v6.12) is in `rt_bandwidth.rs`, the fair
//! server that replaced it in `dl_server.rs`.
//!
//! Simplifications: no priority inheritance, no SCHED_DEADLINE tasks; `find_lowest_rq`
//! prefers prev, then the waking CPU, then the lowest-numbered candidate in prev's LLC.

use super::pelt::RunnableKind;
use super::task::{Policy, TaskId};
use crate::engine::Sim;

/// `RR_TIMESLICE`: 100 ms.
pub const RR_TIMESLICE_NS: u64 = 100_000_000;

/// The RT runqueue of one CPU.
#[derive(Clone, Debug, Default)]
pub struct RtRq {
    /// Runnable RT tasks in queue order (the running one included, as in the kernel's priority
    /// array); the pick is the first of the highest priority.
    pub queue: Vec<TaskId>,
    pub curr: Option<TaskId>,
    pub avg: super::pelt::SchedAvg,
    /// RT throttling (`rt_bandwidth.rs`): time run in this period, the runtime allowed (ns,
    /// `RUNTIME_INF` without limit) and whether the runqueue is throttled.
    pub rt_time: u64,
    pub rt_runtime: u64,
    pub rt_throttled: bool,
}

impl RtRq {
    /// The RT tasks counted in `rq->nr_running`: none while throttled (`rt_queued == 0`).
    pub fn nr_queued(&self) -> u32 {
        if self.rt_throttled {
            0
        } else {
            self.queue.len() as u32
        }
    }
}

impl Sim {
    pub fn is_rt(&self, t: TaskId) -> bool {
        self.tasks[t].policy.is_rt()
    }

    /// `rt_rq_is_runnable()`: queued RT tasks on a runqueue that is not throttled.
    pub fn rt_runnable(&self, cpu: usize) -> bool {
        self.rqs[cpu].rt.nr_queued() > 0
    }

    /// `cpu_util_rt()`.
    pub fn cpu_util_rt(&self, cpu: usize) -> u64 {
        self.rqs[cpu].rt.avg.util_avg
    }

    /// `update_rt_rq_load_avg()`: running = an RT task is on the CPU.
    pub fn update_rt_rq_load_avg(&mut self, cpu: usize) {
        let now = self.rqs[cpu].clock_pelt();
        let running = self.rqs[cpu].rt.curr.is_some() as u64;
        let rq = &mut self.rqs[cpu];
        if rq.rt.avg.last_update_time == 0 {
            rq.rt.avg.last_update_time = now;
        }
        if rq
            .rt
            .avg
            .update(now, running, running, running, 1, 1, RunnableKind::Count)
        {
            self.cpufreq_update_util(cpu, 0);
        }
    }

    /// The best queued RT task of a CPU (highest priority, then queue order).
    fn rt_best(&self, cpu: usize) -> Option<TaskId> {
        self.rqs[cpu].rt.queue.iter().copied().max_by_key(|&t| {
            (
                self.tasks[t].rt_priority,
                std::cmp::Reverse(self.queue_pos(cpu, t)),
            )
        })
    }

    fn queue_pos(&self, cpu: usize, t: TaskId) -> usize {
        self.rqs[cpu]
            .rt
            .queue
            .iter()
            .position(|&x| x == t)
            .unwrap_or(usize::MAX)
    }

    /// How important what `cpu` runs is, for RT placement: 0 idle, 1 fair, 1 + RT priority.
    pub fn rq_prio_level(&self, cpu: usize) -> u32 {
        match self.rt_best(cpu) {
            Some(t) => 1 + self.tasks[t].rt_priority,
            None if self.rqs[cpu].nr_running() == 0 && self.rqs[cpu].curr.is_none() => 0,
            None => 1,
        }
    }

    pub fn enqueue_task_rt(&mut self, cpu: usize, t: TaskId) {
        self.update_rq_clock(cpu);
        self.update_rt_rq_load_avg(cpu);
        self.rqs[cpu].rt.queue.push(t);
        if self.rqs[cpu].rt.queue.len() == 2 {
            self.rt_overloaded += 1;
        }
        self.tasks[t].se.on_rq = true;
        if self.rqs[cpu].nr_running() == 2 && !self.rqs[cpu].rt.rt_throttled {
            self.nr_overloaded += 1;
        }
        self.start_rt_bandwidth();
    }

    pub fn dequeue_task_rt(&mut self, cpu: usize, t: TaskId) {
        self.update_rq_clock(cpu);
        self.update_curr_rt(cpu);
        self.update_rt_rq_load_avg(cpu);
        let q = &mut self.rqs[cpu].rt.queue;
        if let Some(i) = q.iter().position(|&x| x == t) {
            q.remove(i);
            if q.len() == 1 {
                self.rt_overloaded -= 1;
            }
        }
        self.tasks[t].se.on_rq = false;
        if self.rqs[cpu].nr_running() == 1 && !self.rqs[cpu].rt.rt_throttled {
            self.nr_overloaded -= 1;
        }
    }

    /// `update_curr_rt()`: account the running RT task's time.
    pub fn update_curr_rt(&mut self, cpu: usize) {
        let Some(t) = self.rqs[cpu].rt.curr else {
            return;
        };
        let now = self.rqs[cpu].clock_task;
        let se = &mut self.tasks[t].se;
        let delta = now.saturating_sub(se.exec_start);
        se.exec_start = now;
        se.sum_exec_runtime += delta;
        self.tasks[t].stats.cpu_ns += delta;
        self.account_rt_runtime(cpu, delta);
        // cgroup_account_cputime(): cpu.stat's usage counts every class
        let mut g = self.tasks[t].tg;
        while g != super::cgroup::ROOT_TG {
            self.tgs[g].usage_ns += delta;
            g = self.tg_up(g);
        }
    }

    pub fn pick_next_task_rt(&mut self, cpu: usize) -> Option<TaskId> {
        if self.rqs[cpu].rt.rt_throttled {
            return None;
        }
        let t = self.rt_best(cpu)?;
        self.update_rt_rq_load_avg(cpu);
        self.rqs[cpu].rt.curr = Some(t);
        self.tasks[t].se.exec_start = self.rqs[cpu].clock_task;
        Some(t)
    }

    pub fn put_prev_task_rt(&mut self, cpu: usize, _t: TaskId) {
        self.update_curr_rt(cpu);
        self.update_rt_rq_load_avg(cpu);
        self.rqs[cpu].rt.curr = None;
    }

    /// `task_tick_rt()`: RR tasks round-robin with equal-priority tasks when their slice ends.
    pub fn task_tick_rt(&mut self, cpu: usize, t: TaskId) {
        self.update_curr_rt(cpu);
        self.update_rt_rq_load_avg(cpu);
        if self.tasks[t].policy != Policy::Rr {
            return;
        }
        let tick = self.prof.tick_ns();
        let left = self.tasks[t].rt_time_slice.saturating_sub(tick);
        if left > 0 {
            self.tasks[t].rt_time_slice = left;
            return;
        }
        self.tasks[t].rt_time_slice = RR_TIMESLICE_NS;
        let prio = self.tasks[t].rt_priority;
        let others = self.rqs[cpu]
            .rt
            .queue
            .iter()
            .any(|&x| x != t && self.tasks[x].rt_priority == prio);
        if others {
            // requeue_task_rt(): to the tail of its priority
            let q = &mut self.rqs[cpu].rt.queue;
            if let Some(i) = q.iter().position(|&x| x == t) {
                q.remove(i);
                q.push(t);
            }
            self.resched_curr(cpu);
        }
    }

    /// `check_preempt_curr_rt()`: an RT wakee preempts fair tasks and lower RT priorities.
    pub fn check_preempt_rt(&mut self, cpu: usize, p: TaskId) {
        match self.rqs[cpu].curr {
            None => self.resched_curr(cpu),
            Some(c) if !self.is_rt(c) => self.resched_curr(cpu),
            Some(c) if self.tasks[p].rt_priority > self.tasks[c].rt_priority => {
                self.resched_curr(cpu)
            }
            Some(_) => {
                // cannot run here now: push_rt_task()
                self.push_rt_task(cpu, p);
            }
        }
    }

    /// `select_task_rq_rt()`: stay on prev unless an RT task of at least the same priority
    /// runs there; then the lowest-priority CPU.
    pub fn select_task_rq_rt(&self, p: TaskId, prev: usize, this_cpu: usize) -> usize {
        let busy_with_rt = self.rqs[prev].curr.is_some_and(|c| {
            self.is_rt(c)
                && (self.tasks[c].nr_cpus_allowed < 2
                    || self.tasks[c].rt_priority >= self.tasks[p].rt_priority)
        });
        if !busy_with_rt && self.tasks[p].allowed(prev) {
            return prev;
        }
        match self.find_lowest_rq(p, prev, this_cpu) {
            Some(c) if self.rq_prio_level(c) < 1 + self.tasks[p].rt_priority => c,
            _ => prev,
        }
    }

    /// `find_lowest_rq()`: a CPU running the least important work.
    fn find_lowest_rq(&self, p: TaskId, prev: usize, this_cpu: usize) -> Option<usize> {
        let n = self.topo.nr_cpus();
        let lowest = (0..n)
            .filter(|&c| self.tasks[p].allowed(c))
            .map(|c| self.rq_prio_level(c))
            .min()?;
        let is_cand = |c: usize| self.tasks[p].allowed(c) && self.rq_prio_level(c) == lowest;
        if is_cand(prev) {
            return Some(prev);
        }
        if is_cand(this_cpu) && self.topo.shares_llc(this_cpu, prev) {
            return Some(this_cpu);
        }
        let llc = &self.topo.llc_cpus[self.topo.cpus[prev].llc];
        llc.iter()
            .copied()
            .find(|&c| is_cand(c))
            .or_else(|| (0..n).find(|&c| is_cand(c)))
    }

    /// `push_rt_tasks()` (the balance callback after a pick): push waiting RT tasks, most
    /// important first, to CPUs running less important work.
    pub fn push_rt_tasks(&mut self, cpu: usize) {
        loop {
            let curr = self.rqs[cpu].rt.curr;
            let Some(p) = self.rqs[cpu]
                .rt
                .queue
                .iter()
                .copied()
                .filter(|&t| Some(t) != curr)
                .max_by_key(|&t| self.tasks[t].rt_priority)
            else {
                return;
            };
            if !self.push_rt_task(cpu, p) {
                return;
            }
        }
    }

    /// `push_rt_task()`: move a queued RT task that cannot run here to a lower-priority CPU.
    /// Returns whether it moved.
    fn push_rt_task(&mut self, cpu: usize, p: TaskId) -> bool {
        if self.tasks[p].nr_cpus_allowed < 2 || self.rqs[cpu].rt.curr == Some(p) {
            return false;
        }
        let Some(dst) = self.find_lowest_rq(p, cpu, cpu) else {
            return false;
        };
        if dst == cpu || self.rq_prio_level(dst) > self.tasks[p].rt_priority {
            return false;
        }
        self.dequeue_task_rt(cpu, p);
        self.finish_migration(p, cpu, dst);
        self.enqueue_task_rt(dst, p);
        self.check_preempt_rt(dst, p);
        true
    }

    /// `pull_rt_task()`: before running something less important than a queued, not running
    /// RT task of another CPU, take the most important such task.
    pub fn pull_rt_task(&mut self, cpu: usize) {
        if self.nr_overloaded == 0 {
            return;
        }
        let mine = self.rt_best(cpu).map_or(0, |t| self.tasks[t].rt_priority);
        let mut best: Option<(u32, usize, TaskId)> = None;
        for src in 0..self.topo.nr_cpus() {
            if src == cpu || self.rqs[src].rt.queue.len() < 2 {
                continue;
            }
            for &t in &self.rqs[src].rt.queue {
                if self.rqs[src].rt.curr == Some(t) || !self.tasks[t].allowed(cpu) {
                    continue;
                }
                let pr = self.tasks[t].rt_priority;
                if pr > mine && best.is_none_or(|(b, _, _)| pr > b) {
                    best = Some((pr, src, t));
                }
            }
        }
        if let Some((_, src, t)) = best {
            self.dequeue_task_rt(src, t);
            self.finish_migration(t, src, cpu);
            self.enqueue_task_rt(cpu, t);
        }
    }
}
