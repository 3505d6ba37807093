//! A full disk: the work dir on a small tmpfs. A server's bootstrap and a build that run out of
//! space fail with a message that names the full file system, leave nothing that passes for
//! finished (no datadir, no state, no build.json), and the same command succeeds once there is
//! room. Mounting needs CAP_SYS_ADMIN: where the mount is refused the test says so loudly and
//! does not run (it cannot be faked without the kernel saying ENOSPC).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(dir).unwrap();
        let st = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .status()
            .ok()?;
        st.success().then(|| Tmpfs(dir.to_path_buf()))
    }

    fn resize(&self, size: &str) {
        let st = Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.0)
            .status()
            .unwrap();
        assert!(st.success());
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

fn pgoforge(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_pgoforge"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/pgofix")
}

fn files_named(root: &Path, name: &str) -> Vec<PathBuf> {
    common::paths_under(root)
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n == name))
        .collect()
}

#[test]
fn a_full_disk_is_named_and_nothing_passes_for_finished() {
    let t = tempfile::tempdir().unwrap();
    let mnt = t.path().join("small");
    let Some(fs) = Tmpfs::mount(&mnt, "8m") else {
        eprintln!(
            "\n*** disk_full: NOT RUN — mounting a tmpfs was refused here (needs CAP_SYS_ADMIN) ***\n"
        );
        return;
    };
    let work = mnt.join("w");
    let w = work.to_str().unwrap();

    // A server's first start: InnoDB cannot create its tablespace in 8 MiB.
    let (code, err) = pgoforge(&["server", "start", "--work-dir", w]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("a full disk is the likely cause"), "{err}");
    assert!(files_named(&work, "state.json").is_empty());
    assert!(files_named(&work, "data").is_empty());
    assert!(files_named(&work, "data.initializing").is_empty());

    // A build that runs out of space part-way (1 MiB: configure fits, the objects do not).
    let _ = std::fs::remove_dir_all(&work);
    fs.resize("1m");
    let source = fixture();
    let recipe = source.join("recipe.toml");
    let args = [
        "build",
        "--recipe",
        recipe.to_str().unwrap(),
        "--source",
        source.to_str().unwrap(),
        "--work-dir",
        w,
    ];
    let (code, err) = pgoforge(&args);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("a full disk is the likely cause"), "{err}");
    assert!(
        files_named(&work, "build.json").is_empty(),
        "a failed build is not recorded as finished"
    );

    // With room again the same command finishes, and the binary runs.
    fs.resize("64m");
    let (code, err) = pgoforge(&args);
    assert_eq!(code, 0, "{err}");
    let done = files_named(&work, "build.json");
    assert_eq!(done.len(), 1);
    let bin = done[0].parent().unwrap().join("build/pgofix");
    let out = Command::new(&bin).args(["all", "2000"]).output().unwrap();
    assert!(out.status.success() && !out.stdout.is_empty());
}
