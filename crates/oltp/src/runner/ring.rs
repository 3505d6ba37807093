//! How a worker waits with io_uring: each statement's write and the read of its reply go into the
//! ring as a linked pair, and one `io_uring_enter` submits every new pair and sleeps until the next
//! reply. The epoll loop makes about three system calls per statement (`send`, `recv`, nearly one
//! `epoll_wait`); this one makes one per wake-up, whatever the number of connections, and the
//! kernel runs the completions in the worker's own context (`DEFER_TASKRUN`) when it enters.
//!
//! Safety rests on one rule: while a slot has a read in flight, nothing touches its connection
//! (the kernel writes into its read buffer and reads its output buffer). A slot is handled only
//! when its read completes, or after its read has been cancelled synchronously (a stalled server).

use std::io;
use std::time::{Duration, Instant};

use io_uring::types::{CancelBuilder, SubmitArgs, Timespec};
use io_uring::{opcode, squeue, types, IoUring};

use super::slot::{next_wake, Slot, Status};
use super::worker::{Due, Worker};
use crate::proto::DbError;

/// Marks a write's completion (reported only when the write failed); the low bits hold the slot's
/// index and the generation of its current read.
const WRITE: u64 = 1 << 63;

/// The ring for `slots` connections, with the kernel's cheapest completion mode where it has it.
fn new_ring(slots: usize) -> io::Result<IoUring> {
    // A pair per connection in flight, plus room to spare: a full queue is submitted early.
    let entries = (2 * slots + 8).next_power_of_two() as u32;
    IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .build(entries)
        .or_else(|_| IoUring::new(entries))
}

/// What a slot has in the ring.
#[derive(Default)]
struct Flight {
    /// A read is in flight; the connection is the kernel's until it completes.
    reading: bool,
    /// Bumped when a read is cancelled, so that its late completion is recognised and dropped.
    generation: u32,
    /// The linked write failed (its read then completes as cancelled).
    write_error: Option<DbError>,
}

fn tag(idx: usize, generation: u32) -> u64 {
    ((generation as u64) << 32) | idx as u64
}

impl Worker<'_> {
    pub(super) fn run_ring(&mut self, slots: &mut [Slot]) -> Result<(), String> {
        // A kernel without io_uring, or one that forbids it (a sysctl, a seccomp filter).
        let mut ring = new_ring(slots.len()).map_err(|e| {
            format!(
                "--client-io=uring: the kernel refused io_uring ({e}); run with --client-io=epoll"
            )
        })?;
        let r = self.drive_ring(&mut ring, slots);
        if r.is_err() {
            // Reads still in flight would write into buffers about to be freed: cancel them
            // and wait, before the slots are dropped.
            let _ = ring
                .submitter()
                .register_sync_cancel(Some(Timespec::new().sec(5)), CancelBuilder::any().all());
        }
        r
    }

    fn drive_ring(&mut self, ring: &mut IoUring, slots: &mut [Slot]) -> Result<(), String> {
        let mut flights: Vec<Flight> = slots.iter().map(|_| Flight::default()).collect();
        for slot in slots.iter_mut() {
            slot.conn.defer_sends(true);
        }
        for idx in 0..slots.len() {
            let st = self.advance(&mut slots[idx]);
            settle(ring, &mut slots[idx], &mut flights[idx], idx, st)?;
        }
        let mut done: Vec<(u64, i32)> = Vec::with_capacity(slots.len() * 2);
        while !slots.iter().all(|s| s.finished) {
            let entered = match next_wake(slots) {
                None => ring.submit_and_wait(1),
                Some(t) => {
                    let d = t.saturating_duration_since(Instant::now());
                    if d.is_zero() {
                        ring.submit()
                    } else {
                        let ts = timespec(d);
                        ring.submitter()
                            .submit_with_args(1, &SubmitArgs::new().timespec(&ts))
                    }
                }
            };
            match entered {
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::ETIME) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // The completion queue is full: drain it below, then enter again.
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {}
                Err(e) => return Err(format!("io_uring_enter: {e}")),
            }
            done.clear();
            done.extend(ring.completion().map(|c| (c.user_data(), c.result())));
            for &(ud, res) in &done {
                let idx = (ud & 0xffff_ffff) as usize;
                let generation = ((ud & !WRITE) >> 32) as u32;
                let (Some(slot), Some(flight)) = (slots.get_mut(idx), flights.get_mut(idx)) else {
                    return Err(format!(
                        "io_uring: a completion for no connection ({ud:#x})"
                    ));
                };
                if generation != flight.generation {
                    continue;
                }
                if ud & WRITE != 0 {
                    flight.write_error = Some(if res < 0 {
                        slot.conn.lost_errno(-res)
                    } else {
                        slot.conn.lost_errno(libc::EPIPE)
                    });
                    continue;
                }
                flight.reading = false;
                let st = if let Some(e) = flight.write_error.take() {
                    self.on_error(slot, e)
                } else if res < 0 {
                    self.on_error(slot, slot.conn.lost_errno(-res))
                } else {
                    match slot.conn.received(res as usize) {
                        Ok(Some(reply)) => self.on_reply(slot, reply),
                        // More of the reply to come: read again.
                        Ok(None) => Status::Waiting,
                        Err(e) => self.on_error(slot, e),
                    }
                };
                settle(ring, slot, flight, idx, st)?;
            }
            let now = Instant::now();
            for (idx, (slot, flight)) in slots.iter_mut().zip(flights.iter_mut()).enumerate() {
                if slot.finished {
                    continue;
                }
                let st = match self.due(slot, now) {
                    Due::Nothing => continue,
                    Due::Step(st) => st,
                    Due::Overdue(e) => {
                        // Take the connection back from the kernel before giving up on it.
                        if flight.reading {
                            ring.submitter()
                                .register_sync_cancel(
                                    Some(Timespec::new().sec(5)),
                                    CancelBuilder::user_data(tag(idx, flight.generation)),
                                )
                                .map_err(|e| format!("io_uring cancel: {e}"))?;
                            flight.reading = false;
                            flight.generation = flight.generation.wrapping_add(1);
                            flight.write_error = None;
                        }
                        self.on_error(slot, e)
                    }
                };
                settle(ring, slot, flight, idx, st)?;
            }
        }
        Ok(())
    }
}

/// Records where the slot now stands; a slot waiting for the server gets its command's write
/// (if one is pending) and a read into the ring.
fn settle(
    ring: &mut IoUring,
    slot: &mut Slot,
    flight: &mut Flight,
    idx: usize,
    st: Status,
) -> Result<(), String> {
    slot.idle_until = match st {
        Status::Idle(t) => Some(t),
        _ => None,
    };
    if !matches!(st, Status::Waiting) || slot.finished {
        return Ok(());
    }
    let fd = types::Fd(slot.conn.fd());
    let ud = tag(idx, flight.generation);
    let out = slot.conn.pending_out();
    let write = (!out.is_empty()).then(|| {
        opcode::Send::new(fd, out.as_ptr(), out.len() as u32)
            // All of it or a failed link: a half-sent command must not be followed by a read.
            .flags(libc::MSG_WAITALL | libc::MSG_NOSIGNAL)
            .build()
            .flags(squeue::Flags::IO_LINK | squeue::Flags::SKIP_SUCCESS)
            .user_data(ud | WRITE)
    });
    let space = slot.conn.recv_space();
    let read = opcode::Recv::new(fd, space.as_mut_ptr(), space.len() as u32)
        .build()
        .user_data(ud);
    // A linked pair must go in one submission: make room for both first.
    let need = 1 + write.is_some() as usize;
    let free = {
        let sq = ring.submission();
        sq.capacity() - sq.len()
    };
    if free < need {
        ring.submit().map_err(|e| format!("io_uring_enter: {e}"))?;
    }
    let mut sq = ring.submission();
    // SAFETY: the write's buffer (the connection's output buffer) and the read's buffer (its
    // read buffer) stay in place and untouched until the read completes or is cancelled
    // synchronously: the slot is not handled before then (see the module's rule).
    unsafe {
        if let Some(w) = &write {
            sq.push(w)
                .map_err(|_| "io_uring: submission queue full".to_string())?;
        }
        sq.push(&read)
            .map_err(|_| "io_uring: submission queue full".to_string())?;
    }
    drop(sq);
    // The bytes are the kernel's now; the next command is encoded only after the read completes.
    slot.conn.sent_out();
    flight.reading = true;
    Ok(())
}

fn timespec(d: Duration) -> Timespec {
    Timespec::new().sec(d.as_secs()).nsec(d.subsec_nanos())
}
