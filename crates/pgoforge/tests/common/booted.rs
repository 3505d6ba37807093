//! A booted Debian 12 for tests: a `debootstrap` tree made from this machine's own apt sources,
//! with Debian's mariadb-server installed at a given release, booted with systemd as its init
//! by `systemd-nspawn -b` (this machine's PID 1 is not systemd), on a private network (the
//! container has only its own loopback: its server cannot clash with one of this machine's).
//!
//! The tree is made once per release and kept in /var/tmp/pgoforge-test-bookworm/ (about a
//! minute and 850 MB; `rm -r` it to remove); each [`Booted`] boots a copy-on-write overlay of it
//! whose changes live in the test's own directory, so every test starts from Debian's fresh
//! install. The overlay and the tmpfs nspawn needs at /run/systemd/nspawn are mounted in a mount
//! namespace of the boot's own (`unshare --mount`): nothing is mounted on the machine, and all of
//! it goes when the container stops.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One tree is made at a time (the tests that boot share the cache).
static MAKING: Mutex<()> = Mutex::new(());

fn run(cmd: &mut Command, what: &str) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run it: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{what} failed:\n{text}");
    text
}

/// The machine's own apt sources, as `(URI, suite)` (a user's mirror or proxy, never a written
/// address).
fn apt_sources() -> Vec<(String, String)> {
    let text = run(
        Command::new("apt-get").args([
            "indextargets",
            "--format",
            "$(TARGET_OF) $(REPO_URI) $(RELEASE)",
        ]),
        "apt-get indextargets",
    );
    let mut v: Vec<(String, String)> = text
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            (f.next() == Some("deb")).then_some(())?;
            Some((f.next()?.to_string(), f.next()?.to_string()))
        })
        .filter(|(_, suite)| suite.starts_with("bookworm"))
        .collect();
    v.sort();
    v.dedup();
    assert!(
        v.iter().any(|(_, s)| s == "bookworm"),
        "this machine's apt sources name no bookworm suite: {text}"
    );
    v
}

/// Bumped whenever what a tree holds changes.
const TREE_VERSION: u32 = 2;

/// The packages of Debian's MariaDB the tree gets, at `release`.
const MARIADB: &[&str] = &[
    "mariadb-server",
    "mariadb-server-core",
    "mariadb-client",
    "mariadb-client-core",
    "mariadb-common",
    "libmariadb3",
    "mariadb-plugin-rocksdb",
];

/// The cached tree with Debian's mariadb-server at `release`, made if missing.
pub fn tree(release: &str) -> PathBuf {
    let pins: Vec<String> = MARIADB.iter().map(|p| format!("{p}={release}")).collect();
    made(
        &release.replace(':', "_"),
        // zstd: a package tarball's README unpacks it with tar --zstd (and installs zstd first
        // where it is missing, which this offline container cannot).
        "systemd,systemd-sysv,dbus,ca-certificates,zstd",
        &pins,
    )
}

/// A plain Debian 12 (`debootstrap --variant=minbase`, nothing added): what a host that never
/// had MariaDB has, to check what a package needs from Debian. Not booted (no systemd in it);
/// its apt sources are this machine's.
pub fn plain() -> PathBuf {
    made("plain", "", &[])
}

/// The cached tree `name`: debootstrap's minbase with `include`, then `install` (apt-get
/// arguments) installed in a chroot; made if missing, one at a time.
fn made(name: &str, include: &str, install: &[String]) -> PathBuf {
    let _one = MAKING.lock().unwrap_or_else(|e| e.into_inner());
    // The tree's own version in its name: a tree made with other packages is not reused.
    let cache = Path::new("/var/tmp/pgoforge-test-bookworm").join(format!("{name}-{TREE_VERSION}"));
    let tree = cache.join("tree");
    // Renamed into place when complete: a tree that exists is a finished one.
    if tree.is_dir() {
        return tree;
    }
    let building = cache.with_extension(format!("building-{}", std::process::id()));
    let _ = fs::remove_dir_all(&building);
    fs::create_dir_all(&building).unwrap();
    let new = building.join("tree");
    let sources = apt_sources();
    let main = sources
        .iter()
        .find(|(_, s)| s == "bookworm")
        .map(|(u, _)| u.clone())
        .unwrap();
    let t0 = Instant::now();
    let mut debootstrap = Command::new("debootstrap");
    debootstrap.arg("--variant=minbase");
    if !include.is_empty() {
        debootstrap.arg(format!("--include={include}"));
    }
    run(
        debootstrap.arg("bookworm").arg(&new).arg(&main),
        "debootstrap (apt-get install debootstrap)",
    );
    let list: String = sources
        .iter()
        .map(|(u, s)| format!("deb {u} {s} main\n"))
        .collect();
    fs::write(new.join("etc/apt/sources.list"), list).unwrap();
    fs::copy("/etc/resolv.conf", new.join("etc/resolv.conf")).unwrap();
    if !install.is_empty() {
        // Installed in a chroot on this machine's network (the booted container has none),
        // with service starts forbidden; systemd starts Debian's service at the first boot, as
        // on a host where it was installed before.
        let script = format!(
            "set -e; {mounts}; \
             printf '#!/bin/sh\\nexit 101\\n' > {t}/usr/sbin/policy-rc.d; chmod 755 {t}/usr/sbin/policy-rc.d; \
             chroot {t} apt-get update -q; \
             DEBIAN_FRONTEND=noninteractive chroot {t} apt-get install -y -q --no-install-recommends {pkgs}; \
             rm {t}/usr/sbin/policy-rc.d; chroot {t} apt-get clean",
            mounts = chroot_mounts(&new),
            t = new.display(),
            pkgs = install.join(" ")
        );
        run(
            Command::new("unshare")
                .args(["--mount", "--propagation", "private", "sh", "-c"])
                .arg(&script),
            &format!("installing {} in the tree", install.join(" ")),
        );
    }
    eprintln!(
        "made the Debian tree {name} in {:.0} s",
        t0.elapsed().as_secs_f64()
    );
    fs::create_dir_all(&cache).unwrap();
    fs::rename(&new, &tree).unwrap();
    let _ = fs::remove_dir_all(&building);
    tree
}

/// The shell commands that give a chroot at `root` its /dev, /proc and /sys (run them in a
/// private mount namespace: they go with it).
pub fn chroot_mounts(root: &Path) -> String {
    format!(
        "mount --rbind /dev {t}/dev; mount -t proc proc {t}/proc; mount --rbind /sys {t}/sys",
        t = root.display()
    )
}

/// A running container: Debian 12 booted by systemd on an overlay of a cached tree.
pub struct Booted {
    lower: PathBuf,
    /// The overlay's upper and work directories (its changes: kept across reboots).
    state: PathBuf,
    child: Option<Child>,
    /// The container's PID 1 (systemd), as this machine sees it.
    pub init: u32,
    pub boots: u32,
}

impl Booted {
    /// Boots `tree` with its changes in `state` (a directory of the test's).
    pub fn boot(tree: &Path, state: &Path) -> Booted {
        for d in ["upper", "work", "merged"] {
            fs::create_dir_all(state.join(d)).unwrap();
        }
        let mut b = Booted {
            lower: tree.to_path_buf(),
            state: state.to_path_buf(),
            child: None,
            init: 0,
            boots: 0,
        };
        b.start();
        b
    }

    fn start(&mut self) {
        let s = &self.state;
        let pidfile = s.join("nspawn.pid");
        let _ = fs::remove_file(&pidfile);
        let script = format!(
            "set -e; mount -t overlay overlay -o lowerdir={lower},upperdir={s}/upper,workdir={s}/work {s}/merged; \
             mkdir -p /run/systemd/nspawn; mount -t tmpfs tmpfs /run/systemd/nspawn; \
             echo $$ > {pidfile}; \
             exec systemd-nspawn --boot --register=no --keep-unit --private-network \
               --machine=pgftest-{id} --console=pipe -D {s}/merged",
            lower = self.lower.display(),
            s = s.display(),
            pidfile = pidfile.display(),
            id = std::process::id()
        );
        let log = fs::File::create(s.join(format!("console-{}.log", self.boots))).unwrap();
        let child = Command::new("unshare")
            .args(["--mount", "--propagation", "private", "sh", "-c"])
            .arg(&script)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("running unshare and systemd-nspawn (apt-get install systemd-container)");
        self.child = Some(child);
        self.boots += 1;
        let t0 = Instant::now();
        self.init = loop {
            let nspawn = fs::read_to_string(&pidfile)
                .ok()
                .and_then(|p| p.trim().parse::<u32>().ok());
            // nspawn's first child sets the container up, then becomes (execs) systemd.
            if let Some(init) = nspawn.and_then(child_of).filter(|p| comm(*p) == "systemd") {
                break init;
            }
            if let Some(st) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("systemd-nspawn exited ({st}):\n{}", self.console());
            }
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "no container init after 60 s:\n{}",
                self.console()
            );
            std::thread::sleep(Duration::from_millis(100));
        };
        // Booted: systemd says "running" (or "degraded", with the failed units named). Until
        // its manager answers, systemctl says "offline" or that it cannot reach it.
        let state = loop {
            let (_, state) = self.sh("systemctl is-system-running --wait");
            if matches!(state.trim(), "running" | "degraded") {
                break state;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(120),
                "systemd never answered in the container:\n{}",
                self.console()
            );
            std::thread::sleep(Duration::from_millis(200));
        };
        if state.trim() != "running" {
            let (_, failed) = self.sh("systemctl --failed --no-legend");
            assert_eq!(
                state.trim(),
                "degraded",
                "systemd did not come up:\n{}",
                self.console()
            );
            eprintln!("the container booted degraded: {failed}");
        }
    }

    fn console(&self) -> String {
        fs::read_to_string(
            self.state
                .join(format!("console-{}.log", self.boots.saturating_sub(1))),
        )
        .unwrap_or_default()
    }

    /// Runs `cmd` with /bin/sh in the container (all its namespaces): exit status and output
    /// (stdout, then stderr).
    pub fn sh(&self, cmd: &str) -> (i32, String) {
        self.sh_input(cmd, None)
    }

    /// As [`Booted::sh`], with `input` on the command's standard input.
    pub fn sh_input(&self, cmd: &str, input: Option<&Path>) -> (i32, String) {
        let mut c = Command::new("nsenter");
        c.args(["-t", &self.init.to_string(), "-a", "/bin/sh", "-c", cmd]);
        c.stdin(match input {
            Some(p) => Stdio::from(fs::File::open(p).unwrap()),
            None => Stdio::null(),
        });
        let out = c.output().expect("running nsenter");
        (
            out.status.code().unwrap_or(-1),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    }

    /// A file of this machine copied into the container at `to`.
    pub fn copy_in(&self, from: &Path, to: &str) {
        let (code, out) = self.sh_input(&format!("cat > {to}"), Some(from));
        assert_eq!(code, 0, "copying {} in: {out}", from.display());
    }

    /// Powers the container off (systemd stops every service cleanly) and waits for it.
    pub fn poweroff(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let _ = self.sh("systemctl poweroff");
        let t0 = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if t0.elapsed() > Duration::from_secs(120) {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the container did not power off in 120 s");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Powers off and boots again on the same state: a reboot of the host.
    pub fn reboot(&mut self) {
        self.poweroff();
        self.start();
    }
}

impl Drop for Booted {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = self.sh("systemctl poweroff");
            let t0 = Instant::now();
            while matches!(child.try_wait(), Ok(None)) && t0.elapsed() < Duration::from_secs(60) {
                std::thread::sleep(Duration::from_millis(100));
            }
            // Killing nspawn's parent leaves nspawn; nspawn's death ends the container.
            if matches!(child.try_wait(), Ok(None)) {
                let nspawn = fs::read_to_string(self.state.join("nspawn.pid")).unwrap_or_default();
                if let Ok(pid) = nspawn.trim().parse::<i32>() {
                    // SAFETY: a plain kill of the systemd-nspawn this helper started.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                }
                let _ = child.wait();
            }
        }
    }
}

fn comm(pid: u32) -> String {
    fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// The first child of `pid` (the container's init is systemd-nspawn's only child).
fn child_of(pid: u32) -> Option<u32> {
    let text = fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).ok()?;
    text.split_whitespace().next()?.parse().ok()
}
