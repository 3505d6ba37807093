//! How a worker waits for its connections: blocking on a lone one, epoll over several.

use std::thread;
use std::time::Instant;

use super::slot::{next_wake, Slot, Status};
use super::worker::{Due, Worker};

impl Worker<'_> {
    pub(super) fn run_single(&mut self, slot: &mut Slot) {
        let mut status = self.advance(slot);
        loop {
            status = match status {
                Status::Finished => return,
                Status::Idle(until) => {
                    thread::sleep(until.saturating_duration_since(Instant::now()));
                    self.advance(slot)
                }
                Status::Waiting => match slot.conn.recv() {
                    Ok(Some(reply)) => self.on_reply(slot, reply),
                    Ok(None) => Status::Waiting,
                    Err(e) => self.on_error(slot, e),
                },
            };
        }
    }

    pub(super) fn run_many(&mut self, slots: &mut [Slot]) -> Result<(), String> {
        use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
        // SAFETY: epoll_create1 returns a new descriptor we own (or -1).
        let raw = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if raw < 0 {
            return Err(format!(
                "epoll_create1: {}",
                std::io::Error::last_os_error()
            ));
        }
        // SAFETY: `raw` is a fresh descriptor owned by nobody else; closed on every return path.
        let ep_owned = unsafe { OwnedFd::from_raw_fd(raw) };
        let ep = ep_owned.as_raw_fd();
        // Records where the slot now stands, and (re-)registers a socket opened by a reconnect. A
        // closed socket leaves the epoll set by itself; its successor may reuse the same number.
        let settle = |slot: &mut Slot, idx: usize, st: Status| -> Result<(), String> {
            slot.idle_until = match st {
                Status::Idle(t) => Some(t),
                _ => None,
            };
            if slot.needs_register && !slot.finished {
                let mut ev = libc::epoll_event {
                    events: libc::EPOLLIN as u32,
                    u64: idx as u64,
                };
                // SAFETY: valid epoll and socket descriptors; ev lives across the call.
                if unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, slot.conn.fd(), &mut ev) } < 0
                {
                    return Err(format!("epoll_ctl: {}", std::io::Error::last_os_error()));
                }
                slot.needs_register = false;
            }
            Ok(())
        };
        for slot in slots.iter_mut() {
            slot.conn.set_nonblocking(true).map_err(|e| e.to_string())?;
            slot.event_loop = true;
            slot.needs_register = true;
        }
        for (idx, slot) in slots.iter_mut().enumerate() {
            settle(slot, idx, Status::Waiting)?;
            let st = self.advance(slot);
            settle(slot, idx, st)?;
        }
        let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; slots.len().min(256)];
        while !slots.iter().all(|s| s.finished) {
            let timeout = next_wake(slots).map_or(-1, |t| {
                let d = t.saturating_duration_since(Instant::now());
                d.as_micros().div_ceil(1000) as i32
            });
            // SAFETY: `events` is a valid buffer of the given length.
            let n =
                unsafe { libc::epoll_wait(ep, events.as_mut_ptr(), events.len() as i32, timeout) };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(format!("epoll_wait: {e}"));
            }
            for ev in &events[..n as usize] {
                let idx = ev.u64 as usize;
                let slot = &mut slots[idx];
                if slot.finished || slot.idle_until.is_some() {
                    continue;
                }
                let st = match slot.conn.recv() {
                    Ok(Some(reply)) => self.on_reply(slot, reply),
                    Ok(None) => continue,
                    Err(e) => self.on_error(slot, e),
                };
                settle(slot, idx, st)?;
            }
            let now = Instant::now();
            for (idx, slot) in slots.iter_mut().enumerate() {
                if slot.finished {
                    continue;
                }
                let st = match self.due(slot, now) {
                    Due::Nothing => continue,
                    Due::Step(st) => st,
                    Due::Overdue(e) => self.on_error(slot, e),
                };
                settle(slot, idx, st)?;
            }
        }
        Ok(())
    }
}
