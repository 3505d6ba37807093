//! Ctrl-C and SIGTERM. Long external work (a build's cmake and make, and the compilers they
//! start) runs in its own process group, registered here, so that a signal sent to pgoforge
//! alone — by `kill`, a supervisor, a CI timeout — stops it too instead of leaving make compiling
//! for an hour with nobody waiting. A terminal's Ctrl-C, which reaches pgoforge's own group only,
//! is passed on the same way. pgoforge then dies of the signal as before; servers die with it
//! through PR_SET_PDEATHSIG.

use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicUsize, Ordering};

/// Process groups running now (0: a free slot). More than enough: pgoforge runs one build at a
/// time.
static GROUPS: [AtomicI32; 8] = [const { AtomicI32::new(0) }; 8];

/// What to print on a signal (`run` says what survives), as a pointer and length a signal
/// handler can read.
static NOTE: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
static NOTE_LEN: AtomicUsize = AtomicUsize::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    // SAFETY: only atomic loads and async-signal-safe calls (write, kill, signal, raise); the
    // note is a &'static str.
    unsafe {
        let note = NOTE.load(Ordering::SeqCst);
        if !note.is_null() {
            libc::write(2, note.cast(), NOTE_LEN.load(Ordering::SeqCst));
        }
        for g in &GROUPS {
            let pgid = g.load(Ordering::SeqCst);
            if pgid > 0 {
                libc::kill(-pgid, sig);
            }
        }
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

/// Passes SIGINT and SIGTERM on to the registered process groups, printing `note` first.
pub fn install(note: Option<&'static str>) {
    if let Some(n) = note {
        NOTE_LEN.store(n.len(), Ordering::SeqCst);
        NOTE.store(n.as_ptr().cast_mut(), Ordering::SeqCst);
    }
    // SAFETY: installing a handler that makes only async-signal-safe calls.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
}

/// A registered process group; dropped when its leader has been waited for.
pub struct Group(Option<usize>);

impl Group {
    /// Registers the group `pgid` (a child that made itself a group leader).
    pub fn register(pgid: u32) -> Group {
        let pgid = pgid as i32;
        let slot = GROUPS.iter().position(|g| {
            g.compare_exchange(0, pgid, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
        });
        Group(slot)
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if let Some(i) = self.0 {
            GROUPS[i].store(0, Ordering::SeqCst);
        }
    }
}

/// In a child between fork and exec: be killed when pgoforge dies (no stray server if it is
/// killed), and exit at once if it already died before the request took effect — the race
/// PR_SET_PDEATHSIG alone leaves open. Only async-signal-safe calls.
pub fn die_with_parent(parent: libc::pid_t) {
    // SAFETY: prctl, getppid and _exit are async-signal-safe.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        if libc::getppid() != parent {
            libc::_exit(1);
        }
    }
}

/// Makes `cmd`'s process die with pgoforge ([`die_with_parent`] between fork and exec).
pub fn dies_with_pgoforge(cmd: &mut std::process::Command) -> &mut std::process::Command {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: die_with_parent makes only async-signal-safe calls.
    unsafe {
        cmd.pre_exec(move || {
            die_with_parent(parent);
            Ok(())
        })
    }
}
