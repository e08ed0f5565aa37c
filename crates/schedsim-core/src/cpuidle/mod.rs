//! cpuidle: idle state selection (spec/kernel.md §9). Until the menu and teo governors land, a
//! CPU enters the deepest enabled state whose target residency fits the time to its next timer
//! event (the "sleep length" both governors start from) and pays that state's exit latency on
//! wakeup.

use crate::config::IdleStateSpec;

/// Deepest state with `target_residency <= sleep_length` (state 0 if none fits).
pub fn select_by_sleep_length(states: &[IdleStateSpec], sleep_length_ns: u64) -> usize {
    let mut best = 0;
    for (i, s) in states.iter().enumerate() {
        if s.target_residency_us * 1000 <= sleep_length_ns {
            best = i;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(name: &str, exit: u64, res: u64) -> IdleStateSpec {
        IdleStateSpec {
            name: name.into(),
            exit_latency_us: exit,
            target_residency_us: res,
            power_mw: 0.0,
            turbo_active: false,
        }
    }

    #[test]
    fn longer_sleeps_pick_deeper_states() {
        let s = [st("POLL", 0, 0), st("C1", 2, 2), st("C6", 85, 200)];
        assert_eq!(select_by_sleep_length(&s, 1_000), 0);
        assert_eq!(select_by_sleep_length(&s, 50_000), 1);
        assert_eq!(select_by_sleep_length(&s, 1_000_000), 2);
    }
}
