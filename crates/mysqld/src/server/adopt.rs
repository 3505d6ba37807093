//! A server on a copy of a datadir someone else made (a DBA's own data, for a replayed workload):
//! the source is read, never written; the copy gets pgoforge's accounts the way a DBA recovers a
//! lost password (start once with the grant tables skipped, load them, create the users, restart
//! normally), so nothing about the source's own users needs to be known.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};

use super::{accounts, Credentials, Server, ServerSpec};
use crate::usage;

/// The superuser pgoforge creates on an adopted copy: the source's own root may authenticate any
/// way at all (socket peer, a password nobody gave us).
pub const ADMIN_USER: &str = "pgoforge_admin";

/// Files InnoDB and Aria hold an exclusive `fcntl` lock on while a server runs on the datadir.
const LOCKED_BY_A_RUNNING_SERVER: [&str; 2] = ["ibdata1", "aria_log_control"];

/// Refuses a directory that is not a stopped server's datadir: a copy of a live datadir is torn
/// (pages half-written, the redo log ahead of the files).
pub fn check_source(datadir: &Path) -> Result<()> {
    if !datadir.join("mysql").is_dir() {
        usage!(
            "{} is not a server's datadir (it has no mysql/ system schema); give the directory \
             the server's `datadir` setting names",
            datadir.display()
        );
    }
    for name in LOCKED_BY_A_RUNNING_SERVER {
        let p = datadir.join(name);
        if p.is_file() && locked_by_another_process(&p)? {
            usage!(
                "a server is running on {} ({name} is locked): a copy of a live datadir is torn; \
                 stop that server (or copy a backup made with mariabackup/xtrabackup --prepare) \
                 and try again",
                datadir.display()
            );
        }
    }
    Ok(())
}

/// Whether another process holds a conflicting `fcntl` lock on `p` (F_GETLK: no lock is taken).
fn locked_by_another_process(p: &Path) -> Result<bool> {
    use std::os::fd::AsRawFd;
    let f = fs::File::open(p).with_context(|| format!("opening {}", p.display()))?;
    // SAFETY: a zeroed flock is a valid argument; F_GETLK only fills it in.
    let mut lk: libc::flock = unsafe { std::mem::zeroed() };
    lk.l_type = libc::F_WRLCK as libc::c_short;
    lk.l_whence = libc::SEEK_SET as libc::c_short;
    // SAFETY: a valid open descriptor and a valid flock.
    let r = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_GETLK, &mut lk) };
    if r != 0 {
        return Err(std::io::Error::last_os_error())
            .with_context(|| format!("asking whether {} is locked", p.display()));
    }
    Ok(lk.l_type != libc::F_UNLCK as libc::c_short)
}

/// What identifies a datadir's content without reading it all (it may be gigabytes): every file's
/// path, size and modification time. A server that ran on it changes at least one of them.
pub fn fingerprint(datadir: &Path) -> Result<String> {
    let mut h = Sha256::new();
    for p in crate::infra::fs::files_under(datadir, "")? {
        let m = fs::metadata(&p).with_context(|| format!("reading {}", p.display()))?;
        let rel = p.strip_prefix(datadir).unwrap_or(&p);
        h.update(rel.as_os_str().as_encoded_bytes());
        h.update(b"\0");
        h.update(m.len().to_le_bytes());
        h.update(m.mtime().to_le_bytes());
        h.update(m.mtime_nsec().to_le_bytes());
    }
    Ok(crate::infra::fs::hex(&h.finalize()))
}

impl Server {
    /// Copies the stopped server datadir `source` into `dir` (which must not hold one), gives the
    /// copy a benchmark user (all privileges on the copy, so a replayed log may use any of its
    /// databases) and a superuser with random passwords, and starts the server on it normally.
    pub fn adopt(spec: &ServerSpec, dir: &Path, source: &Path) -> Result<Server> {
        check_source(source)?;
        let mut skipping = spec.clone();
        // Socket only while anyone may log in.
        skipping.config.extra.push("skip-grant-tables".into());
        skipping.config.extra.push("skip-networking".into());
        let setup = Self::setup(&skipping, dir, |paths| {
            if paths.datadir.exists() {
                anyhow::bail!("{} already holds a datadir", dir.display());
            }
            Ok(())
        })?;
        crate::infra::fs::copy_tree(source, &setup.paths.datadir)
            .with_context(|| format!("copying the datadir {}", source.display()))?;
        // The source's own run-time files describe its server, not this one.
        for f in crate::infra::fs::files_under(&setup.paths.datadir, "pid")? {
            let _ = fs::remove_file(f);
        }
        let creds = Credentials {
            user: "sbtest".into(),
            password: accounts::random_password()?,
            db: "sbtest".into(),
            root_user: ADMIN_USER.into(),
            root_password: accounts::random_password()?,
        };
        let mut srv = Self::launch(&skipping, setup, creds.clone(), false)?;
        accounts::create_on_copy(&mut srv.state.root()?, &creds)?;
        srv.stop()
            .context("stopping the copy after creating its accounts")?;
        let setup = Self::setup(spec, dir, |_| Ok(()))?;
        let mut srv = Self::launch(spec, setup, creds, false)?;
        srv.state.accounts_ready = true;
        srv.state.save()?;
        Ok(srv)
    }
}
