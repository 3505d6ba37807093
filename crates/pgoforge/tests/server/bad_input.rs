//! The bad-input suite: hostile or mistaken inputs across every subcommand — numbers out of range,
//! paths that are missing, directories, unwritable or escaping, malformed and injected recipes,
//! wrong hashes, non-server binaries, corrupt state, results and profiles. Each case runs the real
//! binary in a fresh directory and must end with the expected exit code and a message naming the
//! cause, no panic, and nothing left behind: no process, no half-written file, no file outside
//! the work dir, nothing new under /etc/apt.

use crate::common;

use std::collections::BTreeSet;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Refusing bad input takes moments; a case still running after this started real work (a
/// fetch, a build) before checking its input — itself a failure.
const LIMIT: Duration = Duration::from_secs(60);

struct Ran {
    code: i32,
    stderr: String,
    elapsed: Duration,
}

/// Runs pgoforge in its own process group, killed with everything it started after `LIMIT`.
fn pgoforge(args: &[&str]) -> Ran {
    let t0 = Instant::now();
    let err = tempfile::NamedTempFile::new().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_pgoforge"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err.reopen().unwrap())
        .process_group(0)
        .spawn()
        .expect("running pgoforge");
    let code = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st.code().unwrap_or(-1);
        }
        if t0.elapsed() > LIMIT {
            // SAFETY: signalling the process group we created.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            break -9;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ran {
        code,
        stderr: std::fs::read_to_string(err.path()).unwrap_or_default(),
        elapsed: t0.elapsed(),
    }
}

/// What a case prepares in its directory before running.
type Setup = fn(&Path);

struct Case {
    name: &'static str,
    /// `{t}` is the case's directory, `{w}` its work dir (`{t}/work`).
    args: &'static [&'static str],
    setup: Option<Setup>,
    /// The exit status (pgoforge::infra::exit): 2 when the command line, a recipe or a path it
    /// names is refused before work starts; 1 when work started and failed.
    code: i32,
    /// Every one must appear in stderr (case-insensitive): the cause, and where it helps the fix.
    needles: &'static [&'static str],
}

const fn case(
    name: &'static str,
    args: &'static [&'static str],
    code: i32,
    needles: &'static [&'static str],
) -> Case {
    Case {
        name,
        args,
        setup: None,
        code,
        needles,
    }
}

const fn with(
    name: &'static str,
    setup: Setup,
    args: &'static [&'static str],
    code: i32,
    needles: &'static [&'static str],
) -> Case {
    Case {
        name,
        args,
        setup: Some(setup),
        code,
        needles,
    }
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

fn recipe(dir: &Path, body: &str) {
    write(dir, "r.toml", body);
}

const RECIPE_HEAD: &str = "extends = \"mariadb-10.11\"\nname = \"x\"\n";

fn cases() -> Vec<Case> {
    vec![
        // --- oltp: the workload driver's options
        case(
            "oltp: unknown test",
            &["oltp", "run", "oltp_bogus"],
            2,
            &["oltp_bogus"],
        ),
        case(
            "oltp: no server at the socket",
            &[
                "oltp",
                "run",
                "oltp_point_select",
                "--mysql-socket={t}/none.sock",
                "--time=1",
            ],
            1,
            &["none.sock", "cannot connect"],
        ),
        case(
            "oltp: read timeout 0",
            &["oltp", "run", "oltp_point_select", "--mysql-read-timeout=0"],
            2,
            &["--mysql-read-timeout", "out of range"],
        ),
        case(
            "oltp: connect timeout not a number",
            &[
                "oltp",
                "run",
                "oltp_point_select",
                "--mysql-connect-timeout=soon",
            ],
            2,
            &["--mysql-connect-timeout", "not a number"],
        ),
        case(
            "oltp: port out of range",
            &["oltp", "run", "oltp_point_select", "--mysql-port=99999"],
            2,
            &["--mysql-port", "99999"],
        ),
        case(
            "oltp: threads 0",
            &["oltp", "run", "oltp_point_select", "--threads=0"],
            2,
            &["--threads"],
        ),
        case(
            "oltp: unknown random distribution",
            &["oltp", "run", "oltp_point_select", "--rand-type=bogus"],
            2,
            &["--rand-type", "bogus"],
        ),
        case(
            "oltp: error list not numbers",
            &[
                "oltp",
                "run",
                "oltp_point_select",
                "--mysql-ignore-errors=abc",
            ],
            2,
            &["--mysql-ignore-errors", "abc"],
        ),
        case(
            "oltp: negative time",
            &["oltp", "run", "oltp_point_select", "--time=-1"],
            2,
            &["--time"],
        ),
        case(
            "oltp: client CPUs beyond the machine",
            &[
                "oltp",
                "run",
                "oltp_point_select",
                "--client-cpus=0-4000000000",
            ],
            2,
            &["--client-cpus"],
        ),
        // --- server
        case(
            "server: binary is a directory",
            &["server", "start", "--work-dir={w}", "--binary={t}"],
            2,
            &["is a directory", "--binary"],
        ),
        case(
            "server: binary missing",
            &["server", "start", "--work-dir={w}", "--binary={t}/mariadbd"],
            2,
            &["mariadbd", "does not exist", "--binary"],
        ),
        case(
            "server: binary is not a server",
            &["server", "start", "--work-dir={w}", "--binary=/bin/ls"],
            2,
            &["/bin/ls"],
        ),
        case(
            "server: name escapes the work dir",
            &[
                "server",
                "start",
                "--work-dir={w}",
                "--name=../x",
                "--binary=/usr/sbin/mariadbd",
            ],
            2,
            &["--name", "../x"],
        ),
        case(
            "server: CPU range too large",
            &[
                "server",
                "start",
                "--work-dir={w}",
                "--cpus=0-4000000000",
                "--binary=/usr/sbin/mariadbd",
            ],
            1,
            &["cpu 4000000000 does not exist", "this machine has"],
        ),
        case(
            "server: buffer pool 0 fails the bootstrap",
            &[
                "server",
                "start",
                "--work-dir={w}",
                "--buffer-pool-mb=0",
                "--binary=/usr/sbin/mariadbd",
            ],
            1,
            &["buffer"],
        ),
        case(
            "server: unknown server option",
            &[
                "server",
                "start",
                "--work-dir={w}",
                "--set=innodb_bogus_option=1",
                "--binary=/usr/sbin/mariadbd",
            ],
            1,
            &["innodb_bogus_option"],
        ),
        case(
            "server: --set without a value",
            &[
                "server",
                "start",
                "--work-dir={w}",
                "--set=noequals",
                "--binary=/usr/sbin/mariadbd",
            ],
            2,
            &["--set", "NAME=VALUE"],
        ),
        case(
            "server: stop an instance that does not exist",
            &["server", "stop", "--work-dir={w}", "--name=nosuch"],
            1,
            &["nosuch"],
        ),
        // --- build: variants, compilers, recipes, sources, profiles, work dirs
        case(
            "build: unknown variant",
            &["build", "--work-dir={w}", "--variant=turbo"],
            2,
            &["turbo"],
        ),
        case(
            "build: compiler that is not a compiler",
            &[
                "build",
                "--work-dir={w}",
                "--compiler=/bin/ls",
                "--flag-family=gcc",
                "--plan",
            ],
            2,
            &["/bin/ls", "compile"],
        ),
        case(
            "build: compiler path missing",
            &[
                "build",
                "--work-dir={w}",
                "--compiler={t}/gcc",
                "--flag-family=gcc",
                "--plan",
            ],
            2,
            &["gcc"],
        ),
        case(
            "build: compiler version not installed",
            &["build", "--work-dir={w}", "--compiler=clang-99", "--plan"],
            2,
            &["clang-99"],
        ),
        case(
            "build: recipe file missing",
            &[
                "build",
                "--work-dir={w}",
                "--recipe={t}/missing.toml",
                "--plan",
            ],
            2,
            &["missing.toml"],
        ),
        with(
            "build: recipe not TOML",
            |d| recipe(d, "name = \"x\nthis is not toml ["),
            &["build", "--work-dir={w}", "--recipe={t}/r.toml", "--plan"],
            2,
            &["r.toml"],
        ),
        with(
            "build: recipe with an unknown field",
            |d| recipe(d, &format!("{RECIPE_HEAD}colour = \"blue\"\n")),
            &["build", "--work-dir={w}", "--recipe={t}/r.toml", "--plan"],
            2,
            &["colour"],
        ),
        with(
            "build: recipe name escapes the work dir",
            |d| recipe(d, "extends = \"mariadb-10.11\"\nname = \"../../escape\"\n"),
            &["build", "--work-dir={w}", "--recipe={t}/r.toml", "--plan"],
            2,
            &["name", "../../escape"],
        ),
        with(
            "build: recipe suite injects an apt stanza",
            |d| {
                recipe(
                    d,
                    "extends = \"mariadb-10.11\"\nname = \"inj\"\n[source]\nkind = \"debian\"\npackage = \"mariadb\"\nversion = \"1:10.11.18-0+deb12u1\"\nsuite = \"bookworm\\nTypes: deb\\nURIs: http://evil.example/\"\n",
                )
            },
            &["build", "--work-dir={w}", "--recipe={t}/r.toml"],
            2,
            &["suite"],
        ),
        with(
            "build: recipe apt package that is an apt option",
            |d| {
                recipe(
                    d,
                    "extends = \"mariadb-10.11\"\nname = \"inj2\"\napt_packages = [\"-oAPT::Update::Pre-Invoke::=touch /tmp/pwned\"]\n",
                )
            },
            &[
                "run",
                "--work-dir={w}",
                "--recipe={t}/r.toml",
                "--install-deps",
            ],
            2,
            &["-oAPT"],
        ),
        case(
            "build: source directory missing",
            &["build", "--work-dir={w}", "--source={t}/src", "--plan"],
            2,
            &["src does not exist", "a tarball or a url"],
        ),
        case(
            "build: file:// source",
            &[
                "build",
                "--work-dir={w}",
                "--source=file:///etc/passwd",
                "--sha256=00",
            ],
            2,
            &["file://", "--source /etc/passwd"],
        ),
        case(
            "build: ftp source",
            &[
                "build",
                "--work-dir={w}",
                "--source=ftp://example.com/x.tar.gz",
                "--sha256=00",
            ],
            2,
            &["ftp", "http"],
        ),
        case(
            "build: URL without a hash",
            &[
                "build",
                "--work-dir={w}",
                "--source=http://127.0.0.1:9/x.tar.gz",
            ],
            2,
            &["--sha256"],
        ),
        with(
            "build: tarball with the wrong hash",
            |d| write(d, "x.tar.gz", "not really a tarball"),
            &[
                "build",
                "--work-dir={w}",
                "--source={t}/x.tar.gz",
                "--sha256=0000000000000000000000000000000000000000000000000000000000000000",
            ],
            1,
            &["sha256", "x.tar.gz"],
        ),
        with(
            "build: hash that is not hex",
            |d| write(d, "x.tar.gz", "x"),
            &[
                "build",
                "--work-dir={w}",
                "--source={t}/x.tar.gz",
                "--sha256=zzzz",
            ],
            2,
            &["sha256"],
        ),
        with(
            "build: tarball that is not a tarball",
            |d| write(d, "x.tar.gz", "garbage, not gzip"),
            &["build", "--work-dir={w}", "--source={t}/x.tar.gz"],
            1,
            &["x.tar.gz"],
        ),
        case(
            "build: profile missing",
            &[
                "build",
                "--work-dir={w}",
                "--variant=pgo",
                "--profile={t}/profile",
            ],
            2,
            &["--profile", "does not exist"],
        ),
        case(
            "build: pgo without a profile",
            &["build", "--work-dir={w}", "--variant=pgo+lto"],
            2,
            &["needs a profile", "pgoforge train"],
        ),
        with(
            "build: work dir is a file",
            |d| write(d, "afile", "x"),
            &["build", "--work-dir={t}/afile", "--plan"],
            2,
            &["afile"],
        ),
        case(
            "build: work dir unwritable",
            &["build", "--work-dir=/proc/pgoforge-work", "--plan"],
            2,
            &["/proc/pgoforge-work"],
        ),
        // --- train
        case(
            "train: mix weight not a number",
            &["train", "--work-dir={w}", "--mix=oltp_read_only:abc"],
            2,
            &[
                "--mix",
                "bad seconds 'abc'",
                "test[@text|@ps][:seconds[:threads]]",
            ],
        ),
        case(
            "train: mix names an unknown workload",
            &["train", "--work-dir={w}", "--mix=oltp_bogus:10"],
            2,
            &["oltp_bogus"],
        ),
        case(
            "train: no tables",
            &["train", "--work-dir={w}", "--train-tables=0"],
            2,
            &["--train-tables"],
        ),
        case(
            "train: --set without a value",
            &["train", "--work-dir={w}", "--set=innodb_buffer_pool_size"],
            2,
            &["--set", "not NAME=VALUE"],
        ),
        case(
            "train: --set value with a newline (my.cnf injection)",
            &[
                "train",
                "--work-dir={w}",
                "--set=port=3306\n[client]\nuser=root",
            ],
            2,
            &["--set", "control character"],
        ),
        case(
            "run: --set name that is not an option",
            &["run", "--work-dir={w}", "--set=[mysqld]x=1", "--plan"],
            2,
            &["--set", "not a server option name"],
        ),
        // --- bolt
        case(
            "bolt: binary missing",
            &["bolt", "--work-dir={w}", "--binary={t}/mariadbd"],
            2,
            &["mariadbd"],
        ),
        case(
            "bolt: binary is a directory",
            &["bolt", "--work-dir={w}", "--binary={t}"],
            2,
            &["is a directory"],
        ),
        case(
            "bolt: binary without relocations",
            &["bolt", "--work-dir={w}", "--binary=/usr/sbin/mariadbd"],
            2,
            &["not bolt-ready", "--emit-relocs"],
        ),
        // --- gate
        case(
            "gate: baseline missing",
            &[
                "gate",
                "--work-dir={w}",
                "--baseline={t}/mariadbd",
                "--candidate=x=/usr/sbin/mariadbd",
            ],
            2,
            &["mariadbd"],
        ),
        case(
            "gate: candidate without a name",
            &[
                "gate",
                "--work-dir={w}",
                "--baseline=/usr/sbin/mariadbd",
                "--candidate=/usr/sbin/mariadbd",
            ],
            2,
            &["--candidate", "NAME=PATH"],
        ),
        case(
            "gate: candidate is not a server",
            &[
                "gate",
                "--work-dir={w}",
                "--baseline=/usr/sbin/mariadbd",
                "--candidate=x=/bin/ls",
            ],
            2,
            &["/bin/ls"],
        ),
        case(
            "gate: no events",
            &[
                "gate",
                "--work-dir={w}",
                "--baseline=/usr/sbin/mariadbd",
                "--candidate=x=/usr/sbin/mariadbd",
                "--events=0",
            ],
            2,
            &["--events"],
        ),
        case(
            "gate: MTR needs the baseline inside its build tree",
            &[
                "gate",
                "--work-dir={w}",
                "--gate=mtr",
                "--baseline=/usr/sbin/mariadbd",
                "--candidate=x=/usr/sbin/mariadbd",
            ],
            2,
            &["build tree", "/usr/sbin/mariadbd", "sql/mariadbd"],
        ),
        case(
            "gate: MTR tests with the quick gate",
            &[
                "gate",
                "--work-dir={w}",
                "--mtr-suite=main.ps",
                "--baseline=/usr/sbin/mariadbd",
                "--candidate=x=/usr/sbin/mariadbd",
            ],
            2,
            &["--mtr-suite", "--gate quick"],
        ),
        case(
            "gate: unknown gate",
            &[
                "gate",
                "--work-dir={w}",
                "--gate=thorough",
                "--baseline=/usr/sbin/mariadbd",
                "--candidate=x=/usr/sbin/mariadbd",
            ],
            2,
            &["thorough", "quick, mtr or full"],
        ),
        case(
            "run: cs-pgo with gcc",
            &[
                "run",
                "--work-dir={w}",
                "--variants=cs-pgo+lto",
                "--compiler=gcc",
                "--plan",
            ],
            2,
            &["cs-pgo+lto", "only clang", "--compiler clang"],
        ),
        case(
            "run: an MTR gate for a recipe without MTR tests",
            &[
                "run",
                "--work-dir={w}",
                "--recipe=mysql-8.4",
                "--gate=mtr",
                "--plan",
            ],
            2,
            &["mysql-8.4", "no MTR tests", "--gate quick"],
        ),
        // --- bench
        case(
            "bench: no rounds",
            &[
                "bench",
                "--work-dir={w}",
                "--baseline=base=/usr/sbin/mariadbd",
                "--binary=x=/usr/sbin/mariadbd",
                "--rounds=0",
            ],
            2,
            &["--rounds"],
        ),
        case(
            "bench: a target interval of 0",
            &[
                "bench",
                "--work-dir={w}",
                "--baseline=base=/usr/sbin/mariadbd",
                "--binary=x=/usr/sbin/mariadbd",
                "--target-ci=0",
            ],
            2,
            &["--target-ci 0", "above 0"],
        ),
        case(
            "bench: --max-rounds without --target-ci",
            &[
                "bench",
                "--work-dir={w}",
                "--baseline=base=/usr/sbin/mariadbd",
                "--binary=x=/usr/sbin/mariadbd",
                "--max-rounds=20",
            ],
            2,
            &["--max-rounds", "--target-ci"],
        ),
        case(
            "bench: --max-rounds below --rounds",
            &[
                "bench",
                "--work-dir={w}",
                "--baseline=base=/usr/sbin/mariadbd",
                "--binary=x=/usr/sbin/mariadbd",
                "--rounds=12",
                "--target-ci=2",
                "--max-rounds=10",
            ],
            2,
            &["--max-rounds 10", "12 rounds"],
        ),
        case(
            "run: a target interval that is not a number",
            &["run", "--work-dir={w}", "--target-ci=nan"],
            2,
            &["--target-ci"],
        ),
        case(
            "calibrate: no such server",
            &[
                "calibrate",
                "--work-dir={w}",
                "--binary={t}/missing/mariadbd",
            ],
            2,
            &["--binary", "missing/mariadbd"],
        ),
        case(
            "calibrate: with --target-ci",
            &[
                "calibrate",
                "--work-dir={w}",
                "--binary=/usr/sbin/mariadbd",
                "--target-ci=2",
            ],
            2,
            &["--target-ci", "--rounds"],
        ),
        case(
            "bench: zero-second runs",
            &[
                "bench",
                "--work-dir={w}",
                "--baseline=base=/usr/sbin/mariadbd",
                "--binary=x=/usr/sbin/mariadbd",
                "--time=0",
            ],
            2,
            &["--time"],
        ),
        case(
            "bench: no threads",
            &[
                "bench",
                "--work-dir={w}",
                "--baseline=base=/usr/sbin/mariadbd",
                "--binary=x=/usr/sbin/mariadbd",
                "--threads=0",
            ],
            2,
            &["--threads"],
        ),
        case(
            "bench: unknown workload",
            &[
                "bench",
                "--work-dir={w}",
                "--baseline=base=/usr/sbin/mariadbd",
                "--binary=x=/usr/sbin/mariadbd",
                "--workloads=oltp_bogus",
            ],
            2,
            &["oltp_bogus"],
        ),
        case(
            "bench: contender with an empty path",
            &[
                "bench",
                "--work-dir={w}",
                "--baseline=base=/usr/sbin/mariadbd",
                "--binary=x=",
            ],
            2,
            &["--binary", "names no binary"],
        ),
        case(
            "bench: contender is not a server",
            &[
                "bench",
                "--work-dir={w}",
                "--baseline=base=/usr/sbin/mariadbd",
                "--binary=x=/bin/ls",
                "--allow-busy",
            ],
            2,
            &["contender x", "/bin/ls is not a mysql-family server"],
        ),
        case(
            "bench: unknown measure",
            &[
                "bench",
                "--work-dir={w}",
                "--baseline=base=/usr/sbin/mariadbd",
                "--measure=vibes",
            ],
            2,
            &["vibes"],
        ),
        case(
            "bench: resume a run that does not exist",
            &[
                "bench",
                "--work-dir={w}",
                "--baseline=base=/usr/sbin/mariadbd",
                "--binary=x=/usr/sbin/mariadbd",
                "--run={t}/nosuch",
                "--resume",
            ],
            2,
            &["nosuch does not exist", "drop --resume"],
        ),
        // --- report
        case(
            "report: run directory missing",
            &["report", "{t}/nosuch"],
            2,
            &["nosuch"],
        ),
        with(
            "report: results are not JSON",
            |d| {
                std::fs::create_dir_all(d.join("run")).unwrap();
                write(&d.join("run"), "results.jsonl", "this is not json\n");
            },
            &["report", "{t}/run"],
            2,
            &["run"],
        ),
        case(
            "report: unknown format",
            &["report", "{t}", "--format=pdf"],
            2,
            &["pdf"],
        ),
        with(
            "report: baseline that is not a contender",
            copy_committed_run,
            &["report", "{t}/run", "--baseline=nosuch"],
            2,
            &["nosuch"],
        ),
        // --- run (the plan is resolved before anything is touched)
        case(
            "run: unknown variant",
            &["run", "--work-dir={w}", "--variants=pgo,turbo", "--plan"],
            2,
            &["turbo"],
        ),
        case(
            "run: a variant twice",
            &["run", "--work-dir={w}", "--variants=pgo,pgo", "--plan"],
            2,
            &["pgo", "twice"],
        ),
        case(
            "run: no rounds",
            &["run", "--work-dir={w}", "--rounds=0", "--plan"],
            2,
            &["--rounds"],
        ),
        case(
            "run: outside binary missing",
            &[
                "run",
                "--work-dir={w}",
                "--binary=debian={t}/mariadbd",
                "--plan",
            ],
            2,
            &["mariadbd"],
        ),
        case(
            "run: profile missing",
            &["run", "--work-dir={w}", "--profile={t}/nosuch", "--plan"],
            2,
            &["nosuch"],
        ),
        case(
            "run: --retrain-if-stale without --profile-from",
            &["run", "--work-dir={w}", "--retrain-if-stale", "--plan"],
            2,
            &["--profile-from"],
        ),
        case(
            "run: stale threshold out of range",
            &[
                "run",
                "--work-dir={w}",
                "--profile-from={t}/nosuch.tar.zst",
                "--stale-threshold=150",
                "--plan",
            ],
            2,
            &["150", "percentage from 0 to 100"],
        ),
        // --- package and corrupt state
        case(
            "package: nothing has run",
            &["package", "pgo", "--work-dir={w}"],
            2,
            &["it must exist", "pgoforge run"],
        ),
        with(
            "package: run record is torn",
            |d| {
                std::fs::create_dir_all(d.join("work")).unwrap();
                write(&d.join("work"), "run.json", "{\"stages\": [tru");
            },
            &["package", "pgo", "--work-dir={w}"],
            1,
            &["run.json"],
        ),
        // --- rebuild
        case(
            "rebuild: package missing",
            &["rebuild", "{t}/nosuch.tar.zst", "--work-dir={w}"],
            2,
            &["nosuch.tar.zst", "does not exist"],
        ),
        with(
            "rebuild: not a package",
            |d| write(d, "junk.tar.zst", "not an archive"),
            &["rebuild", "{t}/junk.tar.zst", "--work-dir={w}"],
            2,
            &["junk.tar.zst", "not a pgoforge package"],
        ),
        with(
            "rebuild: sidecar missing",
            |d| write(d, "p.tar.zst", "x"),
            &[
                "rebuild",
                "{t}/p.tar.zst",
                "--sidecar={t}/nosuch.rebuild.tar.zst",
                "--work-dir={w}",
            ],
            2,
            &["--sidecar", "nosuch.rebuild.tar.zst"],
        ),
    ]
}

/// A committed run, copied: a valid run directory to feed bad options to.
fn copy_committed_run(d: &Path) {
    let src =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/results/mariadb-10.11-default");
    let dst = d.join("run");
    std::fs::create_dir_all(&dst).unwrap();
    for e in std::fs::read_dir(&src).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), dst.join(e.file_name())).unwrap();
        }
    }
}

/// Every path under `dir` (relative), directories included.
fn tree(dir: &Path) -> BTreeSet<PathBuf> {
    common::paths_under(dir)
        .into_iter()
        .map(|p| p.strip_prefix(dir).unwrap().to_path_buf())
        .collect()
}

/// A name that marks unfinished work.
fn half_written(p: &Path) -> bool {
    let n = p
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    n.contains(".tmp")
        || n.ends_with(".building")
        || n.ends_with(".partial")
        || n.contains("initializing")
}

fn run_case(c: &Case) -> Result<(), String> {
    let t = tempfile::tempdir().unwrap();
    let tdir = t.path().to_string_lossy().to_string();
    if let Some(setup) = c.setup {
        setup(t.path());
    }
    let before = tree(t.path());
    let apt_before = tree(Path::new("/etc/apt"));
    let args: Vec<String> = c
        .args
        .iter()
        .map(|a| {
            a.replace("{w}", &format!("{tdir}/work"))
                .replace("{t}", &tdir)
        })
        .collect();
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = pgoforge(&argv);
    let mut problems = Vec::new();
    if r.code == -9 {
        problems.push(format!(
            "still running after {LIMIT:?}: real work started before the input was checked"
        ));
    }
    let stderr = r.stderr.to_lowercase();
    if r.code != c.code {
        problems.push(format!("exit code {} (want {})", r.code, c.code));
    }
    if stderr.contains("panicked") || r.code == 101 {
        problems.push("panicked".into());
    }
    for n in c.needles {
        if !stderr.contains(&n.to_lowercase()) {
            problems.push(format!("stderr does not mention '{n}'"));
        }
    }
    let procs: Vec<String> = common::processes_mentioning(t.path())
        .into_iter()
        .map(|(pid, cmd)| format!("{pid}: {cmd}"))
        .collect();
    if !procs.is_empty() {
        problems.push(format!("processes left: {procs:?}"));
    }
    let after = tree(t.path());
    for p in after.difference(&before) {
        if !p.starts_with("work") {
            problems.push(format!("created outside the work dir: {}", p.display()));
        }
        if half_written(p) {
            problems.push(format!("half-written file left: {}", p.display()));
        }
    }
    if tree(Path::new("/etc/apt")) != apt_before {
        problems.push("/etc/apt changed".into());
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} ({:.1} s): {}\n    args: {}\n    stderr: {}",
            c.name,
            r.elapsed.as_secs_f64(),
            problems.join("; "),
            args.join(" "),
            r.stderr.trim().replace('\n', "\n            ")
        ))
    }
}

#[test]
fn hostile_and_mistaken_inputs_are_refused_cleanly() {
    let cases = cases();
    assert!(cases.len() >= 50, "{} cases", cases.len());
    let names: BTreeSet<_> = cases.iter().map(|c| c.name).collect();
    assert_eq!(names.len(), cases.len(), "case names are unique");
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|c| {
            let t0 = Instant::now();
            let r = run_case(c);
            eprintln!(
                "{:>6.2} s  {}  {}",
                t0.elapsed().as_secs_f64(),
                if r.is_ok() { "ok  " } else { "FAIL" },
                c.name
            );
            r.err()
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} bad inputs were not refused cleanly:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
