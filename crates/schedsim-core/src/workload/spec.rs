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
    /// `SCHED_OTHER`, `SCHED_BATCH`, `SCHED_IDLE` (fair class); RT policies come with the RT class.
    #[serde(default = "default_policy")]
    pub policy: String,
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
    pub program: Vec<OpSpec>,
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
}
