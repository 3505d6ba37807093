//! Whether valgrind can run a server binary (an instruction it does not implement, debug
//! information it cannot read — then a copy without it), and the settings a server needs under it.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};

use crate::server::{Family, Flavor};

/// Why valgrind cannot run a binary as it is.
#[derive(Debug, PartialEq)]
enum Unrunnable {
    /// It gives up on the debug information (Debian 12's valgrind 3.19 on clang 22's DWARF 5 in a
    /// server-sized binary): a copy without it runs the same code.
    DebugInfo,
    /// Anything else, in words (an instruction valgrind does not implement).
    Other(String),
}

/// Whether valgrind can run `binary` at all (its `--version`, under `--tool=none`): a binary
/// built with `-march=native` on a CPU with AVX-512 carries instructions valgrind does not
/// implement, and dies of SIGILL in its static constructors; one built by clang 22 carries debug
/// information valgrind 3.19 cannot read.
fn runs_under_valgrind(binary: &Path) -> Result<(), Unrunnable> {
    let out = match Command::new("valgrind")
        .arg("--tool=none")
        .arg(binary)
        .arg("--version")
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            return Err(Unrunnable::Other(format!(
                "valgrind could not be started: {e}"
            )))
        }
    };
    let err = String::from_utf8_lossy(&out.stderr);
    if unreadable_debuginfo(&err) {
        return Err(Unrunnable::DebugInfo);
    }
    unrunnable(&err).map_or(Ok(()), |r| Err(Unrunnable::Other(r)))
}

/// valgrind's words when it stops on debug information it cannot read.
fn unreadable_debuginfo(stderr: &str) -> bool {
    stderr.contains("debuginfo reader") && stderr.contains("Giving up")
}

/// The binary valgrind runs for `binary`: itself, or — when valgrind gives up on its debug
/// information — a copy beside it (so its share files are found alike) without the debug
/// sections (`objcopy --strip-debug`: the same code, hence the same counts), made once and again
/// only when the binary is newer. Err: why neither runs.
pub(super) fn measurable(binary: &Path, log: &dyn Fn(&str)) -> Result<PathBuf, String> {
    match runs_under_valgrind(binary) {
        Ok(()) => return Ok(binary.to_path_buf()),
        Err(Unrunnable::Other(r)) => return Err(r),
        Err(Unrunnable::DebugInfo) => {}
    }
    let copy = without_debug_info(binary)?;
    log(&format!(
        "cachegrind: valgrind cannot read the debug information of {} (clang's DWARF 5?); \
         measuring {} instead, the same code without it",
        binary.display(),
        copy.display()
    ));
    match runs_under_valgrind(&copy) {
        Ok(()) => Ok(copy),
        Err(Unrunnable::DebugInfo) => Err(
            "valgrind cannot read its debug information, even with the debug sections removed"
                .into(),
        ),
        Err(Unrunnable::Other(r)) => Err(r),
    }
}

/// `BINARY.nodebug` beside `binary`: its copy without debug sections (kept while newer).
fn without_debug_info(binary: &Path) -> Result<PathBuf, String> {
    let mut name = binary.as_os_str().to_owned();
    name.push(".nodebug");
    let copy = PathBuf::from(name);
    let mtime = |p: &Path| fs::metadata(p).and_then(|m| m.modified()).ok();
    if let (Some(c), Some(b)) = (mtime(&copy), mtime(binary)) {
        if c >= b {
            return Ok(copy);
        }
    }
    let mut tmp = copy.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let out = Command::new("objcopy")
        .arg("--strip-debug")
        .arg(binary)
        .arg(&tmp)
        .output()
        .map_err(|e| {
            format!("objcopy could not be started to remove the debug information: {e}")
        })?;
    if !out.status.success() {
        let _ = fs::remove_file(&tmp);
        return Err(format!(
            "objcopy --strip-debug {} failed: {}",
            binary.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    fs::rename(&tmp, &copy).map_err(|e| format!("renaming {} into place: {e}", tmp.display()))?;
    Ok(copy)
}

/// valgrind's words for an instruction it cannot execute, as a reason; None when there are none.
fn unrunnable(stderr: &str) -> Option<String> {
    // (-q leaves out the first of these lines; the second is there either way.)
    let mark = |l: &str| l.contains("Unrecognised instruction") || l.contains("Illegal opcode at");
    let at = stderr.lines().find(|l| mark(l))?;
    let bytes = stderr
        .lines()
        .find_map(|l| l.split("unhandled instruction bytes: ").nth(1))
        .unwrap_or("");
    let func = stderr
        .lines()
        .skip_while(|l| !mark(l))
        .nth(1)
        .and_then(|l| l.split(": ").nth(1))
        .and_then(|f| f.split(" (in ").next())
        .unwrap_or("");
    // 0x62 opens an EVEX-encoded instruction: AVX-512.
    let evex = bytes.starts_with("0x62");
    Some(format!(
        "valgrind cannot execute its instructions ({}{}{}){}",
        at.rsplit("== ")
            .next()
            .unwrap_or(at)
            .trim_start_matches("valgrind: ")
            .trim()
            .trim_end_matches('.'),
        if func.is_empty() { "" } else { " in " },
        func,
        if evex {
            ": AVX-512 (EVEX-encoded), which -march=native emits on this CPU and valgrind does not implement"
        } else {
            ""
        }
    ))
}

/// The options a server needs to run under valgrind: no io_uring/libaio (valgrind does not
/// emulate them) and, where the server reserves address space for buffer pool growth, a
/// reservation no larger than the pool.
pub(super) fn valgrind_settings(
    binary: &Path,
    flavor: &Flavor,
    buffer_pool_mb: u64,
) -> Result<Vec<String>> {
    let mut extra = vec!["innodb_use_native_aio = 0".to_string()];
    if flavor.family == Family::MariaDb {
        let help = Command::new(binary)
            .args(["--no-defaults", "--verbose", "--help"])
            .output()
            .with_context(|| format!("running {} --help", binary.display()))?;
        if String::from_utf8_lossy(&help.stdout).contains("innodb-buffer-pool-size-max") {
            extra.push(format!("innodb_buffer_pool_size_max = {buffer_pool_mb}M"));
        }
    }
    Ok(extra)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valgrind_giving_up_on_debug_information_is_told_apart() {
        // valgrind 3.19's words for MariaDB built by clang 22 (DWARF 5).
        let stderr = "### unhandled dwarf2 abbrev form code 0x25\n\
            ==1== Valgrind: debuginfo reader: Possibly corrupted debuginfo file.\n\
            ==1== Valgrind: I can't recover.  Giving up.  Sorry.\n";
        assert!(unreadable_debuginfo(stderr));
        assert_eq!(unrunnable(stderr), None);
        // Complaints it survives are no reason (a small clang binary: it runs).
        assert!(!unreadable_debuginfo(
            "### unhandled dwarf2 abbrev form code 0x1b\n"
        ));
    }

    #[test]
    fn a_copy_without_debug_information_runs_the_same_and_is_made_once() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("t");
        fs::copy("/bin/true", &bin).unwrap();
        let copy = without_debug_info(&bin).unwrap();
        assert_eq!(copy, dir.path().join("t.nodebug"));
        assert!(Command::new(&copy).status().unwrap().success());
        let made = fs::metadata(&copy).unwrap().modified().unwrap();
        assert_eq!(without_debug_info(&bin).unwrap(), copy);
        assert_eq!(fs::metadata(&copy).unwrap().modified().unwrap(), made);
        assert!(!dir.path().join("t.nodebug.tmp").exists());
        let e = without_debug_info(&dir.path().join("absent")).unwrap_err();
        assert!(e.contains("objcopy --strip-debug"), "{e}");
    }

    #[test]
    fn an_instruction_valgrind_cannot_execute_is_named() {
        // valgrind 3.19's words for mysqld built with -march=native on an AVX-512 CPU.
        let stderr = "vex amd64->IR: unhandled instruction bytes: 0x62 0xE1 0xFD 0x8 0x6E 0xC1 0x48 0x8D 0x5 0x86\n\
            vex amd64->IR:   REX=0 REX.W=0 REX.R=0 REX.X=0 REX.B=0\n\
            ==7011== valgrind: Unrecognised instruction at address 0xa9b4ad.\n\
            ==7011==    at 0xA9B4AD: _sub_I_65535_0.0 (in /w/build/runtime_output_directory/mysqld)\n\
            ==7011==    by 0x5A39375: __libc_start_main@@GLIBC_2.34 (libc-start.c:145)\n";
        let r = unrunnable(stderr).unwrap();
        assert!(
            r.starts_with("valgrind cannot execute its instructions (Unrecognised instruction at address 0xa9b4ad in _sub_I_65535_0.0)"),
            "{r}"
        );
        assert!(r.contains("AVX-512"), "{r}");
        assert_eq!(
            unrunnable("==1== Memcheck, a memory error detector\n"),
            None
        );
    }
}
