//! Kernel timers (`kernel/time/timer.c`) as the idle governors see them: per-CPU timer bases
//! holding jiffy timers that `mod_timer` (re)arms on the CPU that calls it, and the time of the
//! next one a base will fire, which bounds a CPU's sleep length (`tick_nohz_get_sleep_length`,
//! the input of menu and teo in spec/kernel.md §9.3-9.4).
//!
//! The only timers modelled are the ones workloads leave armed as a side effect of their
//! system calls: the TCP socket timers of `net/ipv4/tcp_output.c` (see [`tcp_timers_rearm`]).
//! Without them a CPU whose tasks only exchange messages has no timer at all, its sleep length
//! is infinite, and menu's corrected sleep length predicts an idle period of hours whenever its
//! recent intervals are too irregular to trust.
//!
//! Timer wheel granularity (v4.8+): a timer `delta` jiffies out goes to the level whose range
//! holds `delta` (level 0 below 63 jiffies, then ranges ×8) and fires at the first jiffy of the
//! next bucket of that level, so it never fires early and is late by up to one granule.
//!
//! Simplifications: a timer that expires fires at once on its CPU (no softirq work is charged);
//! `timer_migration` always moves a re-armed timer to the arming CPU (the arming CPU runs a
//! task, so `get_nohz_timer_target` returns it); the wheel's level-8 cutoff is not modelled.

use std::collections::BTreeSet;

use crate::sim::time::Time;

/// `LVL_CLK_SHIFT`: each wheel level is 8 times coarser than the one below.
const LVL_CLK_SHIFT: u32 = 3;
/// `LVL_SIZE - 1`: buckets per level minus one (64 buckets per level).
const LVL_LAST_BUCKET: u64 = 63;
/// Levels of the wheel (`LVL_DEPTH` at HZ > 100).
const LVL_DEPTH: u32 = 9;

/// The expiry, in ns, of a timer armed at `now` for `delta_jiffies` jiffies of `tick_ns`:
/// `calc_wheel_index` rounds `jiffies + delta` up to the next bucket boundary of its level.
pub fn wheel_expiry_ns(now: Time, delta_jiffies: u64, tick_ns: u64) -> Time {
    let clk = now / tick_ns;
    let expires = clk + delta_jiffies;
    // LVL_START(n) = 63 << 3(n-1): the first delta that needs level n
    let lvl = (1..LVL_DEPTH)
        .find(|&n| delta_jiffies < LVL_LAST_BUCKET << (LVL_CLK_SHIFT * (n - 1)))
        .map_or(LVL_DEPTH - 1, |n| n - 1);
    let shift = LVL_CLK_SHIFT * lvl;
    (((expires >> shift) + 1) << shift) * tick_ns
}

/// `TCP_RTO_MIN` = HZ / 5 jiffies (200 ms): the retransmit timer of a loopback connection,
/// whose round-trip time is microseconds, is always armed at the minimum RTO.
pub fn tcp_rto_min_jiffies(hz: u64) -> u64 {
    hz / 5
}

/// `TCP_DELACK_MIN` = HZ / 25 jiffies (40 ms): the delayed-ACK timer.
pub fn tcp_delack_min_jiffies(hz: u64) -> u64 {
    hz / 25
}

/// Per-CPU timer bases over a fixed set of timers, each pending on at most one CPU.
#[derive(Clone, Debug, Default)]
pub struct TimerBases {
    /// Pending timers of each CPU, by (expiry, timer id).
    bases: Vec<BTreeSet<(Time, usize)>>,
    /// Where each timer is pending: (cpu, expiry).
    pending: Vec<Option<(usize, Time)>>,
}

impl TimerBases {
    pub fn new(nr_cpus: usize, nr_timers: usize) -> Self {
        TimerBases {
            bases: vec![BTreeSet::new(); nr_cpus],
            pending: vec![None; nr_timers],
        }
    }

    /// `mod_timer()`: (re)arm `timer` to fire at `expires` on `cpu`, moving it off the CPU
    /// it was pending on.
    pub fn mod_timer(&mut self, timer: usize, cpu: usize, expires: Time) {
        if let Some((old_cpu, old_expires)) = self.pending[timer] {
            if old_cpu == cpu && old_expires == expires {
                return;
            }
            self.bases[old_cpu].remove(&(old_expires, timer));
        }
        self.bases[cpu].insert((expires, timer));
        self.pending[timer] = Some((cpu, expires));
    }

    /// The first timer of `cpu` that has not fired by `now`.
    pub fn next_expiry(&self, cpu: usize, now: Time) -> Option<Time> {
        self.bases[cpu]
            .range((now + 1, 0)..)
            .next()
            .map(|&(t, _)| t)
    }

    /// Fire (forget) every timer of `cpu` that expired by `now`; returns how many did.
    pub fn run_expired(&mut self, cpu: usize, now: Time) -> usize {
        let mut n = 0;
        while let Some(&(t, id)) = self.bases[cpu].first() {
            if t > now {
                break;
            }
            self.bases[cpu].pop_first();
            self.pending[id] = None;
            n += 1;
        }
        n
    }
}

/// Timer ids of a TCP channel's two socket timers: the sending socket's retransmit timer and
/// the receiving socket's delayed-ACK timer.
pub fn tcp_timer_ids(chan: usize) -> (usize, usize) {
    (2 * chan, 2 * chan + 1)
}

/// What a `send` on a loopback TCP connection leaves armed on the sending CPU.
///
/// The write pushes a segment (`tcp_write_xmit`), which (re)arms the sender's retransmit timer
/// (or the tail-loss probe on the same timer, `TCP_RTO_MIN` out for one segment in flight);
/// the loopback transmit then runs the receive path in this CPU's softirq, where the receiver,
/// not yet having replied, schedules a delayed ACK (`tcp_send_delayed_ack`, at least
/// `TCP_DELACK_MIN`). Neither is cancelled when the ACK or the reply arrives
/// (`INET_CSK_CLEAR_TIMERS` is undefined): both stay pending until the next send re-arms
/// them or they fire and find nothing to do.
pub fn tcp_timers_rearm(bases: &mut TimerBases, chan: usize, cpu: usize, now: Time, tick_ns: u64) {
    let hz = 1_000_000_000 / tick_ns;
    let (rto, delack) = tcp_timer_ids(chan);
    bases.mod_timer(
        rto,
        cpu,
        wheel_expiry_ns(now, tcp_rto_min_jiffies(hz), tick_ns),
    );
    bases.mod_timer(
        delack,
        cpu,
        wheel_expiry_ns(now, tcp_delack_min_jiffies(hz), tick_ns),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn wheel_rounds_up_to_the_next_bucket_of_the_level() {
        // HZ=250 (4 ms jiffies): 10 and 50 jiffies are level 0, firing one jiffy after
        // jiffies + delta.
        assert_eq!(wheel_expiry_ns(0, 10, 4 * MS), 44 * MS);
        assert_eq!(wheel_expiry_ns(0, 50, 4 * MS), 204 * MS);
        // armed mid-jiffy: jiffies is 2 at 9 ms
        assert_eq!(wheel_expiry_ns(9 * MS, 10, 4 * MS), 52 * MS);
        // HZ=1000: 200 jiffies is level 1 (63..503, 8-jiffy buckets): 200 -> 208
        assert_eq!(wheel_expiry_ns(0, 200, MS), 208 * MS);
        // ... armed at jiffy 5: 205 -> bucket 25 -> 26 * 8 = 208
        assert_eq!(wheel_expiry_ns(5 * MS, 200, MS), 208 * MS);
        // 40 jiffies at HZ=1000 is level 0: 41
        assert_eq!(wheel_expiry_ns(0, 40, MS), 41 * MS);
        // level 2 (504..4031, 64-jiffy buckets): 1000 -> (1000/64 + 1) * 64 = 1024
        assert_eq!(wheel_expiry_ns(0, 1000, MS), 1024 * MS);
    }

    #[test]
    fn tcp_minimums_follow_hz() {
        assert_eq!(tcp_rto_min_jiffies(250), 50);
        assert_eq!(tcp_delack_min_jiffies(250), 10);
        assert_eq!(tcp_rto_min_jiffies(1000), 200);
        assert_eq!(tcp_delack_min_jiffies(100), 4);
    }

    #[test]
    fn mod_timer_moves_a_pending_timer() {
        let mut b = TimerBases::new(2, 2);
        b.mod_timer(0, 0, 100);
        b.mod_timer(1, 0, 50);
        assert_eq!(b.next_expiry(0, 0), Some(50));
        b.mod_timer(1, 1, 70);
        assert_eq!(b.next_expiry(0, 0), Some(100));
        assert_eq!(b.next_expiry(1, 0), Some(70));
        // a timer that expired but did not fire yet does not bound the sleep length
        assert_eq!(b.next_expiry(0, 100), None);
        assert_eq!(b.run_expired(0, 100), 1);
        assert_eq!(b.run_expired(0, 100), 0);
        assert_eq!(b.next_expiry(1, 69), Some(70));
    }

    #[test]
    fn tcp_send_arms_both_timers_on_the_sending_cpu() {
        let mut b = TimerBases::new(4, 4);
        tcp_timers_rearm(&mut b, 1, 3, 0, 4 * MS);
        // the delayed ACK is the nearer one: 10 jiffies + 1
        assert_eq!(b.next_expiry(3, 0), Some(44 * MS));
        b.run_expired(3, 44 * MS);
        assert_eq!(b.next_expiry(3, 44 * MS), Some(204 * MS));
        // the next send from CPU 2 moves both of channel 1's timers there
        tcp_timers_rearm(&mut b, 1, 2, 100 * MS, 4 * MS);
        assert_eq!(b.next_expiry(3, 100 * MS), None);
        assert_eq!(b.next_expiry(2, 100 * MS), Some(144 * MS));
    }
}
