//! The simulator: all machine and kernel state in one place, the event loop, and the hardware
//! bookkeeping that every state change goes through (time integration of counters, burst
//! progress and energy; SMT share and turbo changes that alter the speed of running bursts).
//!
//! Scheduler logic lives in [`crate::sched`] as further `impl Sim` blocks, named as in the
//! kernel.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use crate::config::{IdleStateSpec, SimConfig};
use crate::hw::freq::{Counters, FreqDomain};
use crate::hw::hwp::HwpState;
use crate::hw::state::HwState;
use crate::hw::topology::Topology;
use crate::sched::domain::{build_sched_domains, SchedDomain};
use crate::sched::rq::Rq;
use crate::sched::task::{Task, TaskId};
use crate::sched::Tunables;
use crate::sim::event::EventQueue;
use crate::sim::profile::KernelProfile;
use crate::sim::rng::RngStream;
use crate::sim::time::Time;
use crate::trace::ftrace::{Ctx, Payload, TraceBuf};
use crate::workload::program::Compiled;
use crate::workload::Workload;

/// Simulation events.
#[derive(Clone, Copy, Debug)]
pub enum Ev {
    /// The running burst of `cpu` completes.
    BurstEnd { cpu: usize },
    /// The scheduler tick of `cpu`.
    Tick { cpu: usize },
    /// A task's sleep / timer / IO completion, firing on the CPU that armed it.
    TaskTimer { task: TaskId, cpu: usize },
    /// `cpu` has left its idle state (exit latency paid).
    IdleExit { cpu: usize },
    /// An initial task starts.
    TaskStart { task: TaskId },
    /// Per-interval turbostat sample.
    Sample,
    /// The workload's warm-up ends: the measured interval's accumulators are recorded.
    MeasureStart,
    /// A domain's delayed frequency change takes effect (transition latency).
    FreqUpdate { fd: usize },
    /// A kernel timer of idle `cpu` expires (its timer interrupt).
    TimerIrq { cpu: usize },
    /// The package power-limit controller runs.
    PowerLimit { pkg: usize },
    /// The HWP hardware re-evaluates the package's CPUs.
    HwpSample { pkg: usize },
    /// A task group's CFS bandwidth period timer.
    CfsPeriodTimer { tg: usize },
    /// A task group's CFS bandwidth slack timer.
    CfsSlackTimer { tg: usize },
    /// The RT bandwidth period timer (`def_rt_bandwidth`).
    RtPeriodTimer,
    /// The fair server's timer of `cpu` (`dl_server_timer`).
    DlServerTimer { cpu: usize },
    /// End of the run.
    End,
}

impl Ev {
    /// See [`Sim::schedule_housekeeping`].
    fn is_housekeeping(&self) -> bool {
        matches!(
            self,
            Ev::Sample | Ev::PowerLimit { .. } | Ev::HwpSample { .. }
        )
    }
}

/// A bounded channel at run time.
#[derive(Clone, Debug, Default)]
pub struct Channel {
    pub capacity: u32,
    /// A loopback TCP connection (its sends arm socket timers).
    pub tcp: bool,
    /// See [`crate::workload::spec::ChannelSpec::write_space`].
    pub write_space: Option<u32>,
    /// See [`crate::workload::spec::ChannelSpec::pipe_page`].
    pub pipe_page: Option<u32>,
    /// A pipe's pages in use, oldest first: the messages written into each and those still
    /// unread. A write merges only after the last message written (reads do not make room in
    /// a page), and a page is freed once every message written into it has been read.
    pub pages: VecDeque<(u32, u32)>,
    pub count: u32,
    pub receivers: VecDeque<TaskId>,
    pub senders: VecDeque<TaskId>,
}

impl Channel {
    /// Pages a pipe has (`pipe->max_usage`).
    fn max_pages(&self, pp: u32) -> usize {
        (self.capacity / pp) as usize
    }

    /// Every page of a pipe in use (`pipe_full()`).
    pub fn pipe_full(&self) -> bool {
        self.pipe_page
            .is_some_and(|pp| self.pages.len() >= self.max_pages(pp))
    }

    /// Whether a send goes through now.
    pub fn writable(&self) -> bool {
        match self.pipe_page {
            None => self.count < self.capacity,
            Some(pp) => {
                self.pages.back().is_some_and(|&(written, _)| written < pp)
                    || self.pages.len() < self.max_pages(pp)
            }
        }
    }

    /// Add a message (the channel is writable).
    pub fn push(&mut self) {
        self.count += 1;
        if let Some(pp) = self.pipe_page {
            match self.pages.back_mut() {
                Some((written, unread)) if *written < pp => {
                    *written += 1;
                    *unread += 1;
                }
                _ => self.pages.push_back((1, 1)),
            }
        }
    }

    /// Take a message (the channel holds one). Returns true if it freed a pipe's page.
    pub fn take(&mut self) -> bool {
        self.count -= 1;
        let Some((_, unread)) = self.pages.front_mut() else {
            return false;
        };
        *unread -= 1;
        if *unread == 0 {
            self.pages.pop_front();
            return true;
        }
        false
    }
}

/// Kernel work costs in cycles, per core type.
#[derive(Clone, Debug, Default)]
pub struct KernelCosts {
    /// One sleep-and-wake cycle's switching: the task going to sleep switches to idle (or to
    /// the next task), and the woken CPU switches from idle to the wakee.
    pub context_switch: f64,
    /// The part of `context_switch` that the task going to sleep runs itself, in its own
    /// context and after whatever it did last (the blocking syscall's wait setup and
    /// `schedule()` up to the switch); the task that comes in pays the rest.
    pub context_switch_out: f64,
    pub wakeup: f64,
    pub fork: f64,
    pub exec: f64,
    pub migrate: f64,
    /// New-idle balancing: cycles per CPU whose statistics a pass reads.
    pub balance_per_cpu: f64,
    /// `select_task_rq_fair`: a call's fixed part, and EAS cycles per CPU visited, per energy
    /// evaluation and per performance state scanned.
    pub select_base: f64,
    pub eas_per_cpu: f64,
    pub eas_per_energy: f64,
    pub eas_per_ps: f64,
}

/// Global scheduler counters.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct SchedCounters {
    pub context_switches: u64,
    pub migrations: u64,
    pub wakeups: u64,
    pub forks: u64,
    pub execs: u64,
    pub exits: u64,
    pub load_balance_calls: u64,
    pub load_balance_pulled: u64,
    pub active_balances: u64,
    pub newidle_balances: u64,
    /// RT runqueues throttled for running past `sched_rt_runtime_us` (before v6.12).
    pub rt_throttles: u64,
    /// Fair-server activations: times the fair class was served ahead of RT (v6.12+).
    pub fair_server_activations: u64,
}

/// One turbostat interval sample.
#[derive(Clone, Debug, Default)]
pub struct Sample {
    pub t_ns: Time,
    pub avg_mhz: f64,
    pub busy_pct: f64,
    pub bzy_mhz: f64,
    pub pkg_watt: f64,
    pub cor_watt: f64,
}

/// The whole simulated machine and kernel.
pub struct Sim {
    pub now: Time,
    /// The CPU the current action runs on (`smp_processor_id()`): the event's CPU, the CPU
    /// running `schedule()`, or the CPU of the task whose program executes.
    pub this_cpu: usize,
    /// During `try_to_wake_up()`: the waking CPU and the cycles charged to it so far (its
    /// `try_to_wake_up` and placement work); the IPI to the wakee's CPU goes out after them.
    pub ttwu_charge: Option<(usize, f64)>,
    pub cfg: SimConfig,
    pub prof: KernelProfile,
    pub tun: Tunables,
    pub topo: Topology,
    pub domains: Vec<Vec<SchedDomain>>,
    pub fds: Vec<FreqDomain>,
    pub cpufreq: crate::cpufreq::gov::CpufreqState,
    pub counters: Vec<Counters>,
    pub rqs: Vec<Rq>,
    pub tasks: Vec<Task>,
    pub compiled: Compiled,
    pub workload: Workload,
    pub chans: Vec<Channel>,
    pub sync: crate::workload::sync::SyncState,
    pub events: EventQueue<Ev>,
    pub end_time: Option<Time>,
    pub finished: bool,
    /// CPUs whose `need_resched` is set, in the order it was set.
    pub resched_queue: VecDeque<usize>,
    /// Tasks that became curr without a burst and must run their program.
    pub run_queue_pending: VecDeque<TaskId>,
    pub costs: Vec<KernelCosts>,
    pub idle_states: Vec<Vec<IdleStateSpec>>,
    /// The idle governors' view of each core type's states, and one governor per CPU.
    pub gov_states: Vec<Vec<crate::cpuidle::governor::IdleState>>,
    pub idle_govs: Vec<Box<dyn crate::cpuidle::governor::IdleGovernor>>,
    pub cpu_timers: Vec<BinaryHeap<Reverse<Time>>>,
    /// Kernel timers the workload's system calls leave armed (TCP socket timers).
    pub ktimers: crate::timer::TimerBases,
    pub hw: HwState,
    /// HWP, when the OS enabled it (intel_pstate on an HWP part, unless `intel_pstate.no_hwp`).
    pub hwp: Option<HwpState>,
    pub eas: crate::sched::eas::EasState,
    // load balancing
    pub llc_has_idle_cores: Vec<bool>,
    pub llc_nr_idle_scan: Vec<u32>,
    pub nohz_next_balance: Time,
    pub nohz_next_blocked: Time,
    pub nr_overloaded: u32,
    /// CPUs with more than one runnable RT task (`rto_count`).
    pub rt_overloaded: u32,
    /// RT throttling's period timer (before v6.12).
    pub rt_bw: crate::sched::rt_bandwidth::RtBandwidth,
    pub live_tasks: usize,
    pub next_pid: u32,
    pub rng_workload: RngStream,
    pub trace: Option<TraceBuf>,
    pub stats: SchedCounters,
    pub marks: Vec<(Time, TaskId, usize)>,
    /// Task groups (`tgs[0]` is the root) and the stream of 41abdba9 timer offsets.
    pub tgs: Vec<crate::sched::cgroup::TaskGroup>,
    pub rng_cfs_bw: RngStream,
    /// Each program template's group, when it names one.
    pub program_tg: Vec<Option<crate::sched::cgroup::GroupId>>,
    /// Some group sets `cpu.uclamp.*` (schedutil then applies the rq clamps).
    pub uclamp_in_use: bool,
    pub samples: Vec<Sample>,
    last_sample: (Time, Vec<Counters>, f64, f64),
    /// When the pending sample is due (samples restart at the measured interval's start).
    next_sample_at: Time,
    /// The accumulators when the measured interval began (at 0 unless the workload warms up).
    pub measure_base: crate::metrics::MeasureBase,
    pub events_popped: u64,
    /// Pending events that only observe or tune the hardware (turbostat samples, the power-limit
    /// controller, HWP's evaluation loop): they never make a task runnable, so a run whose other
    /// events are all gone is over however many of these remain.
    housekeeping_pending: usize,
}

/// The most turbostat samples a run may take (`sample_interval_ns`).
pub const MAX_SAMPLES: usize = 1_000_000;

/// Instant ops a task may execute at one instant before the run is declared stuck.
pub const MAX_INSTANT_OPS: u32 = 1_000_000;

impl Sim {
    pub fn new(cfg: SimConfig) -> Result<Sim, String> {
        cfg.validate()?;
        let prof = KernelProfile::from_spec(&cfg.kernel)?;
        let cpufreq = crate::cpufreq::gov::CpufreqState::new(&cfg, prof.version, prof.tick_ns())?;
        let hwp = cpufreq
            .hwp
            .then(|| {
                cfg.machine
                    .hwp
                    .clone()
                    .map(|s| HwpState::new(s, cfg.machine.cpus.len()))
            })
            .flatten();
        let topo = Topology::new(&cfg.machine);
        let n = topo.nr_cpus();
        let tun = Tunables::new(&prof, n, &cfg.tunables)?;
        let workload = Workload::from_spec(&cfg.workload, &cfg.machine, &topo, cfg.seed)?;
        let compiled = workload.compile()?.replicate(&cfg.workload.cgroups);
        let end_time = cfg.duration_ns.or_else(|| workload.duration_ns());
        if end_time.is_none() && workload.open_ended(&compiled) {
            return Err(format!(
                "workload '{}' runs until stopped: give a duration",
                cfg.workload.name
            ));
        }
        let m = &cfg.machine;
        let fds: Vec<FreqDomain> = m
            .freq_domains
            .iter()
            .enumerate()
            .map(|(i, spec)| {
                let cpus: Vec<usize> = (0..n).filter(|&c| topo.cpus[c].freq_domain == i).collect();
                let pkg = cpus.first().map(|&c| topo.cpus[c].package).unwrap_or(0);
                FreqDomain::new(i, spec, cpus, pkg)
            })
            .collect();
        let idle_states: Vec<Vec<IdleStateSpec>> = m
            .core_types
            .iter()
            .map(|ct| {
                m.idle_states
                    .get(&ct.name)
                    .or_else(|| m.idle_states.get("default"))
                    .cloned()
                    .unwrap_or_else(|| {
                        vec![IdleStateSpec {
                            name: "POLL".into(),
                            exit_latency_us: 0,
                            target_residency_us: 0,
                            core_exit_latency_us: None,
                            power_mw: 0.0,
                            turbo_active: true,
                            holds_pstate_request: true,
                        }]
                    })
            })
            .collect();
        let costs = m
            .core_types
            .iter()
            .map(|ct| {
                let g = |k: &str| ct.kernel_cycles.get(k).copied().unwrap_or(0.0);
                if g("context_switch_out") > g("context_switch") {
                    return Err(format!(
                        "core type '{}': kernel_cycles.context_switch_out = {} is part of context_switch = {}: allowed 0..={}",
                        ct.name,
                        g("context_switch_out"),
                        g("context_switch"),
                        g("context_switch")
                    ));
                }
                Ok(KernelCosts {
                    context_switch: g("context_switch"),
                    context_switch_out: g("context_switch_out"),
                    wakeup: g("wakeup"),
                    fork: g("fork"),
                    exec: g("exec"),
                    migrate: g("migrate"),
                    balance_per_cpu: g("balance_per_cpu"),
                    select_base: g("select_base"),
                    eas_per_cpu: g("eas_per_cpu"),
                    eas_per_energy: g("eas_per_energy"),
                    eas_per_ps: g("eas_per_ps"),
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        let idle_kind = crate::cpuidle::governor_kind(&cfg.tunables)?;
        let gov_states: Vec<_> = idle_states
            .iter()
            .map(|s| crate::cpuidle::governor_states(s))
            .collect();
        let states_per_cpu: Vec<usize> = (0..n)
            .map(|c| idle_states[topo.cpus[c].core_type].len())
            .collect();
        let idle_govs = crate::cpuidle::new_governors(idle_kind, prof.version, &states_per_cpu);
        let rqs = (0..n)
            .map(|c| {
                let ct = topo.cpus[c].core_type;
                Rq::new(c, topo.cpus[c].capacity_orig, idle_states[ct].len())
            })
            .collect();
        let domains = build_sched_domains(&topo, prof.busy_factor, prof.imbalance_pct_pkg);
        let ncores = topo.core_cpus.len();
        let npkg = topo.package_cpus.len();
        let nllc = topo.llc_cpus.len();
        let pkg_max_khz = (0..npkg)
            .map(|p| {
                fds.iter()
                    .filter(|f| f.package == p)
                    .map(|f| f.cpuinfo_max_khz())
                    .max()
                    .unwrap_or(1)
            })
            .collect();
        let nchans = compiled.channels.len();
        let chans = compiled
            .channels
            .iter()
            .map(|c| Channel {
                capacity: c.capacity,
                tcp: c.tcp,
                write_space: c.write_space,
                pipe_page: c.pipe_page,
                ..Channel::default()
            })
            .collect();
        let sync = crate::workload::sync::SyncState::new(&compiled);
        let seed = cfg.seed;
        let trace = cfg.trace.then(TraceBuf::new);
        let mut sim = Sim {
            now: 0,
            this_cpu: 0,
            ttwu_charge: None,
            end_time,
            prof,
            tun,
            domains,
            fds,
            cpufreq,
            counters: vec![Counters::default(); n],
            rqs,
            tasks: Vec::new(),
            compiled,
            workload,
            chans,
            sync,
            events: EventQueue::new(),
            finished: false,
            resched_queue: VecDeque::new(),
            run_queue_pending: VecDeque::new(),
            costs,
            idle_states,
            gov_states,
            idle_govs,
            cpu_timers: vec![BinaryHeap::new(); n],
            ktimers: crate::timer::TimerBases::new(n, 2 * nchans),
            hw: HwState::new(ncores, npkg, n, pkg_max_khz),
            hwp,
            eas: crate::sched::eas::EasState::default(),
            llc_has_idle_cores: vec![true; nllc],
            llc_nr_idle_scan: topo.llc_cpus.iter().map(|l| l.len() as u32).collect(),
            nohz_next_balance: 0,
            nohz_next_blocked: 0,
            nr_overloaded: 0,
            rt_overloaded: 0,
            rt_bw: Default::default(),
            live_tasks: 0,
            next_pid: 1000,
            rng_workload: RngStream::new(seed, "workload"),
            trace,
            stats: SchedCounters::default(),
            marks: Vec::new(),
            tgs: Vec::new(),
            rng_cfs_bw: RngStream::new(seed, "cfs_bw_timer"),
            program_tg: Vec::new(),
            uclamp_in_use: false,
            samples: Vec::new(),
            last_sample: (0, vec![Counters::default(); n], 0.0, 0.0),
            next_sample_at: 0,
            measure_base: Default::default(),
            events_popped: 0,
            housekeeping_pending: 0,
            topo,
            cfg,
        };
        for c in 0..sim.topo.nr_cpus() {
            let fd = sim.topo.cpus[c].freq_domain;
            sim.hw.cpu_req_khz[c] = sim.fds[fd].base_khz;
        }
        let rt_runtime = sim.def_rt_runtime();
        for rq in &mut sim.rqs {
            rq.rt.rt_runtime = rt_runtime;
        }
        sim.init_idle();
        sim.init_cpufreq()?;
        sim.init_eas()?;
        let cgroups = sim.cfg.cgroups.clone();
        sim.init_task_groups(&cgroups)?;
        sim.program_tg = Vec::new();
        for p in 0..sim.compiled.programs.len() {
            let tg = match sim.compiled.programs[p].cgroup.clone() {
                Some(path) => Some(
                    sim.resolve_cgroup(&path)
                        .map_err(|e| format!("task '{}': {e}", sim.compiled.programs[p].name))?,
                ),
                None => None,
            };
            sim.program_tg.push(tg);
        }
        sim.uclamp_in_use = sim.uclamp_used();
        sim.check_initial_uclamp()?;
        sim.spawn_initial_tasks()?;
        if let Some(end) = sim.end_time {
            sim.events.schedule(end, Ev::End);
        }
        if sim.cfg.sample_interval_ns > 0 {
            sim.schedule_sample();
        }
        sim.measure_base = crate::metrics::MeasureBase::capture(&sim);
        let from = sim.workload.measured_from_ns();
        let samples_from = sim.workload.samples_from_ns().max(from);
        if let Some(end) = sim
            .end_time
            .filter(|&end| samples_from > 0 && samples_from >= end && !sim.workload.warmup_fixed())
        {
            return Err(format!(
                "workload '{}': its warm-up ({} s) is not shorter than the run ({} s), so nothing \
                 would be measured: give a longer duration or a shorter warm-up (warmup_s; schbench: \
                 warmup_ms)",
                sim.cfg.workload.name,
                samples_from as f64 / 1e9,
                end as f64 / 1e9
            ));
        }
        if from > 0 && sim.end_time.is_none_or(|end| from < end) {
            sim.events.schedule(from, Ev::MeasureStart);
        }
        Ok(sim)
    }

    /// Every CPU starts idle in its deepest state with no timer pending.
    fn init_idle(&mut self) {
        for cpu in 0..self.topo.nr_cpus() {
            let st = self.idle_states[self.topo.cpus[cpu].core_type].len() - 1;
            self.rqs[cpu].idle_state = Some(st);
            self.rqs[cpu].idle_entered = 0;
            self.rqs[cpu].idle_stamp = 0;
        }
        self.init_hw();
    }

    // ------------------------------------------------------------------ event loop

    /// Run to the end time or until every task has exited.
    pub fn run(&mut self) -> Result<(), String> {
        self.drain_pending()?;
        while !self.finished {
            let Some((t, ev)) = self.events.pop() else {
                break;
            };
            debug_assert!(t >= self.now, "time went backwards");
            self.now = t;
            self.events_popped += 1;
            if ev.is_housekeeping() {
                self.housekeeping_pending -= 1;
            }
            self.dispatch(ev)?;
            self.drain_pending()?;
            if self.live_tasks == 0 && self.all_started() {
                self.finished = true;
            }
            // tasks blocked for good and no end time: nothing can happen any more
            if self.events.len() == self.housekeeping_pending {
                self.finished = true;
            }
        }
        self.finish_accounting();
        Ok(())
    }

    fn all_started(&self) -> bool {
        !self.tasks.is_empty()
    }

    fn dispatch(&mut self, ev: Ev) -> Result<(), String> {
        self.this_cpu = match ev {
            Ev::BurstEnd { cpu }
            | Ev::Tick { cpu }
            | Ev::TaskTimer { cpu, .. }
            | Ev::IdleExit { cpu }
            | Ev::TimerIrq { cpu }
            | Ev::DlServerTimer { cpu } => cpu,
            Ev::FreqUpdate { fd } => self.fds[fd].cpus[0],
            Ev::PowerLimit { pkg } | Ev::HwpSample { pkg } => self.topo.package_cpus[pkg][0],
            Ev::CfsPeriodTimer { .. } | Ev::CfsSlackTimer { .. } | Ev::RtPeriodTimer => 0,
            Ev::TaskStart { .. } | Ev::Sample | Ev::MeasureStart | Ev::End => 0,
        };
        match ev {
            Ev::BurstEnd { cpu } => {
                self.rqs[cpu].burst_ev = None;
                self.on_burst_end(cpu)
            }
            Ev::Tick { cpu } => {
                self.rqs[cpu].tick_ev = None;
                self.scheduler_tick(cpu);
                Ok(())
            }
            Ev::TaskTimer { task, cpu } => {
                self.cpu_timers[cpu].pop();
                self.on_task_timer(task, cpu);
                Ok(())
            }
            Ev::TimerIrq { cpu } => {
                self.rqs[cpu].timer_irq_ev = None;
                self.idle_timer_irq(cpu);
                Ok(())
            }
            Ev::IdleExit { cpu } => {
                self.rqs[cpu].wake_ev = None;
                self.on_idle_exit(cpu);
                Ok(())
            }
            Ev::TaskStart { task } => {
                self.start_task(task);
                Ok(())
            }
            Ev::Sample => {
                // a sample scheduled before the measured interval restarted the sampling
                if self.now == self.next_sample_at {
                    self.check_sample_room()?;
                    self.take_sample();
                    self.schedule_sample();
                }
                Ok(())
            }
            Ev::MeasureStart => {
                self.sync_all();
                self.measure_base = crate::metrics::MeasureBase::capture(self);
                if self.cfg.sample_interval_ns > 0 {
                    // the warm-up's last interval ends here; the measured intervals start here
                    if self.now > self.last_sample.0 {
                        self.check_sample_room()?;
                        self.take_sample();
                    }
                    self.schedule_sample();
                }
                Ok(())
            }
            Ev::FreqUpdate { fd } => {
                self.apply_domain_frequency(fd);
                Ok(())
            }
            Ev::PowerLimit { pkg } => {
                self.power_limit_step(pkg);
                Ok(())
            }
            Ev::HwpSample { pkg } => {
                self.hwp_sample(pkg);
                Ok(())
            }
            Ev::CfsPeriodTimer { tg } => {
                self.on_cfs_period_timer(tg);
                Ok(())
            }
            Ev::CfsSlackTimer { tg } => {
                self.on_cfs_slack_timer(tg);
                Ok(())
            }
            Ev::RtPeriodTimer => {
                self.on_rt_period_timer();
                Ok(())
            }
            Ev::DlServerTimer { cpu } => {
                self.rqs[cpu].fair_server.timer_ev = None;
                self.dl_server_timer(cpu);
                Ok(())
            }
            Ev::End => {
                self.finished = true;
                Ok(())
            }
        }
    }

    /// Run `schedule()` on CPUs that need it and programs of tasks that just got a CPU, until
    /// nothing is left to do at this instant.
    fn drain_pending(&mut self) -> Result<(), String> {
        let mut budget = MAX_INSTANT_OPS;
        loop {
            if let Some(cpu) = self.resched_queue.pop_front() {
                if self.rqs[cpu].need_resched {
                    self.this_cpu = cpu;
                    self.schedule(cpu);
                }
                continue;
            }
            if let Some(t) = self.run_queue_pending.pop_front() {
                self.this_cpu = self.tasks[t].cpu;
                self.run_program(t, &mut budget)?;
                continue;
            }
            return Ok(());
        }
    }

    /// `resched_curr()`.
    pub fn resched_curr(&mut self, cpu: usize) {
        if self.rqs[cpu].curr.is_none() && !self.rqs[cpu].waking {
            // an idle CPU gets an IPI and schedules once out of its idle state
            self.kick_idle_cpu(cpu);
            return;
        }
        self.queue_schedule(cpu);
    }

    /// Set `need_resched` and queue the CPU for `schedule()` at this instant.
    pub fn queue_schedule(&mut self, cpu: usize) {
        if !self.rqs[cpu].need_resched {
            self.rqs[cpu].need_resched = true;
            self.resched_queue.push_back(cpu);
        }
    }

    /// (Re)schedule the end of `cpu`'s running burst at the current speed.
    pub fn rearm_burst(&mut self, cpu: usize) {
        let Some(t) = self.rqs[cpu].curr else {
            return;
        };
        let Some(mut b) = self.tasks[t].burst else {
            return;
        };
        if let Some(end) = b.wall_until {
            // wall-time bursts end at their instant whatever happened in between
            b.stall_ns = end.saturating_sub(self.now) as f64;
            self.tasks[t].burst = Some(b);
        }
        let rate = self.cpu_rate(cpu);
        let rq = &self.rqs[cpu];
        if rq.burst_ev.is_some() && rate == rq.burst_rate {
            return;
        }
        if let Some(h) = self.rqs[cpu].burst_ev.take() {
            self.events.cancel(h);
        }
        let dur = b.duration_ns(rate).ceil().max(0.0) as u64;
        self.rqs[cpu].burst_rate = rate;
        let h = self.events.schedule(self.now + dur, Ev::BurstEnd { cpu });
        self.rqs[cpu].burst_ev = Some(h);
    }

    /// Stop the running burst's completion event (the task leaves the CPU).
    pub fn disarm_burst(&mut self, cpu: usize) {
        if let Some(h) = self.rqs[cpu].burst_ev.take() {
            self.events.cancel(h);
        }
    }

    /// Arm a task timer on `cpu` (hrtimers fire on the CPU that armed them).
    pub fn arm_task_timer(&mut self, task: TaskId, cpu: usize, at: Time) {
        self.cpu_timers[cpu].push(Reverse(at));
        self.events.schedule(at, Ev::TaskTimer { task, cpu });
    }

    /// Time until the next timer armed on `cpu` (the idle governors' sleep length).
    pub fn sleep_length(&self, cpu: usize) -> u64 {
        self.cpu_timers[cpu]
            .peek()
            .map(|Reverse(t)| t.saturating_sub(self.now))
            .unwrap_or(u64::MAX)
            .min(self.next_ktimer_ns(cpu).map_or(u64::MAX, |t| t - self.now))
    }

    /// The next kernel timer of `cpu` still to fire.
    pub fn next_ktimer_ns(&self, cpu: usize) -> Option<Time> {
        self.ktimers.next_expiry(cpu, self.now)
    }

    // ------------------------------------------------------------------ tracing

    pub fn trace_event(&mut self, cpu: usize, payload: Payload) {
        let ctx = match self.rqs[cpu].curr {
            Some(t) => {
                let comm = self.tasks[t].comm.clone();
                let pid = self.tasks[t].pid;
                let tr = self.trace.as_mut().expect("tracing enabled");
                Ctx {
                    comm: tr.intern(&comm),
                    pid,
                }
            }
            None => Ctx { comm: 0, pid: 0 },
        };
        let now = self.now;
        if let Some(tr) = self.trace.as_mut() {
            tr.push(now, cpu, ctx, payload);
        }
    }

    /// A task as trace payloads print it.
    pub fn trace_ref(&mut self, t: Option<TaskId>) -> crate::trace::ftrace::TaskRef {
        match t {
            Some(t) => {
                let comm = self.tasks[t].comm.clone();
                let (pid, prio) = (self.tasks[t].pid, self.tasks[t].prio());
                let tr = self.trace.as_mut().expect("tracing enabled");
                crate::trace::ftrace::TaskRef {
                    comm: tr.intern(&comm),
                    pid,
                    prio,
                }
            }
            None => crate::trace::ftrace::TaskRef {
                comm: 0,
                pid: 0,
                prio: 120,
            },
        }
    }

    // ------------------------------------------------------------------ samples and the end

    fn energy_totals(&self) -> (f64, f64) {
        (
            self.hw.pkg_energy_uj.iter().sum(),
            self.hw.pkg_core_energy_uj.iter().sum(),
        )
    }

    fn sync_all(&mut self) {
        for c in 0..self.topo.nr_cpus() {
            self.sync_cpu(c);
        }
        for p in 0..self.hw.pkg_energy_t.len() {
            self.sync_package(p);
        }
    }

    fn schedule_sample(&mut self) {
        self.next_sample_at = self.now + self.cfg.sample_interval_ns;
        self.schedule_housekeeping(self.next_sample_at, Ev::Sample);
    }

    /// Schedule an event that only observes or tunes the hardware (a turbostat sample, a
    /// power-limit or HWP evaluation). Such events re-arm themselves, so they are counted: the
    /// run ends when nothing else is pending.
    pub fn schedule_housekeeping(&mut self, time: Time, ev: Ev) {
        debug_assert!(ev.is_housekeeping());
        self.housekeeping_pending += 1;
        self.events.schedule(time, ev);
    }

    /// A run takes at most [`MAX_SAMPLES`] turbostat samples.
    fn check_sample_room(&self) -> Result<(), String> {
        if self.samples.len() >= MAX_SAMPLES {
            return Err(format!(
                "sample_interval_ns = {}: more than {MAX_SAMPLES} turbostat samples by {:.6} s \
                 of simulated time; use a longer interval",
                self.cfg.sample_interval_ns,
                self.now as f64 * 1e-9
            ));
        }
        Ok(())
    }

    fn take_sample(&mut self) {
        self.sync_all();
        let (e, ce) = self.energy_totals();
        let (t0, prev, e0, ce0) = &self.last_sample;
        let dt = (self.now - t0) as f64 * 1e-9;
        let s =
            crate::metrics::turbostat_from_counters(prev, &self.counters, self.cfg.machine.tsc_khz);
        self.samples.push(Sample {
            t_ns: self.now,
            avg_mhz: s.avg_mhz,
            busy_pct: s.busy_pct,
            bzy_mhz: s.bzy_mhz,
            pkg_watt: (e - e0) * 1e-6 / dt,
            cor_watt: (ce - ce0) * 1e-6 / dt,
        });
        self.last_sample = (self.now, self.counters.clone(), e, ce);
    }

    fn finish_accounting(&mut self) {
        for c in 0..self.topo.nr_cpus() {
            self.update_rq_clock(c);
            self.update_curr(c);
            self.update_curr_rt(c);
        }
        self.sync_all();
        if self.cfg.sample_interval_ns > 0 && self.now > self.last_sample.0 {
            // the last, possibly shorter, interval
            self.take_sample();
        }
        for t in 0..self.tasks.len() {
            self.account_task_state(t);
        }
    }

    /// Record a workload mark.
    pub fn mark(&mut self, task: TaskId, id: usize) {
        self.marks.push((self.now, task, id));
    }

    /// Throughput figure of the engine for results.
    pub fn simulated_ns(&self) -> Time {
        self.now
    }
}
