//! Running an external tool (apt-get, llvm-bolt, merge-fdata, perf2bolt...) whose failure should
//! show its last lines, and whose output may be kept in a log file.

use std::fs;
use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context, Result};

/// Whether pgoforge runs as root (installs need no sudo, servers run with `user=root`).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Runs `cmd` to completion and returns its stdout and stderr together; writes them to `log` when
/// given. On failure the error names `what`, the exit status, the log and the output's last lines.
pub fn run_tool(cmd: &mut Command, what: &str, log: Option<&Path>) -> Result<String> {
    let out = cmd
        .output()
        .with_context(|| format!("{what}: starting {:?}", cmd.get_program()))?;
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    if let Some(l) = log {
        let _ = fs::write(l, &text);
    }
    if !out.status.success() {
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines[lines.len().saturating_sub(20)..].join("\n");
        match log {
            Some(l) => bail!(
                "{what} failed ({}); log {}:\n{tail}",
                out.status,
                l.display()
            ),
            None => bail!("{what} failed ({}):\n{tail}", out.status),
        }
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_show_the_last_lines_and_the_log() {
        let t = tempfile::tempdir().unwrap();
        let log = t.path().join("x.log");
        let e = run_tool(
            Command::new("sh").args(["-c", "seq 1 30; echo boom >&2; exit 3"]),
            "counting",
            Some(&log),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("counting failed (exit status: 3); log "),
            "{e}"
        );
        assert!(e.contains("\nboom") && !e.contains("\n10\n"), "{e}");
        assert!(fs::read_to_string(&log).unwrap().contains("30\n"));
        let ok = run_tool(Command::new("echo").arg("hi"), "echo", None).unwrap();
        assert_eq!(ok, "hi\n");
    }
}
