//! Scheduling shared by every worker: when measurement starts and stops, the event budget, and
//! `--rate`'s Poisson arrivals claimed by idle connections.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::rng::SbRng;
use crate::workload::Workload;

/// When measurement starts and stops.
pub(super) struct Timing {
    pub(super) measure_from: Instant,
    pub(super) deadline: Option<Instant>,
}

/// Poisson arrivals for `--rate`: the schedule is drawn on demand and claimed by idle connections.
pub(super) struct Arrivals {
    pub(super) next: Instant,
    pub(super) rng: SbRng,
    pub(super) rate: f64,
}

impl Arrivals {
    pub(super) fn advance(&mut self) {
        let u = self.rng.unit();
        let dt = -(1.0 - u).ln() / self.rate;
        self.next += Duration::from_secs_f64(dt);
    }
}

/// Limit of sysbench's event queue in `--rate` mode.
pub(super) const RATE_QUEUE_LIMIT: u64 = 131_072;

pub(super) struct Shared {
    pub(super) w: Workload,
    pub(super) timing: OnceLock<Timing>,
    pub(super) stop: AtomicBool,
    pub(super) started: AtomicU64,
    pub(super) in_flight: AtomicI64,
    pub(super) arrivals: Option<Mutex<Arrivals>>,
    pub(super) failure: Mutex<Option<(String, u16)>>,
    pub(super) seed: u64,
}

pub(super) enum Claim {
    Go(Instant),
    Wait(Instant),
    Stop,
}

impl Shared {
    pub(super) fn timing(&self) -> &Timing {
        self.timing
            .get()
            .expect("timing is set before workers are released")
    }

    pub(super) fn take_budget(&self) -> bool {
        let limit = self.w.settings.events;
        limit == 0 || self.started.fetch_add(1, Ordering::Relaxed) < limit
    }

    /// May a connection start another event, and with what start time?
    pub(super) fn claim(&self, now: Instant) -> Claim {
        if self.stop.load(Ordering::Relaxed) {
            return Claim::Stop;
        }
        let deadline = self.timing().deadline;
        if deadline.is_some_and(|d| now >= d) {
            return Claim::Stop;
        }
        if let Some(arr) = &self.arrivals {
            let mut a = arr.lock().expect("arrivals lock");
            if a.next > now {
                let wake = deadline.map_or(a.next, |d| a.next.min(d));
                return Claim::Wait(wake);
            }
            if !self.take_budget() {
                return Claim::Stop;
            }
            let t = a.next;
            a.advance();
            self.in_flight.fetch_add(1, Ordering::Relaxed);
            return Claim::Go(t);
        }
        if !self.take_budget() {
            return Claim::Stop;
        }
        Claim::Go(now)
    }

    pub(super) fn fail(&self, message: String, code: u16) {
        let mut f = self.failure.lock().expect("failure lock");
        if f.is_none() {
            *f = Some((message, code));
        }
        self.stop.store(true, Ordering::Relaxed);
    }

    pub(super) fn measuring(&self, now: Instant) -> bool {
        now >= self.timing().measure_from
    }
}
