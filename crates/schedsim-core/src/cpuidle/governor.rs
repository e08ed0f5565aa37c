//! The cpuidle governor interface shared by the menu and teo governors (spec/kernel.md §9).
//!
//! This models the contract between the idle loop (`cpuidle_idle_call`, §9.2) and a governor:
//! the loop asks `select` for a state and for whether to stop the scheduler tick, enters the
//! state, and on wakeup hands the measured residency back through `reflect`. The kernel runs the
//! governor's bookkeeping lazily at the next `select` (menu) or from `reflect` plus the next
//! `select` (teo); here `reflect` does all of it at once, which is equivalent because nothing
//! else reads the governor's state in between.
//!
//! Units are nanoseconds throughout (the kernel's `*_ns` fields). `u64::MAX` stands for
//! `KTIME_MAX` / "no limit". What the simulator must supply that the kernel gets from elsewhere
//! is collected in [`SelectCtx`]. Simplifications shared by both governors:
//! - the time to the next tick (`delta_next` / `delta_tick` of `tick_nohz_get_sleep_length`) is
//!   not known to the governor; it is taken as `min(sleep_length, tick)` while the tick runs
//!   (the tick phase is unknown, so a full period is assumed) and as the sleep length when the
//!   tick is already stopped;
//! - the polling state's time limit (`dev->poll_time_limit`) is not modelled;
//! - states are identified by index; the table passed to `select` and `reflect` must be the same
//!   (per CPU) from call to call.
//!
//! This file depends on nothing else in the crate except its sibling governor modules.

use std::fmt;

/// Kernel version as (major, minor), e.g. `(6, 12)`.
pub type KernelVersion = (u32, u32);

/// Nanoseconds per microsecond.
pub const NSEC_PER_USEC: u64 = 1_000;

/// `RESIDENCY_THRESHOLD_NS` (drivers/cpuidle/governors/gov.h, v6.6+): below this predicted idle
/// duration the governors skip asking for the time to the next timer.
pub const RESIDENCY_THRESHOLD_NS: u64 = 15 * NSEC_PER_USEC;

/// One idle state as the governors see it (`struct cpuidle_state` + the per-CPU `disable` knob).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdleState {
    pub name: String,
    /// Worst-case wakeup latency (ns).
    pub exit_latency_ns: u64,
    /// Break-even residency including entry (ns).
    pub target_residency_ns: u64,
    /// `CPUIDLE_FLAG_POLLING` (the POLL state on x86).
    pub polling: bool,
    /// Disabled for this CPU (sysfs `disable`, or by the driver).
    pub disabled: bool,
}

impl IdleState {
    /// An enabled, non-polling state given in microseconds, as tables are usually written.
    pub fn from_us(name: &str, exit_latency_us: u64, target_residency_us: u64) -> Self {
        IdleState {
            name: name.to_string(),
            exit_latency_ns: exit_latency_us * NSEC_PER_USEC,
            target_residency_ns: target_residency_us * NSEC_PER_USEC,
            polling: false,
            disabled: false,
        }
    }

    /// The x86 POLL state: 0/0, polling.
    pub fn poll() -> Self {
        IdleState {
            polling: true,
            ..IdleState::from_us("POLL", 0, 0)
        }
    }
}

/// What the idle loop knows when it asks for a state (`cpuidle_idle_call`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SelectCtx {
    /// `tick_nohz_get_sleep_length`: time to the next timer event assuming the tick is
    /// stopped; `u64::MAX` if none.
    pub sleep_length_ns: u64,
    /// `TICK_NSEC`: the tick period.
    pub tick_ns: u64,
    /// The tick is already stopped on this CPU (`tick_nohz_tick_stopped`).
    pub tick_stopped: bool,
    /// PM QoS resume-latency limit; `u64::MAX` = none.
    pub latency_req_ns: u64,
    /// `nr_iowait_cpu`: tasks that slept in iowait on this CPU and have not woken yet.
    pub nr_iowaiters: u32,
    /// `sched_cpu_util(cpu)`, 0..capacity.
    pub cpu_util: u64,
    /// `arch_scale_cpu_capacity(cpu)`.
    pub cpu_capacity: u64,
}

impl SelectCtx {
    /// A plain context: tick running, no QoS limit, no iowaiters, an idle CPU of capacity 1024.
    pub fn new(sleep_length_ns: u64, tick_ns: u64) -> Self {
        SelectCtx {
            sleep_length_ns,
            tick_ns,
            tick_stopped: false,
            latency_req_ns: u64::MAX,
            nr_iowaiters: 0,
            cpu_util: 0,
            cpu_capacity: 1024,
        }
    }

    /// Time to the next timer or tick event (`delta_next` / `delta_tick`), see the module doc.
    pub fn delta_next_ns(&self) -> u64 {
        if self.tick_stopped {
            self.sleep_length_ns
        } else {
            self.sleep_length_ns.min(self.tick_ns)
        }
    }
}

/// The governor's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Selection {
    /// Index into the state table.
    pub state: usize,
    /// Whether the idle loop may stop the tick (ignored if it is already stopped).
    pub stop_tick: bool,
}

/// What happened (the governor's `reflect` / `update`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The state actually entered.
    pub state: usize,
    /// Time actually spent in the state, including the exit latency (`last_residency_ns`).
    pub residency_ns: u64,
    /// The wakeup was the scheduler tick (`tick_nohz_idle_got_tick`).
    pub woken_by_tick: bool,
}

/// A cpuidle governor instance for one CPU.
pub trait IdleGovernor: fmt::Debug + Send {
    /// The kernel name ("menu", "teo").
    fn name(&self) -> &'static str;
    /// Choose a state for the coming idle period.
    fn select(&mut self, states: &[IdleState], ctx: &SelectCtx) -> Selection;
    /// Learn from the idle period that followed the last `select`. `ctx` is the context that
    /// was passed to that `select`; the governors keep their own copy of what they need, so
    /// only its constant fields (the tick period) are read.
    fn reflect(&mut self, states: &[IdleState], outcome: &Outcome, ctx: &SelectCtx);
}

/// Which governor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GovernorKind {
    Menu,
    Teo,
}

impl GovernorKind {
    /// The kernel name.
    pub fn name(self) -> &'static str {
        match self {
            GovernorKind::Menu => "menu",
            GovernorKind::Teo => "teo",
        }
    }

    /// Parse a kernel name (`cpuidle.governor=`).
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "menu" => Some(GovernorKind::Menu),
            "teo" => Some(GovernorKind::Teo),
            _ => None,
        }
    }
}

/// A fresh governor for one CPU (`enable` callback) with the behaviour of the given kernel
/// version. `nr_states` sizes the per-state data; it grows if a larger table is passed later.
pub fn new_governor(
    kind: GovernorKind,
    version: KernelVersion,
    nr_states: usize,
) -> Box<dyn IdleGovernor> {
    match kind {
        GovernorKind::Menu => Box::new(super::menu::Menu::new(version)),
        GovernorKind::Teo => Box::new(super::teo::Teo::new(version, nr_states)),
    }
}

/// The Skylake client `intel_idle` table of spec §9.1 (exit latency / target residency, µs).
#[cfg(test)]
pub(crate) fn skylake_client_states() -> Vec<IdleState> {
    vec![
        IdleState::poll(),
        IdleState::from_us("C1", 2, 2),
        IdleState::from_us("C1E", 10, 20),
        IdleState::from_us("C3", 70, 100),
        IdleState::from_us("C6", 85, 200),
        IdleState::from_us("C7s", 124, 800),
        IdleState::from_us("C8", 200, 800),
        IdleState::from_us("C9", 480, 5000),
        IdleState::from_us("C10", 890, 5000),
    ]
}

/// Test helper: select, then report an idle period of `residency_ns` (exit latency included)
/// in the selected state, not ended by the tick.
#[cfg(test)]
pub(crate) fn select_and_idle(
    g: &mut dyn IdleGovernor,
    states: &[IdleState],
    ctx: &SelectCtx,
    residency_ns: u64,
) -> Selection {
    let s = g.select(states, ctx);
    let outcome = Outcome {
        state: s.state,
        residency_ns,
        woken_by_tick: false,
    };
    g.reflect(states, &outcome, ctx);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn factory_builds_named_governors() {
        let states = skylake_client_states();
        for (kind, name) in [(GovernorKind::Menu, "menu"), (GovernorKind::Teo, "teo")] {
            let mut g = new_governor(kind, (6, 1), states.len());
            assert_eq!(g.name(), name);
            assert_eq!(GovernorKind::from_name(name), Some(kind));
            assert_eq!(kind.name(), name);
            // A fresh governor of either kind picks the deepest state for a long sleep.
            let sel = g.select(&states, &SelectCtx::new(10_000_000, 4_000_000));
            assert_eq!(
                sel,
                Selection {
                    state: 8,
                    stop_tick: true
                }
            );
        }
        assert_eq!(GovernorKind::from_name("ladder"), None);
    }

    #[test]
    fn delta_next_is_bounded_by_the_running_tick() {
        let mut ctx = SelectCtx::new(10_000_000, 4_000_000);
        assert_eq!(ctx.delta_next_ns(), 4_000_000);
        ctx.tick_stopped = true;
        assert_eq!(ctx.delta_next_ns(), 10_000_000);
        ctx.sleep_length_ns = 300_000;
        ctx.tick_stopped = false;
        assert_eq!(ctx.delta_next_ns(), 300_000);
    }
}
