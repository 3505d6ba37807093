//! Another host, for real, on this machine: a network namespace the test creates, reached over a
//! veth pair at addresses inside it, with a real OpenSSH sshd listening there on its own keys and
//! config, and an ssh config that reaches it by name. The client-host and build-host tests use
//! it. Everything it starts or creates is removed on drop, pass or fail.

use std::fs;
use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

pub fn sh(cmd: &str) -> (bool, String) {
    let out = Command::new("sh").args(["-c", cmd]).output().unwrap();
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// Whether this machine lets tests create network namespaces (root, a kernel that allows them).
/// Where it does not, `test` says NOT RUN loudly and the caller returns: a machine that refuses
/// namespaces cannot have these tests, and the output says so rather than passing in silence.
/// (CI runs as root on Debian 12, where they run.)
pub fn netns_allowed(test: &str) -> bool {
    // Tests run at once in one process: each probe a name of its own.
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let probe = format!("pgf-probe-{}-{n}", std::process::id());
    let (ok, out) = sh(&format!("ip netns add {probe} && ip netns del {probe}"));
    if !ok {
        eprintln!(
            "\n*** NOT RUN: {test}: this machine refuses network namespaces ({}); run the \
             tests as root on a machine that allows `ip netns add` ***\n",
            out.trim()
        );
    }
    ok
}

/// A network namespace with a veth pair to it: addresses inside 10.SUBNET.0.0/16, both ends up.
/// On drop every process left in it is killed and both are deleted.
pub struct Netns {
    pub name: String,
    veth: String,
    /// This side's address on the veth pair.
    pub host_ip: String,
    /// The namespace's.
    pub ns_ip: String,
}

impl Drop for Netns {
    fn drop(&mut self) {
        for pid in self.pids() {
            let _ = sh(&format!("kill -9 {pid} 2>/dev/null"));
        }
        let _ = sh(&format!("ip link del {} 2>/dev/null", self.veth));
        let _ = sh(&format!("ip netns del {} 2>/dev/null", self.name));
    }
}

impl Netns {
    /// `kind` names it (`pgf-KIND-N`) and `subnet` keeps kinds apart (several kinds of host can
    /// exist at once); `tag` tells several of one kind apart.
    pub fn create(kind: &str, subnet: u8, tag: u32) -> Netns {
        assert!(
            sh("command -v ip").0,
            "ip is missing: scripts/install-test-deps.sh installs it (iproute2)"
        );
        let id = (std::process::id() * 2 + tag) % 60000;
        let (a, b) = ((id / 62) % 250 + 1, (id % 62) * 4);
        let pair = format!("pgf{}{id}", &kind[..1]);
        // Made before the set-up runs, so that a set-up failing halfway is undone on drop.
        let n = Netns {
            name: format!("pgf-{kind}-{id}"),
            veth: format!("{pair}h"),
            host_ip: format!("10.{subnet}.{a}.{}", b + 1),
            ns_ip: format!("10.{subnet}.{a}.{}", b + 2),
        };
        let setup = format!(
            "set -e; ip netns add {ns}; ip link add {v}h type veth peer name {v}n; \
             ip link set {v}n netns {ns}; ip addr add {h}/30 dev {v}h; ip link set {v}h up; \
             ip netns exec {ns} ip addr add {i}/30 dev {v}n; \
             ip netns exec {ns} ip link set {v}n up; ip netns exec {ns} ip link set lo up",
            ns = n.name,
            v = pair,
            h = n.host_ip,
            i = n.ns_ip
        );
        let (ok, out) = sh(&setup);
        assert!(ok, "creating the network namespace (needs root): {out}");
        n
    }

    /// `ip netns exec NAME PROGRAM …`, for the caller to add arguments to and spawn.
    pub fn exec(&self, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name, program]);
        c
    }

    /// Live processes inside the namespace (zombies are gone: nothing here reaps them).
    pub fn pids(&self) -> Vec<u32> {
        sh(&format!("ip netns pids {} 2>/dev/null", self.name))
            .1
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .filter(|p| pgoforge::infra::pid_alive(*p))
            .collect()
    }
}

pub struct SshHost {
    pub dir: tempfile::TempDir,
    sshd: Option<Child>,
    pub net: Netns,
    /// The name the ssh config gives it.
    pub name: String,
}

impl std::ops::Deref for SshHost {
    type Target = Netns;
    fn deref(&self) -> &Netns {
        &self.net
    }
}

impl Drop for SshHost {
    fn drop(&mut self) {
        if let Some(mut d) = self.sshd.take() {
            let _ = d.kill();
            let _ = d.wait();
        }
    }
}

/// How the host's sshd is set up beyond the defaults.
#[derive(Default)]
pub struct Options<'a> {
    /// Environment variables of the host's sessions, NAME=VALUE (sshd's `SetEnv`), beside the
    /// host's own `TMPDIR` (see [`SshHost::copies`]).
    pub env: &'a [&'a str],
    /// A command that runs sshd (given as its last arguments) in the namespace — e.g. `unshare
    /// -m` with a bind mount, to give the host its own view of a path.
    pub wrap: Option<&'a str>,
}

impl SshHost {
    /// An sshd in a new namespace ([`Netns::create`]'s `kind`, `subnet`, `tag`), reached as
    /// `name`.
    pub fn start(kind: &str, subnet: u8, name: &str, tag: u32, o: Options) -> SshHost {
        for tool in ["ssh", "ssh-keygen", "/usr/sbin/sshd", "unshare"] {
            assert!(
                sh(&format!("command -v {tool}")).0,
                "{tool} is missing: scripts/install-test-deps.sh installs it (openssh-server)"
            );
        }
        let mut c = SshHost {
            dir: tempfile::tempdir().unwrap(),
            sshd: None,
            net: Netns::create(kind, subnet, tag),
            name: name.to_string(),
        };
        let d = c.dir.path().to_path_buf();
        for key in ["host_key", "client_key"] {
            let (ok, out) = sh(&format!(
                "ssh-keygen -q -t ed25519 -N '' -f {}",
                d.join(key).display()
            ));
            assert!(ok, "{out}");
        }
        fs::copy(d.join("client_key.pub"), d.join("authorized_keys")).unwrap();
        fs::create_dir_all(d.join("tmp")).unwrap();
        fs::write(
            d.join("sshd_config"),
            format!(
                "ListenAddress {ip}\nPort 22\nHostKey {d}/host_key\nAuthorizedKeysFile {d}/authorized_keys\n\
                 PidFile {d}/sshd.pid\nUsePAM no\nStrictModes no\nPermitRootLogin prohibit-password\n\
                 PasswordAuthentication no\nKbdInteractiveAuthentication no\n\
                 SetEnv TMPDIR={d}/tmp {env}\n",
                ip = c.ns_ip,
                d = d.display(),
                env = o.env.join(" ")
            ),
        )
        .unwrap();
        fs::write(
            d.join("ssh_config"),
            format!(
                "Host {name}\n  HostName {ip}\n  User root\n  IdentityFile {d}/client_key\n  \
                 IdentitiesOnly yes\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  \
                 LogLevel ERROR\n",
                ip = c.ns_ip,
                d = d.display()
            ),
        )
        .unwrap();
        // sshd's privilege separation directory; /run is a tmpfs, nothing of the system's.
        fs::create_dir_all("/run/sshd").unwrap();
        let log = fs::File::create(d.join("sshd.log")).unwrap();
        let sshd = format!(
            "/usr/sbin/sshd -D -e -f {}",
            d.join("sshd_config").display()
        );
        let script = format!("exec {} {sshd}", o.wrap.unwrap_or(""));
        c.sshd = Some(
            c.net
                .exec("sh")
                .args(["-c", &script])
                .stdout(log.try_clone().unwrap())
                .stderr(log)
                .spawn()
                .unwrap(),
        );
        let t0 = Instant::now();
        while !c.ssh("true").0 {
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "sshd in {} never answered: {}",
                c.net.name,
                fs::read_to_string(d.join("sshd.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        c
    }

    /// What pgoforge left in the host's own temporary directory (its sessions' `TMPDIR`, so
    /// that tests running at once never see each other's copies) under names starting `prefix`.
    pub fn copies(&self, prefix: &str) -> Vec<PathBuf> {
        fs::read_dir(self.dir.path().join("tmp"))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(prefix))
            })
            .collect()
    }

    pub fn ssh_config(&self) -> PathBuf {
        self.dir.path().join("ssh_config")
    }

    /// `cmd` run there (inside single quotes: no single quotes in it).
    pub fn ssh(&self, cmd: &str) -> (bool, String) {
        sh(&format!(
            "ssh -F {} -o BatchMode=yes {} '{cmd}'",
            self.ssh_config().display(),
            self.name
        ))
    }

    /// The live processes in the namespace named `comm`.
    pub fn running(&self, comm: &str) -> Vec<u32> {
        self.pids()
            .into_iter()
            .filter(|p| self::comm(*p) == comm)
            .collect()
    }

    /// Waits (bounded: 30 s, for a loaded machine) until no process named `comm` runs in the
    /// namespace; `what` names the case in the failure.
    pub fn wait_until_gone(&self, comm: &str, what: &str) {
        let t0 = Instant::now();
        while !self.running(comm).is_empty() {
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "{what}: {comm} stayed on {}: {:?}",
                self.name,
                self.running(comm)
                    .iter()
                    .map(|p| fs::read_to_string(format!("/proc/{p}/cmdline"))
                        .unwrap_or_default()
                        .replace('\0', " "))
                    .collect::<Vec<_>>()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

pub fn comm(pid: u32) -> String {
    fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim()
        .to_string()
}
