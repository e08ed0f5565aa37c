//! `task_struct` and `sched_entity`: scheduling state, PELT signals and program position of one
//! task.

use super::pelt::{SchedAvg, UtilEst};
use crate::sim::time::Time;

pub type TaskId = usize;

/// `sched_prio_to_weight[]`, nice −20..19 (spec/kernel.md §8.1).
pub const SCHED_PRIO_TO_WEIGHT: [u64; 40] = [
    88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916, 9548, 7620, 6100, 4904,
    3906, 3121, 2501, 1991, 1586, 1277, 1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87,
    70, 56, 45, 36, 29, 23, 18, 15,
];
/// `WEIGHT_IDLEPRIO`: the weight of a SCHED_IDLE task.
pub const WEIGHT_IDLEPRIO: u64 = 3;
pub const NICE_0_LOAD: u64 = 1024;

/// Weight of a nice level.
pub fn nice_to_weight(nice: i32) -> u64 {
    SCHED_PRIO_TO_WEIGHT[(nice.clamp(-20, 19) + 20) as usize]
}

/// Scheduling policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    Normal,
    Batch,
    Idle,
    Fifo,
    Rr,
}

impl Policy {
    /// SCHED_FIFO or SCHED_RR.
    pub fn is_rt(self) -> bool {
        matches!(self, Policy::Fifo | Policy::Rr)
    }

    pub fn parse(s: &str) -> Result<Policy, String> {
        match s {
            "SCHED_OTHER" | "SCHED_NORMAL" | "other" | "normal" => Ok(Policy::Normal),
            "SCHED_BATCH" | "batch" => Ok(Policy::Batch),
            "SCHED_IDLE" | "idle" => Ok(Policy::Idle),
            "SCHED_FIFO" | "fifo" => Ok(Policy::Fifo),
            "SCHED_RR" | "rr" => Ok(Policy::Rr),
            _ => Err(format!(
                "policy '{s}': allowed SCHED_OTHER, SCHED_BATCH, SCHED_IDLE, SCHED_FIFO, SCHED_RR (SCHED_DEADLINE is not modelled)"
            )),
        }
    }
}

/// Where a task is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskState {
    /// Created, waiting for its start time.
    New,
    /// TASK_RUNNING: on a runqueue (running or waiting).
    Runnable,
    /// TASK_INTERRUPTIBLE.
    Sleeping,
    /// TASK_UNINTERRUPTIBLE in iowait.
    IoWait,
    Dead,
}

/// `struct sched_entity` for a task.
#[derive(Clone, Debug, Default)]
pub struct SchedEntity {
    /// User-visible weight (nice 0 = 1024).
    pub weight: u64,
    pub on_rq: bool,
    pub vruntime: u64,
    /// EEVDF virtual deadline.
    pub deadline: u64,
    /// EEVDF lag saved at dequeue (V − v).
    pub vlag: i64,
    pub slice: u64,
    pub exec_start: Time,
    pub sum_exec_runtime: u64,
    pub prev_sum_exec_runtime: u64,
    pub avg: SchedAvg,
}

/// A CPU burst in progress: `cycles` scale with speed, `stall_ns` does not.
#[derive(Clone, Copy, Debug, Default)]
pub struct Burst {
    pub cycles: f64,
    pub stall_ns: f64,
    /// The burst belongs to the kernel (scheduler/syscall overhead), not to the program.
    pub overhead: bool,
    /// A wall-time burst (rt-app `runtime`) ends at this instant, preempted or not.
    pub wall_until: Option<u64>,
}

impl Burst {
    pub fn duration_ns(&self, rate_cycles_per_ns: f64) -> f64 {
        self.cycles / rate_cycles_per_ns + self.stall_ns
    }

    /// Consume up to `dt` ns at `rate`; returns the time the burst used: `dt`, or what was left
    /// of it when it ends sooner (it is then complete).
    pub fn advance(&mut self, dt_ns: f64, rate: f64) -> f64 {
        let total = self.duration_ns(rate);
        if total <= 0.0 || dt_ns >= total - 1e-6 {
            self.cycles = 0.0;
            self.stall_ns = 0.0;
            return total.clamp(0.0, dt_ns);
        }
        let keep = 1.0 - dt_ns / total;
        self.cycles *= keep;
        self.stall_ns *= keep;
        dt_ns
    }
}

/// Accounting per task, reported in results.
#[derive(Clone, Debug, Default)]
pub struct TaskStats {
    pub start_ns: Time,
    pub exit_ns: Option<Time>,
    pub cpu_ns: u64,
    /// On-CPU time spent in the program's own work (`run`, `run_for`, `run_dist` bursts), not
    /// in the kernel paths charged as overhead: the task's user time.
    pub user_ns: u64,
    pub wait_ns: u64,
    pub sleep_ns: u64,
    pub iowait_ns: u64,
    pub nr_switches: u64,
    pub nr_involuntary: u64,
    pub nr_migrations: u64,
    pub nr_wakeups: u64,
    /// When the task last became runnable (for wait time and wakeup latency).
    pub runnable_since: Time,
    pub blocked_since: Time,
    /// Sum and count of wakeup-to-run latencies.
    pub wakeup_latency_sum_ns: u64,
    pub wakeup_latency_max_ns: u64,
    pub wakeup_latency_count: u64,
    pub pending_wakeup_latency: bool,
}

/// One loop level of a running program.
#[derive(Clone, Copy, Debug)]
pub struct LoopFrame {
    pub start_pc: usize,
    pub remaining: i64,
}

/// `task_struct`.
#[derive(Clone, Debug)]
pub struct Task {
    pub id: TaskId,
    pub pid: u32,
    pub comm: String,
    pub parent: Option<TaskId>,
    pub program: usize,
    pub nice: i32,
    pub policy: Policy,
    /// RT priority 1..99 (SCHED_FIFO / SCHED_RR), 0 for the fair class.
    pub rt_priority: u32,
    /// Remaining SCHED_RR time slice.
    pub rt_time_slice: u64,
    pub se: SchedEntity,
    pub util_est: UtilEst,
    pub state: TaskState,
    /// `task_cpu(p)`.
    pub cpu: usize,
    /// Allowed CPUs (`p->cpus_ptr`); empty = all.
    pub cpus_allowed: Vec<bool>,
    pub nr_cpus_allowed: usize,
    /// Program counter into the compiled program.
    pub pc: usize,
    pub loops: Vec<LoopFrame>,
    pub burst: Option<Burst>,
    /// Kernel work owed before the program continues (cycles).
    pub pending_overhead: f64,
    /// The op at `pc` blocks, and the task has already run its own way into `schedule()`
    /// (`KernelCosts::context_switch_out`): the op now sleeps, or proceeds if what it waits
    /// for arrived meanwhile.
    pub block_path_done: bool,
    /// `lock`, `lock_row`, `barrier`, `cond_wait`: queued by the op's first execution, not yet
    /// asleep (it goes on without sleeping if it is served meanwhile: the mutex or row handed
    /// over, the round completed, the condition signalled).
    pub sync_queued: bool,
    /// `lock_row`: the row the task queued for.
    pub pending_row: Option<u32>,
    /// `sleep`, `io`, `timer`, `clock`: the expiry the op's first execution fixed (a
    /// nanosleep's hrtimer is armed, an IO submitted, before `schedule()`); the second sleeps
    /// until it unless it passed while the task ran its way to sleep.
    pub timed_deadline: Option<Time>,
    /// Next absolute activation of the periodic timer.
    pub timer_next: Option<Time>,
    /// `recv_any`: the position in its channel set it served last (`send_polled` replies
    /// there) and where its next scan starts.
    pub poll_served: usize,
    pub poll_next: usize,
    /// Blocked in `recv_any`: queued as a receiver on every channel of its set.
    pub poll_waiting: bool,
    /// Blocked in the current `send` to a pipe at least once: `pipe_write` tries to append to
    /// the last page only on entry, so after waiting it needs a free page.
    pub pipe_waited: bool,
    pub live_children: u32,
    pub exited_children: u32,
    pub waiting_for_child: bool,
    // wakeup heuristics (record_wakee / wake_wide / select_idle_sibling)
    pub wakee_flips: u32,
    pub wakee_flip_decay_ts: Time,
    pub last_wakee: Option<TaskId>,
    pub recent_used_cpu: usize,
    /// The last wakeup came from an iowait sleep.
    pub in_iowait: bool,
    /// rt-app suspend/resume: resumes received while not suspended, and whether suspended.
    pub resume_pending: u32,
    pub suspended: bool,
    /// The task's group (`task_group(p)`); 0 = the root group.
    pub tg: super::cgroup::GroupId,
    /// The weight of its nice level (`se.weight` is the hierarchical weight the root sees).
    pub own_weight: u64,
    /// Held by a throttled group cfs_rq: runnable but on no runqueue.
    pub throttled: bool,
    /// `p->uclamp_req[UCLAMP_MIN, UCLAMP_MAX]` set by `sched_setattr()` (`None`: not user
    /// defined, the default request).
    pub uclamp_req: [Option<u64>; 2],
    pub stats: TaskStats,
}

impl Task {
    pub fn allowed(&self, cpu: usize) -> bool {
        self.cpus_allowed.is_empty() || self.cpus_allowed[cpu]
    }

    /// `p->prio` as printed in traces: 120 + nice for the fair class, 99 − rt_priority for RT.
    pub fn prio(&self) -> i32 {
        match self.policy {
            Policy::Fifo | Policy::Rr => 99 - self.rt_priority as i32,
            _ => 120 + self.nice,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_follow_the_kernel_table() {
        assert_eq!(nice_to_weight(0), 1024);
        assert_eq!(nice_to_weight(5), 335);
        assert_eq!(nice_to_weight(-20), 88761);
        assert_eq!(nice_to_weight(19), 15);
        // each nice step is about 1.25x
        for n in -20..19 {
            let r = nice_to_weight(n) as f64 / nice_to_weight(n + 1) as f64;
            assert!((1.2..1.3).contains(&r), "nice {n}: ratio {r}");
        }
    }

    #[test]
    fn burst_progress_carries_the_remaining_fraction() {
        let mut b = Burst {
            cycles: 4000.0,
            stall_ns: 1000.0,
            ..Burst::default()
        };
        // 4 cycles/ns: 1000 ns of cycles + 1000 ns of stall
        assert!((b.duration_ns(4.0) - 2000.0).abs() < 1e-9);
        assert_eq!(b.advance(500.0, 4.0), 500.0);
        // a quarter done; at 2 cycles/ns the rest takes 3000/2 + 750 = 2250 ns, so 3000 ns
        // offered are 2250 used, and the burst is done
        assert!((b.duration_ns(2.0) - 2250.0).abs() < 1e-9);
        assert!((b.advance(3000.0, 2.0) - 2250.0).abs() < 1e-6);
        assert_eq!((b.cycles, b.stall_ns), (0.0, 0.0));
    }
}
