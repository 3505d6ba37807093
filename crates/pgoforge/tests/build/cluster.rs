//! Builds spread over a real sccache-dist cluster, on one machine: a scheduler and a build server
//! (sccache-dist 0.16, bubblewrap sandbox) in a network namespace the test creates, reached over
//! a veth pair at addresses inside it; pgoforge on this side as the client, configured the way
//! sccache-dist users configure it (an sccache config naming the scheduler and a token). The
//! fixture is built with every kind of variant, and sccache's own statistics say which compiles
//! ran on the cluster: the baseline, the instrumented builds and clang's profile-use remotely, GCC's
//! profile-use here. Remote objects equal the ones the same build makes locally; the instrumented
//! binary writes its `.gcda` files where the profile-use build finds them (no missing-profile
//! warning). Everything the test starts or creates is removed again, pass or fail.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/pgofix")
}

use crate::common;
use crate::common::sshd::{sh, Netns};

/// The namespace, its two daemons, the client's private sccache daemon: gone on drop.
struct DistCluster {
    dir: tempfile::TempDir,
    daemons: Vec<Child>,
    env: Vec<(String, String)>,
    /// Last: removed after the daemons are stopped.
    net: Netns,
}

impl Drop for DistCluster {
    fn drop(&mut self) {
        let _ = Command::new("sccache")
            .arg("--stop-server")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .output();
        for d in &mut self.daemons {
            let _ = d.kill();
            let _ = d.wait();
        }
    }
}

impl DistCluster {
    fn start() -> DistCluster {
        for tool in ["sccache", "sccache-dist", "bwrap", "ip"] {
            assert!(
                sh(&format!("command -v {tool}")).0,
                "{tool} is missing: scripts/install-test-deps.sh installs it"
            );
        }
        let id = std::process::id() % 60000;
        let mut c = DistCluster {
            dir: tempfile::tempdir().unwrap(),
            daemons: Vec::new(),
            env: Vec::new(),
            net: Netns::create("dist", 77, 0),
        };
        let ns_ip = c.net.ns_ip.clone();
        let d = c.dir.path().to_path_buf();
        let token = |what: &str| format!("{what}-{:x}", rand_u64());
        let (client_token, server_token) = (token("client"), token("server"));
        fs::write(
            d.join("scheduler.toml"),
            format!(
                "public_addr = \"{ns_ip}:10600\"\n[client_auth]\ntype = \"token\"\ntoken = \"{client_token}\"\n[server_auth]\ntype = \"token\"\ntoken = \"{server_token}\"\n"
            ),
        )
        .unwrap();
        fs::create_dir_all(d.join("toolchains")).unwrap();
        fs::create_dir_all(d.join("sandbox")).unwrap();
        fs::write(
            d.join("server.toml"),
            format!(
                "cache_dir = \"{}\"\npublic_addr = \"{ns_ip}:10501\"\nscheduler_url = \"http://{ns_ip}:10600\"\n[builder]\ntype = \"overlay\"\nbuild_dir = \"{}\"\nbwrap_path = \"{}\"\n[scheduler_auth]\ntype = \"token\"\ntoken = \"{server_token}\"\n",
                d.join("toolchains").display(),
                d.join("sandbox").display(),
                sh("command -v bwrap").1.trim()
            ),
        )
        .unwrap();
        fs::write(
            d.join("client.toml"),
            format!(
                "[dist]\nscheduler_url = \"http://{ns_ip}:10600\"\ntoolchains = []\ncache_dir = \"{}\"\n[dist.auth]\ntype = \"token\"\ntoken = \"{client_token}\"\n",
                d.join("client-toolchains").display()
            ),
        )
        .unwrap();
        for (role, conf) in [("scheduler", "scheduler.toml"), ("server", "server.toml")] {
            let log = fs::File::create(d.join(format!("{role}.log"))).unwrap();
            c.daemons.push(
                c.net
                    .exec("sccache-dist")
                    .args([role, "--config"])
                    .arg(d.join(conf))
                    .env("SCCACHE_NO_DAEMON", "1")
                    .stdout(log.try_clone().unwrap())
                    .stderr(log)
                    .spawn()
                    .unwrap(),
            );
        }
        c.env = vec![
            (
                "SCCACHE_CONF".into(),
                d.join("client.toml").display().to_string(),
            ),
            ("SCCACHE_DIR".into(), d.join("cache").display().to_string()),
            (
                "SCCACHE_SERVER_PORT".into(),
                (20000 + id % 20000).to_string(),
            ),
            // Every compile is made (and so distributed), never served from sccache's cache.
            ("SCCACHE_RECACHE".into(), "1".into()),
        ];
        // Bounded: the scheduler listens, then the server registers, within seconds. The
        // client's sccache daemon connects to the scheduler once, when it starts: it must not
        // start before the scheduler listens, and one that did is stopped and started again.
        let t0 = Instant::now();
        let sched: std::net::SocketAddr = format!("{ns_ip}:10600").parse().unwrap();
        while std::net::TcpStream::connect_timeout(&sched, Duration::from_millis(500)).is_err() {
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "the scheduler never listened on {sched}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        loop {
            let out = Command::new("sccache")
                .arg("--dist-status")
                .envs(c.env.iter().map(|(k, v)| (k, v)))
                .output()
                .unwrap();
            let s = String::from_utf8_lossy(&out.stdout).to_string();
            if s.contains("\"num_servers\":1") {
                break;
            }
            if s.contains("NotConnected") {
                let _ = Command::new("sccache")
                    .arg("--stop-server")
                    .envs(c.env.iter().map(|(k, v)| (k, v)))
                    .output();
            }
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "the build server never joined the scheduler: {s}\nscheduler: {}\nserver: {}",
                fs::read_to_string(d.join("scheduler.log")).unwrap_or_default(),
                fs::read_to_string(d.join("server.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(500));
        }
        c
    }

    /// `pgoforge build` of the fixture, through the cluster (`dist`) or with no cluster
    /// configured; returns build.json.
    fn build(
        &self,
        work: &Path,
        variant: &str,
        compiler: &str,
        profile: Option<&Path>,
        dist: bool,
    ) -> Value {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_pgoforge"));
        cmd.arg("build")
            .arg(format!("--work-dir={}", work.display()))
            .arg(format!(
                "--recipe={}",
                fixture().join("recipe.toml").display()
            ))
            .arg(format!("--source={}", fixture().display()))
            .arg(format!("--variant={variant}"))
            .arg(format!("--compiler={compiler}"))
            .arg("--json");
        if let Some(p) = profile {
            cmd.arg(format!("--profile={}", p.display()));
        }
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        if !dist {
            cmd.env("SCCACHE_CONF", self.dir.path().join("none.toml"));
        }
        let out = cmd.stderr(Stdio::piped()).output().unwrap();
        assert!(
            out.status.success(),
            "{variant} ({compiler}): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

fn rand_u64() -> u64 {
    let mut b = [0u8; 8];
    fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut b))
        .unwrap();
    u64::from_le_bytes(b)
}

/// The object files of a build, by path under its build dir, as what must not differ between a
/// compile on the cluster and one here: the object without its debug sections — the code, data,
/// symbols and relocations. sccache-dist compiles the preprocessed source, so the debug info
/// differs: DWARF column numbers (GCC 12: `.debug_line` columns off by one), how a file's
/// directory is written, and for clang 22 the line table's rows around inlined code. GCC's
/// instrumented objects also carry a compile-time stamp (`gcov_info.stamp`, bytes 16–19 of
/// `.data.rel`) that differs between two local builds as well, so it is zeroed.
fn objects(build_dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let (_, list) = sh(&format!(
        "cd {} && find . -name '*.o' | sort",
        build_dir.display()
    ));
    let scratch = tempfile::tempdir().unwrap();
    list.lines()
        .map(|l| {
            let stripped = scratch.path().join("s.o");
            let (ok, out) = sh(&format!(
                "strip --strip-debug -o {} {}",
                stripped.display(),
                build_dir.join(l).display()
            ));
            assert!(ok, "{out}");
            let mut bytes = fs::read(&stripped).unwrap();
            if sh(&format!(
                "nm {} | grep -q __gcov_merge_add",
                stripped.display()
            ))
            .0
            {
                let (_, sect) = sh(&format!(
                    "readelf -S -W {} | awk '$2 == \".data.rel\" {{print $5}}'",
                    stripped.display()
                ));
                let off = usize::from_str_radix(sect.trim(), 16).expect("gcov_info in .data.rel");
                bytes[off + 16..off + 20].fill(0);
            }
            (PathBuf::from(l), bytes)
        })
        .collect()
}

fn remote(b: &Value) -> (u64, u64) {
    let d = &b["distributed"];
    (
        d["remote"].as_u64().unwrap_or(0),
        d["compilations"].as_u64().unwrap_or(0),
    )
}

/// Builds `variant` here, then again through the cluster in the same (emptied) directory — the
/// build the caller goes on with — and checks that the objects are the same; returns the
/// cluster's build.json.
fn remote_equals_local(
    c: &DistCluster,
    work: &Path,
    variant: &str,
    compiler: &str,
    profile: Option<&Path>,
) -> Value {
    let local = c.build(work, variant, compiler, profile, false);
    assert!(local["distributed"].is_null(), "{local}");
    let dir = PathBuf::from(local["dir"].as_str().unwrap());
    let build_dir = PathBuf::from(local["build_dir"].as_str().unwrap());
    let mine = objects(&build_dir);
    assert!(!mine.is_empty());
    fs::remove_dir_all(&dir).unwrap();
    let b = c.build(work, variant, compiler, profile, true);
    let (r, n) = remote(&b);
    assert!(
        r > 0 && r == n,
        "{variant} ({compiler}): {r} of {n} compiles remote: {b}"
    );
    assert_eq!(local["key"], b["key"], "the cluster is not part of the key");
    let theirs = objects(&build_dir);
    assert_eq!(theirs.len(), mine.len());
    for ((p, a), (_, l)) in theirs.iter().zip(&mine) {
        assert!(
            a == l,
            "{variant} ({compiler}): {} differs between the cluster and here",
            p.display()
        );
    }
    b
}

#[test]
fn builds_go_to_a_real_sccache_dist_cluster_where_they_may_and_stay_here_where_not() {
    if !common::sshd::netns_allowed(
        "builds_go_to_a_real_sccache_dist_cluster_where_they_may_and_stay_here_where_not",
    ) {
        return;
    }
    let c = DistCluster::start();
    let work = c.dir.path().join("work");

    // The plan says where each build's compiles go (its JSON on stdout; warnings, such as the
    // installed server being another release than the one built, on stderr).
    let stderr = c.dir.path().join("plan.stderr");
    let (ok, plan) = sh(&format!(
        "{} {} run --plan --work-dir={} --variants pgo+lto --compiler gcc 2>{}",
        c.env
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" "),
        env!("CARGO_BIN_EXE_pgoforge"),
        work.display(),
        stderr.display()
    ));
    let err = std::fs::read_to_string(&stderr).unwrap_or_default();
    assert!(ok, "{plan}{err}");
    let plan: Value = serde_json::from_str(&plan).unwrap_or_else(|e| panic!("{e}: {plan}{err}"));
    assert_eq!(plan["cluster"]["state"], "ready", "{}", plan["cluster"]);
    let places: Vec<String> = plan["builds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["compiles"]["where"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(places, ["cluster", "cluster", "local"]);

    // GCC: baseline and instrumented remotely (the same objects as here), profile-use here.
    remote_equals_local(&c, &work, "baseline", "gcc", None);
    let gen = remote_equals_local(&c, &work, "pgo-gen", "gcc", None);
    let bin = PathBuf::from(gen["binary"].as_str().unwrap());
    let gen_dir = PathBuf::from(gen["profile_gen_dir"].as_str().unwrap());
    // The binary built on the cluster writes its profiles where the profile-use build reads them.
    let (ok, out) = sh(&format!("{} all 20000", bin.display()));
    assert!(ok, "{out}");
    let gcda = sh(&format!(
        "find {} -name '*.gcda' | wc -l",
        gen_dir.display()
    ))
    .1;
    assert_eq!(gcda.trim(), "4", "one profile per translation unit");
    let pgo = c.build(&work, "pgo", "gcc", Some(&gen_dir), true);
    assert!(
        pgo["distributed"].is_null(),
        "GCC's profile-use stays here: {pgo}"
    );
    assert_eq!(pgo["missing_profile_warnings"], 0, "{pgo}");

    // clang: profile-use goes too, the .profdata with it, and finds every function's counts.
    let cgen = remote_equals_local(&c, &work, "pgo-gen", "clang", None);
    let cdir = PathBuf::from(cgen["profile_gen_dir"].as_str().unwrap());
    let (ok, out) = sh(&format!(
        "LLVM_PROFILE_FILE={}/p-%p.profraw {} all 20000 && llvm-profdata-22 merge -o {}/merged.profdata {}/*.profraw",
        cdir.display(),
        cgen["binary"].as_str().unwrap(),
        c.dir.path().display(),
        cdir.display()
    ));
    assert!(ok, "{out}");
    let profdata = c.dir.path().join("merged.profdata");
    let cpgo = remote_equals_local(&c, &work, "pgo", "clang", Some(&profdata));
    assert_eq!(cpgo["missing_profile_warnings"], 0, "{cpgo}");
}
