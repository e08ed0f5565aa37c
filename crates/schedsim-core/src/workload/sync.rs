//! Synchronisation between task programs: mutexes with FIFO hand-off, condition variables,
//! barriers, suspend/resume, yield (rt-app's lock/unlock, wait/signal/broad, barrier,
//! suspend/resume and yield events; spec/ecosystem.md §1.4). A blocked task sleeps
//! (TASK_INTERRUPTIBLE) and is woken from the CPU of the task that releases it, which pays
//! the wakeup.

use std::collections::{BTreeMap, VecDeque};

use crate::engine::Sim;
use crate::sched::core::WakeFlags;
use crate::sched::task::{TaskId, TaskState};
use crate::sim::time::Time;

/// A mutex.
#[derive(Clone, Debug, Default)]
pub struct MutexState {
    pub owner: Option<TaskId>,
    pub waiters: VecDeque<TaskId>,
}

/// A barrier: how many have arrived in this round and who waits.
#[derive(Clone, Debug, Default)]
pub struct BarrierState {
    pub arrived: u32,
    pub waiting: Vec<TaskId>,
}

/// All synchronisation objects of a run.
#[derive(Clone, Debug, Default)]
pub struct SyncState {
    pub mutexes: Vec<MutexState>,
    pub conds: Vec<VecDeque<TaskId>>,
    pub barriers: Vec<BarrierState>,
    /// Next expiry of each shared clock (`Op::Clock`), `None` before its first use.
    pub clocks: Vec<Option<Time>>,
    /// Next expiry of the per-task (`unique`) clocks, by (task, clock).
    pub task_clocks: BTreeMap<(TaskId, usize), Time>,
}

impl SyncState {
    pub fn new(nmutex: usize, ncond: usize, nbarrier: usize) -> Self {
        SyncState {
            mutexes: vec![MutexState::default(); nmutex],
            conds: vec![VecDeque::new(); ncond],
            barriers: vec![BarrierState::default(); nbarrier],
            clocks: Vec::new(),
            task_clocks: BTreeMap::new(),
        }
    }
}

impl Sim {
    /// `lock`: returns true if the task got the mutex and continues.
    pub fn op_lock(&mut self, t: TaskId, cpu: usize, m: usize) -> bool {
        let mx = &mut self.sync.mutexes[m];
        match mx.owner {
            None => {
                mx.owner = Some(t);
                true
            }
            Some(_) => {
                mx.waiters.push_back(t);
                self.block_task(t, cpu, TaskState::Sleeping);
                false
            }
        }
    }

    /// `unlock`: hand the mutex to the first waiter, which wakes already owning it.
    pub fn op_unlock(&mut self, cpu: usize, m: usize) {
        let mx = &mut self.sync.mutexes[m];
        mx.owner = mx.waiters.pop_front();
        if let Some(w) = mx.owner {
            self.try_to_wake_up(w, cpu, WakeFlags::default());
        }
    }

    /// `wait` on a condition: release the mutex and sleep until signalled.
    pub fn op_cond_wait(&mut self, t: TaskId, cpu: usize, cond: usize, m: usize) {
        if self.sync.mutexes[m].owner == Some(t) {
            self.op_unlock(cpu, m);
        }
        self.sync.conds[cond].push_back(t);
        self.block_task(t, cpu, TaskState::Sleeping);
    }

    /// `signal` (one waiter) or `broad` (all waiters).
    pub fn op_signal(&mut self, cpu: usize, cond: usize, all: bool) {
        let n = if all { self.sync.conds[cond].len() } else { 1 };
        for _ in 0..n {
            let Some(w) = self.sync.conds[cond].pop_front() else {
                break;
            };
            self.try_to_wake_up(w, cpu, WakeFlags::default());
        }
    }

    /// `barrier`: returns true if this arrival completes the round (the task continues).
    pub fn op_barrier(&mut self, t: TaskId, cpu: usize, b: usize) -> bool {
        let parties = self.compiled.barrier_parties[b].max(1);
        let st = &mut self.sync.barriers[b];
        st.arrived += 1;
        if st.arrived >= parties {
            st.arrived = 0;
            let waiting = std::mem::take(&mut st.waiting);
            for w in waiting {
                self.try_to_wake_up(w, cpu, WakeFlags::default());
            }
            true
        } else {
            st.waiting.push(t);
            self.block_task(t, cpu, TaskState::Sleeping);
            false
        }
    }

    /// `suspend`: continue if a resume is pending, else sleep until one comes.
    pub fn op_suspend(&mut self, t: TaskId, cpu: usize) -> bool {
        if self.tasks[t].resume_pending > 0 {
            self.tasks[t].resume_pending -= 1;
            return true;
        }
        self.tasks[t].suspended = true;
        self.block_task(t, cpu, TaskState::Sleeping);
        false
    }

    /// rt-app `timer` on a named clock: returns true if the task continues at once (the expiry
    /// has come), false if it sleeps until the expiry.
    #[allow(clippy::too_many_arguments)]
    pub fn op_clock(
        &mut self,
        t: TaskId,
        cpu: usize,
        clock: usize,
        period_ns: u64,
        unique: bool,
        relative: bool,
        origin_ns: u64,
    ) -> bool {
        let prev = if unique {
            self.sync.task_clocks.get(&(t, clock)).copied()
        } else {
            if self.sync.clocks.len() <= clock {
                self.sync.clocks.resize(clock + 1, None);
            }
            self.sync.clocks[clock]
        };
        let next = prev.unwrap_or(origin_ns) + period_ns;
        let now = self.now;
        let (stored, sleep) = if now < next {
            (next, true)
        } else if relative {
            (now, false)
        } else {
            (next, false)
        };
        if unique {
            self.sync.task_clocks.insert((t, clock), stored);
        } else {
            self.sync.clocks[clock] = Some(stored);
        }
        if sleep {
            self.arm_task_timer(t, cpu, next);
            self.block_task(t, cpu, TaskState::Sleeping);
        }
        !sleep
    }

    /// `resume`: wake the suspended instances of a template, or leave them a pending resume.
    pub fn op_resume(&mut self, cpu: usize, program: usize) {
        let targets: Vec<TaskId> = self
            .tasks
            .iter()
            .filter(|x| {
                x.program == program && x.state != TaskState::Dead && x.state != TaskState::New
            })
            .map(|x| x.id)
            .collect();
        for w in targets {
            if self.tasks[w].suspended {
                self.tasks[w].suspended = false;
                self.try_to_wake_up(w, cpu, WakeFlags::default());
            } else {
                self.tasks[w].resume_pending += 1;
            }
        }
    }
}
