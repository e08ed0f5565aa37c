//! The serialisable form of task programs (DESIGN "Workloads"): what the Python builder and the
//! benchmark generators produce, before [`super::program`] compiles it.

use serde::{Deserialize, Serialize};

/// Explicit tasks and channels.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CustomWorkload {
    pub tasks: Vec<TaskSpec>,
    #[serde(default)]
    pub channels: Vec<ChannelSpec>,
}

/// A task template. Templates with `start = true` exist at t = 0 (after `delay_ns`); the others
/// are only created by a `fork` op naming them.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskSpec {
    pub name: String,
    #[serde(default = "one")]
    pub instances: u32,
    #[serde(default)]
    pub nice: i32,
    /// `SCHED_OTHER`, `SCHED_BATCH`, `SCHED_IDLE` (fair class), `SCHED_FIFO`, `SCHED_RR`.
    #[serde(default = "default_policy")]
    pub policy: String,
    /// RT priority 1..99 for SCHED_FIFO / SCHED_RR.
    #[serde(default)]
    pub priority: u32,
    /// Allowed CPUs; empty = all.
    #[serde(default)]
    pub cpus: Vec<usize>,
    #[serde(default = "yes")]
    pub start: bool,
    #[serde(default)]
    pub delay_ns: u64,
    /// Put the initial task on this CPU instead of fork balancing (a recorded placement, or a
    /// test that starts from an imbalance).
    #[serde(default)]
    pub start_cpu: Option<usize>,
    /// The task's cgroup (a path from the config's `cgroups`); `None` = the parent's group, or
    /// the root group for initial tasks.
    #[serde(default)]
    pub cgroup: Option<String>,
    /// Utilization clamp requests from creation (`sched_setattr()` before the task runs,
    /// v5.3+), 0..1024; absent: the default (min 0, or the RT default for RT tasks; max 1024).
    #[serde(default)]
    pub uclamp_min: Option<u32>,
    #[serde(default)]
    pub uclamp_max: Option<u32>,
    pub program: Vec<OpSpec>,
}

impl TaskSpec {
    /// One instance of `name` running `program` from the start, with every other key at its
    /// default (SCHED_OTHER nice 0, any CPU, no delay, the parent's or the root cgroup).
    pub fn new(name: impl Into<String>, program: Vec<OpSpec>) -> Self {
        TaskSpec {
            name: name.into(),
            instances: one(),
            nice: 0,
            policy: default_policy(),
            priority: 0,
            cpus: Vec::new(),
            start: yes(),
            delay_ns: 0,
            start_cpu: None,
            cgroup: None,
            uclamp_min: None,
            uclamp_max: None,
            program,
        }
    }
}

fn one() -> u32 {
    1
}
fn yes() -> bool {
    true
}
fn default_policy() -> String {
    "SCHED_OTHER".to_string()
}

/// A bounded message channel (pipe or socket).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChannelSpec {
    pub name: String,
    /// Messages the channel holds before a sender blocks.
    #[serde(default = "default_capacity")]
    pub capacity: u32,
    /// A loopback TCP connection: every send (re)arms the sender's retransmit timer and the
    /// receiver's delayed-ACK timer on the sending CPU ([`crate::timer::tcp_timers_rearm`]).
    #[serde(default)]
    pub tcp: bool,
    /// When blocked senders wake. Unset: a receive from a full channel wakes the first blocked
    /// sender, which finds one free slot. Set to K: a receive that leaves at most K messages
    /// wakes every blocked sender, as an AF_UNIX socket's `unix_write_space()` does once the
    /// sender's `sk_wmem_alloc` falls to a quarter of `sk_sndbuf` (`unix_writable()`).
    #[serde(default)]
    pub write_space: Option<u32>,
    /// A pipe of `capacity / pipe_page` pages holding `pipe_page` messages each: a write
    /// appends to the last page while it has room after its last message (not into an empty
    /// pipe), otherwise takes a free page; a writer blocks while every page is in use and the
    /// last one is full. Reads make no room inside a page; one that empties its page frees it. Blocked writers wake as `pipe_read` wakes them:
    /// before v5.5 all of them whenever a read frees a page; from v5.5 (exclusive waits) one at
    /// every read that finds every page in use, going back to sleep unless a page was freed,
    /// and a writer that leaves a page free wakes the next one.
    #[serde(default)]
    pub pipe_page: Option<u32>,
}

impl ChannelSpec {
    /// A pipe or Unix socket holding `capacity` messages.
    pub fn new(name: impl Into<String>, capacity: u32) -> Self {
        ChannelSpec {
            name: name.into(),
            capacity,
            tcp: false,
            write_space: None,
            pipe_page: None,
        }
    }

    /// A loopback TCP connection holding `capacity` messages.
    pub fn tcp(name: impl Into<String>, capacity: u32) -> Self {
        ChannelSpec {
            tcp: true,
            ..Self::new(name, capacity)
        }
    }
}

fn default_capacity() -> u32 {
    1024
}

/// One operation of a task program.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum OpSpec {
    /// Fixed work: `cycles` scale with frequency, SMT share and IPC; `stall_ns` does not.
    Run {
        cycles: f64,
        #[serde(default)]
        stall_ns: f64,
    },
    /// Busy for a fixed wall time, whatever the speed.
    RunFor {
        ns: u64,
    },
    /// Relative sleep (interruptible).
    Sleep {
        ns: u64,
    },
    /// Sleep until the next absolute activation of a periodic timer (rt-app `timer`).
    Timer {
        period_ns: u64,
    },
    /// Block in iowait for `ns` (device service time); wakes with the IOWAIT flag.
    Io {
        ns: u64,
    },
    /// Put one message into a channel; blocks while it is full; wakes a receiver (sync wakeup).
    Send {
        chan: String,
    },
    /// Take one message; blocks while the channel is empty.
    Recv {
        chan: String,
    },
    /// `poll()` over a set of channels, then a read of the first ready one: takes one message
    /// from the first channel of `chans` that holds one, scanning round-robin from the one after
    /// the last served; blocks while all are empty. Remembers which one it served for
    /// `send_polled`.
    RecvAny {
        chans: Vec<String>,
    },
    /// `send` on the channel of `chans` at the position the task's last `recv_any` served
    /// (a reply on the connection that was just read).
    SendPolled {
        chans: Vec<String>,
    },
    /// Create a task from the named template; it starts on the placement of fork balancing.
    Fork {
        task: String,
    },
    /// Replace the program image: exec balancing and a new comm.
    Exec {
        comm: String,
    },
    /// Wait for one child to exit (blocks if none has exited yet).
    Wait,
    Exit,
    /// Repeat `body` `count` times (`count < 0`: forever).
    Loop {
        count: i64,
        body: Vec<OpSpec>,
    },
    /// Record a named point in time for the workload's metrics.
    Mark {
        name: String,
    },
    /// Work drawn from a distribution at each execution (cycles), from the run's `workload`
    /// PRNG stream.
    RunDist {
        dist: Dist,
        #[serde(default)]
        stall_ns: f64,
    },
    /// Take a mutex (FIFO hand-off to waiters); blocks while another task holds it.
    Lock {
        mutex: String,
    },
    Unlock {
        mutex: String,
    },
    /// Lock one row of a table of `rows` row locks, drawn uniformly from the run's `workload`
    /// PRNG stream (a transaction's `UPDATE ... WHERE id = :random`). Blocks while another task
    /// holds that row; the task keeps it until `unlock_rows`.
    LockRow {
        table: String,
        rows: u32,
    },
    /// Release every row the task holds in `table` (the end of its transaction).
    UnlockRows {
        table: String,
    },
    /// Make a commit record durable through a log with group commit: if no flush is under
    /// way the task flushes (iowait for `ns`); otherwise it sleeps, and the first task that
    /// arrived during that flush flushes next for all who arrived before it started.
    GroupCommit {
        log: String,
        ns: u64,
    },
    /// ext4's fsync of a file whose changes are in the journal's running transaction
    /// (`jbd2_complete_transaction`): ask the journal thread to commit that transaction
    /// (`jbd2_log_start_commit`), then sleep until a commit that contains it is written
    /// (`jbd2_log_wait_commit`).
    JournalCommit {
        journal: String,
    },
    /// The journal thread (`kjournald2`): sleep until a commit is requested, then close the
    /// running transaction (fsyncs from now on join the next one) and continue with the commit.
    JournalWait {
        journal: String,
    },
    /// The committing thread: the commit is written; every fsync on the wait queue wakes
    /// (`wake_up(&journal->j_wait_done_commit)`), and those waiting for a later transaction
    /// sleep again.
    JournalDone {
        journal: String,
    },
    /// Rendezvous of every task instance whose program names this barrier; the last arrival
    /// wakes the others.
    Barrier {
        name: String,
    },
    /// Release `mutex`, wait for a signal on `cond`, then take `mutex` again.
    CondWait {
        cond: String,
        mutex: String,
    },
    /// Wake one waiter of `cond` (rt-app `signal`).
    Signal {
        cond: String,
    },
    /// Wake every waiter of `cond` (rt-app `broad`).
    Broadcast {
        cond: String,
    },
    /// Block until another task resumes this one (rt-app `suspend`).
    Suspend,
    /// Resume the suspended instances of the named task template (rt-app `resume`).
    Resume {
        task: String,
    },
    /// `sched_yield()`.
    Yield,
    /// rt-app's `timer` with its `ref`: a named periodic clock. Each execution moves the clock's
    /// next expiry by `period_ns` (a clock's first use starts it at the absolute time
    /// `origin_ns`); the task sleeps until that expiry if it is still ahead and continues at
    /// once otherwise, re-basing the clock on now when `relative`. `unique`: one clock per task
    /// (rt-app's `"unique"` refs); otherwise one clock shared by every task naming it.
    /// `period_ns` may be 0.
    Clock {
        name: String,
        period_ns: u64,
        #[serde(default)]
        unique: bool,
        #[serde(default = "yes")]
        relative: bool,
        #[serde(default)]
        origin_ns: u64,
    },
    /// `sched_setaffinity()` on itself: the allowed CPUs become `cpus` (empty = all); if the
    /// current CPU is no longer allowed, the stopper moves the task to the first allowed CPU.
    SetAffinity {
        cpus: Vec<usize>,
    },
    /// `sched_setattr()` with `SCHED_FLAG_UTIL_CLAMP` on itself (v5.3+): the task's
    /// utilization clamp requests, 0..1024; an absent one is left as it is.
    SetUclamp {
        #[serde(default)]
        min: Option<u32>,
        #[serde(default)]
        max: Option<u32>,
    },
}

/// A distribution of work in cycles.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Dist {
    Const {
        value: f64,
    },
    Uniform {
        lo: f64,
        hi: f64,
    },
    Exponential {
        mean: f64,
    },
    /// exp(N(mu, sigma)) × scale.
    LogNormal {
        mu: f64,
        sigma: f64,
        scale: f64,
    },
}

impl Dist {
    /// A lognormal with the given mean and spread: mu = −sigma² / 2, so that
    /// E[exp(N(mu, sigma))] = 1 and the draws average `mean`.
    pub fn lognormal_with_mean(mean: f64, sigma: f64) -> Dist {
        Dist::LogNormal {
            mu: -sigma * sigma / 2.0,
            sigma,
            scale: mean,
        }
    }

    /// Check the parameters: every draw must be finite and non-negative.
    pub fn validate(&self) -> Result<(), String> {
        let ok = match self {
            Dist::Const { value } => value.is_finite() && *value >= 0.0,
            Dist::Uniform { lo, hi } => lo.is_finite() && hi.is_finite() && *lo >= 0.0 && hi >= lo,
            Dist::Exponential { mean } => mean.is_finite() && *mean >= 0.0,
            Dist::LogNormal { mu, sigma, scale } => {
                mu.is_finite()
                    && sigma.is_finite()
                    && *sigma >= 0.0
                    && scale.is_finite()
                    && *scale >= 0.0
            }
        };
        if ok {
            Ok(())
        } else {
            Err(format!(
                "distribution {self:?}: parameters must be finite and non-negative (hi >= lo)"
            ))
        }
    }

    pub fn sample(&self, rng: &mut crate::sim::rng::RngStream) -> f64 {
        match self {
            Dist::Const { value } => *value,
            Dist::Uniform { lo, hi } => lo + (hi - lo) * rng.next_f64(),
            Dist::Exponential { mean } => rng.exp(*mean),
            Dist::LogNormal { mu, sigma, scale } => scale * rng.lognormal(*mu, *sigma),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::rng::RngStream;

    #[test]
    fn a_lognormal_with_mean_averages_that_mean() {
        // sigma 0.8: the draws' standard deviation is 1000 × sqrt(e^0.64 − 1) ≈ 947, so the
        // mean of 200,000 draws has a standard error of ≈ 2.1; its median is
        // 1000 × e^(−0.32) ≈ 726.
        let d = Dist::lognormal_with_mean(1000.0, 0.8);
        let mut rng = RngStream::new(7, "lognormal");
        let mut draws: Vec<f64> = (0..200_000).map(|_| d.sample(&mut rng)).collect();
        let mean = draws.iter().sum::<f64>() / draws.len() as f64;
        assert!((mean / 1000.0 - 1.0).abs() < 0.01, "mean {mean}");
        draws.sort_by(f64::total_cmp);
        let median = draws[draws.len() / 2];
        assert!((median / 726.1 - 1.0).abs() < 0.02, "median {median}");
    }
}
