//! One pgoforge at a time per work dir: two runs building into the same directories, appending to
//! the same results or replacing the same state file would corrupt each other. The lock is an
//! advisory flock on WORK/.pgoforge.lock, which holds the holder's pid and command line so the
//! second process can say who has it; the kernel drops it when the holder dies (kill -9 included).

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// Held while it lives.
#[derive(Debug)]
pub struct WorkLock {
    _file: File,
    pub path: PathBuf,
}

impl WorkLock {
    pub fn acquire(work: &Path) -> Result<WorkLock> {
        let path = work.join(".pgoforge.lock");
        let mut f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .with_context(|| format!("opening {}", path.display()))?;
        // SAFETY: flock on a file descriptor this File owns.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let mut holder = String::new();
            let _ = f.read_to_string(&mut holder);
            bail!(
                "work dir {} is in use by another pgoforge ({}); wait for it to finish, or use another --work-dir",
                work.display(),
                holder.trim().replace('\n', ": ")
            );
        }
        let cmd: Vec<String> = std::env::args().collect();
        f.set_len(0)?;
        f.rewind()?;
        writeln!(f, "pid {}\n{}", std::process::id(), cmd.join(" "))?;
        Ok(WorkLock { _file: f, path })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_and_told_who_has_it() {
        let t = tempfile::tempdir().unwrap();
        let first = WorkLock::acquire(t.path()).unwrap();
        let e = WorkLock::acquire(t.path()).unwrap_err().to_string();
        assert!(
            e.contains("in use by another pgoforge")
                && e.contains(&format!("pid {}", std::process::id())),
            "{e}"
        );
        drop(first);
        // Another test thread that forks in that instant holds a copy of the descriptor (and so
        // the flock) until its child execs; the lock is free once that copy closes.
        let t0 = std::time::Instant::now();
        while let Err(e) = WorkLock::acquire(t.path()) {
            assert!(t0.elapsed().as_secs() < 5, "the lock stayed held: {e}");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}
