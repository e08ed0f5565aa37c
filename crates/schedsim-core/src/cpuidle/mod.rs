//! cpuidle (spec/kernel.md §9): the idle loop asks a governor — menu or teo, chosen with the
//! boot parameter name `cpuidle.governor` (default menu, the highest-rated one) — for an idle
//! state and whether to stop the tick, then reports how long the CPU really idled.
//!
//! The idle loop here: a CPU entering idle selects a state from its sleep length (the next
//! timer armed on it), its recent history and utilization; a kept tick wakes it every jiffy
//! (the governor learns from those wakeups and selects again); a wakeup pays the state's exit
//! latency (plus the package C-state's).

pub mod governor;
pub mod menu;
pub mod teo;

use governor::{GovernorKind, IdleGovernor, IdleState, Outcome, SelectCtx};

use crate::config::IdleStateSpec;
use crate::engine::Sim;

/// Idle governors by their kernel names.
pub const GOVERNORS: &[&str] = &["menu", "teo"];

/// The governor named by the `cpuidle.governor` tunable (default menu).
pub fn governor_kind(
    tunables: &std::collections::BTreeMap<String, serde_json::Value>,
) -> Result<GovernorKind, String> {
    match tunables.get("cpuidle.governor") {
        None => Ok(GovernorKind::Menu),
        Some(v) => v.as_str().and_then(GovernorKind::from_name).ok_or_else(|| {
            format!(
                "tunable cpuidle.governor = {v}: allowed {}",
                GOVERNORS.join(", ")
            )
        }),
    }
}

/// The governors' view of a preset's idle states.
pub fn governor_states(states: &[IdleStateSpec]) -> Vec<IdleState> {
    states
        .iter()
        .enumerate()
        .map(|(i, s)| IdleState {
            name: s.name.clone(),
            exit_latency_ns: s.exit_latency_us * 1000,
            target_residency_ns: s.target_residency_us * 1000,
            polling: i == 0 && s.name == "POLL",
            disabled: false,
        })
        .collect()
}

/// Per-CPU governor instances.
pub fn new_governors(
    kind: GovernorKind,
    version: (u32, u32),
    states_per_cpu: &[usize],
) -> Vec<Box<dyn IdleGovernor>> {
    states_per_cpu
        .iter()
        .map(|&n| governor::new_governor(kind, version, n))
        .collect()
}

impl Sim {
    fn idle_ctx(&self, cpu: usize) -> SelectCtx {
        SelectCtx {
            sleep_length_ns: self.sleep_length(cpu),
            tick_ns: self.prof.tick_ns(),
            tick_stopped: self.rqs[cpu].tick_ev.is_none(),
            latency_req_ns: u64::MAX,
            nr_iowaiters: self.rqs[cpu].nr_iowait,
            cpu_util: self.cpu_util_cfs(cpu),
            cpu_capacity: self.topo.cpus[cpu].capacity_orig,
        }
    }

    /// `cpuidle_idle_call()`: choose the state and whether the tick stops.
    pub fn cpuidle_select(&mut self, cpu: usize) -> (usize, bool) {
        let ctx = self.idle_ctx(cpu);
        let ct = self.topo.cpus[cpu].core_type;
        let sel = self.idle_govs[cpu].select(&self.gov_states[ct], &ctx);
        (sel.state, sel.stop_tick)
    }

    /// The governor's `reflect`: the CPU idled in `state` from `idle_entered` until now.
    pub fn cpuidle_reflect(&mut self, cpu: usize, woken_by_tick: bool) {
        let Some(state) = self.rqs[cpu].idle_state else {
            return;
        };
        let ctx = self.idle_ctx(cpu);
        let ct = self.topo.cpus[cpu].core_type;
        let outcome = Outcome {
            state,
            residency_ns: self.now - self.rqs[cpu].idle_entered,
            woken_by_tick,
        };
        self.idle_govs[cpu].reflect(&self.gov_states[ct], &outcome, &ctx);
    }
}
