//! Running external commands (cmake, make, apt-get, llvm-bolt, merge-fdata, valgrind...): one way,
//! with typed errors a caller can branch on — the program is missing, it failed (status, log, the
//! output's last lines), or it ran out of time — and the output kept in a per-stage log.

use std::fs::{self, File};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use super::is_root;

/// Lines of output an error shows.
const TAIL_LINES: usize = 20;

#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("{what}: cannot start {program}: {source}")]
    NotFound {
        what: String,
        program: String,
        source: std::io::Error,
    },
    #[error("{what} failed ({status}){}:\n{tail}", log_note(.log))]
    Failed {
        what: String,
        status: ExitStatus,
        log: Option<PathBuf>,
        tail: String,
    },
    #[error("{what} did not finish within {} s and was killed{}:\n{tail}", .limit.as_secs(), log_note(.log))]
    TimedOut {
        what: String,
        limit: Duration,
        log: Option<PathBuf>,
        tail: String,
    },
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
}

fn log_note(log: &Option<PathBuf>) -> String {
    log.as_ref()
        .map(|l| format!("; log {}", l.display()))
        .unwrap_or_default()
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// One external command to run: what it is for (named in errors), where its output goes, how
/// long it may take.
pub struct Tool<'a> {
    cmd: &'a mut Command,
    what: String,
    log: Option<&'a Path>,
    append: bool,
    timeout: Option<Duration>,
    own_group: bool,
}

impl<'a> Tool<'a> {
    pub fn new(cmd: &'a mut Command, what: impl Into<String>) -> Tool<'a> {
        Tool {
            cmd,
            what: what.into(),
            log: None,
            append: false,
            timeout: None,
            own_group: false,
        }
    }

    /// Keep the output in `log` (replaced).
    pub fn log(mut self, log: Option<&'a Path>) -> Self {
        self.log = log;
        self
    }

    /// Keep the output at the end of `log` (a build log that spans attempts).
    pub fn append_to(mut self, log: &'a Path) -> Self {
        self.log = Some(log);
        self.append = true;
        self
    }

    /// Run it in its own process group, which a signal to pgoforge is passed on to
    /// ([`super::interrupt`]): for commands that start others (cmake, make and the compilers).
    pub fn own_process_group(mut self) -> Self {
        self.own_group = true;
        self
    }

    /// Kill the command after `limit`.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout = Some(limit);
        self
    }

    /// Runs to completion; returns stdout and stderr together (stderr lines interleaved as they
    /// came). `on_line` sees every stdout line as it arrives (a progress bar, say).
    pub fn run_with(self, mut on_line: impl FnMut(&str)) -> Result<String, ToolError> {
        let io = |what: &str| {
            let what = what.to_string();
            move |source| ToolError::Io { what, source }
        };
        let mut log_file = match self.log {
            Some(l) => Some(
                fs::OpenOptions::new()
                    .create(true)
                    .write(true)
                    .append(self.append)
                    .truncate(!self.append)
                    .open(l)
                    .map_err(io(&format!("{}: opening log {}", self.what, l.display())))?,
            ),
            None => None,
        };
        self.cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if self.own_group {
            std::os::unix::process::CommandExt::process_group(&mut *self.cmd, 0);
        }
        let mut child = self.cmd.spawn().map_err(|source| ToolError::NotFound {
            what: self.what.clone(),
            program: self.cmd.get_program().to_string_lossy().into_owned(),
            source,
        })?;
        let _group = self
            .own_group
            .then(|| super::interrupt::Group::register(child.id()));
        let text = Arc::new(Mutex::new(String::new()));
        let log_copy = log_file
            .as_ref()
            .map(File::try_clone)
            .transpose()
            .map_err(io(&self.what))?;
        let mut stderr = child.stderr.take().expect("piped stderr");
        let err_text = Arc::clone(&text);
        // stderr from its own thread, so neither pipe can fill up and stall the child.
        let err_thread = std::thread::spawn(move || {
            let mut log_copy = log_copy;
            let mut buf = String::new();
            let _ = stderr.read_to_string(&mut buf);
            for line in buf.lines() {
                if let Some(l) = log_copy.as_mut() {
                    let _ = writeln!(l, "{line}");
                }
            }
            err_text.lock().expect("not poisoned").push_str(&buf);
        });
        let stdout = child.stdout.take().expect("piped stdout");
        // A watchdog kills the child at the deadline (reading then sees end of file); it is told
        // to stand down before the child is reaped, so it can never signal a reused pid.
        let killed = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stand_down = self.timeout.map(|limit| {
            let (tx, rx) = std::sync::mpsc::channel::<()>();
            let pid = child.id() as libc::pid_t;
            let killed = Arc::clone(&killed);
            std::thread::spawn(move || {
                if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(limit) {
                    killed.store(true, std::sync::atomic::Ordering::SeqCst);
                    // SAFETY: kill has no memory-safety preconditions; the child is not yet reaped.
                    unsafe {
                        libc::kill(pid, libc::SIGKILL);
                    }
                }
            });
            tx
        });
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(l) = log_file.as_mut() {
                let _ = writeln!(l, "{line}");
            }
            on_line(&line);
            let mut t = text.lock().expect("not poisoned");
            t.push_str(&line);
            t.push('\n');
        }
        let _ = err_thread.join();
        drop(stand_down);
        let status = child.wait().map_err(io(&self.what))?;
        let text = std::mem::take(&mut *text.lock().expect("not poisoned"));
        if killed.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(ToolError::TimedOut {
                what: self.what,
                limit: self.timeout.unwrap_or_default(),
                log: self.log.map(Path::to_path_buf),
                tail: last_lines(&text, TAIL_LINES),
            });
        }
        if !status.success() {
            return Err(ToolError::Failed {
                what: self.what,
                status,
                log: self.log.map(Path::to_path_buf),
                tail: last_lines(&text, TAIL_LINES),
            });
        }
        Ok(text)
    }

    pub fn run(self) -> Result<String, ToolError> {
        self.run_with(|_| {})
    }
}

/// Runs `cmd` to completion and returns its stdout and stderr together; writes them to `log` when
/// given. On failure the error names `what`, the exit status, the log and the output's last lines.
pub fn run_tool(cmd: &mut Command, what: &str, log: Option<&Path>) -> Result<String, ToolError> {
    Tool::new(cmd, what).log(log).run()
}

/// Blocks SIGPIPE in the calling thread, so that its write to a pipe whose reader died (a server
/// that exits during its bootstrap) fails with EPIPE — an error pgoforge reports — instead of
/// killing the whole process silently. The process keeps SIGPIPE's default action, so that
/// `pgoforge recipes | head` still ends quietly.
pub fn block_sigpipe_in_this_thread() {
    // SAFETY: a zeroed sigset_t filled by sigemptyset/sigaddset; pthread_sigmask changes only this
    // thread's mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// The first non-empty line a program prints for `arg` (`--version`), if it runs at all.
pub fn version_of(program: &Path, arg: &str) -> Option<String> {
    let out = Command::new(program).arg(arg).output().ok()?;
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    text.lines()
        .find(|l| !l.trim().is_empty())
        .map(|l| l.trim().to_string())
}

/// `cmd.output()`, retried for a few seconds while exec fails with ETXTBSY: a binary copied just
/// before (a package, a test's copy) is "busy" for as long as any process forked meanwhile — by
/// another thread — still holds the copy's write descriptor, until that child execs.
pub fn output_retrying_busy(
    cmd: &mut std::process::Command,
) -> std::io::Result<std::process::Output> {
    let mut tries = 0;
    loop {
        match cmd.output() {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && tries < 50 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            r => return r,
        }
    }
}

#[cfg(test)]
mod tests {
    /// A binary still open for writing cannot be executed (ETXTBSY); once the writer closes it,
    /// the retried run goes through — as when another thread's fork held a fresh copy open.
    #[test]
    fn a_binary_busy_for_a_moment_is_run_once_it_is_free() {
        use std::io::Write;
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("true-copy");
        let mut f = std::fs::File::create(&bin).unwrap();
        f.write_all(&std::fs::read("/bin/true").unwrap()).unwrap();
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        let busy = std::process::Command::new(&bin).output();
        assert_eq!(
            busy.unwrap_err().raw_os_error(),
            Some(libc::ETXTBSY),
            "open for writing: busy"
        );
        let closer = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(300));
            drop(f);
        });
        let out = output_retrying_busy(&mut std::process::Command::new(&bin)).unwrap();
        closer.join().unwrap();
        assert!(out.status.success());
    }

    use super::*;
    use std::time::Instant;

    #[test]
    fn failures_show_the_last_lines_and_the_log() {
        let t = tempfile::tempdir().unwrap();
        let log = t.path().join("x.log");
        let e = run_tool(
            // stdout and stderr are read by separate threads, so their order in the log is that
            // of arrival: the pause puts the error line last, as a failing compiler's would be.
            Command::new("sh").args(["-c", "seq 1 30; sleep 0.3; echo boom >&2; exit 3"]),
            "counting",
            Some(&log),
        )
        .unwrap_err();
        assert!(matches!(e, ToolError::Failed { .. }));
        let e = e.to_string();
        assert!(
            e.starts_with("counting failed (exit status: 3); log "),
            "{e}"
        );
        assert!(e.contains("\nboom") && !e.contains("\n10\n"), "{e}");
        assert!(fs::read_to_string(&log).unwrap().contains("30\n"));
        let ok = run_tool(Command::new("echo").arg("hi"), "echo", None).unwrap();
        assert_eq!(ok, "hi\n");
    }

    #[test]
    fn a_missing_program_and_a_stalled_one_are_told_apart() {
        let e = run_tool(&mut Command::new("/nonexistent/tool"), "probing", None).unwrap_err();
        assert!(matches!(e, ToolError::NotFound { .. }), "{e}");
        assert!(
            e.to_string().contains("cannot start /nonexistent/tool"),
            "{e}"
        );
        let t0 = Instant::now();
        let e = Tool::new(
            Command::new("sh").args(["-c", "echo started; exec sleep 30"]),
            "waiting",
        )
        .timeout(Duration::from_millis(300))
        .run()
        .unwrap_err();
        assert!(t0.elapsed() < Duration::from_secs(10));
        assert!(matches!(e, ToolError::TimedOut { .. }), "{e}");
        assert!(e.to_string().contains("within 0 s and was killed"), "{e}");
        assert!(e.to_string().contains("started"), "{e}");
    }

    #[test]
    fn appended_logs_keep_what_was_there_and_lines_are_seen_live() {
        let t = tempfile::tempdir().unwrap();
        let log = t.path().join("build.log");
        fs::write(&log, "earlier attempt\n").unwrap();
        let mut seen = Vec::new();
        Tool::new(
            Command::new("printf").args(["%s\\n", "[ 50%] a", "[100%] b"]),
            "make",
        )
        .append_to(&log)
        .run_with(|l| seen.push(l.to_string()))
        .unwrap();
        assert_eq!(seen, ["[ 50%] a", "[100%] b"]);
        assert_eq!(
            fs::read_to_string(&log).unwrap(),
            "earlier attempt\n[ 50%] a\n[100%] b\n"
        );
    }
}
