//! Another host, reached with the system's `ssh` (so ~/.ssh/config, agents and keys apply as
//! users already set them up): the benchmark client's host (`--client-host`) and the build hosts
//! (`--build-host`) both go through here.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use anyhow::{bail, Context, Result};

/// An ssh destination (`[user@]host`, anything `ssh` accepts) and, for tests and unusual set-ups,
/// an ssh config file of its own (`ssh -F FILE`).
#[derive(Clone, Debug)]
pub struct SshTarget {
    pub destination: String,
    pub ssh_config: Option<PathBuf>,
}

impl PartialEq for SshTarget {
    /// How a host is reached does not change which host it is.
    fn eq(&self, other: &SshTarget) -> bool {
        self.destination == other.destination
    }
}

impl SshTarget {
    /// `[user@]host` given to `flag`: no option-like or shell-special text (it becomes an ssh
    /// argument, and a part of commands run there).
    pub fn parse(
        flag: &str,
        destination: &str,
        ssh_config: Option<PathBuf>,
    ) -> Result<SshTarget, String> {
        let ok = !destination.is_empty()
            && !destination.starts_with('-')
            && destination
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "@.-_:[]".contains(c));
        if !ok {
            return Err(format!(
                "{flag} '{destination}': give an ssh destination, [user@]host (letters, \
                 digits, '.', '-', '_', ':')"
            ));
        }
        Ok(SshTarget {
            destination: destination.to_string(),
            ssh_config,
        })
    }

    /// `ssh [-F FILE] OPTIONS -- DESTINATION`; the caller adds the remote command.
    pub fn command(&self) -> Command {
        let mut c = Command::new("ssh");
        if let Some(f) = &self.ssh_config {
            c.arg("-F").arg(f);
        }
        // Never a password prompt (there is nobody to answer it); a peer that stops answering is
        // noticed within ~15 s, so a lost host ends the work instead of hanging it.
        c.args([
            "-o",
            "BatchMode=yes",
            "-o",
            "ConnectTimeout=10",
            "-o",
            "ServerAliveInterval=5",
            "-o",
            "ServerAliveCountMax=3",
            "--",
            &self.destination,
        ]);
        c
    }

    /// Runs `script` there; its stdout, or an error naming the host, the status and ssh's words.
    /// `role` names the host in errors ("the client host", "the build host").
    pub fn output(&self, role: &str, script: &str) -> Result<String> {
        let out = self
            .command()
            .arg(script)
            .stdin(Stdio::null())
            .output()
            .context("running ssh (is openssh-client installed?)")?;
        if !out.status.success() {
            bail!(
                "{role} {}: ssh failed ({}): {}. `ssh {} true` must work without a password \
                 prompt (a key or an agent; BatchMode)",
                self.destination,
                out.status,
                String::from_utf8_lossy(&out.stderr).trim(),
                self.destination
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Checks that the host can run this binary (`uname -m`).
    pub fn check_arch(&self, role: &str) -> Result<()> {
        let arch = self.output(role, "uname -m")?;
        if arch.trim() != std::env::consts::ARCH {
            bail!(
                "{role} {} is '{}'; pgoforge runs its own binary there, built for {}",
                self.destination,
                arch.trim(),
                std::env::consts::ARCH
            );
        }
        Ok(())
    }

    /// Copies this binary into a new private directory there (`mktemp -d` named after `tag`);
    /// returns the directory, plain enough to go back into a shell command.
    pub fn copy_self(&self, role: &str, tag: &str) -> Result<String> {
        let exe = std::env::current_exe().context("finding pgoforge's own binary")?;
        let file =
            std::fs::File::open(&exe).with_context(|| format!("reading {}", exe.display()))?;
        let out = self
            .command()
            .arg(format!(
                "umask 077 && d=$(mktemp -d \"${{TMPDIR:-/tmp}}/pgoforge-{tag}.XXXXXX\") && \
                 cat > \"$d/pgoforge\" && chmod 700 \"$d/pgoforge\" && echo \"$d\""
            ))
            .stdin(Stdio::from(file))
            .output()
            .context("running ssh")?;
        let dir = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if !out.status.success() || !plain_path(&dir) {
            bail!(
                "copying pgoforge to {role} {} failed ({}): {}",
                self.destination,
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(dir)
    }
}

impl SshTarget {
    /// Starts `pgoforge SUBCOMMAND` from `dir` (a [`SshTarget::copy_self`] directory) in one ssh
    /// session; the shell around it removes `dir` when the session ends, however it ends.
    pub fn start_copied(&self, dir: &str, subcommand: &str) -> Result<Session> {
        let mut child = self
            .command()
            .arg(format!(
                "d='{dir}'; trap 'rm -rf \"$d\"' EXIT HUP INT TERM; \"$d/pgoforge\" {subcommand}"
            ))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("starting ssh (is openssh-client installed?)")?;
        let (stdin, stdout, stderr) =
            match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
                (Some(i), Some(o), Some(e)) => (i, BufReader::new(o), e),
                _ => bail!("ssh started without its pipes"),
            };
        let tail = Tail::default();
        let t = Arc::clone(&tail);
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                push(&t, line);
            }
        });
        Ok(Session {
            child,
            stdin: Some(writer(stdin)),
            stdout,
            tail,
            reader: Some(reader),
        })
    }
}

/// The last lines ssh wrote to stderr (its own diagnostics and the remote side's), for errors.
type Tail = Arc<Mutex<VecDeque<String>>>;

fn push(tail: &Tail, line: String) {
    if let Ok(mut t) = tail.lock() {
        if t.len() == 20 {
            t.pop_front();
        }
        t.push_back(line);
    }
}

/// One ssh session with pgoforge's copy on another host: lines in ([`Session::send`]), lines out
/// (`stdout`), ssh's last words kept ([`Session::tail`]).
pub struct Session {
    pub child: Child,
    stdin: Option<Sender<String>>,
    pub stdout: BufReader<ChildStdout>,
    tail: Tail,
    reader: Option<JoinHandle<()>>,
}

impl Session {
    /// Queues a line for the session's stdin; false when the session is gone.
    pub fn send(&self, line: String) -> bool {
        self.stdin.as_ref().is_some_and(|tx| tx.send(line).is_ok())
    }

    /// Closes the session's stdin: the remote pgoforge sees it and exits.
    pub fn close_stdin(&mut self) {
        drop(self.stdin.take());
    }

    /// Keeps `line` with ssh's last words (e.g. remote output that was not an answer).
    pub fn note(&self, line: String) {
        push(&self.tail, line);
    }

    /// ssh's last words so far.
    pub fn tail(&self) -> Vec<String> {
        self.tail
            .lock()
            .map(|t| t.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Waits for ssh to exit, then for its stderr to be read to the end: its status and last
    /// words.
    pub fn finish(&mut self) -> Result<(ExitStatus, Vec<String>)> {
        self.close_stdin();
        let status = self.child.wait().context("waiting for ssh")?;
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
        Ok((status, self.tail()))
    }
}

/// The session's stdin, fed from a thread that blocks SIGPIPE for itself: pgoforge keeps
/// SIGPIPE's default action (`pgoforge recipes | head` ends quietly), so a write to the stdin of an
/// ssh that has died would kill it silently; here it fails, the thread ends, and the caller finds
/// the session gone when it reads the answer. Dropping the sender closes stdin.
fn writer(mut stdin: ChildStdin) -> Sender<String> {
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        super::runner::block_sigpipe_in_this_thread();
        for line in rx {
            if writeln!(stdin, "{line}")
                .and_then(|_| stdin.flush())
                .is_err()
            {
                break;
            }
        }
    });
    tx
}

/// An absolute path of letters, digits and `/._-+` only: safe inside a single-quoted shell word
/// and in a command line without quoting surprises.
pub fn plain_path(p: &str) -> bool {
    p.starts_with('/')
        && !p.contains("/../")
        && p.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destinations_are_plain_and_the_config_does_not_make_another_host() {
        assert!(SshTarget::parse("--x", "bench@10.0.0.2", None).is_ok());
        assert!(SshTarget::parse("--x", "client-1.example", None).is_ok());
        for bad in ["", "-oProxyCommand=x", "a b", "h;rm", "h$(x)", "h'"] {
            let e = SshTarget::parse("--build-host", bad, None).unwrap_err();
            assert!(e.starts_with("--build-host"), "{e}");
        }
        let a = SshTarget::parse("--x", "h", Some("/x".into())).unwrap();
        assert_eq!(a, SshTarget::parse("--x", "h", None).unwrap());
    }

    #[test]
    fn plain_paths_are_absolute_and_quote_free() {
        assert!(plain_path("/tmp/pgoforge-build.Ab12_x"));
        assert!(plain_path("/w/builds/mysql-pgo+lto-gcc-12-0123"));
        for bad in ["tmp/x", "/a b", "/a'b", "/a/../etc", "/a$(x)", ""] {
            assert!(!plain_path(bad), "{bad}");
        }
    }
}
