//! Eviction bookkeeping: which open workers to close, decided when work arrives.
//!
//! Guarantee: a worker with work in flight (pinned) is never chosen. When work
//! arrives, the live set answers with the workers to close: every unpinned one
//! idle for longer than `evict_after`, then the least recently used unpinned
//! ones while more than `max_live` are open.
//!
//! There is deliberately no timer. A timer that swept idle workers would keep
//! the process alive, and a script that used one worker would then sit for the
//! whole idle window with nothing to do. The cost: a worker alone in a quiet
//! process stays open until something else happens.
//!
//! Workers are named by a slot number the JS layer chose; this module never
//! sees a class or an id.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

/// Why a worker is being closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// Idle past `evict_after`.
    Idle,
    /// Beyond `max_live`, least recently used.
    Evicted,
}

#[derive(Debug)]
struct Entry {
    /// Units of work in flight; the worker is evictable only at zero.
    pins: u32,
    /// Position in `lru` while unpinned.
    seq: Option<u64>,
    /// When it last became idle.
    idle_since: Instant,
}

/// The live set: every open worker, and the unpinned ones in LRU order.
#[derive(Debug)]
pub struct LiveSet {
    max_live: usize,
    evict_after: Duration,
    entries: HashMap<u32, Entry>,
    /// Unpinned workers by the order they became idle (oldest first).
    lru: BTreeMap<u64, u32>,
    next_seq: u64,
}

impl LiveSet {
    pub fn new(max_live: usize, evict_after: Duration) -> Self {
        LiveSet {
            max_live: max_live.max(1),
            evict_after,
            entries: HashMap::new(),
            lru: BTreeMap::new(),
            next_seq: 0,
        }
    }

    /// Work arrived for `slot`: pin it (adding it to the live set if it is new)
    /// and answer the workers to close now. The chosen ones leave the live set.
    pub fn begin(&mut self, slot: u32, now: Instant) -> Vec<(u32, Reason)> {
        match self.entries.get_mut(&slot) {
            Some(e) => {
                if let Some(seq) = e.seq.take() {
                    self.lru.remove(&seq);
                }
                e.pins += 1;
            }
            None => {
                self.entries.insert(
                    slot,
                    Entry {
                        pins: 1,
                        seq: None,
                        idle_since: now,
                    },
                );
            }
        }
        self.sweep(now)
    }

    /// Work for `slot` finished. Unknown slots are ignored (the worker was
    /// closed meanwhile).
    pub fn end(&mut self, slot: u32, now: Instant) {
        let Some(e) = self.entries.get_mut(&slot) else {
            return;
        };
        e.pins = e.pins.saturating_sub(1);
        if e.pins == 0 && e.seq.is_none() {
            let seq = self.next_seq;
            self.next_seq += 1;
            e.seq = Some(seq);
            e.idle_since = now;
            self.lru.insert(seq, slot);
        }
    }

    /// The worker closed for another reason (explicit delete, host close).
    pub fn remove(&mut self, slot: u32) {
        if let Some(e) = self.entries.remove(&slot) {
            if let Some(seq) = e.seq {
                self.lru.remove(&seq);
            }
        }
    }

    pub fn live(&self) -> usize {
        self.entries.len()
    }

    fn sweep(&mut self, now: Instant) -> Vec<(u32, Reason)> {
        let mut out = Vec::new();
        while let Some((&seq, &slot)) = self.lru.first_key_value() {
            let idle_for = self
                .entries
                .get(&slot)
                .map(|e| now.saturating_duration_since(e.idle_since))
                .unwrap_or_default();
            let reason = if idle_for > self.evict_after {
                Reason::Idle
            } else if self.entries.len() > self.max_live {
                Reason::Evicted
            } else {
                break;
            };
            self.lru.remove(&seq);
            self.entries.remove(&slot);
            out.push((slot, reason));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_used_idle_worker_goes_first_past_max_live() {
        let t0 = Instant::now();
        let mut live = LiveSet::new(2, Duration::from_secs(60));
        for slot in 1..=2 {
            assert!(live.begin(slot, t0).is_empty());
            live.end(slot, t0);
        }
        // Touch 1 again so 2 is the least recently used.
        assert!(live.begin(1, t0).is_empty());
        live.end(1, t0);
        assert_eq!(live.begin(3, t0), vec![(2, Reason::Evicted)]);
        assert_eq!(live.live(), 2);
    }

    #[test]
    fn a_pinned_worker_is_never_chosen() {
        let t0 = Instant::now();
        let mut live = LiveSet::new(1, Duration::from_millis(10));
        live.begin(1, t0); // never ended
        let later = t0 + Duration::from_secs(5);
        assert!(live.begin(2, later).is_empty());
        assert_eq!(live.live(), 2);
    }

    #[test]
    fn idle_workers_are_closed_when_work_arrives_not_before() {
        let t0 = Instant::now();
        let mut live = LiveSet::new(100, Duration::from_millis(50));
        live.begin(1, t0);
        live.end(1, t0);
        live.begin(2, t0);
        live.end(2, t0 + Duration::from_millis(40));
        let later = t0 + Duration::from_millis(60);
        assert_eq!(live.begin(3, later), vec![(1, Reason::Idle)]);
        // Closed workers are forgotten: ending them again changes nothing.
        live.end(1, later);
        assert_eq!(live.live(), 2);
    }
}
