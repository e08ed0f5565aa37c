//! Simulated time: `u64` nanoseconds since boot.

pub type Time = u64;

pub const NSEC_PER_USEC: u64 = 1_000;
pub const NSEC_PER_MSEC: u64 = 1_000_000;
pub const NSEC_PER_SEC: u64 = 1_000_000_000;

/// `hrtimer_forward()` of a periodic timer: move `expires` past `now` by whole `period`s and
/// return how many (the overrun), or 0 if it still lies ahead.
pub fn hrtimer_forward(expires: &mut u64, now: u64, period: u64) -> u64 {
    if *expires > now {
        return 0;
    }
    let n = (now - *expires) / period + 1;
    *expires += n * period;
    n
}
