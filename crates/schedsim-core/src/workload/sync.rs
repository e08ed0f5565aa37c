//! Synchronisation between task programs: mutexes with FIFO hand-off, condition variables,
//! barriers, suspend/resume, yield (rt-app's lock/unlock, wait/signal/broad, barrier,
//! suspend/resume and yield events; spec/ecosystem.md §1.4), two database mechanisms: tables
//! of row locks held to the end of a transaction, and a log with group commit (PostgreSQL's
//! `XLogFlush` under `WALWriteLock`, spec/workloads.md §9.1), and ext4's journal (jbd2): fsyncs
//! that ask its thread for a commit and wait for it on one wait queue. A blocked task sleeps and
//! is woken from the CPU of the task that releases it, which pays the wakeup.

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

impl MutexState {
    /// Take the mutex if it is free (true); otherwise queue `t` behind the waiters (false: the
    /// caller blocks it).
    fn acquire(&mut self, t: TaskId) -> bool {
        if self.owner.is_none() {
            self.owner = Some(t);
            true
        } else {
            self.waiters.push_back(t);
            false
        }
    }

    /// `t` owns the mutex and is not also queued for it: a task that locks a mutex it already
    /// holds queues behind itself and so waits for good, as a non-recursive pthread mutex
    /// deadlocks its own thread.
    pub fn is_held_by(&self, t: TaskId) -> bool {
        self.owner == Some(t) && !self.waiters.contains(&t)
    }

    /// Release the mutex to its first waiter, who then owns it; returns that waiter to wake.
    fn hand_over(&mut self) -> Option<TaskId> {
        self.owner = self.waiters.pop_front();
        self.owner
    }
}

/// A barrier: how many have arrived in this round and who waits.
#[derive(Clone, Debug, Default)]
pub struct BarrierState {
    pub arrived: u32,
    pub waiting: Vec<TaskId>,
}

/// A table of row locks: rows come into being when first locked.
#[derive(Clone, Debug, Default)]
pub struct RowTable {
    pub rows: BTreeMap<u32, MutexState>,
    /// The rows each task holds, in the order it locked them.
    pub held: BTreeMap<TaskId, Vec<u32>>,
}

/// Where a task stands in a group commit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommitRole {
    /// Flushing the log: it started the write and sleeps in iowait until `flush_end` (after
    /// its own way to sleep, which runs during the write).
    Flushing,
    /// Asleep: its record is in no flush yet.
    Queued,
    /// Woken to flush next, for everyone queued when it starts.
    Leader,
    /// Asleep while a flush that covers its record is under way.
    Covered,
    /// Its record is durable: woken to continue.
    Durable,
}

/// What an execution of `group_commit` leaves its task doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommitStep {
    /// Its record is durable: the task goes on to the next op.
    Durable,
    /// Asleep, queued or flushing.
    Asleep,
    /// It started a flush: the op runs again, after the task's way to sleep.
    Again,
}

/// A log with group commit. A flush writes every record inserted before it started: whoever
/// commits while a flush is under way waits, and when the flush ends the first of them
/// flushes for all of them (PostgreSQL's `XLogFlush`: the waiters on `WALWriteLock` wake when
/// it is released; one takes it and writes the log up to the current insert position, the
/// others find their record flushed when it is released again).
#[derive(Clone, Debug, Default)]
pub struct GroupLog {
    pub flushing: bool,
    /// When the flush under way completes.
    pub flush_end: Time,
    /// Committers that arrived during the current flush.
    pub queued: Vec<TaskId>,
    /// Committers whose records the current flush covers (besides its flusher).
    pub covered: Vec<TaskId>,
    pub roles: BTreeMap<TaskId, CommitRole>,
    /// Flushes completed and commits they made durable.
    pub flushes: u64,
    pub commits: u64,
}

/// A jbd2 journal (`journal_t`): transactions numbered by tid. New changes join the running
/// transaction; the journal thread commits one transaction at a time, when asked.
#[derive(Clone, Debug)]
pub struct Journal {
    /// tid of the running transaction (`j_running_transaction`).
    pub running: u64,
    /// Highest tid a commit was asked for (`j_commit_request`).
    pub requested: u64,
    /// tid being committed (`j_committing_transaction`) and the thread committing it.
    pub committing: Option<(u64, TaskId)>,
    /// tid of the last commit written (`j_commit_sequence`).
    pub committed: u64,
    /// Journal threads asleep until a commit is asked for (`j_wait_commit`).
    pub idle_threads: Vec<TaskId>,
    /// fsyncs asleep on `j_wait_done_commit`, each with the tid it waits for, oldest first.
    pub waiting: Vec<(TaskId, u64)>,
    /// Commits written and fsyncs they completed.
    pub commits: u64,
    pub fsyncs: u64,
}

impl Default for Journal {
    fn default() -> Self {
        Journal {
            running: 1,
            requested: 0,
            committing: None,
            committed: 0,
            idle_threads: Vec::new(),
            waiting: Vec::new(),
            commits: 0,
            fsyncs: 0,
        }
    }
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
    pub tables: Vec<RowTable>,
    pub logs: Vec<GroupLog>,
    pub journals: Vec<Journal>,
}

impl SyncState {
    pub fn new(c: &crate::workload::program::Compiled) -> Self {
        SyncState {
            mutexes: vec![MutexState::default(); c.mutexes.len()],
            conds: vec![VecDeque::new(); c.conds.len()],
            barriers: vec![BarrierState::default(); c.barriers.len()],
            clocks: Vec::new(),
            task_clocks: BTreeMap::new(),
            tables: vec![RowTable::default(); c.tables.len()],
            logs: vec![GroupLog::default(); c.logs.len()],
            journals: vec![Journal::default(); c.journals.len()],
        }
    }
}

impl Sim {
    /// `lock`, first half: take the mutex if it is free (true); otherwise queue behind its
    /// waiters (false: the task then sleeps unless the mutex is handed to it on its way).
    pub fn op_lock_queue(&mut self, t: TaskId, m: usize) -> bool {
        let got = self.sync.mutexes[m].acquire(t);
        if !got {
            self.tasks[t].sync_queued = true;
        }
        got
    }

    /// The second half of a queued `lock`, `lock_row` or `barrier`: go on if `served`, else
    /// sleep. Returns true if the task continues.
    pub fn sleep_unless(&mut self, t: TaskId, cpu: usize, served: bool) -> bool {
        if !served {
            self.block_task(t, cpu, TaskState::Sleeping);
        }
        served
    }

    /// `unlock`: hand the mutex to the first waiter, which wakes already owning it.
    pub fn op_unlock(&mut self, cpu: usize, m: usize) {
        if let Some(w) = self.sync.mutexes[m].hand_over() {
            self.try_to_wake_up(w, cpu, WakeFlags::default());
        }
    }

    /// `lock_row`, first half: lock `row` of `table` (drawn uniformly by the op) if it is free
    /// (true); otherwise queue behind its waiters (false: the task then sleeps unless the
    /// holder's `unlock_rows` hands it over on its way).
    pub fn op_lock_row_queue(&mut self, t: TaskId, table: usize, row: u32) -> bool {
        let tb = &mut self.sync.tables[table];
        tb.held.entry(t).or_default().push(row);
        let got = tb.rows.entry(row).or_default().acquire(t);
        if !got {
            self.tasks[t].sync_queued = true;
        }
        got
    }

    /// `unlock_rows`: release every row the task holds in `table`, each to its first waiter.
    pub fn op_unlock_rows(&mut self, t: TaskId, cpu: usize, table: usize) {
        let tb = &mut self.sync.tables[table];
        let rows = tb.held.remove(&t).unwrap_or_default();
        let mut woken = Vec::new();
        for row in rows {
            let Some(mx) = tb.rows.get_mut(&row) else {
                continue;
            };
            match mx.hand_over() {
                Some(w) => woken.push(w),
                // nobody waits: the row's lock goes away until a transaction picks it again
                None => {
                    tb.rows.remove(&row);
                }
            }
        }
        for w in woken {
            self.try_to_wake_up(w, cpu, WakeFlags::default());
        }
    }

    /// `group_commit`. The op is re-executed at each wakeup, and the task's role says what the
    /// wakeup means.
    pub fn op_group_commit(&mut self, t: TaskId, cpu: usize, log: usize, ns: u64) -> CommitStep {
        let lg = &mut self.sync.logs[log];
        match lg.roles.remove(&t) {
            None if !lg.flushing => {
                lg.flushing = true;
                self.start_flush(t, cpu, log, ns);
                CommitStep::Again
            }
            None => {
                lg.queued.push(t);
                lg.roles.insert(t, CommitRole::Queued);
                self.block_task(t, cpu, TaskState::Sleeping);
                CommitStep::Asleep
            }
            Some(CommitRole::Leader) => {
                // everyone queued until now has a record this flush writes
                lg.covered = std::mem::take(&mut lg.queued);
                for &w in &lg.covered {
                    lg.roles.insert(w, CommitRole::Covered);
                }
                self.start_flush(t, cpu, log, ns);
                CommitStep::Again
            }
            Some(CommitRole::Flushing) if self.now < lg.flush_end => {
                // the write's completion, armed when it started, wakes the flusher
                lg.roles.insert(t, CommitRole::Flushing);
                self.block_task(t, cpu, TaskState::IoWait);
                CommitStep::Asleep
            }
            Some(CommitRole::Flushing) => {
                self.end_flush(cpu, log);
                CommitStep::Durable
            }
            Some(CommitRole::Durable) => CommitStep::Durable,
            Some(role @ (CommitRole::Queued | CommitRole::Covered)) => {
                // not a wakeup of this log's: keep waiting
                lg.roles.insert(t, role);
                self.block_task(t, cpu, TaskState::Sleeping);
                CommitStep::Asleep
            }
        }
    }

    /// The flusher starts writing the log, whose completion fires on this CPU; it sleeps on the
    /// write at its op's next execution, after its way to sleep (a 0 ns write is complete by
    /// then, and the flusher goes on without sleeping).
    fn start_flush(&mut self, t: TaskId, cpu: usize, log: usize, ns: u64) {
        let lg = &mut self.sync.logs[log];
        lg.roles.insert(t, CommitRole::Flushing);
        lg.flush_end = self.now + ns;
        if ns > 0 {
            self.arm_task_timer(t, cpu, self.now + ns);
        }
    }

    /// The flush is done: its covered committers continue, and the first committer queued
    /// during it (if any) flushes next.
    fn end_flush(&mut self, cpu: usize, log: usize) {
        let lg = &mut self.sync.logs[log];
        let covered = std::mem::take(&mut lg.covered);
        lg.flushes += 1;
        lg.commits += 1 + covered.len() as u64;
        for &w in &covered {
            lg.roles.insert(w, CommitRole::Durable);
        }
        let leader = (!lg.queued.is_empty()).then(|| lg.queued.remove(0));
        match leader {
            Some(l) => {
                lg.roles.insert(l, CommitRole::Leader);
            }
            None => lg.flushing = false,
        }
        for w in covered.into_iter().chain(leader) {
            self.try_to_wake_up(w, cpu, WakeFlags::default());
        }
    }

    /// The request of `journal_commit` (an fsync): the task's changes are in the running
    /// transaction; it asks for that transaction's commit, waking the idle journal threads, and
    /// queues on the journal's wait queue for it.
    pub fn op_journal_request(&mut self, t: TaskId, cpu: usize, j: usize) {
        let jr = &mut self.sync.journals[j];
        let tid = jr.running;
        jr.waiting.push((t, tid));
        if jr.requested < tid {
            jr.requested = tid;
            for thread in std::mem::take(&mut jr.idle_threads) {
                self.try_to_wake_up(thread, cpu, WakeFlags::default());
            }
        }
    }

    /// The wait of `journal_commit`: returns true when the asked-for commit is written.
    /// Otherwise the task sleeps (again, if woken early, like `wait_event`) as the newest on
    /// the wait queue.
    pub fn op_journal_commit(&mut self, t: TaskId, cpu: usize, j: usize) -> Result<bool, String> {
        let jr = &mut self.sync.journals[j];
        let Some(i) = jr.waiting.iter().position(|&(w, _)| w == t) else {
            return Err(format!(
                "task '{}': waits on journal '{}' without asking for a commit",
                self.tasks[t].comm, self.compiled.journals[j]
            ));
        };
        let entry = jr.waiting.remove(i);
        if jr.committed >= entry.1 {
            jr.fsyncs += 1;
            return Ok(true);
        }
        jr.waiting.push(entry);
        self.block_task(t, cpu, TaskState::Sleeping);
        Ok(false)
    }

    /// `journal_wait` (a journal thread): returns true when a commit starts: a commit was
    /// asked for a transaction not yet committed, and the running transaction becomes the
    /// committing one (later fsyncs join a new one). Otherwise the thread sleeps until asked.
    pub fn op_journal_wait(&mut self, t: TaskId, cpu: usize, j: usize) -> Result<bool, String> {
        let jr = &mut self.sync.journals[j];
        match jr.committing {
            Some((_, c)) if c == t => Err(format!(
                "task '{}': journal_wait on journal '{}' with its own commit under way \
                 (journal_done ends it)",
                self.tasks[t].comm, self.compiled.journals[j]
            )),
            None if jr.requested > jr.committed => {
                jr.committing = Some((jr.running, t));
                jr.running += 1;
                Ok(true)
            }
            _ => {
                jr.idle_threads.push(t);
                self.block_task(t, cpu, TaskState::Sleeping);
                Ok(false)
            }
        }
    }

    /// `journal_done` (the committing thread): the transaction is written. Like the kernel's
    /// `wake_up(&journal->j_wait_done_commit)`, it wakes every fsync on the wait queue, newest
    /// first; those waiting for a later transaction sleep again.
    pub fn op_journal_done(&mut self, t: TaskId, cpu: usize, j: usize) -> Result<(), String> {
        let jr = &mut self.sync.journals[j];
        let tid = match jr.committing {
            Some((tid, c)) if c == t => tid,
            _ => {
                return Err(format!(
                    "task '{}': journal_done on journal '{}' without a commit of its own under \
                     way (journal_wait starts one)",
                    self.tasks[t].comm, self.compiled.journals[j]
                ))
            }
        };
        jr.committing = None;
        jr.committed = tid;
        jr.commits += 1;
        let woken: Vec<TaskId> = jr.waiting.iter().rev().map(|&(w, _)| w).collect();
        for w in woken {
            self.try_to_wake_up(w, cpu, WakeFlags::default());
        }
        Ok(())
    }

    /// `wait` on a condition, first half: join the condition's queue, then release the mutex
    /// (as `pthread_cond_wait` does, so a signal from the mutex's next owner is not lost).
    pub fn op_cond_queue(&mut self, t: TaskId, cpu: usize, cond: usize, m: usize) {
        self.sync.conds[cond].push_back(t);
        self.tasks[t].sync_queued = true;
        if self.sync.mutexes[m].owner == Some(t) {
            self.op_unlock(cpu, m);
        }
    }

    /// `wait` on a condition, second half: sleep until signalled, or continue if a signal
    /// took the task off the queue while it paid its way here. Returns true if it continues.
    pub fn op_cond_sleep(&mut self, t: TaskId, cpu: usize, cond: usize) -> bool {
        if !self.sync.conds[cond].contains(&t) {
            return true;
        }
        self.block_task(t, cpu, TaskState::Sleeping);
        false
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

    /// `barrier`, first half: arrive; returns true if this arrival completes the round (the
    /// others are woken and the task continues), false if it waits (it then sleeps unless the
    /// round completes on its way).
    pub fn op_barrier_arrive(&mut self, t: TaskId, cpu: usize, b: usize) -> bool {
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
            self.tasks[t].sync_queued = true;
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

    /// rt-app `timer` on a named clock: advance the clock and return the expiry to sleep until,
    /// or None if it has come and the task continues at once.
    pub fn op_clock(
        &mut self,
        t: TaskId,
        clock: usize,
        period_ns: u64,
        unique: bool,
        relative: bool,
        origin_ns: u64,
    ) -> Option<Time> {
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
        sleep.then_some(next)
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
