//! Core scheduler paths (`kernel/sched/core.c`, `idle.c`): `__schedule()`, `try_to_wake_up()`,
//! `wake_up_new_task()`, `sched_exec()`, `do_exit()`, the scheduler tick with NOHZ idle, and
//! idle entry/exit with the idle state's exit latency. Scheduler work that costs CPU time in the
//! kernel (context switch, wakeup, fork, exec, migration) is charged to the CPU that does it as
//! cycles run through that CPU's work model.

use super::fair::EnqFlags;
use super::pelt;
use super::rq::{IdleType, Stopper};
use super::task::{
    nice_to_weight, Burst, Policy, SchedEntity, Task, TaskId, TaskState, WEIGHT_IDLEPRIO,
};
use crate::engine::{Ev, Sim};
use crate::sim::time::Time;
use crate::trace::ftrace::{Payload, PWR_EVENT_EXIT};

/// Which blocked senders of a channel a send or a receive wakes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WakeSenders {
    No,
    First,
    All,
}

/// Wake flags.
#[derive(Clone, Copy, Debug, Default)]
pub struct WakeFlags {
    /// `WF_SYNC`: the waker is about to sleep (pipes, sockets).
    pub sync: bool,
}

/// Balance type of `select_task_rq_fair`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SdFlag {
    Wake,
    Fork,
    Exec,
}

impl Sim {
    // ------------------------------------------------------------------ task creation

    /// Create a task from a program template. It is not yet runnable.
    pub fn create_task(&mut self, program: usize, parent: Option<TaskId>, instance: u32) -> TaskId {
        let prog = &self.compiled.programs[program];
        let policy = Policy::parse(&prog.policy).unwrap_or(Policy::Normal);
        let weight = if policy == Policy::Idle {
            WEIGHT_IDLEPRIO
        } else {
            nice_to_weight(prog.nice)
        };
        let n = self.topo.nr_cpus();
        let mut cpus_allowed = Vec::new();
        if !prog.cpus.is_empty() {
            cpus_allowed = vec![false; n];
            for &c in &prog.cpus {
                if c < n {
                    cpus_allowed[c] = true;
                }
            }
        }
        let nr_allowed = if cpus_allowed.is_empty() {
            n
        } else {
            cpus_allowed.iter().filter(|&&b| b).count()
        };
        let comm = if prog.instances > 1 {
            format!("{}-{instance}", prog.name)
        } else {
            prog.name.clone()
        };
        let id = self.tasks.len();
        let pid = self.next_pid;
        self.next_pid += 1;
        let cpu = parent.map(|p| self.tasks[p].cpu).unwrap_or(0);
        let nice = prog.nice;
        let rt_priority = prog.priority;
        let tg = self.program_tg[program]
            .or_else(|| parent.map(|p| self.tasks[p].tg))
            .unwrap_or(super::cgroup::ROOT_TG);
        let uclamp_req = prog.uclamp.map(|v| v.map(u64::from));
        self.tasks.push(Task {
            id,
            pid,
            comm,
            parent,
            program,
            nice,
            policy,
            rt_priority,
            rt_time_slice: super::rt::RR_TIMESLICE_NS,
            se: SchedEntity {
                weight,
                slice: self.tun.sched_base_slice_ns,
                ..SchedEntity::default()
            },
            util_est: pelt::UtilEst::default(),
            state: TaskState::New,
            cpu,
            cpus_allowed,
            nr_cpus_allowed: nr_allowed,
            pc: 0,
            loops: Vec::new(),
            burst: None,
            pending_overhead: 0.0,
            block_path_done: false,
            sync_queued: false,
            pending_row: None,
            timed_deadline: None,
            timer_next: None,
            poll_served: 0,
            poll_next: 0,
            poll_waiting: false,
            pipe_waited: false,
            live_children: 0,
            exited_children: 0,
            waiting_for_child: false,
            wakee_flips: 0,
            wakee_flip_decay_ts: self.now,
            last_wakee: None,
            recent_used_cpu: cpu,
            in_iowait: false,
            resume_pending: 0,
            suspended: false,
            tg,
            own_weight: weight,
            throttled: false,
            uclamp_req,
            stats: Default::default(),
        });
        self.live_tasks += 1;
        if tg != super::cgroup::ROOT_TG {
            self.tgs[tg].members.push(id);
        }
        if let Some(p) = parent {
            self.tasks[p].live_children += 1;
        }
        id
    }

    /// Create the workload's initial tasks.
    pub fn spawn_initial_tasks(&mut self) -> Result<(), String> {
        let total: u64 = (self.compiled.programs.iter())
            .filter(|p| p.start)
            .map(|p| p.instances as u64)
            .sum();
        if total > crate::workload::MAX_TASKS {
            return Err(format!(
                "workload: {total} tasks at the start (the programs' instances added up); at most \
                 {}",
                crate::workload::MAX_TASKS
            ));
        }
        for prog in 0..self.compiled.programs.len() {
            let p = &self.compiled.programs[prog];
            if !p.start {
                continue;
            }
            let (instances, delay) = (p.instances, p.delay_ns);
            for i in 0..instances {
                let t = self.create_task(prog, None, i);
                self.events.schedule(delay, Ev::TaskStart { task: t });
            }
        }
        Ok(())
    }

    /// Start an initial task as if forked by a launcher on CPU 0.
    pub fn start_task(&mut self, t: TaskId) {
        match self.compiled.programs[self.tasks[t].program].start_cpu {
            Some(cpu) if cpu < self.topo.nr_cpus() => self.wake_up_new_task_on(t, cpu, cpu),
            _ => self.wake_up_new_task(t, 0),
        }
    }

    /// `post_init_entity_util_avg()` + `init_entity_runnable_average()`.
    fn init_entity_avg(&mut self, t: TaskId, cpu: usize) {
        let cfs = &self.rqs[cpu].cfs.avg;
        let w = self.tasks[t].se.weight;
        let extrapolation_weight = if self.prof.post_init_scaled_weight {
            w << pelt::SCHED_FIXEDPOINT_SHIFT
        } else {
            w
        };
        let cap = self.capacity_of(cpu);
        let util = pelt::post_init_util(cfs.util_avg, cfs.load_avg, extrapolation_weight, cap);
        let kind = self.pelt_kind();
        let avg = &mut self.tasks[t].se.avg;
        *avg = pelt::SchedAvg::default();
        avg.load_avg = w;
        avg.util_avg = util;
        // init_entity_runnable_average(): the weighted runnable load starts at the weight, like
        // load; the count-based runnable (v5.7+) starts at util
        avg.runnable_avg = match kind {
            pelt::RunnableKind::Weighted => w,
            pelt::RunnableKind::Count => util,
        };
    }

    /// `wake_up_new_task()`: fork balancing, initial PELT values, enqueue, preemption check.
    pub fn wake_up_new_task(&mut self, t: TaskId, parent_cpu: usize) {
        let cpu = self.select_task_rq(
            t,
            parent_cpu,
            SdFlag::Fork,
            WakeFlags::default(),
            parent_cpu,
        );
        self.wake_up_new_task_on(t, cpu, parent_cpu);
    }

    /// The part of `wake_up_new_task()` after the CPU is chosen.
    pub fn wake_up_new_task_on(&mut self, t: TaskId, cpu: usize, parent_cpu: usize) {
        self.tasks[t].cpu = cpu;
        self.tasks[t].recent_used_cpu = cpu;
        self.tasks[t].state = TaskState::Runnable;
        self.tasks[t].stats.start_ns = self.now;
        self.tasks[t].stats.runnable_since = self.now;
        self.update_rq_clock(cpu);
        self.init_entity_avg(t, cpu);
        if self.trace.is_some() {
            let p = self.trace_ref(Some(t));
            self.trace_event(parent_cpu, Payload::WakeupNew { p, target: cpu });
        }
        self.activate_task(
            cpu,
            t,
            EnqFlags {
                initial: true,
                ..EnqFlags::default()
            },
        );
        self.check_preempt_curr(cpu, t, true);
    }

    /// `activate_task()` → the class's `enqueue_task`.
    pub fn activate_task(&mut self, cpu: usize, t: TaskId, f: EnqFlags) {
        self.update_rq_clock(cpu);
        self.uclamp_rq_inc(cpu, t);
        if self.is_rt(t) {
            self.enqueue_task_rt(cpu, t);
        } else {
            self.enqueue_task_fair(cpu, t, f);
        }
    }

    /// `deactivate_task()` → the class's `dequeue_task`.
    pub fn deactivate_task(&mut self, cpu: usize, t: TaskId, sleep: bool, detach: bool) {
        self.uclamp_rq_dec(cpu, t);
        if self.is_rt(t) {
            self.dequeue_task_rt(cpu, t);
        } else {
            self.dequeue_task_fair(cpu, t, sleep, detach);
        }
    }

    /// `wakeup_preempt()` / `check_preempt_curr()`: the class of the wakee decides.
    pub fn check_preempt_curr(&mut self, cpu: usize, p: TaskId, fork: bool) {
        if self.tasks[p].throttled {
            return;
        }
        if self.is_rt(p) {
            self.check_preempt_rt(cpu, p);
        } else {
            self.check_preempt_wakeup(cpu, p, fork);
        }
    }

    /// `select_task_rq()` of the task's class.
    pub fn select_task_rq(
        &mut self,
        p: TaskId,
        prev: usize,
        sd_flag: SdFlag,
        wf: WakeFlags,
        this_cpu: usize,
    ) -> usize {
        if self.is_rt(p) {
            if sd_flag == SdFlag::Exec {
                return prev;
            }
            self.select_task_rq_rt(p, prev, this_cpu)
        } else {
            self.select_task_rq_fair(p, prev, sd_flag, wf, this_cpu)
        }
    }

    // ------------------------------------------------------------------ wakeups

    /// `try_to_wake_up()` run on `waker_cpu`.
    pub fn try_to_wake_up(&mut self, t: TaskId, waker_cpu: usize, wf: WakeFlags) {
        let state = self.tasks[t].state;
        if !matches!(state, TaskState::Sleeping | TaskState::IoWait) {
            return;
        }
        if self.trace.is_some() {
            let p = self.trace_ref(Some(t));
            let target = self.tasks[t].cpu;
            self.trace_event(waker_cpu, Payload::Waking { p, target });
        }
        self.ttwu_charge = Some((waker_cpu, 0.0));
        self.charge_waker(waker_cpu);
        self.stats.wakeups += 1;
        self.account_task_state(t);
        let iowait = state == TaskState::IoWait;
        let prev = self.tasks[t].cpu;
        if iowait {
            self.rqs[prev].nr_iowait -= 1;
        }
        let cpu = self.select_task_rq(t, prev, SdFlag::Wake, wf, waker_cpu);
        let migrated = cpu != prev;
        if migrated {
            self.set_task_cpu(t, cpu);
        }
        let task = &mut self.tasks[t];
        task.state = TaskState::Runnable;
        task.in_iowait = iowait;
        task.stats.nr_wakeups += 1;
        task.stats.runnable_since = self.now;
        task.stats.pending_wakeup_latency = true;
        self.activate_task(
            cpu,
            t,
            EnqFlags {
                wakeup: true,
                migrated,
                iowait,
                ..EnqFlags::default()
            },
        );
        self.check_preempt_curr(cpu, t, false);
        self.ttwu_charge = None;
        if cpu != waker_cpu && self.rqs[waker_cpu].curr.is_none() {
            // an idle waker went back to idle: its interrupt work delays no task
            self.rqs[waker_cpu].idle_kernel_cycles = 0.0;
        }
        if self.trace.is_some() {
            let p = self.trace_ref(Some(t));
            self.trace_event(cpu, Payload::Wakeup { p, target: cpu });
        }
    }

    /// The waker pays for the wakeup path.
    fn charge_waker(&mut self, waker_cpu: usize) {
        let ct = self.topo.cpus[waker_cpu].core_type;
        let c = self.costs[ct].wakeup;
        self.charge_cpu(waker_cpu, c);
    }

    /// Add `cycles` of kernel work to whatever runs on `cpu`. On an idle CPU the work is kept
    /// until the CPU next runs a task, which starts after it (the interrupt that woke the CPU
    /// ran it first); if the CPU goes back to idle instead, it is dropped.
    pub fn charge_cpu(&mut self, cpu: usize, cycles: f64) {
        if cycles <= 0.0 {
            return;
        }
        if let Some((waker, c)) = self.ttwu_charge.as_mut() {
            if *waker == cpu {
                *c += cycles;
            }
        }
        let Some(cur) = self.rqs[cpu].curr else {
            self.rqs[cpu].idle_kernel_cycles += cycles;
            return;
        };
        if self.tasks[cur].burst.is_some() {
            self.sync_cpu(cpu);
            if let Some(b) = self.tasks[cur].burst.as_mut() {
                b.cycles += cycles;
            }
            self.force_rearm(cpu);
        } else {
            self.tasks[cur].pending_overhead += cycles;
        }
    }

    fn force_rearm(&mut self, cpu: usize) {
        self.disarm_burst(cpu);
        self.rearm_burst(cpu);
    }

    /// `set_task_cpu()` → `migrate_task_rq_fair()` for a task that is not queued.
    pub fn set_task_cpu(&mut self, t: TaskId, new_cpu: usize) {
        let old = self.tasks[t].cpu;
        if self.prof.fair == crate::sim::profile::FairFlavor::Cfs {
            let min = self.rqs[old].cfs.min_vruntime;
            let se = &mut self.tasks[t].se;
            se.vruntime = se.vruntime.wrapping_sub(min);
        }
        self.remove_entity_load_avg(t, old);
        self.finish_migration(t, old, new_cpu);
    }

    /// `remove_entity_load_avg()`: sync a task that is not queued to `cpu`'s cfs_rq and queue
    /// its averages in `cfs_rq->removed`, which the next `update_cfs_rq_load_avg` of that
    /// cfs_rq subtracts. Until then the cfs_rq's load and utilization still carry them.
    fn remove_entity_load_avg(&mut self, t: TaskId, cpu: usize) {
        let last = self.rqs[cpu].cfs.avg.last_update_time;
        let kind = self.pelt_kind();
        let task = &mut self.tasks[t];
        if task.se.avg.last_update_time != 0 {
            task.se
                .avg
                .update(last, 0, 0, 0, task.se.weight, task.se.weight, kind);
            let avg = task.se.avg;
            avg.remove_from(&mut self.rqs[cpu].cfs.removed, kind);
        }
    }

    /// Common tail of every migration: PELT re-attach, cache-cold, counters, trace.
    pub fn finish_migration(&mut self, t: TaskId, old: usize, new_cpu: usize) {
        let task = &mut self.tasks[t];
        task.se.avg.last_update_time = 0;
        task.se.exec_start = 0;
        task.cpu = new_cpu;
        task.stats.nr_migrations += 1;
        self.stats.migrations += 1;
        if self.trace.is_some() {
            let p = self.trace_ref(Some(t));
            self.trace_event(
                old,
                Payload::Migrate {
                    p,
                    orig: old,
                    dest: new_cpu,
                },
            );
        }
    }

    /// Move a queued, not running task between runqueues (load balancing, the stopper).
    pub fn move_queued_task(&mut self, t: TaskId, src: usize, dst: usize) {
        self.update_rq_clock(src);
        self.uclamp_rq_dec(src, t);
        if self.is_rt(t) {
            self.dequeue_task_rt(src, t);
        } else {
            self.dequeue_task_fair(src, t, false, true);
        }
        self.finish_migration(t, src, dst);
        let ct = self.topo.cpus[dst].core_type;
        let c = self.costs[ct].migrate;
        self.tasks[t].pending_overhead += c;
        self.activate_task(
            dst,
            t,
            EnqFlags {
                migrated: true,
                ..EnqFlags::default()
            },
        );
        self.check_preempt_curr(dst, t, false);
    }

    // ------------------------------------------------------------------ blocking and exit

    /// The running task `t` on `cpu` goes to sleep (`deactivate_task` with DEQUEUE_SLEEP).
    pub fn block_task(&mut self, t: TaskId, cpu: usize, state: TaskState) {
        self.update_rq_clock(cpu);
        self.account_task_state(t);
        self.tasks[t].state = state;
        self.tasks[t].stats.blocked_since = self.now;
        if state == TaskState::IoWait {
            self.rqs[cpu].nr_iowait += 1;
        }
        self.deactivate_task(cpu, t, true, false);
        self.resched_curr(cpu);
    }

    /// `do_exit()`: `exit_notify()` wakes a waiting parent while the dying task is still
    /// current and queued (`__wake_up_parent` is a sync wakeup, so `wake_affine` may pull the
    /// parent to this CPU); then `do_task_dead()` dequeues it like a sleep and
    /// `task_dead_fair()` queues its averages for removal (`remove_entity_load_avg`), so its
    /// CPU's load and utilization keep them until that runqueue's next PELT update. On a CPU
    /// that goes idle that is the new-idle balance (when it runs) or the nohz blocked-load
    /// update, up to tens of milliseconds later: the next fork sees the dead task's load there.
    pub fn do_exit(&mut self, t: TaskId, cpu: usize) {
        self.update_rq_clock(cpu);
        self.account_task_state(t);
        if self.trace.is_some() {
            let p = self.trace_ref(Some(t));
            self.trace_event(cpu, Payload::Exit { p });
        }
        self.tasks[t].stats.exit_ns = Some(self.now);
        self.exit_notify(t, cpu);
        self.tasks[t].state = TaskState::Dead;
        self.deactivate_task(cpu, t, true, false);
        if !self.is_rt(t) {
            self.remove_entity_load_avg(t, cpu);
        }
        let tg = self.tasks[t].tg;
        if tg != super::cgroup::ROOT_TG {
            self.tgs[tg].members.retain(|&x| x != t);
        }
        self.stats.exits += 1;
        self.live_tasks -= 1;
        self.resched_curr(cpu);
    }

    /// `exit_notify()` → `do_notify_parent()`: a parent sleeping in `wait()` is woken with
    /// `WF_SYNC` (`__wake_up_parent` → `__wake_up_sync_key`); otherwise the exit is recorded
    /// for its next `wait()`.
    fn exit_notify(&mut self, t: TaskId, cpu: usize) {
        let Some(p) = self.tasks[t].parent else {
            return;
        };
        let parent = &mut self.tasks[p];
        parent.live_children -= 1;
        if parent.waiting_for_child && matches!(parent.state, TaskState::Sleeping) {
            parent.waiting_for_child = false;
            self.try_to_wake_up(p, cpu, WakeFlags { sync: true });
        } else {
            parent.exited_children += 1;
        }
    }

    /// Close the current accounting interval of a task (wait / sleep / iowait time).
    pub fn account_task_state(&mut self, t: TaskId) {
        let now = self.now;
        let task = &mut self.tasks[t];
        match task.state {
            TaskState::Sleeping => task.stats.sleep_ns += now - task.stats.blocked_since,
            TaskState::IoWait => task.stats.iowait_ns += now - task.stats.blocked_since,
            _ => {}
        }
        task.stats.blocked_since = now;
    }

    // ------------------------------------------------------------------ __schedule

    /// `__schedule()` on `cpu`.
    pub fn schedule(&mut self, cpu: usize) {
        self.rqs[cpu].need_resched = false;
        if self.rqs[cpu].waking {
            // the CPU is still leaving its idle state; it schedules when it is out
            self.rqs[cpu].need_resched = true;
            return;
        }
        let prev = self.rqs[cpu].curr;
        self.update_rq_clock(cpu);
        if let Some(p) = prev {
            self.put_prev_task(cpu, p);
            if let Some(work) = self.rqs[cpu].stopper.take() {
                // the stopper preempted the running task: sync its progress, then move a task
                self.sync_cpu(cpu);
                self.run_stopper(cpu, work);
            }
        }
        let mut next = self.pick_next_task(cpu);
        if next.is_none() && self.newidle_balance(cpu) {
            next = self.pick_next_task(cpu);
        }
        if next == prev {
            if next.is_some() {
                self.rearm_or_continue(cpu);
            } else {
                // woken for nothing (the task went elsewhere): back to idle
                self.hw_sync_for(cpu);
                self.enter_idle(cpu);
                self.hw_update_for(cpu);
            }
            return;
        }
        self.context_switch(cpu, prev, next);
    }

    /// `put_prev_task()` of the class of the task leaving the CPU.
    fn put_prev_task(&mut self, cpu: usize, p: TaskId) {
        if self.is_rt(p) {
            self.put_prev_task_rt(cpu, p);
        } else {
            self.put_prev_task_fair(cpu, p);
            if self.has_task_groups() && self.tasks[p].tg != super::cgroup::ROOT_TG {
                self.check_cfs_rq_runtime(cpu, p);
            }
        }
    }

    /// `pick_next_task()`: the fair server when it serves (v6.12+), then RT (pulling a waiting
    /// RT task from an overloaded CPU first), then the fair class.
    fn pick_next_task(&mut self, cpu: usize) -> Option<TaskId> {
        if self.fair_server_queued(cpu) {
            if let Some(t) = self.pick_next_task_fair(cpu) {
                return Some(t);
            }
        }
        if self.rt_overloaded > 0 {
            self.pull_rt_task(cpu);
        }
        if let Some(t) = self.pick_next_task_rt(cpu) {
            if self.rqs[cpu].rt.queue.len() >= 2 {
                self.push_rt_tasks(cpu);
            }
            return Some(t);
        }
        self.pick_next_task_fair(cpu)
    }

    fn rearm_or_continue(&mut self, cpu: usize) {
        let t = self.rqs[cpu].curr.expect("busy");
        if self.tasks[t].burst.is_some() {
            self.rearm_burst(cpu);
        } else {
            self.queue_program(t);
        }
    }

    /// Queue the program of `t`, which just got (or kept) the CPU, to run at this instant; a
    /// task queued twice would execute its next ops twice.
    fn queue_program(&mut self, t: TaskId) {
        if !self.run_queue_pending.contains(&t) {
            self.run_queue_pending.push_back(t);
        }
    }

    fn context_switch(&mut self, cpu: usize, prev: Option<TaskId>, next: Option<TaskId>) {
        let busy_change = prev.is_some() != next.is_some();
        if busy_change {
            self.hw_sync_for(cpu);
        } else {
            self.sync_cpu(cpu);
        }
        self.disarm_burst(cpu);
        let prev_state = match prev.map(|p| self.tasks[p].state) {
            Some(TaskState::Runnable) => {
                let p = prev.expect("some");
                self.tasks[p].stats.nr_involuntary += 1;
                self.tasks[p].stats.runnable_since = self.now;
                "R+"
            }
            Some(TaskState::Sleeping) => "S",
            Some(TaskState::IoWait) => "D",
            Some(TaskState::Dead) => "X",
            _ => "R",
        };
        if let Some(p) = prev {
            self.tasks[p].stats.nr_switches += 1;
        }
        if self.trace.is_some() {
            let pr = self.trace_ref(prev);
            let nx = self.trace_ref(next);
            self.trace_event(
                cpu,
                Payload::Switch {
                    prev: pr,
                    prev_state,
                    next: nx,
                },
            );
        }
        self.rqs[cpu].nr_switches += 1;
        self.stats.context_switches += 1;
        match next {
            Some(n) => {
                if prev.is_none() {
                    self.leave_idle(cpu);
                    // put_prev_task_idle()
                    self.dl_server_update_idle_time(cpu);
                }
                self.rqs[cpu].curr = Some(n);
                let irq = std::mem::take(&mut self.rqs[cpu].idle_kernel_cycles);
                let task = &mut self.tasks[n];
                let waited = self.now - task.stats.runnable_since;
                task.stats.wait_ns += waited;
                if task.stats.pending_wakeup_latency {
                    task.stats.pending_wakeup_latency = false;
                    task.stats.wakeup_latency_sum_ns += waited;
                    task.stats.wakeup_latency_count += 1;
                    task.stats.wakeup_latency_max_ns = task.stats.wakeup_latency_max_ns.max(waited);
                }
                task.stats.runnable_since = self.now;
                let ct = self.topo.cpus[cpu].core_type;
                let paid = std::mem::take(&mut self.rqs[cpu].switch_out_paid);
                let out = if paid {
                    self.costs[ct].context_switch_out
                } else {
                    0.0
                };
                let cs = self.costs[ct].context_switch - out + irq;
                match task.burst.as_mut() {
                    Some(b) => b.cycles += cs,
                    None => task.pending_overhead += cs,
                }
                if busy_change {
                    self.hw_update_for(cpu);
                }
                // the hardware update may have armed a resumed burst already
                self.disarm_burst(cpu);
                self.rqs[cpu].burst_rate = 0.0;
                self.rearm_or_continue(cpu);
            }
            None => {
                self.rqs[cpu].curr = None;
                // set_next_task_idle()
                self.rqs[cpu].fair_server.idle_exec_start = self.rqs[cpu].clock_task;
                self.enter_idle(cpu);
                self.hw_update_for(cpu);
            }
        }
    }

    // ------------------------------------------------------------------ idle

    /// The idle task runs: resync the PELT clock, stop the tick (NOHZ idle), pick an idle state.
    fn enter_idle(&mut self, cpu: usize) {
        self.rqs[cpu].idle_kernel_cycles = 0.0;
        self.update_idle_rq_clock_pelt(cpu);
        self.idle_select_state(cpu);
        self.rqs[cpu].idle_stamp = self.now;
        let llc = self.topo.cpus[cpu].llc;
        let core_idle = self.topo.siblings(cpu).iter().all(|&s| self.idle_cpu(s));
        if core_idle {
            self.llc_has_idle_cores[llc] = true;
        }
    }

    /// Ask the idle governor for a state; stop the tick if it says so (NOHZ idle).
    ///
    /// `tick_nohz_idle_stop_tick()` counts `idle_calls` (what schedutil's busy check reads)
    /// only when the tick is stopped or already was: since v4.17 the governor may keep the tick
    /// for an idle period it predicts shorter than a tick, and such an idle leaves the CPU
    /// "busy" to `sugov_cpu_is_busy()`. Before v4.17 every idle entry stopped the tick.
    fn idle_select_state(&mut self, cpu: usize) {
        let tick_was_stopped = self.rqs[cpu].tick_ev.is_none();
        let (st, stop_tick) = self.cpuidle_select(cpu);
        if stop_tick || tick_was_stopped || !self.prof.at_least(4, 17) {
            self.rqs[cpu].idle_calls += 1;
        }
        if stop_tick {
            if let Some(h) = self.rqs[cpu].tick_ev.take() {
                self.events.cancel(h);
            }
        } else {
            self.start_tick(cpu);
        }
        let rq = &mut self.rqs[cpu];
        rq.idle_state = Some(st);
        rq.idle_entered = self.now;
        rq.idle_state_usage[st] += 1;
        self.arm_timer_irq(cpu);
        if self.trace.is_some() {
            self.trace_event(
                cpu,
                Payload::CpuIdle {
                    state: st as u64,
                    cpu,
                },
            );
        }
    }

    /// The tick fired on an idle CPU (the governor kept it): the governor learns that the CPU
    /// was woken by the tick, the idle balancer runs, and the CPU idles again.
    fn idle_tick(&mut self, cpu: usize) {
        self.idle_interrupt(cpu, true);
        self.update_blocked_averages(cpu);
        if self.now >= self.rqs[cpu].next_balance {
            self.rebalance_domains(cpu, IdleType::Idle);
        }
        if self.rqs[cpu].curr.is_none() && !self.rqs[cpu].waking {
            self.idle_select_state(cpu);
            self.hw_update_for(cpu);
        }
    }

    /// While `cpu` idles, its next kernel timer's interrupt will wake it.
    fn arm_timer_irq(&mut self, cpu: usize) {
        self.cancel_timer_irq(cpu);
        if let Some(at) = self.next_ktimer_ns(cpu) {
            let h = self.events.schedule(at, Ev::TimerIrq { cpu });
            self.rqs[cpu].timer_irq_ev = Some(h);
        }
    }

    fn cancel_timer_irq(&mut self, cpu: usize) {
        if let Some(h) = self.rqs[cpu].timer_irq_ev.take() {
            self.events.cancel(h);
        }
    }

    /// A kernel timer fired on an idle CPU: its handler finds nothing to do (a socket timer
    /// whose ACK or retransmission is no longer pending), the governor learns that a timer
    /// woke the CPU, and the CPU idles again.
    pub fn idle_timer_irq(&mut self, cpu: usize) {
        if self.rqs[cpu].curr.is_some() || self.rqs[cpu].waking {
            return;
        }
        if self.ktimers.run_expired(cpu, self.now) == 0 {
            // the timer was re-armed elsewhere since the CPU went idle
            self.arm_timer_irq(cpu);
            return;
        }
        self.idle_interrupt(cpu, false);
        self.idle_select_state(cpu);
        self.hw_update_for(cpu);
    }

    /// An interrupt (the tick or a timer) ends an idle CPU's stay in its state: the governor
    /// learns how long it idled and the idle exit is traced.
    fn idle_interrupt(&mut self, cpu: usize, woken_by_tick: bool) {
        self.hw_sync_for(cpu);
        self.cpuidle_reflect(cpu, woken_by_tick);
        if self.trace.is_some() {
            self.trace_event(
                cpu,
                Payload::CpuIdle {
                    state: PWR_EVENT_EXIT,
                    cpu,
                },
            );
        }
    }

    /// Leave idle when a task is picked: avg_idle bookkeeping, restart the tick.
    fn leave_idle(&mut self, cpu: usize) {
        self.cancel_timer_irq(cpu);
        let now = self.now;
        let rq = &mut self.rqs[cpu];
        if rq.idle_state.take().is_some() && self.trace.is_some() {
            self.trace_event(
                cpu,
                Payload::CpuIdle {
                    state: PWR_EVENT_EXIT,
                    cpu,
                },
            );
        }
        let rq = &mut self.rqs[cpu];
        let delta = now - rq.idle_stamp;
        let max = 2 * self.tun.sched_migration_cost_ns.max(0) as u64;
        let avg = rq.avg_idle as i64 + (delta as i64 - rq.avg_idle as i64) / 8;
        rq.avg_idle = (avg.max(0) as u64).min(max);
        self.start_tick(cpu);
    }

    /// `idle_cpu()` / `available_idle_cpu()`: nothing runs or is queued.
    pub fn idle_cpu(&self, cpu: usize) -> bool {
        let rq = &self.rqs[cpu];
        rq.curr.is_none() && rq.nr_running() == 0
    }

    /// An IPI wakes an idle CPU: it runs after the hardware's exit latency of its core state,
    /// plus that of the package state the package is in. A remote wakeup's IPI goes out at the
    /// end of the waker's `try_to_wake_up()` (placement and enqueue come first), so the wakee's
    /// CPU starts leaving idle only once the waking CPU has run that work.
    pub fn kick_idle_cpu(&mut self, cpu: usize) {
        let rq = &self.rqs[cpu];
        if rq.curr.is_some() || rq.waking {
            return;
        }
        let ipi_ns = match self.ttwu_charge {
            Some((waker, cycles)) if waker != cpu && cycles > 0.0 => {
                (cycles / self.cpu_rate(waker).max(1e-9)).round() as u64
            }
            _ => 0,
        };
        let ct = self.topo.cpus[cpu].core_type;
        let lat_ns = ipi_ns
            + rq.idle_state
                .map(|s| {
                    let st = &self.idle_states[ct][s];
                    st.core_exit_latency_us.unwrap_or(st.exit_latency_us) * 1000
                })
                .unwrap_or(0)
            + self.package_exit_latency_ns(cpu);
        self.hw_sync_for(cpu);
        self.cancel_timer_irq(cpu);
        self.rqs[cpu].waking = true;
        self.hw_update_for(cpu);
        let h = self
            .events
            .schedule(self.now + lat_ns, Ev::IdleExit { cpu });
        self.rqs[cpu].wake_ev = Some(h);
    }

    /// The exit latency has passed.
    pub fn on_idle_exit(&mut self, cpu: usize) {
        // the governor learns how long the CPU idled, exit latency included
        self.cpuidle_reflect(cpu, false);
        self.hw_sync_for(cpu);
        self.rqs[cpu].waking = false;
        self.hw_update_for(cpu);
        self.rqs[cpu].need_resched = false;
        self.queue_schedule(cpu);
    }

    // ------------------------------------------------------------------ tick

    fn start_tick(&mut self, cpu: usize) {
        if self.rqs[cpu].tick_ev.is_some() {
            return;
        }
        let tick = self.prof.tick_ns();
        let next = (self.now / tick + 1) * tick;
        let h = self.events.schedule(next, Ev::Tick { cpu });
        self.rqs[cpu].tick_ev = Some(h);
    }

    /// `sched_tick()`.
    pub fn scheduler_tick(&mut self, cpu: usize) {
        let Some(curr) = self.rqs[cpu].curr else {
            if !self.rqs[cpu].waking {
                self.idle_tick(cpu);
            }
            return;
        };
        self.arch_scale_freq_tick(cpu);
        self.update_rq_clock(cpu);
        if self.is_rt(curr) {
            self.task_tick_rt(cpu, curr);
        } else {
            self.task_tick_fair(cpu, curr);
        }
        self.update_misfit_status(cpu, Some(curr));
        self.update_overutilized_status(cpu);
        self.trigger_load_balance(cpu);
        self.start_tick(cpu);
    }

    // ------------------------------------------------------------------ program events

    /// The running burst of `cpu` completed.
    pub fn on_burst_end(&mut self, cpu: usize) -> Result<(), String> {
        self.sync_cpu(cpu);
        let Some(t) = self.rqs[cpu].curr else {
            return Ok(());
        };
        self.tasks[t].burst = None;
        self.queue_program(t);
        Ok(())
    }

    /// A task timer fired on `cpu`.
    pub fn on_task_timer(&mut self, t: TaskId, cpu: usize) {
        if matches!(self.tasks[t].state, TaskState::Sleeping | TaskState::IoWait) {
            self.try_to_wake_up(t, cpu, WakeFlags::default());
        }
    }

    /// Execute `t`'s program from its current position until it runs, blocks or exits.
    pub fn run_program(&mut self, t: TaskId, budget: &mut u32) -> Result<(), String> {
        let cpu = self.tasks[t].cpu;
        if self.rqs[cpu].curr != Some(t) || self.tasks[t].burst.is_some() {
            return Ok(());
        }
        loop {
            if self.rqs[cpu].curr != Some(t) {
                return Ok(());
            }
            if *budget == 0 {
                return Err(format!(
                    "task '{}' executed {} operations at t={} ns without running or blocking: its program needs a run, sleep or blocking op in every loop",
                    self.tasks[t].comm,
                    crate::engine::MAX_INSTANT_OPS,
                    self.now
                ));
            }
            *budget -= 1;
            if self.tasks[t].pending_overhead > 0.0 {
                let c = std::mem::take(&mut self.tasks[t].pending_overhead);
                self.start_burst(
                    t,
                    cpu,
                    Burst {
                        cycles: c,
                        overhead: true,
                        ..Burst::default()
                    },
                );
                return Ok(());
            }
            if !self.step_op(t, cpu)? {
                return Ok(());
            }
        }
    }

    fn start_burst(&mut self, t: TaskId, cpu: usize, b: Burst) {
        self.sync_cpu(cpu);
        self.tasks[t].burst = Some(b);
        self.force_rearm(cpu);
    }

    /// Whether `t`'s send to `chan` goes through now: a pipe writer that has waited in this
    /// send needs a free page.
    fn send_fits(&self, t: TaskId, chan: usize) -> bool {
        let ch = &self.chans[chan];
        if ch.pipe_page.is_some() && self.tasks[t].pipe_waited {
            !ch.pipe_full()
        } else {
            ch.writable()
        }
    }

    /// `send`: add a message, or block while the channel is full; true if the task continues.
    fn chan_send(&mut self, t: TaskId, cpu: usize, chan: usize) -> bool {
        if self.send_fits(t, chan) {
            let waited = std::mem::take(&mut self.tasks[t].pipe_waited);
            let ch = &mut self.chans[chan];
            ch.push();
            self.tasks[t].pc += 1;
            if self.chans[chan].tcp {
                let tick = self.prof.tick_ns();
                crate::timer::tcp_timers_rearm(&mut self.ktimers, chan, cpu, self.now, tick);
            }
            if let Some(r) = self.chans[chan].receivers.pop_front() {
                self.try_to_wake_up(r, cpu, WakeFlags { sync: true });
            }
            // pipe_write's wakeup after writing: before v5.5 readers and writers share one wait
            // queue and every waiter wakes (blocked writers go back to sleep unless a page is
            // free); from v5.5 a writer that waited and leaves a page free wakes the next one
            let ch = &self.chans[chan];
            let which = if ch.pipe_page.is_none() {
                WakeSenders::No
            } else if !self.prof.at_least(5, 5) {
                WakeSenders::All
            } else if waited && !ch.pipe_full() {
                WakeSenders::First
            } else {
                WakeSenders::No
            };
            self.wake_senders(cpu, chan, which);
            true
        } else {
            let ch = &mut self.chans[chan];
            if ch.pipe_page.is_some() {
                self.tasks[t].pipe_waited = true;
            }
            ch.senders.push_back(t);
            self.block_task(t, cpu, TaskState::Sleeping);
            false
        }
    }

    /// Take a message from `chan`, which holds one, and wake its blocked senders: the first
    /// one, or with a `write_space` threshold all of them once the channel has drained to it. A
    /// pipe (`pipe_read`) or Unix socket (`unix_write_space`) wakes its writers with
    /// `wake_up_interruptible_sync_poll` (`WF_SYNC`); TCP's `sk_stream_write_space` does not.
    fn chan_take(&mut self, cpu: usize, chan: usize) {
        let exclusive_pipe = self.prof.at_least(5, 5);
        let ch = &mut self.chans[chan];
        let was_full = ch.pipe_full();
        let freed_page = ch.take();
        let which = match (ch.pipe_page, ch.write_space) {
            // pipe_read: before v5.5 every writer when a page is freed; then one writer
            // (exclusive) at every read that started with every page in use
            (Some(_), _) if exclusive_pipe && was_full => WakeSenders::First,
            (Some(_), _) if !exclusive_pipe && freed_page => WakeSenders::All,
            (Some(_), _) => WakeSenders::No,
            (None, None) => WakeSenders::First,
            (None, Some(k)) if ch.count <= k => WakeSenders::All,
            (None, Some(_)) => WakeSenders::No,
        };
        self.wake_senders(cpu, chan, which);
    }

    /// Wake `which` of `chan`'s blocked senders, in the order they blocked; a sync wakeup
    /// except on a `tcp` channel.
    fn wake_senders(&mut self, cpu: usize, chan: usize, which: WakeSenders) {
        let n = match which {
            WakeSenders::No => 0,
            WakeSenders::First => 1,
            WakeSenders::All => self.chans[chan].senders.len(),
        };
        let sync = WakeFlags {
            sync: !self.chans[chan].tcp,
        };
        for _ in 0..n {
            let Some(s) = self.chans[chan].senders.pop_front() else {
                break;
            };
            self.try_to_wake_up(s, cpu, sync);
        }
    }

    /// `recv`: take a message, or block while the channel is empty; true if the task continues.
    fn chan_recv(&mut self, t: TaskId, cpu: usize, chan: usize) -> bool {
        if self.chans[chan].count > 0 {
            self.tasks[t].pc += 1;
            self.chan_take(cpu, chan);
            true
        } else {
            self.chans[chan].receivers.push_back(t);
            self.block_task(t, cpu, TaskState::Sleeping);
            false
        }
    }

    /// `recv_any`: `poll()` on every channel of the set, then read the first ready one in
    /// round-robin order from the one after the last served. A blocked task waits on all of
    /// them; whichever send wakes it first, it rescans, and it leaves no registration behind.
    fn recv_any(&mut self, t: TaskId, cpu: usize, chans: &[usize]) -> bool {
        if std::mem::take(&mut self.tasks[t].poll_waiting) {
            for &c in chans {
                self.chans[c].receivers.retain(|&r| r != t);
            }
        }
        let n = chans.len();
        let start = self.tasks[t].poll_next % n;
        let ready = (0..n)
            .map(|i| (start + i) % n)
            .find(|&i| self.chans[chans[i]].count > 0);
        match ready {
            Some(i) => {
                let task = &mut self.tasks[t];
                task.pc += 1;
                task.poll_served = i;
                task.poll_next = i + 1;
                self.chan_take(cpu, chans[i]);
                true
            }
            None => {
                for &c in chans {
                    self.chans[c].receivers.push_back(t);
                }
                self.tasks[t].poll_waiting = true;
                self.block_task(t, cpu, TaskState::Sleeping);
                false
            }
        }
    }

    /// Execute one op. Returns true if the task continues at this instant.
    fn step_op(&mut self, t: TaskId, cpu: usize) -> Result<bool, String> {
        let prog = self.tasks[t].program;
        let pc = self.tasks[t].pc;
        let Some(op) = self.compiled.programs[prog].ops.get(pc).cloned() else {
            self.do_exit(t, cpu);
            return Ok(false);
        };
        if self.enter_block_path(t, cpu, &op) {
            return Ok(true);
        }
        let path_done = std::mem::take(&mut self.tasks[t].block_path_done);
        let go_on = self.exec_op(t, cpu, pc, op)?;
        if path_done {
            if matches!(self.tasks[t].state, TaskState::Sleeping | TaskState::IoWait) {
                self.rqs[cpu].switch_out_paid = true;
            } else if self.tasks[t].pc == pc {
                // still awake at the same op (a committer that became the flusher on its way
                // to sleep): the way is paid, and the op's sleep does not pay it again
                self.tasks[t].block_path_done = true;
            }
        }
        Ok(go_on)
    }

    /// A task about to sleep in `op` first runs the blocking path itself
    /// (`KernelCosts::context_switch_out`), after whatever it just did, such as the wakeup a
    /// send made: the task it woke may already run elsewhere meanwhile. Returns true if that
    /// path is owed now; the op is executed again after it and sleeps, or proceeds if what it
    /// waits for arrived meanwhile.
    fn enter_block_path(
        &mut self,
        t: TaskId,
        cpu: usize,
        op: &crate::workload::program::Op,
    ) -> bool {
        if self.tasks[t].block_path_done || !self.op_would_block(t, op) {
            return false;
        }
        let out = self.costs[self.topo.cpus[cpu].core_type].context_switch_out;
        if out <= 0.0 {
            return false;
        }
        self.tasks[t].block_path_done = true;
        self.tasks[t].pending_overhead += out;
        true
    }

    /// Whether `op` would put `t` to sleep now: waiting for another task (a receive from empty
    /// channels, a send to a full one, a wait for a child still running, a mutex or a row
    /// another task holds, a barrier others have yet to reach, a suspend with no resume
    /// pending, a condition not yet signalled, a log flush under way) or for a time (a timed
    /// sleep, an IO or its own log flush not yet due).
    fn op_would_block(&self, t: TaskId, op: &crate::workload::program::Op) -> bool {
        use crate::workload::program::Op;
        use crate::workload::sync::CommitRole;
        let full = |c: usize| !self.send_fits(t, c);
        // lock, lock_row, barrier and cond_wait queue the task first (their first execution);
        // it then sleeps unless it was served while on its way
        let queued = self.tasks[t].sync_queued;
        match op {
            Op::Lock { mutex } => queued && !self.sync.mutexes[*mutex].is_held_by(t),
            Op::LockRow { table, .. } => {
                queued
                    && self.tasks[t].pending_row.is_some_and(|row| {
                        self.sync.tables[*table]
                            .rows
                            .get(&row)
                            .is_some_and(|m| !m.is_held_by(t))
                    })
            }
            Op::Barrier { barrier } => queued && self.sync.barriers[*barrier].waiting.contains(&t),
            Op::Suspend => self.tasks[t].resume_pending == 0,
            // a committer that finds a flush under way queues behind it; a flusher sleeps on
            // its write
            Op::GroupCommit { log, .. } => {
                let lg = &self.sync.logs[*log];
                match lg.roles.get(&t) {
                    None => lg.flushing,
                    Some(CommitRole::Flushing) => self.now < lg.flush_end,
                    Some(_) => false,
                }
            }
            Op::CondWait { cond, .. } => queued && self.sync.conds[*cond].contains(&t),
            Op::Sleep { .. } | Op::Io { .. } | Op::Timer { .. } | Op::Clock { .. } => {
                self.tasks[t].timed_deadline.is_some_and(|at| at > self.now)
            }
            Op::Recv { chan } => self.chans[*chan].count == 0,
            Op::RecvAny { chans } => chans.iter().all(|&c| self.chans[c].count == 0),
            Op::Send { chan } => full(*chan),
            Op::SendPolled { chans } => chans
                .get(self.tasks[t].poll_served)
                .is_some_and(|&c| full(c)),
            Op::Wait => {
                let task = &self.tasks[t];
                task.exited_children == 0 && task.live_children > 0
            }
            Op::JournalCommit { journal } => {
                let jr = &self.sync.journals[*journal];
                jr.waiting
                    .iter()
                    .any(|&(w, tid)| w == t && tid > jr.committed)
            }
            Op::JournalWait { journal } => {
                let jr = &self.sync.journals[*journal];
                jr.committing.is_none() && jr.requested <= jr.committed
            }
            _ => false,
        }
    }

    /// Execute op `pc` of `t`'s program. Returns true if the task continues at this instant.
    fn exec_op(
        &mut self,
        t: TaskId,
        cpu: usize,
        pc: usize,
        op: crate::workload::program::Op,
    ) -> Result<bool, String> {
        use crate::workload::program::Op;
        match op {
            Op::Run { cycles, stall_ns } => {
                self.tasks[t].pc += 1;
                if cycles > 0.0 || stall_ns > 0.0 {
                    self.start_burst(
                        t,
                        cpu,
                        Burst {
                            cycles,
                            stall_ns,
                            ..Burst::default()
                        },
                    );
                    return Ok(false);
                }
                Ok(true)
            }
            Op::RunFor { ns } => {
                self.tasks[t].pc += 1;
                if ns > 0 {
                    self.start_burst(
                        t,
                        cpu,
                        Burst {
                            stall_ns: ns as f64,
                            wall_until: Some(self.now + ns),
                            ..Burst::default()
                        },
                    );
                    return Ok(false);
                }
                Ok(true)
            }
            Op::Sleep { ns } => {
                Ok(self.timed_sleep(t, cpu, TaskState::Sleeping, |sim| Some(sim.now + ns)))
            }
            Op::Io { ns } => {
                Ok(self.timed_sleep(t, cpu, TaskState::IoWait, |sim| Some(sim.now + ns)))
            }
            Op::Timer { period_ns } => Ok(self.timed_sleep(t, cpu, TaskState::Sleeping, |sim| {
                let task = &mut sim.tasks[t];
                let base = task.timer_next.unwrap_or(task.stats.start_ns);
                // rt-app's relative mode: when late, re-base on now
                let next = (base + period_ns).max(sim.now);
                task.timer_next = Some(next);
                (next > sim.now).then_some(next)
            })),
            Op::Send { chan } => Ok(self.chan_send(t, cpu, chan)),
            Op::Recv { chan } => Ok(self.chan_recv(t, cpu, chan)),
            Op::RecvAny { chans } => Ok(self.recv_any(t, cpu, &chans)),
            Op::SendPolled { chans } => {
                let i = self.tasks[t].poll_served;
                let Some(&chan) = chans.get(i) else {
                    return Err(format!(
                        "task '{}': send_polled lists {} channels but its recv_any served position {}",
                        self.tasks[t].comm,
                        chans.len(),
                        i + 1
                    ));
                };
                Ok(self.chan_send(t, cpu, chan))
            }
            Op::Fork { program } => {
                self.tasks[t].pc += 1;
                let child = self.create_task(program, Some(t), 0);
                self.stats.forks += 1;
                let ct = self.topo.cpus[cpu].core_type;
                self.tasks[t].pending_overhead += self.costs[ct].fork;
                if self.trace.is_some() {
                    let parent = self.trace_ref(Some(t));
                    let c = self.trace_ref(Some(child));
                    self.trace_event(cpu, Payload::Fork { parent, child: c });
                }
                self.wake_up_new_task(child, cpu);
                Ok(true)
            }
            Op::Exec { comm } => {
                self.tasks[t].pc += 1;
                self.tasks[t].comm = comm;
                self.stats.execs += 1;
                let ct = self.topo.cpus[cpu].core_type;
                self.tasks[t].pending_overhead += self.costs[ct].exec;
                Ok(!self.sched_exec(t, cpu))
            }
            Op::Wait => {
                let task = &mut self.tasks[t];
                if task.exited_children > 0 {
                    task.exited_children -= 1;
                    task.pc += 1;
                    Ok(true)
                } else if task.live_children == 0 {
                    task.pc += 1;
                    Ok(true)
                } else {
                    task.waiting_for_child = true;
                    task.pc += 1;
                    self.block_task(t, cpu, TaskState::Sleeping);
                    Ok(false)
                }
            }
            Op::Exit => {
                self.do_exit(t, cpu);
                Ok(false)
            }
            Op::LoopBegin { count, end } => {
                let task = &mut self.tasks[t];
                if count == 0 {
                    task.pc = end + 1;
                } else {
                    task.loops.push(super::task::LoopFrame {
                        start_pc: pc + 1,
                        remaining: count,
                    });
                    task.pc += 1;
                }
                Ok(true)
            }
            Op::LoopEnd { .. } => {
                let task = &mut self.tasks[t];
                let frame = task.loops.last_mut().expect("loop frame");
                if frame.remaining < 0 {
                    task.pc = frame.start_pc;
                } else {
                    frame.remaining -= 1;
                    if frame.remaining > 0 {
                        task.pc = frame.start_pc;
                    } else {
                        task.loops.pop();
                        task.pc += 1;
                    }
                }
                Ok(true)
            }
            Op::Mark { id } => {
                self.tasks[t].pc += 1;
                self.mark(t, id);
                Ok(true)
            }
            Op::RunDist { dist, stall_ns } => {
                self.tasks[t].pc += 1;
                // a heavy-tailed draw may exceed what one op can do (or be infinite)
                let cycles = dist
                    .sample(&mut self.rng_workload)
                    .min(crate::workload::program::MAX_OP_CYCLES);
                if cycles > 0.0 || stall_ns > 0.0 {
                    self.start_burst(
                        t,
                        cpu,
                        Burst {
                            cycles,
                            stall_ns,
                            ..Burst::default()
                        },
                    );
                    return Ok(false);
                }
                Ok(true)
            }
            Op::Lock { mutex } => {
                if !std::mem::take(&mut self.tasks[t].sync_queued) {
                    if self.op_lock_queue(t, mutex) {
                        self.tasks[t].pc += 1;
                    }
                    return Ok(true);
                }
                self.tasks[t].pc += 1;
                let served = self.sync.mutexes[mutex].is_held_by(t);
                Ok(self.sleep_unless(t, cpu, served))
            }
            Op::Unlock { mutex } => {
                self.tasks[t].pc += 1;
                if self.sync.mutexes[mutex].owner != Some(t) {
                    return Err(format!(
                        "task '{}' unlocks mutex '{}' it does not hold",
                        self.tasks[t].comm, self.compiled.mutexes[mutex]
                    ));
                }
                self.op_unlock(cpu, mutex);
                Ok(true)
            }
            Op::Barrier { barrier } => {
                if !std::mem::take(&mut self.tasks[t].sync_queued) {
                    if self.op_barrier_arrive(t, cpu, barrier) {
                        self.tasks[t].pc += 1;
                    }
                    return Ok(true);
                }
                self.tasks[t].pc += 1;
                let served = !self.sync.barriers[barrier].waiting.contains(&t);
                Ok(self.sleep_unless(t, cpu, served))
            }
            Op::LockRow { table, rows } => {
                if !std::mem::take(&mut self.tasks[t].sync_queued) {
                    let row = self.rng_workload.below(rows as u64) as u32;
                    if self.op_lock_row_queue(t, table, row) {
                        self.tasks[t].pc += 1;
                    } else {
                        self.tasks[t].pending_row = Some(row);
                    }
                    return Ok(true);
                }
                self.tasks[t].pc += 1;
                let row = self.tasks[t].pending_row.take();
                let served = row.is_some_and(|r| {
                    self.sync.tables[table]
                        .rows
                        .get(&r)
                        .is_some_and(|m| m.is_held_by(t))
                });
                Ok(self.sleep_unless(t, cpu, served))
            }
            Op::UnlockRows { table } => {
                self.tasks[t].pc += 1;
                self.op_unlock_rows(t, cpu, table);
                Ok(true)
            }
            Op::GroupCommit { log, ns } => {
                use crate::workload::sync::CommitStep;
                // the op runs again at each wakeup until the record is durable
                match self.op_group_commit(t, cpu, log, ns) {
                    CommitStep::Durable => {
                        self.tasks[t].pc += 1;
                        Ok(true)
                    }
                    CommitStep::Asleep => Ok(false),
                    CommitStep::Again => Ok(true),
                }
            }
            Op::JournalRequest { journal } => {
                self.tasks[t].pc += 1;
                self.op_journal_request(t, cpu, journal);
                Ok(true)
            }
            Op::JournalCommit { journal } => {
                let done = self.op_journal_commit(t, cpu, journal)?;
                if done {
                    self.tasks[t].pc += 1;
                }
                Ok(done)
            }
            Op::JournalWait { journal } => {
                let started = self.op_journal_wait(t, cpu, journal)?;
                if started {
                    self.tasks[t].pc += 1;
                }
                Ok(started)
            }
            Op::JournalDone { journal } => {
                self.tasks[t].pc += 1;
                self.op_journal_done(t, cpu, journal)?;
                Ok(true)
            }
            Op::CondWait { cond, mutex } => {
                // first execution: queue on the condition and release the mutex, paying the
                // wakeup of its next owner; the second (after the blocking path) sleeps unless
                // a signal came meanwhile
                if !std::mem::take(&mut self.tasks[t].sync_queued) {
                    self.op_cond_queue(t, cpu, cond, mutex);
                    return Ok(true);
                }
                self.tasks[t].pc += 1;
                Ok(self.op_cond_sleep(t, cpu, cond))
            }
            Op::Signal { cond } => {
                self.tasks[t].pc += 1;
                self.op_signal(cpu, cond, false);
                Ok(true)
            }
            Op::Broadcast { cond } => {
                self.tasks[t].pc += 1;
                self.op_signal(cpu, cond, true);
                Ok(true)
            }
            Op::Suspend => {
                self.tasks[t].pc += 1;
                Ok(self.op_suspend(t, cpu))
            }
            Op::Resume { program } => {
                self.tasks[t].pc += 1;
                self.op_resume(cpu, program);
                Ok(true)
            }
            Op::Yield => {
                self.tasks[t].pc += 1;
                self.yield_task_fair(cpu, t);
                Ok(false)
            }
            Op::Clock {
                clock,
                period_ns,
                unique,
                relative,
                origin_ns,
            } => Ok(self.timed_sleep(t, cpu, TaskState::Sleeping, |sim| {
                sim.op_clock(t, clock, period_ns, unique, relative, origin_ns)
            })),
            Op::SetAffinity { cpus } => {
                self.tasks[t].pc += 1;
                Ok(!self.set_cpus_allowed(t, cpu, &cpus))
            }
            Op::SetUclamp { min, max } => {
                self.tasks[t].pc += 1;
                self.sched_setattr_uclamp(t, cpu, [min, max])?;
                Ok(true)
            }
        }
    }

    /// `sched_setaffinity()` of the running task `t` on `cpu` (`__set_cpus_allowed_ptr`). If
    /// `cpu` is no longer allowed, the stopper moves the task to the first allowed CPU (the
    /// kernel's `cpumask_any_and_distribute` spreads successive moves; this picks the lowest).
    /// Returns true if the task moves.
    fn set_cpus_allowed(&mut self, t: TaskId, cpu: usize, cpus: &[usize]) -> bool {
        let n = self.topo.nr_cpus();
        let mut mask = Vec::new();
        if !cpus.is_empty() && cpus.iter().any(|&c| c < n) {
            mask = vec![false; n];
            for &c in cpus.iter().filter(|&&c| c < n) {
                mask[c] = true;
            }
        }
        let nr = if mask.is_empty() {
            n
        } else {
            mask.iter().filter(|&&b| b).count()
        };
        let task = &mut self.tasks[t];
        task.cpus_allowed = mask;
        task.nr_cpus_allowed = nr;
        if task.allowed(cpu) {
            return false;
        }
        let dst = (0..n).find(|&c| self.tasks[t].allowed(c)).unwrap_or(cpu);
        self.rqs[cpu].stopper = Some(Stopper::Migrate { task: t, dst });
        self.queue_schedule(cpu);
        true
    }

    /// A timed sleep (`sleep`, `io`, `timer`, `clock`) in two executions of its op. The first
    /// fixes the expiry with `expiry` (None: the op does not sleep, and the task goes on) and
    /// arms its timer on the current CPU, as `hrtimer_nanosleep()` arms its timer and a read
    /// submits its IO before `schedule()`; the task then runs its own way to sleep
    /// (`enter_block_path`), inside the sleep. The second sleeps until the timer fires, or goes
    /// on if it fired meanwhile: the expiry then finds the task still running, which costs
    /// nothing here (the kernel's interrupt only marks a queued task running). A zero-length
    /// sleep still blocks and wakes at once. Returns true if the task continues at this instant.
    fn timed_sleep(
        &mut self,
        t: TaskId,
        cpu: usize,
        state: TaskState,
        expiry: impl FnOnce(&mut Self) -> Option<Time>,
    ) -> bool {
        if let Some(at) = self.tasks[t].timed_deadline.take() {
            self.tasks[t].pc += 1;
            if at <= self.now {
                return true;
            }
            // the timer armed by the first execution wakes the task
            self.block_task(t, cpu, state);
            return false;
        }
        match expiry(self) {
            Some(at) if at > self.now => {
                self.tasks[t].timed_deadline = Some(at);
                self.arm_task_timer(t, cpu, at);
                true
            }
            Some(at) => {
                self.tasks[t].pc += 1;
                self.sleep_until(t, cpu, at, state);
                false
            }
            None => {
                self.tasks[t].pc += 1;
                true
            }
        }
    }

    pub(crate) fn sleep_until(&mut self, t: TaskId, cpu: usize, at: Time, state: TaskState) {
        self.arm_task_timer(t, cpu, at);
        self.block_task(t, cpu, state);
    }

    /// `sched_exec()`: exec balancing may move the running task to another CPU. Returns true
    /// if it moved.
    fn sched_exec(&mut self, t: TaskId, cpu: usize) -> bool {
        let dest = self.select_task_rq(t, cpu, SdFlag::Exec, WakeFlags::default(), cpu);
        if dest == cpu {
            return false;
        }
        // migration_cpu_stop: the stopper preempts the task and pushes it to dest
        self.rqs[cpu].stopper = Some(Stopper::Migrate { task: t, dst: dest });
        self.queue_schedule(cpu);
        true
    }

    fn run_stopper(&mut self, cpu: usize, work: Stopper) {
        let victim = match work {
            Stopper::Migrate { task, dst } => Some((task, dst))
                .filter(|&(t, _)| self.tasks[t].se.on_rq && self.tasks[t].cpu == cpu),
            Stopper::PushAny { dst } => {
                let movable = |t: TaskId| self.tasks[t].se.on_rq && self.tasks[t].allowed(dst);
                let tasks = &self.rqs[cpu].cfs_tasks;
                // a misfit first (it is why an asymmetric machine balances actively)
                let misfit = tasks.iter().copied().find(|&t| {
                    movable(t) && self.topo.asym_capacity() && !self.task_fits_cpu(t, cpu)
                });
                misfit
                    .or_else(|| tasks.iter().copied().find(|&t| movable(t)))
                    .map(|t| (t, dst))
            }
        };
        if let Some((t, dst)) = victim {
            self.move_queued_task(t, cpu, dst);
        }
    }

    /// Whether `cpu` is idle for balancing purposes.
    pub fn idle_type(&self, cpu: usize) -> IdleType {
        if self.idle_cpu(cpu) {
            IdleType::Idle
        } else {
            IdleType::NotIdle
        }
    }
}
