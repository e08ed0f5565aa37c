//! The simulation engine: time, the event queue, PRNG streams and the kernel profile.
pub mod event;
pub mod profile;
pub mod rng;
pub mod time;
