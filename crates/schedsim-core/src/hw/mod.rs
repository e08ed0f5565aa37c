//! The hardware model: topology, frequency domains and counters, power.
pub mod freq;
pub mod hwp;
pub mod power;
pub mod state;
pub mod topology;
