//! `struct rq` and `struct cfs_rq`: per-CPU runqueues (spec/kernel.md §8).

use super::pelt::{RemovedAvg, SchedAvg};
use super::task::TaskId;
use crate::sim::event::EventHandle;
use crate::sim::time::Time;

/// The fair runqueue of one CPU (the root cfs_rq; task groups come with cgroups).
#[derive(Clone, Debug, Default)]
pub struct CfsRq {
    /// Queued entities other than `curr` (the kernel's rbtree), unordered; picks scan it.
    pub queued: Vec<TaskId>,
    pub curr: Option<TaskId>,
    /// Σ weight of the entities on this cfs_rq, `curr` included (`cfs_rq->load.weight`).
    pub load_weight: u64,
    /// Entities on the cfs_rq, `curr` included.
    pub nr_running: u32,
    pub min_vruntime: u64,
    pub avg: SchedAvg,
    pub removed: RemovedAvg,
    /// Σ `_task_util_est` of the enqueued tasks.
    pub util_est: u64,
    pub last_buddy: Option<TaskId>,
    pub next_buddy: Option<TaskId>,
    pub skip_buddy: Option<TaskId>,
}

/// The runqueue clocks start here: the workload begins one second after boot, so that no
/// clock is 0 when the first tasks arrive (PELT reads a zero `last_update_time` as "not
/// attached").
pub const BOOT_CLOCK_NS: u64 = 1_000_000_000;

/// Initial `min_vruntime`: far from 0 so that relative vruntimes (which may be negative, as u64
/// wrapping values in the kernel) never wrap around in a run.
pub const VRUNTIME_ORIGIN: u64 = 1 << 40;

/// What the stopper (`migration/N`) does when it preempts the running task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stopper {
    /// `active_load_balance_cpu_stop()`: push the least recently run task allowed on `dst`.
    PushAny { dst: usize },
    /// `migration_cpu_stop()`: move this task (exec balancing).
    Migrate { task: TaskId, dst: usize },
}

/// Why a CPU is balancing (`enum cpu_idle_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdleType {
    NotIdle,
    Idle,
    NewlyIdle,
}

/// Per-CPU runqueue.
#[derive(Clone, Debug)]
pub struct Rq {
    pub cpu: usize,
    /// The running task; `None` = the idle task.
    pub curr: Option<TaskId>,
    pub cfs: CfsRq,
    pub rt: super::rt::RtRq,
    /// `rq->fair_server` (v6.12+).
    pub fair_server: super::dl_server::FairServer,
    /// Tasks on this rq in `cfs_tasks` order: the back was picked or enqueued most recently.
    pub cfs_tasks: Vec<TaskId>,
    pub clock_task: Time,
    pub clock_pelt: u64,
    pub lost_idle_time: u64,
    pub need_resched: bool,
    /// Pending completion of the running burst, and the time its progress was last synced.
    pub burst_ev: Option<EventHandle>,
    pub burst_synced: Time,
    /// Speed of the running burst (cycles/ns), as of `burst_synced`.
    pub burst_rate: f64,
    pub tick_ev: Option<EventHandle>,
    /// Idle state entered (`None` while busy or waking up).
    pub idle_state: Option<usize>,
    pub idle_entered: Time,
    /// The CPU is leaving an idle state (exit latency running).
    pub waking: bool,
    pub wake_ev: Option<EventHandle>,
    /// The timer interrupt of the next kernel timer, armed while the CPU idles.
    pub timer_irq_ev: Option<EventHandle>,
    /// `rq->next_balance`.
    pub next_balance: Time,
    /// `rq->avg_idle`, `rq->idle_stamp` (newidle balance).
    pub avg_idle: u64,
    /// `sd_llc->avg_scan_cost` of this CPU's LLC domain (ns; SIS_PROP before v6.0).
    pub avg_scan_cost: u64,
    pub idle_stamp: Time,
    /// `rq->cpu_capacity` (capacity left for CFS).
    pub cpu_capacity: u64,
    pub has_blocked_load: bool,
    /// `rq->misfit_task_load`: the running task does not fit this CPU.
    pub misfit_task_load: u64,
    /// Tasks that blocked in iowait on this CPU (`nr_iowait_cpu`).
    pub nr_iowait: u32,
    /// Idle time while some task waited for IO here (`iowait_sleeptime`).
    pub iowait_ns: u64,
    /// Idle entries that stopped the tick or found it stopped (`ts->idle_calls`, read by
    /// `tick_nohz_get_idle_calls_cpu`).
    pub idle_calls: u64,
    /// Work for the stopper thread, done at the next `schedule()` of this CPU.
    pub stopper: Option<Stopper>,
    /// Kernel work done in interrupt context while the CPU idled (a timer's wakeup and its
    /// placement): the next task this CPU runs starts after it.
    pub idle_kernel_cycles: f64,
    /// The last task to leave this CPU went to sleep having run its part of the switch itself
    /// (`KernelCosts::context_switch_out`); the next task in pays only the rest.
    pub switch_out_paid: bool,
    /// Tasks counted in `rq->uclamp[]` (`uclamp_rq_inc` at enqueue, before the class sees the
    /// task; `uclamp_rq_dec` at dequeue).
    pub uclamp_tasks: Vec<super::task::TaskId>,
    /// `UCLAMP_FLAG_IDLE`: the max clamp an idle rq keeps, the last task's (`uclamp_idle_value`).
    pub uclamp_idle_max: u64,
    /// When the group cfs_rqs' load sums were last recomputed on this CPU.
    pub tg_load_stamp: Time,
    /// Statistics.
    pub busy_ns: u64,
    pub idle_ns: u64,
    pub last_state_change: Time,
    pub nr_switches: u64,
    /// Time in each idle state (ns).
    pub idle_state_ns: Vec<u64>,
    pub idle_state_usage: Vec<u64>,
}

impl Rq {
    pub fn new(cpu: usize, capacity: u64, nr_idle_states: usize) -> Self {
        Rq {
            cpu,
            curr: None,
            cfs: CfsRq {
                min_vruntime: VRUNTIME_ORIGIN,
                ..CfsRq::default()
            },
            rt: super::rt::RtRq::default(),
            fair_server: super::dl_server::FairServer {
                idle_exec_start: BOOT_CLOCK_NS,
                ..Default::default()
            },
            cfs_tasks: Vec::new(),
            clock_task: BOOT_CLOCK_NS,
            clock_pelt: BOOT_CLOCK_NS,
            lost_idle_time: 0,
            need_resched: false,
            burst_ev: None,
            burst_synced: 0,
            burst_rate: 0.0,
            tick_ev: None,
            idle_state: None,
            idle_entered: 0,
            waking: false,
            wake_ev: None,
            timer_irq_ev: None,
            next_balance: 0,
            avg_idle: 2 * 500_000,
            avg_scan_cost: 0,
            idle_stamp: 0,
            cpu_capacity: capacity,
            has_blocked_load: false,
            misfit_task_load: 0,
            nr_iowait: 0,
            iowait_ns: 0,
            idle_calls: 0,
            stopper: None,
            idle_kernel_cycles: 0.0,
            switch_out_paid: false,
            uclamp_tasks: Vec::new(),
            uclamp_idle_max: 1024,
            tg_load_stamp: 0,
            busy_ns: 0,
            idle_ns: 0,
            last_state_change: 0,
            nr_switches: 0,
            idle_state_ns: vec![0; nr_idle_states],
            idle_state_usage: vec![0; nr_idle_states],
        }
    }

    /// `rq->nr_running`: fair and RT tasks (those of a throttled RT runqueue do not count).
    pub fn nr_running(&self) -> u32 {
        self.cfs.nr_running + self.rt.nr_queued()
    }

    /// `rq_clock_pelt()`.
    pub fn clock_pelt(&self) -> u64 {
        self.clock_pelt.saturating_sub(self.lost_idle_time)
    }
}
