//! The event queue: a binary heap ordered by (time, insertion sequence), so that events due at
//! the same instant pop in the order they were scheduled, with O(1) cancellation through
//! generation-checked slots (a cancelled event is dropped when it reaches the top and is not
//! counted as a popped event). Timers re-armed on every message cancel far-future events in
//! bulk, so once the cancelled entries outnumber the live ones the heap is rebuilt from the
//! live ones (amortised O(1) per cancellation).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::time::Time;

/// A handle to a scheduled event, valid until it fires or is cancelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventHandle {
    slot: u32,
    gen: u32,
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    time: Time,
    seq: u64,
    slot: u32,
    gen: u32,
}

/// Cancelled entries tolerated beyond twice the live ones before the heap is compacted.
const COMPACT_SLACK: usize = 256;

/// Whether a heap entry is still the live event of its slot (not cancelled, not fired).
fn is_live<E>(gens: &[u32], payload: &[Option<E>], k: &Key) -> bool {
    gens[k.slot as usize] == k.gen && payload[k.slot as usize].is_some()
}

/// A deterministic future-event set.
pub struct EventQueue<E> {
    heap: BinaryHeap<Reverse<Key>>,
    payload: Vec<Option<E>>,
    gens: Vec<u32>,
    free: Vec<u32>,
    seq: u64,
    live: usize,
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            payload: Vec::new(),
            gens: Vec::new(),
            free: Vec::new(),
            seq: 0,
            live: 0,
        }
    }

    /// Schedule `ev` at `time`.
    pub fn schedule(&mut self, time: Time, ev: E) -> EventHandle {
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.payload.push(None);
                self.gens.push(0);
                (self.payload.len() - 1) as u32
            }
        };
        let gen = self.gens[slot as usize];
        self.payload[slot as usize] = Some(ev);
        self.heap.push(Reverse(Key {
            time,
            seq: self.seq,
            slot,
            gen,
        }));
        self.seq += 1;
        self.live += 1;
        EventHandle { slot, gen }
    }

    /// Cancel a pending event. Returns false if it already fired or was cancelled.
    pub fn cancel(&mut self, h: EventHandle) -> bool {
        let s = h.slot as usize;
        if self.gens[s] != h.gen || self.payload[s].is_none() {
            return false;
        }
        self.release(s);
        if self.heap.len() > 2 * self.live + COMPACT_SLACK {
            self.compact();
        }
        true
    }

    /// Drop every cancelled entry from the heap. Keys are unique (time, seq), so the pop order
    /// of the live events is unchanged.
    fn compact(&mut self) {
        let (gens, payload) = (&self.gens, &self.payload);
        self.heap.retain(|Reverse(k)| is_live(gens, payload, k));
    }

    fn release(&mut self, s: usize) -> Option<E> {
        self.gens[s] = self.gens[s].wrapping_add(1);
        self.free.push(s as u32);
        self.live -= 1;
        self.payload[s].take()
    }

    /// Pop the earliest live event.
    pub fn pop(&mut self) -> Option<(Time, E)> {
        while let Some(Reverse(k)) = self.heap.pop() {
            if is_live(&self.gens, &self.payload, &k) {
                let ev = self
                    .release(k.slot as usize)
                    .expect("live slot has a payload");
                return Some((k.time, ev));
            }
        }
        None
    }

    /// Time of the earliest live event.
    pub fn peek_time(&mut self) -> Option<Time> {
        while let Some(Reverse(k)) = self.heap.peek() {
            if is_live(&self.gens, &self.payload, k) {
                return Some(k.time);
            }
            self.heap.pop();
        }
        None
    }

    pub fn len(&self) -> usize {
        self.live
    }

    pub fn is_empty(&self) -> bool {
        self.live == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_time_then_insertion_order() {
        let mut q = EventQueue::new();
        q.schedule(10, "b");
        q.schedule(5, "a");
        q.schedule(10, "c");
        q.schedule(10, "d");
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(order, vec![(5, "a"), (10, "b"), (10, "c"), (10, "d")]);
    }

    #[test]
    fn cancelled_events_never_pop_and_slots_are_reused_safely() {
        let mut q = EventQueue::new();
        let a = q.schedule(1, 1);
        let b = q.schedule(2, 2);
        assert!(q.cancel(a));
        assert!(!q.cancel(a));
        let c = q.schedule(3, 3); // reuses a's slot with a new generation
        assert!(!q.cancel(a));
        assert_eq!(q.len(), 2);
        assert_eq!(q.pop(), Some((2, 2)));
        assert!(!q.cancel(b));
        assert!(q.cancel(c));
        assert_eq!(q.pop(), None);
        assert!(q.is_empty());
    }

    #[test]
    fn compaction_bounds_the_heap_and_keeps_the_order() {
        // 100 live events among 100,000 scheduled and cancelled ones (re-armed timers): the heap
        // never holds more than twice the live events plus the slack, and pops in time order
        let mut q = EventQueue::new();
        for i in 0..100u64 {
            q.schedule(1_000_000 - i, i);
            for j in 0..1000u64 {
                let h = q.schedule(2_000_000 + j, u64::MAX);
                assert!(q.cancel(h));
                assert!(q.heap.len() <= 2 * q.len() + COMPACT_SLACK + 1);
            }
        }
        assert_eq!(q.len(), 100);
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).map(|(_, e)| e).collect();
        assert_eq!(order, (0..100u64).rev().collect::<Vec<_>>());
    }
}
