//! Initializing a datadir: MariaDB by `--bootstrap` with the system-table scripts (what
//! mariadb-install-db does, without needing it built or installed), MySQL and Percona by
//! `--initialize-insecure`. The datadir is made under a temporary name and renamed when complete, so
//! a failure never leaves a half-initialized datadir that a later start would take for a good one.

use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

use super::flavor::{Family, Flavor};
use super::layout::Layout;
use crate::infra::fs::tail;

pub fn initialize(
    env: &[(String, String)],
    binary: &Path,
    flavor: &Flavor,
    layout: &Layout,
    cnf: &Path,
    datadir: &Path,
    error_log: &Path,
) -> Result<()> {
    if datadir.exists() {
        bail!(
            "{} already exists; refusing to initialize over it",
            datadir.display()
        );
    }
    let tmp = datadir.with_extension("initializing");
    let _ = fs::remove_dir_all(&tmp);
    let result = run(env, binary, flavor, layout, cnf, &tmp, error_log);
    match result {
        Ok(()) => fs::rename(&tmp, datadir)
            .with_context(|| format!("renaming {} to {}", tmp.display(), datadir.display())),
        Err(e) => {
            let _ = fs::remove_dir_all(&tmp);
            Err(e)
        }
    }
}

fn run(
    env: &[(String, String)],
    binary: &Path,
    flavor: &Flavor,
    layout: &Layout,
    cnf: &Path,
    dir: &Path,
    error_log: &Path,
) -> Result<()> {
    let mut cmd = Command::new(binary);
    cmd.envs(env.iter().map(|(k, v)| (k, v)));
    // The bootstrap dies with pgoforge too, like the server.
    crate::infra::interrupt::dies_with_pgoforge(&mut cmd);
    cmd.arg(format!("--defaults-file={}", cnf.display()))
        .arg(format!("--datadir={}", dir.display()));
    match flavor.family {
        Family::MariaDb => {
            let scripts = layout.bootstrap_scripts(binary)?;
            fs::create_dir_all(dir)
                .with_context(|| format!("creating datadir {}", dir.display()))?;
            let mut sql = format!(
                "create database if not exists mysql;\nuse mysql;\nSET @auth_root_socket='{}';\n",
                super::accounts::os_user()
            );
            for s in &scripts {
                sql.push_str(
                    &fs::read_to_string(s).with_context(|| format!("reading {}", s.display()))?,
                );
                sql.push('\n');
            }
            cmd.args([
                "--bootstrap",
                "--log-warnings=0",
                "--enforce-storage-engine=",
                "--max_allowed_packet=8M",
            ]);
            cmd.stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::piped());
            let mut child = cmd
                .spawn()
                .with_context(|| format!("starting {} --bootstrap", binary.display()))?;
            let mut stdin = child.stdin.take().expect("piped stdin");
            let writer = std::thread::spawn(move || {
                crate::infra::runner::block_sigpipe_in_this_thread();
                stdin.write_all(sql.as_bytes())
            });
            let out = child
                .wait_with_output()
                .context("waiting for the bootstrap")?;
            let wrote = writer.join().expect("bootstrap writer thread");
            if !out.status.success() || wrote.is_err() {
                bail!(
                    "initializing {} with {} --bootstrap failed ({}): {}\nerror log:\n{}{}",
                    dir.display(),
                    binary.display(),
                    out.status,
                    String::from_utf8_lossy(&out.stderr).trim(),
                    tail(error_log, 15),
                    crate::infra::fs::low_space_note(error_log.parent().unwrap_or(dir))
                );
            }
            // As mariadb-install-db does, so the server does not ask for mariadb-upgrade.
            let v = format!("{}.{}.{}-MariaDB", flavor.major, flavor.minor, flavor.patch);
            fs::write(dir.join("mysql_upgrade_info"), v).context("writing mysql_upgrade_info")?;
        }
        Family::MySql | Family::Percona => {
            if let Some(parent) = dir.parent() {
                fs::create_dir_all(parent)
                    .with_context(|| format!("creating {}", parent.display()))?;
            }
            cmd.arg("--initialize-insecure")
                .stdout(Stdio::null())
                .stderr(Stdio::piped());
            let out = cmd
                .output()
                .with_context(|| format!("running {} --initialize-insecure", binary.display()))?;
            if !out.status.success() {
                bail!(
                    "initializing {} with {} --initialize-insecure failed ({}): {}\nerror log:\n{}{}",
                    dir.display(),
                    binary.display(),
                    out.status,
                    String::from_utf8_lossy(&out.stderr).trim(),
                    tail(error_log, 15),
                    crate::infra::fs::low_space_note(error_log.parent().unwrap_or(dir))
                );
            }
        }
    }
    Ok(())
}
