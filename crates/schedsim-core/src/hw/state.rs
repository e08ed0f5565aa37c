//! Hardware state over time (DESIGN "Hardware", spec/kernel.md §2.3, §9.5, §10): per-CPU
//! frequency requests and how each frequency domain coordinates them, the turbo limit by
//! active core count, the package power limit that caps boost (PL1/PL2, PPT), package C-states,
//! and the time integration of counters, burst progress and energy.
//!
//! Every busy/idle or frequency change goes through the same three steps: bring everything it
//! can affect up to now (`hw_sync_for`), change the state, then recompute activity, frequency
//! and power and re-arm the bursts whose speed changed (`hw_update_for`).

use crate::engine::{Ev, Sim};
use crate::hw::power::{core_power_mw, uncore_power_mw, CoreActivity};
use crate::sim::time::Time;
use crate::trace::ftrace::Payload;

/// Period of the package power-limit controller.
pub const POWER_LIMIT_PERIOD_NS: u64 = 1_000_000;

/// Time-varying hardware state.
#[derive(Clone, Debug)]
pub struct HwState {
    /// Frequency each CPU's policy asks for (kHz).
    pub cpu_req_khz: Vec<u64>,
    /// Busy hardware threads per core.
    pub core_busy: Vec<u32>,
    /// Whether a core counts as active for turbo (C0 or a turbo-active idle state).
    pub core_active: Vec<bool>,
    pub pkg_active_cores: Vec<u32>,
    pub core_power_mw: Vec<f64>,
    pub pkg_uncore_mw: Vec<f64>,
    pub pkg_energy_uj: Vec<f64>,
    pub pkg_core_energy_uj: Vec<f64>,
    pub pkg_energy_t: Vec<Time>,
    pub pkg_max_khz: Vec<u64>,
    /// Turbo ceiling set by the power-limit controller.
    pub pkg_ceiling_khz: Vec<u64>,
    /// Package power averaged over the PL1 time window, and the energy at the last control step.
    pub pkg_pl_avg_mw: Vec<f64>,
    pub pkg_pl_last_uj: Vec<f64>,
    /// Package C-state (index into `package_idle_states`), since when, and residency per state.
    pub pkg_cstate: Vec<Option<usize>>,
    pub pkg_cstate_since: Vec<Time>,
    pub pkg_cstate_ns: Vec<Vec<u64>>,
    /// Pending delayed frequency application per domain (transition latency).
    pub fd_update_pending: Vec<bool>,
    /// Frequency domains of each package.
    pub pkg_fds: Vec<Vec<usize>>,
    /// Idle depth of each CPU (0 = running or waking, s + 1 = in core idle state s) and, per
    /// package, how many CPUs are at each depth (for package C-states).
    pub cpu_depth: Vec<usize>,
    pub pkg_depth_count: Vec<Vec<u32>>,
    pub pkg_busy_cores: Vec<u32>,
    /// Active cores and turbo ceiling when the package's domains were last all recomputed:
    /// while both stay, a busy/idle change only moves its own domain.
    pub pkg_last_active: Vec<u32>,
    pub pkg_last_ceiling_khz: Vec<u64>,
    /// Domains whose delivered frequency the last `refresh_package_from` changed.
    pub changed_fds: Vec<usize>,
    /// The domains `refresh_package_from` recomputes (reused, so the event path allocates
    /// nothing).
    pub refresh_fds: Vec<usize>,
}

impl HwState {
    pub fn new(ncores: usize, npkg: usize, ncpus: usize, pkg_max_khz: Vec<u64>) -> Self {
        HwState {
            cpu_req_khz: vec![0; ncpus],
            core_busy: vec![0; ncores],
            core_active: vec![false; ncores],
            pkg_active_cores: vec![0; npkg],
            core_power_mw: vec![0.0; ncores],
            pkg_uncore_mw: vec![0.0; npkg],
            pkg_energy_uj: vec![0.0; npkg],
            pkg_core_energy_uj: vec![0.0; npkg],
            pkg_energy_t: vec![0; npkg],
            pkg_ceiling_khz: pkg_max_khz.clone(),
            pkg_max_khz,
            pkg_pl_avg_mw: vec![0.0; npkg],
            pkg_pl_last_uj: vec![0.0; npkg],
            pkg_cstate: vec![None; npkg],
            pkg_cstate_since: vec![0; npkg],
            pkg_cstate_ns: Vec::new(),
            fd_update_pending: Vec::new(),
            pkg_fds: vec![Vec::new(); npkg],
            cpu_depth: vec![0; ncpus],
            pkg_depth_count: Vec::new(),
            pkg_busy_cores: vec![0; npkg],
            pkg_last_active: vec![u32::MAX; npkg],
            pkg_last_ceiling_khz: vec![0; npkg],
            changed_fds: Vec::new(),
            refresh_fds: Vec::new(),
        }
    }
}

impl Sim {
    /// Initial hardware state: requests at the policy's choice, every CPU idle.
    pub fn init_hw(&mut self) {
        let npkg = self.hw.pkg_energy_t.len();
        let nps = self.cfg.machine.package_idle_states.len();
        self.hw.pkg_cstate_ns = vec![vec![0; nps]; npkg];
        self.hw.fd_update_pending = vec![false; self.fds.len()];
        for (i, fd) in self.fds.iter().enumerate() {
            self.hw.pkg_fds[fd.package].push(i);
        }
        let max_depth = self.idle_states.iter().map(|s| s.len()).max().unwrap_or(0) + 1;
        self.hw.pkg_depth_count = vec![vec![0; max_depth]; npkg];
        for pkg in 0..npkg {
            self.hw.pkg_depth_count[pkg][0] = self.topo.package_cpus[pkg].len() as u32;
        }
        for core in 0..self.topo.core_cpus.len() {
            self.refresh_core(core);
        }
        for p in 0..npkg {
            self.refresh_package(p);
            if self.cfg.machine.power.power_limit_mw > 0.0
                || self.cfg.machine.power.power_limit2_mw > 0.0
            {
                self.schedule_housekeeping(POWER_LIMIT_PERIOD_NS, Ev::PowerLimit { pkg: p });
            }
        }
    }

    /// Work speed of `cpu` in cycles per ns: delivered frequency × SMT share × IPC scale.
    pub fn cpu_rate(&self, cpu: usize) -> f64 {
        let info = &self.topo.cpus[cpu];
        let khz = self.fds[info.freq_domain].delivered_khz as f64;
        let busy = self.hw.core_busy[info.core].max(1) as usize;
        let share = self.cfg.machine.core_types[info.core_type]
            .smt_share
            .get(busy - 1)
            .copied()
            .unwrap_or(1.0);
        khz * 1e-6 * share * info.ipc_scale
    }

    /// Integrate `cpu`'s counters, busy/idle time and burst progress up to now.
    pub fn sync_cpu(&mut self, cpu: usize) {
        let rq = &self.rqs[cpu];
        let dt = self.now - rq.last_state_change;
        if dt == 0 {
            return;
        }
        let busy = rq.curr.is_some();
        let fd = self.topo.cpus[cpu].freq_domain;
        let khz = self.fds[fd].delivered_khz;
        self.counters[cpu].advance(dt, busy, khz, self.cfg.machine.tsc_khz);
        let rq = &mut self.rqs[cpu];
        if busy {
            rq.busy_ns += dt;
        } else {
            rq.idle_ns += dt;
            if rq.nr_iowait > 0 {
                rq.iowait_ns += dt;
            }
            if let Some(s) = rq.idle_state {
                rq.idle_state_ns[s] += dt;
            }
        }
        rq.last_state_change = self.now;
        if let Some(t) = rq.curr {
            let rate = rq.burst_rate;
            let task = &mut self.tasks[t];
            if let Some(b) = task.burst.as_mut() {
                let used = b.advance(dt as f64, rate);
                if !b.overhead {
                    task.stats.user_ns += used.round() as u64;
                }
            }
        }
    }

    /// Integrate the package's energy up to now with its current power.
    pub fn sync_package(&mut self, pkg: usize) {
        let dt = self.now - self.hw.pkg_energy_t[pkg];
        if dt == 0 {
            return;
        }
        let cores: f64 = self.topo.package_cores[pkg]
            .iter()
            .map(|&c| self.hw.core_power_mw[c])
            .sum();
        // mW × ns = 1e-12 J = 1e-6 µJ
        self.hw.pkg_core_energy_uj[pkg] += cores * dt as f64 * 1e-6;
        self.hw.pkg_energy_uj[pkg] += (cores + self.hw.pkg_uncore_mw[pkg]) * dt as f64 * 1e-6;
        if let Some(s) = self.hw.pkg_cstate[pkg] {
            self.hw.pkg_cstate_ns[pkg][s] += dt;
        }
        self.hw.pkg_energy_t[pkg] = self.now;
    }

    /// Bring what a busy/idle change on `cpu` changes at once up to now: the package's energy
    /// and the CPUs of its core (their SMT share). CPUs of other domains are synced only if
    /// their frequency moves (`refresh_package_from`).
    pub fn hw_sync_for(&mut self, cpu: usize) {
        let pkg = self.topo.cpus[cpu].package;
        self.sync_package(pkg);
        let core = self.topo.cpus[cpu].core;
        for i in 0..self.topo.core_cpus[core].len() {
            let s = self.topo.core_cpus[core][i];
            self.sync_cpu(s);
        }
    }

    /// After a busy/idle change on `cpu`: recompute its core's activity and power, the
    /// package's frequencies, C-state and uncore power, and re-arm bursts whose speed changed.
    pub fn hw_update_for(&mut self, cpu: usize) {
        let core = self.topo.cpus[cpu].core;
        let pkg = self.topo.cpus[cpu].package;
        let fd = self.topo.cpus[cpu].freq_domain;
        self.refresh_core(core);
        self.refresh_package_from(pkg, Some(fd));
        // bursts change speed on this core (SMT share) and in every domain whose frequency moved
        for i in 0..self.topo.core_cpus[core].len() {
            let c = self.topo.core_cpus[core][i];
            self.rearm_burst(c);
        }
        for k in 0..self.hw.changed_fds.len() {
            let f = self.hw.changed_fds[k];
            for j in 0..self.fds[f].cpus.len() {
                let c = self.fds[f].cpus[j];
                if self.topo.cpus[c].core != core {
                    self.rearm_burst(c);
                }
            }
        }
    }

    fn refresh_core(&mut self, core: usize) {
        let cpus = &self.topo.core_cpus[core];
        let mut busy = 0;
        let mut active = false;
        for &c in cpus {
            let rq = &self.rqs[c];
            let ct = self.topo.cpus[c].core_type;
            if rq.curr.is_some() || rq.waking {
                busy += rq.curr.is_some() as u32;
                active = true;
            } else if let Some(s) = rq.idle_state {
                active |= self.idle_states[ct][s].turbo_active;
            }
        }
        let pkg = self.topo.cpus[cpus[0]].package;
        for &c in cpus {
            let rq = &self.rqs[c];
            let depth = if rq.curr.is_some() || rq.waking {
                0
            } else {
                rq.idle_state.map_or(0, |s| s + 1)
            };
            let old = self.hw.cpu_depth[c];
            if old != depth && !self.hw.pkg_depth_count.is_empty() {
                self.hw.pkg_depth_count[pkg][old] -= 1;
                self.hw.pkg_depth_count[pkg][depth] += 1;
            }
            self.hw.cpu_depth[c] = depth;
        }
        if (self.hw.core_busy[core] > 0) != (busy > 0) {
            if busy > 0 {
                self.hw.pkg_busy_cores[pkg] += 1;
            } else {
                self.hw.pkg_busy_cores[pkg] -= 1;
            }
        }
        if self.hw.core_active[core] != active {
            self.hw.core_active[core] = active;
            if active {
                self.hw.pkg_active_cores[pkg] += 1;
            } else {
                self.hw.pkg_active_cores[pkg] -= 1;
            }
        }
        self.hw.core_busy[core] = busy;
        self.update_core_power(core);
    }

    /// Power of the core while all its threads idle: that of its shallowest thread's state
    /// (a core is no deeper than its shallowest thread).
    fn core_idle_mw(&self, core: usize) -> f64 {
        self.topo.core_cpus[core]
            .iter()
            .filter_map(|&c| {
                self.rqs[c]
                    .idle_state
                    .map(|s| (s, self.topo.cpus[c].core_type))
            })
            .min_by_key(|&(s, _)| s)
            .map_or(0.0, |(s, ct)| self.idle_states[ct][s].power_mw)
    }

    fn update_core_power(&mut self, core: usize) {
        let c0 = self.topo.core_cpus[core][0];
        let fd = &self.fds[self.topo.cpus[c0].freq_domain];
        let khz = fd.delivered_khz;
        let opp = fd.opp_at_or_above(khz);
        let act = CoreActivity {
            busy_threads: self.hw.core_busy[core] as usize,
            khz,
            uv: opp.uv,
            opp_power_mw: opp.power_mw,
            idle_power_mw: self.core_idle_mw(core),
        };
        self.hw.core_power_mw[core] = core_power_mw(&self.cfg.machine.power, &act);
    }

    /// The frequency a domain's hardware targets from its CPUs' requests: the highest request
    /// of all CPUs (`max`) or of the active ones (`max-active`; `None` when none is).
    fn domain_target_khz(&self, fd: usize) -> Option<u64> {
        let d = &self.fds[fd];
        let active_only = d.coordination == "max-active";
        d.cpus
            .iter()
            .filter(|&&c| !active_only || self.holds_pstate_request(c))
            .map(|&c| self.hw.cpu_req_khz[c])
            .max()
    }

    /// Whether `cpu`'s request counts in a `max-active` domain: it runs a task, is leaving
    /// idle, or idles in a state that keeps the core's P-state request (C1, not C1E or C3+).
    fn holds_pstate_request(&self, cpu: usize) -> bool {
        let rq = &self.rqs[cpu];
        if rq.curr.is_some() || rq.waking {
            return true;
        }
        let ct = self.topo.cpus[cpu].core_type;
        rq.idle_state
            .is_some_and(|s| self.idle_states[ct][s].holds_pstate_request)
    }

    /// Recompute every domain of the package (turbo by active cores, power-limit ceiling),
    /// its C-state and uncore power. Returns true when a delivered frequency changed.
    pub fn refresh_package(&mut self, pkg: usize) -> bool {
        self.refresh_package_from(pkg, None)
    }

    /// As `refresh_package`, but when only `fd`'s CPUs changed and no domain of the package
    /// has a turbo table (so nothing else depends on the active core count), only `fd` is
    /// recomputed.
    fn refresh_package_from(&mut self, pkg: usize, fd: Option<usize>) -> bool {
        self.sync_package(pkg);
        let active = self.hw.pkg_active_cores[pkg] as usize;
        let ceiling = self.hw.pkg_ceiling_khz[pkg];
        // turbo bins depend on the package's active core count (and the power-limit ceiling):
        // while neither moved, only `fd` can change
        let same_turbo_inputs = self.hw.pkg_last_active[pkg] == active as u32
            && self.hw.pkg_last_ceiling_khz[pkg] == ceiling;
        let mut fds = std::mem::take(&mut self.hw.refresh_fds);
        fds.clear();
        match fd {
            Some(f) if self.fds[f].turbo_khz.is_empty() || same_turbo_inputs => fds.push(f),
            _ => {
                self.hw.pkg_last_active[pkg] = active as u32;
                self.hw.pkg_last_ceiling_khz[pkg] = ceiling;
                fds.extend_from_slice(&self.hw.pkg_fds[pkg]);
            }
        }
        let mut changed = false;
        self.hw.changed_fds.clear();
        for &i in &fds {
            let target = self
                .domain_target_khz(i)
                .unwrap_or(self.fds[i].requested_khz);
            self.fds[i].requested_khz = target;
            let d = self.fds[i]
                .deliver(target, active, self.hwp.is_none())
                .min(ceiling);
            if d != self.fds[i].delivered_khz {
                // integrate the domain's CPUs at the old frequency first
                for k in 0..self.fds[i].cpus.len() {
                    let c = self.fds[i].cpus[k];
                    self.sync_cpu(c);
                }
                self.fds[i].delivered_khz = d;
                self.hw.changed_fds.push(i);
                changed = true;
                for k in 0..self.fds[i].cpus.len() {
                    let c = self.fds[i].cpus[k];
                    let core = self.topo.cpus[c].core;
                    if self.topo.core_cpus[core][0] == c {
                        self.update_core_power(core);
                    }
                }
            }
        }
        self.hw.refresh_fds = fds;
        self.refresh_package_cstate(pkg);
        // the uncore follows the fastest busy core; idle cores keep a stale request
        let top = self.topo.package_cores[pkg]
            .iter()
            .filter(|&&core| self.hw.core_busy[core] > 0)
            .map(|&core| {
                let c0 = self.topo.core_cpus[core][0];
                self.fds[self.topo.cpus[c0].freq_domain].delivered_khz
            })
            .max()
            .unwrap_or(0);
        let any_busy = self.hw.pkg_busy_cores[pkg] > 0;
        let power = &self.cfg.machine.power;
        self.hw.pkg_uncore_mw[pkg] = match self.hw.pkg_cstate[pkg] {
            Some(s) => self.cfg.machine.package_idle_states[s].power_mw,
            None => uncore_power_mw(power, any_busy, top, self.hw.pkg_max_khz[pkg]),
        };
        changed
    }

    /// The package enters the deepest package C-state whose `min_core_state` every core of the
    /// package has reached (a core is as deep as its shallowest thread).
    fn refresh_package_cstate(&mut self, pkg: usize) {
        let states = &self.cfg.machine.package_idle_states;
        if states.is_empty() {
            return;
        }
        // depth 0 = running; depth s + 1 = in core state s
        let shallowest = self.hw.pkg_depth_count[pkg]
            .iter()
            .position(|&n| n > 0)
            .unwrap_or(0);
        let new = states.iter().rposition(|ps| shallowest > ps.min_core_state);
        if new != self.hw.pkg_cstate[pkg] {
            self.hw.pkg_cstate[pkg] = new;
            self.hw.pkg_cstate_since[pkg] = self.now;
        }
    }

    /// Extra exit latency when waking a CPU of a package in a package C-state.
    pub fn package_exit_latency_ns(&self, cpu: usize) -> u64 {
        let pkg = self.topo.cpus[cpu].package;
        self.hw.pkg_cstate[pkg]
            .map(|s| self.cfg.machine.package_idle_states[s].exit_latency_us * 1000)
            .unwrap_or(0)
    }

    /// A policy asks for a frequency for `cpu` (`cpufreq_driver_fast_switch` / `target`). The
    /// hardware applies it after the domain's transition latency.
    pub fn set_cpu_request(&mut self, cpu: usize, khz: u64) {
        if self.hw.cpu_req_khz[cpu] == khz {
            return;
        }
        self.hw.cpu_req_khz[cpu] = khz;
        if self.trace.is_some() {
            self.trace_event(cpu, Payload::CpuFrequency { khz, cpu });
        }
        let fd = self.topo.cpus[cpu].freq_domain;
        let lat = self.fds[fd].transition_latency_ns;
        if lat == 0 {
            self.apply_domain_frequency(fd);
        } else if !self.hw.fd_update_pending[fd] {
            self.hw.fd_update_pending[fd] = true;
            self.events.schedule(self.now + lat, Ev::FreqUpdate { fd });
        }
    }

    /// Apply the current requests of a domain (after the transition latency).
    pub fn apply_domain_frequency(&mut self, fd: usize) {
        self.hw.fd_update_pending[fd] = false;
        let pkg = self.fds[fd].package;
        self.sync_package(pkg);
        for c in self.topo.package_cpus[pkg].clone() {
            self.sync_cpu(c);
        }
        if self.refresh_package(pkg) {
            for c in self.topo.package_cpus[pkg].clone() {
                self.rearm_burst(c);
            }
        }
    }

    /// The package power-limit controller (a stand-in for the firmware's RAPL/PPT loop): every
    /// millisecond it compares the package power averaged over the PL1 window with PL1 (and the
    /// last millisecond with PL2) and moves the turbo ceiling one OPP down or up.
    pub fn power_limit_step(&mut self, pkg: usize) {
        self.sync_package(pkg);
        let p = &self.cfg.machine.power;
        let (pl1, pl2, tau_ms) = (
            p.power_limit_mw,
            p.power_limit2_mw,
            p.power_limit_tau_ms.max(1.0),
        );
        let e = self.hw.pkg_energy_uj[pkg];
        // µJ per ns × 1e6 = mW
        let inst_mw = (e - self.hw.pkg_pl_last_uj[pkg]) * 1e6 / POWER_LIMIT_PERIOD_NS as f64;
        self.hw.pkg_pl_last_uj[pkg] = e;
        let alpha = (POWER_LIMIT_PERIOD_NS as f64 * 1e-6 / tau_ms).min(1.0);
        let avg = &mut self.hw.pkg_pl_avg_mw[pkg];
        *avg += alpha * (inst_mw - *avg);
        let over = (pl1 > 0.0 && *avg > pl1) || (pl2 > 0.0 && inst_mw > pl2);
        let under = (pl1 <= 0.0 || *avg < 0.98 * pl1) && (pl2 <= 0.0 || inst_mw < 0.98 * pl2);
        let Some(fd) = self.fds.iter().position(|f| f.package == pkg) else {
            return;
        };
        let opps: Vec<u64> = self.fds[fd].opps.iter().map(|o| o.khz).collect();
        let cur = self.hw.pkg_ceiling_khz[pkg];
        let base = self.fds[fd].base_khz;
        let next = if over {
            opps.iter()
                .rev()
                .copied()
                .find(|&k| k < cur)
                .unwrap_or(cur)
                .max(base)
        } else if under {
            opps.iter().copied().find(|&k| k > cur).unwrap_or(cur)
        } else {
            cur
        };
        if next != cur {
            self.hw.pkg_ceiling_khz[pkg] = next;
            for c in self.topo.package_cpus[pkg].clone() {
                self.sync_cpu(c);
            }
            if self.refresh_package(pkg) {
                for c in self.topo.package_cpus[pkg].clone() {
                    self.rearm_burst(c);
                }
            }
        }
        self.schedule_housekeeping(self.now + POWER_LIMIT_PERIOD_NS, Ev::PowerLimit { pkg });
    }
}
