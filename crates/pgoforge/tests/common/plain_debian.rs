//! A package's README step 2 followed on a plain Debian 12 (booted::plain: debootstrap's
//! minbase, nothing added), in a chroot on an overlay of the cached tree, on this machine's
//! network and apt sources: what the server's libraries need from Debian, seen missing before
//! the step and present after it. Everything is mounted in a private mount namespace and goes
//! with it; the cached tree is never written.

use std::fs;
use std::path::Path;
use std::process::Command;

use super::booted;
use super::readme::{as_root, readme_step};

/// What the plain Debian showed.
pub struct Followed {
    /// `ldd`'s "not found" libraries of the unpacked server, before step 2 and after it.
    pub missing_before: Vec<String>,
    pub missing_after: Vec<String>,
    /// The server's `--version` after step 2 (empty if it did not run).
    pub version: String,
    /// Everything the chroot printed, for a failure's message.
    pub log: String,
}

/// Follows step 2 of `readme` (as root) for the package `pkg` named `name`, whose server is
/// `bin/SERVER` in it; `work` is the test's own directory.
pub fn follow_step_2(pkg: &Path, name: &str, server: &str, readme: &str, work: &Path) -> Followed {
    let tree = booted::plain();
    for d in ["upper", "work", "merged"] {
        fs::create_dir_all(work.join(d)).unwrap();
    }
    fs::write(
        work.join("step2.sh"),
        format!("cd /root\n{}\n", as_root(&readme_step(readme, 2))),
    )
    .unwrap();
    let m = work.join("merged");
    let bin = format!("{name}/bin/{server}");
    let script = format!(
        "set -e; mount -t overlay overlay -o lowerdir={tree},upperdir={w}/upper,workdir={w}/work {m}; \
         {mounts}; \
         mkdir -p {m}/tmp/peek; tar --zstd -xf {pkg} -C {m}/tmp/peek; \
         echo '== before'; chroot {m} ldd /tmp/peek/{bin} | grep 'not found' || true; \
         cp {pkg} {m}/root/{name}.tar.zst; cp {w}/step2.sh {m}/root/step2.sh; \
         chroot {m} apt-get update -q >/dev/null; \
         echo '== step 2'; chroot {m} env DEBIAN_FRONTEND=noninteractive sh -e /root/step2.sh 2>&1; \
         echo '== after'; chroot {m} ldd /opt/{bin} | grep 'not found' || true; \
         echo '== version'; chroot {m} /opt/{bin} --version",
        tree = tree.display(),
        w = work.display(),
        m = m.display(),
        mounts = booted::chroot_mounts(&m),
        pkg = pkg.display(),
    );
    let out = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg(&script)
        .output()
        .expect("running unshare");
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let section = |from: &str, to: &str| -> Vec<String> {
        let Some(start) = log.find(from) else {
            return Vec::new();
        };
        let rest = &log[start + from.len()..];
        let end = rest.find(to).unwrap_or(rest.len());
        rest[..end]
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(String::from)
            .collect()
    };
    Followed {
        missing_before: section("== before\n", "== step 2"),
        missing_after: section("== after\n", "== version"),
        version: if out.status.success() {
            section("== version\n", "\u{0}").join(" ")
        } else {
            String::new()
        },
        log,
    }
}
