//! The counters each worker thread writes and the interval reporter reads, and the per-event
//! tallies added to them when an event ends.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::histogram::SharedHistogram;

/// Counters one worker thread writes and the reporter reads.
#[derive(Default)]
pub(super) struct Counters {
    pub(super) events: AtomicU64,
    pub(super) reads: AtomicU64,
    pub(super) writes: AtomicU64,
    pub(super) others: AtomicU64,
    pub(super) errors: AtomicU64,
    pub(super) reconnects: AtomicU64,
    pub(super) hist: SharedHistogram,
}

#[inline]
pub(super) fn bump(c: &AtomicU64, n: u64) {
    // Single writer: a load and a store, no locked instruction.
    if n > 0 {
        c.store(c.load(Ordering::Relaxed) + n, Ordering::Relaxed);
    }
}

#[derive(Clone, Copy, Default)]
pub(super) struct Snapshot {
    pub(super) events: u64,
    pub(super) reads: u64,
    pub(super) writes: u64,
    pub(super) others: u64,
    pub(super) errors: u64,
    pub(super) reconnects: u64,
}

impl Counters {
    pub(super) fn snapshot(&self) -> Snapshot {
        Snapshot {
            events: self.events.load(Ordering::Relaxed),
            reads: self.reads.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
            others: self.others.load(Ordering::Relaxed),
            errors: self.errors.load(Ordering::Relaxed),
            reconnects: self.reconnects.load(Ordering::Relaxed),
        }
    }
}

pub(super) fn sum(snaps: impl Iterator<Item = Snapshot>) -> Snapshot {
    snaps.fold(Snapshot::default(), |a, b| Snapshot {
        events: a.events + b.events,
        reads: a.reads + b.reads,
        writes: a.writes + b.writes,
        others: a.others + b.others,
        errors: a.errors + b.errors,
        reconnects: a.reconnects + b.reconnects,
    })
}

/// Per-event tallies, added to the shared counters when the event ends.
#[derive(Default)]
pub(super) struct EventTally {
    pub(super) reads: u64,
    pub(super) writes: u64,
    pub(super) others: u64,
    pub(super) errors: u64,
    pub(super) reconnects: u64,
}
