//! Files: written atomically, trees copied, contents hashed, logs tailed.

use std::fs::{self, File};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};

/// Writes `contents` to `path` so that a reader sees the old file or the new one, never a torn
/// one: a temporary file beside it (named for this process and call, so concurrent writers never
/// share one), flushed, then renamed over the target.
pub fn write_atomic(path: &Path, contents: impl AsRef<[u8]>) -> Result<()> {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .with_context(|| format!("{} names no file", path.display()))?
        .to_string_lossy();
    let tmp = path.with_file_name(format!(
        ".{name}.{}.{}.tmp",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    let written = (|| -> std::io::Result<()> {
        let mut f = File::create(&tmp)?;
        f.write_all(contents.as_ref())?;
        f.sync_all()
    })();
    if let Err(e) = written.and_then(|_| fs::rename(&tmp, path)) {
        let _ = fs::remove_file(&tmp);
        return Err(e).with_context(|| format!("writing {}", path.display()));
    }
    remove_stale_temporaries(path, &name);
    Ok(())
}

/// A process killed (SIGKILL, power loss) between creating its temporary file and renaming it
/// leaves the temporary behind, never the target half-written; the next write of the same target
/// removes it, once its writer is gone.
fn remove_stale_temporaries(path: &Path, name: &str) {
    let Some(dir) = path.parent() else { return };
    let Ok(entries) = fs::read_dir(if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    }) else {
        return;
    };
    let prefix = format!(".{name}.");
    for e in entries.flatten() {
        let n = e.file_name();
        let Some(rest) = n
            .to_str()
            .and_then(|n| n.strip_prefix(&prefix))
            .and_then(|r| r.strip_suffix(".tmp"))
        else {
            continue;
        };
        let writer = rest.split('.').next().and_then(|p| p.parse::<u32>().ok());
        if writer.is_some_and(|pid| pid != std::process::id() && !super::pid_alive(pid)) {
            let _ = fs::remove_file(e.path());
        }
    }
}

/// [`write_atomic`] of a value as pretty JSON.
pub fn write_json(path: &Path, value: &impl serde::Serialize) -> Result<()> {
    write_atomic(path, serde_json::to_string_pretty(value)?)
}

/// Reads a JSON file that may not exist: `None` when it does not, an error naming the file and
/// `fix` when it cannot be read or parsed.
pub fn read_json_if_present<T: serde::de::DeserializeOwned>(
    path: &Path,
    fix: &str,
) -> Result<Option<T>> {
    match fs::read_to_string(path) {
        Ok(t) => serde_json::from_str(&t)
            .map(Some)
            .with_context(|| format!("{} is corrupted; {fix}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

/// Copies the tree `from` into `to` (created), regular files and directories.
pub fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    for e in fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let e = e?;
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if e.file_type()?.is_dir() {
            copy_tree(&src, &dst)?;
        } else {
            // fs::copy uses copy_file_range, which reflinks where the filesystem can.
            fs::copy(&src, &dst)
                .with_context(|| format!("copying {} to {}", src.display(), dst.display()))?;
        }
    }
    Ok(())
}

/// What [`sync_tree`] did: the files it copied (their bytes) and the entries it removed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Synced {
    pub files: u64,
    pub bytes: u64,
    pub removed: u64,
    /// The largest files copied (path under the tree, bytes), largest first, at most five.
    pub largest: Vec<(String, u64)>,
}

/// Makes the tree `to` equal to `from`, copying only the files whose size or modification time
/// differ, and removing what `from` lacks. Each copy takes its source's modification time, so a
/// file nobody wrote since is found equal next time: a server that only read its tables has
/// them restored for nothing (docs/bench/dataset-reset.md).
pub fn sync_tree(from: &Path, to: &Path) -> Result<Synced> {
    let mut done = Synced::default();
    sync_into(from, to, from, &mut done)?;
    Ok(done)
}

fn sync_into(from: &Path, to: &Path, root: &Path, done: &mut Synced) -> Result<()> {
    fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    let mut wanted = std::collections::HashSet::new();
    for e in fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let e = e?;
        let (src, dst) = (e.path(), to.join(e.file_name()));
        wanted.insert(e.file_name());
        let existing = fs::symlink_metadata(&dst).ok();
        if e.file_type()?.is_dir() {
            if existing.as_ref().is_some_and(|m| !m.is_dir()) {
                fs::remove_file(&dst).with_context(|| format!("removing {}", dst.display()))?;
                done.removed += 1;
            }
            sync_into(&src, &dst, root, done)?;
            continue;
        }
        let meta = e.metadata()?;
        let mtime = meta.modified()?;
        let same = existing.as_ref().is_some_and(|m| {
            m.is_file() && m.len() == meta.len() && m.modified().ok() == Some(mtime)
        });
        if same {
            continue;
        }
        if existing.as_ref().is_some_and(|m| m.is_dir()) {
            fs::remove_dir_all(&dst).with_context(|| format!("removing {}", dst.display()))?;
            done.removed += 1;
        }
        fs::copy(&src, &dst)
            .with_context(|| format!("copying {} to {}", src.display(), dst.display()))?;
        File::options()
            .write(true)
            .open(&dst)
            .and_then(|f| f.set_modified(mtime))
            .with_context(|| format!("dating {}", dst.display()))?;
        done.files += 1;
        done.bytes += meta.len();
        let name = src.strip_prefix(root).unwrap_or(&src).display().to_string();
        done.largest.push((name, meta.len()));
        done.largest.sort_by_key(|f| std::cmp::Reverse(f.1));
        done.largest.truncate(5);
    }
    for e in fs::read_dir(to).with_context(|| format!("reading {}", to.display()))? {
        let e = e?;
        if wanted.contains(&e.file_name()) {
            continue;
        }
        let p = e.path();
        if e.file_type()?.is_dir() {
            fs::remove_dir_all(&p)
        } else {
            fs::remove_file(&p)
        }
        .with_context(|| format!("removing {}", p.display()))?;
        done.removed += 1;
    }
    Ok(())
}

/// Every regular file under `root` whose name ends with `ext` (any file for ""), sorted.
pub fn files_under(root: &Path, ext: &str) -> Result<Vec<PathBuf>> {
    fn walk(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) -> Result<()> {
        for e in fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
            let e = e?;
            let p = e.path();
            if e.file_type()?.is_dir() {
                walk(&p, ext, out)?;
            } else if ext.is_empty() || p.extension().is_some_and(|x| x == ext) {
                out.push(p);
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(root, ext, &mut out)?;
    out.sort();
    Ok(out)
}

/// Creates `dir` (and its parents) and returns its canonical path.
pub fn create_canonical(dir: &Path) -> Result<PathBuf> {
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    fs::canonicalize(dir).with_context(|| format!("resolving {}", dir.display()))
}

/// Lowercase hex of bytes.
/// `path` is an existing file (a binary to run, a profile to read): a missing path or a
/// directory gets a message naming `what` it should be and `hint`, the way to give it.
pub fn require_file(path: &Path, what: &str, hint: &str) -> Result<()> {
    if !path.exists() {
        anyhow::bail!("{what} {} does not exist ({hint})", path.display());
    }
    if path.is_dir() {
        anyhow::bail!(
            "{what} {} is a directory, not a file ({hint})",
            path.display()
        );
    }
    Ok(())
}

/// Bytes free for an unprivileged user on the file system holding `path`.
pub fn free_bytes(path: &std::path::Path) -> Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())?;
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a valid C string and a zeroed struct for the kernel to fill.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(std::io::Error::last_os_error())
            .with_context(|| format!("checking free space on {}", path.display()));
    }
    Ok(st.f_bavail as u64 * st.f_frsize as u64)
}

/// A field of /proc/meminfo (`MemTotal`, `MemAvailable`…) in kB; None where the kernel does
/// not say.
pub fn meminfo_kb(field: &str) -> Option<u64> {
    parse_meminfo_kb(&std::fs::read_to_string("/proc/meminfo").ok()?, field)
}

/// [`meminfo_kb`] of a given /proc/meminfo text.
pub fn parse_meminfo_kb(meminfo: &str, field: &str) -> Option<u64> {
    let line = meminfo
        .lines()
        .find(|l| l.strip_prefix(field).is_some_and(|r| r.starts_with(':')))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Below this, a failure writing under a directory is most likely the disk being full.
const LOW_SPACE: u64 = 256 << 20;

/// A sentence for an error message when the file system holding `path` is (nearly) full, since
/// the tools that fail there rarely say so plainly (InnoDB: "Generic error", make: a truncated
/// object file); empty otherwise.
pub fn low_space_note(path: &Path) -> String {
    match free_bytes(path) {
        Ok(free) if free < LOW_SPACE => format!(
            "\nThe file system holding {} has only {:.1} MiB free: a full disk is the likely \
             cause; free space or choose another --work-dir.",
            path.display(),
            free as f64 / 1048576.0
        ),
        _ => String::new(),
    }
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The sha256 of a file, in hex.
pub fn sha256_file(p: &Path) -> Result<String> {
    let mut f = File::open(p).with_context(|| format!("opening {}", p.display()))?;
    let mut h = Sha256::new();
    std::io::copy(&mut f, &mut h).with_context(|| format!("reading {}", p.display()))?;
    Ok(hex(&h.finalize()))
}

/// A short (16 hex digits) hash of any serializable value: the key of cached work.
pub fn value_hash(v: &impl serde::Serialize) -> Result<String> {
    Ok(hex(&Sha256::digest(serde_json::to_vec(v)?))[..16].to_string())
}

/// The last `n` lines of a text file ("" when it cannot be read).
pub fn tail(path: &Path, n: usize) -> String {
    let Ok(f) = File::open(path) else {
        return String::new();
    };
    let lines: Vec<String> = BufReader::new(f).lines().map_while(Result::ok).collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_writes_replace_whole_files_and_leave_no_temporaries() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("state.json");
        write_atomic(&p, "one").unwrap();
        write_json(&p, &vec![1, 2]).unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "[\n  1,\n  2\n]");
        let names: Vec<_> = fs::read_dir(t.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "a temporary file was left behind");
        // A directory where the file should go: an error naming the path, nothing left.
        fs::create_dir(t.path().join("d")).unwrap();
        let e = write_atomic(&t.path().join("d"), "x").unwrap_err();
        assert!(format!("{e:#}").contains("writing"), "{e:#}");
        assert_eq!(fs::read_dir(t.path()).unwrap().count(), 2);
    }

    #[test]
    fn a_killed_writers_temporary_goes_with_the_next_write() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("report.md");
        // pid 0 is never a process; a live writer's (ours: another thread's write) is kept, as
        // is another file's.
        let dead = t.path().join(".report.md.0.3.tmp");
        let live = t
            .path()
            .join(format!(".report.md.{}.99.tmp", std::process::id()));
        let other = t.path().join(".report.html.0.1.tmp");
        for f in [&dead, &live, &other] {
            fs::write(f, "half").unwrap();
        }
        write_atomic(&p, "whole").unwrap();
        assert!(!dead.exists());
        assert!(live.exists() && other.exists());
        assert_eq!(fs::read_to_string(&p).unwrap(), "whole");
    }

    #[test]
    fn trees_copy_and_hash() {
        let t = tempfile::tempdir().unwrap();
        let a = t.path().join("a");
        fs::create_dir_all(a.join("sub")).unwrap();
        fs::write(a.join("sub/x.gcda"), "xx").unwrap();
        fs::write(a.join("y.txt"), "y\nz\n").unwrap();
        copy_tree(&a, &t.path().join("b")).unwrap();
        assert_eq!(fs::read(t.path().join("b/sub/x.gcda")).unwrap(), b"xx");
        assert_eq!(files_under(&a, "gcda").unwrap(), vec![a.join("sub/x.gcda")]);
        assert_eq!(files_under(&a, "").unwrap().len(), 2);
        assert_eq!(
            sha256_file(&t.path().join("b/sub/x.gcda")).unwrap(),
            hex(&Sha256::digest(b"xx"))
        );
        assert_eq!(tail(&a.join("y.txt"), 1), "z");
        assert_eq!(tail(&a.join("missing"), 1), "");
        assert_eq!(hex(&[0, 255]), "00ff");
        assert_eq!(value_hash(&1).unwrap(), value_hash(&1).unwrap());
        assert_ne!(value_hash(&1).unwrap(), value_hash(&2).unwrap());
    }

    #[test]
    fn sync_tree_copies_only_what_differs_and_removes_what_the_source_lacks() {
        let t = tempfile::tempdir().unwrap();
        let (a, b) = (t.path().join("a"), t.path().join("b"));
        fs::create_dir_all(a.join("db")).unwrap();
        fs::write(a.join("db/big.ibd"), vec![7u8; 100_000]).unwrap();
        fs::write(a.join("ibdata1"), b"system").unwrap();
        // The first sync is a whole copy.
        let first = sync_tree(&a, &b).unwrap();
        assert_eq!((first.files, first.bytes, first.removed), (2, 100_006, 0));
        assert_eq!(fs::read(b.join("db/big.ibd")).unwrap(), vec![7u8; 100_000]);
        // Nothing written since: nothing copied.
        assert_eq!(sync_tree(&a, &b).unwrap(), Synced::default());
        assert_eq!(first.largest[0], ("db/big.ibd".to_string(), 100_000));
        // A server wrote one file (same size, new time) and made others: only those change.
        let ino = |p: &Path| std::os::unix::fs::MetadataExt::ino(&fs::metadata(p).unwrap());
        let big_ino = ino(&b.join("db/big.ibd"));
        std::thread::sleep(std::time::Duration::from_millis(20));
        fs::write(b.join("ibdata1"), b"SYSTEM").unwrap();
        fs::write(b.join("db/new.ibd"), b"temp").unwrap();
        fs::create_dir_all(b.join("tmpdir/x")).unwrap();
        let again = sync_tree(&a, &b).unwrap();
        assert_eq!((again.files, again.bytes, again.removed), (1, 6, 2));
        assert_eq!(fs::read(b.join("ibdata1")).unwrap(), b"system");
        assert!(!b.join("db/new.ibd").exists() && !b.join("tmpdir").exists());
        assert_eq!(
            ino(&b.join("db/big.ibd")),
            big_ino,
            "the untouched table was left alone"
        );
    }
}
