//! Release resolution and fetching against a mirror this test serves itself: a real apt
//! repository (dpkg-source, apt-ftparchive) over HTTP on 127.0.0.1 whose index lists releases
//! its pool does not hold, or holds with other bytes — what Debian's mirror did on 2026-12-04.
//! pgoforge finds it the way it finds a user's mirror: in apt's sources (here through
//! APT_CONFIG), turned into its own deb-src entries. Deterministic: nothing leaves the machine.

use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde_json::Value;

use crate::common::{pgoforge_env, Ran};

/// A directory served over HTTP: files answer 200, anything else 404; a file whose name ends
/// with `hang` is never answered (the connection stays open, silent, until the test ends).
struct Mirror {
    port: u16,
    stop: Arc<AtomicBool>,
}

impl Mirror {
    fn serve(root: PathBuf, hang: Option<&'static str>) -> Mirror {
        let l = TcpListener::bind("127.0.0.1:0").expect("a port on 127.0.0.1");
        let port = l.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        std::thread::spawn(move || {
            for conn in l.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(mut c) = conn else { continue };
                let root = root.clone();
                let s = s.clone();
                std::thread::spawn(move || {
                    let mut r = BufReader::new(c.try_clone().unwrap());
                    let mut line = String::new();
                    if r.read_line(&mut line).is_err() {
                        return;
                    }
                    loop {
                        let mut h = String::new();
                        if r.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                            break;
                        }
                    }
                    let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
                    let path = path.replace("%2b", "+").replace("%2B", "+");
                    let file = root.join(path.trim_start_matches('/'));
                    if hang.is_some_and(|h| path.ends_with(h)) {
                        while !s.load(Ordering::SeqCst) {
                            std::thread::sleep(std::time::Duration::from_millis(100));
                        }
                        return;
                    }
                    let head = line.starts_with("HEAD");
                    let reply = match fs::read(&file) {
                        Ok(body) if file.is_file() && !path.contains("..") => {
                            let mut v = format!(
                                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                                body.len()
                            )
                            .into_bytes();
                            if !head {
                                v.extend(body);
                            }
                            v
                        }
                        _ => b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                            .to_vec(),
                    };
                    let _ = c.write_all(&reply);
                });
            }
        });
        Mirror { port, stop }
    }
}

impl Drop for Mirror {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = std::net::TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn sh(cmd: &mut Command) -> String {
    let out = cmd.output().expect("the command runs");
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A native source package `pgoforge-fixture` at `version`, built into `pool`: a CMake project
/// of one file and the debian/ files dpkg-source needs.
fn source_package(work: &Path, pool: &Path, version: &str) {
    let tree = work.join(format!("pgoforge-fixture-{version}"));
    fs::create_dir_all(tree.join("debian/source")).unwrap();
    fs::write(
        tree.join("CMakeLists.txt"),
        format!("cmake_minimum_required(VERSION 3.16)\nproject(fixture VERSION {version})\n"),
    )
    .unwrap();
    fs::write(tree.join("debian/source/format"), "3.0 (native)\n").unwrap();
    fs::write(
        tree.join("debian/control"),
        "Source: pgoforge-fixture\nMaintainer: Test <test@example.invalid>\nStandards-Version: 4.6.2\n\n\
         Package: pgoforge-fixture\nArchitecture: all\nDescription: a test fixture\n a test fixture\n",
    )
    .unwrap();
    fs::write(
        tree.join("debian/changelog"),
        format!(
            "pgoforge-fixture ({version}) pgotest; urgency=medium\n\n  * Test.\n\n -- Test <test@example.invalid>  Fri, 04 Dec 2026 00:00:00 +0000\n"
        ),
    )
    .unwrap();
    fs::write(
        tree.join("debian/rules"),
        "#!/usr/bin/make -f\n%:\n\tdh $@\n",
    )
    .unwrap();
    sh(Command::new("dpkg-source")
        .current_dir(work)
        .args(["-b"])
        .arg(tree.file_name().unwrap()));
    fs::create_dir_all(pool).unwrap();
    for ext in ["dsc", "tar.xz"] {
        let name = format!("pgoforge-fixture_{version}.{ext}");
        fs::rename(work.join(&name), pool.join(&name)).unwrap();
    }
}

/// A repository at `root` whose suite `suite` lists `versions`; the index is made while every
/// file is in the pool (what `damage` then does to the pool is what the mirror serves).
fn repository(root: &Path, suite: &str, versions: &[&str]) {
    let pool = root.join("pool/main/p/pgoforge-fixture");
    let build = root.join("build");
    fs::create_dir_all(&build).unwrap();
    for v in versions {
        source_package(&build, &pool, v);
    }
    let dists = root.join(format!("dists/{suite}/main/source"));
    fs::create_dir_all(&dists).unwrap();
    let sources = sh(Command::new("apt-ftparchive")
        .current_dir(root)
        .args(["sources", "pool"]));
    fs::write(dists.join("Sources"), sources).unwrap();
    let release = sh(Command::new("apt-ftparchive")
        .current_dir(root)
        .args([
            "-o",
            &format!("APT::FTPArchive::Release::Suite={suite}"),
            "-o",
            &format!("APT::FTPArchive::Release::Codename={suite}"),
            "-o",
            "APT::FTPArchive::Release::Components=main",
            "release",
        ])
        .arg(format!("dists/{suite}")));
    fs::write(root.join(format!("dists/{suite}/Release")), release).unwrap();
}

/// The test's apt configuration (APT_CONFIG): its own sources file naming the mirror, and no
/// other; a short timeout.
struct Setup {
    dir: tempfile::TempDir,
    _mirror: Mirror,
}

impl Setup {
    fn new(suite: &str, versions: &[&str], damage: impl Fn(&Path)) -> Setup {
        Setup::with_mirror(suite, versions, damage, None)
    }

    fn with_mirror(
        suite: &str,
        versions: &[&str],
        damage: impl Fn(&Path),
        hang: Option<&'static str>,
    ) -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("mirror");
        repository(&root, suite, versions);
        damage(&root.join("pool/main/p/pgoforge-fixture"));
        let mirror = Mirror::serve(root, hang);
        let etc = dir.path().join("etc");
        fs::create_dir_all(etc.join("parts")).unwrap();
        fs::write(
            etc.join("sources.list"),
            format!(
                "deb [trusted=yes] http://127.0.0.1:{}/ {suite} main\n",
                mirror.port
            ),
        )
        .unwrap();
        fs::write(
            etc.join("apt.conf"),
            format!(
                "Dir::Etc::sourcelist \"{0}/sources.list\";\nDir::Etc::sourceparts \"{0}/parts\";\nAcquire::http::Timeout \"3\";\nAcquire::Retries \"0\";\n",
                etc.display()
            ),
        )
        .unwrap();
        fs::write(
            dir.path().join("recipe.toml"),
            format!(
                "name = \"fixture-deb\"\nfamily = \"other\"\ndescription = \"a Debian source package from the test's mirror\"\n\n\
                 [source]\nkind = \"debian\"\npackage = \"pgoforge-fixture\"\nversion = \"{}\"\nsuite = \"{suite}\"\n\n\
                 [build]\ntargets = [\"fixture\"]\nbinary = \"fixture\"\npgo_style = \"flags\"\ncmake_args = []\n",
                versions[0]
            ),
        )
        .unwrap();
        Setup {
            dir,
            _mirror: mirror,
        }
    }

    fn pgoforge(&self, args: &[&str]) -> Ran {
        let recipe = self.dir.path().join("recipe.toml");
        let work = self.dir.path().join("work");
        let mut a: Vec<&str> = args.to_vec();
        let (r, w) = (recipe.display().to_string(), work.display().to_string());
        a.extend(["--recipe", r.as_str(), "--work-dir", w.as_str()]);
        pgoforge_env(
            &a,
            &[
                ("APT_CONFIG", &self.dir.path().join("etc/apt.conf")),
                ("XDG_CACHE_HOME", &self.dir.path().join("cache")),
            ],
        )
    }

    fn sources(&self) -> Vec<String> {
        fs::read_dir(self.dir.path().join("work/sources"))
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n != "logs")
                    .collect()
            })
            .unwrap_or_default()
    }
}

#[test]
fn a_listed_release_whose_files_answer_404_is_skipped_named_and_refused_as_a_pin() {
    // 1.1 is listed, but its files are gone from the pool: the mirror answers 404.
    let s = Setup::new("pgotest", &["1.0", "1.1"], |pool| {
        for ext in ["dsc", "tar.xz"] {
            fs::remove_file(pool.join(format!("pgoforge-fixture_1.1.{ext}"))).unwrap();
        }
    });
    let plan = s.pgoforge(&["run", "--plan"]);
    assert_eq!(plan.code, 0, "{}", plan.stderr);
    let p: Value = serde_json::from_str(&plan.stdout).unwrap();
    let c = &p["source_release"];
    assert_eq!(c["building"], "1.0", "{c}");
    assert_eq!(p["request"]["recipe"]["source"]["version"], "1.0");
    let listed: Vec<&str> = c["available"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["version"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ["1.1", "1.0"], "{c}");
    assert!(
        c["available"][0]["unfetchable"]
            .as_str()
            .is_some_and(|w| w.contains("pgoforge-fixture_1.1.dsc: 404")),
        "{c}"
    );
    assert!(
        plan.stderr.contains(
            "pgoforge-fixture 1.1 is listed in pgotest, but its source cannot be fetched"
        ) && plan.stderr.contains("the newest release the mirror serves")
            && !plan.stderr.contains("--source-version newest"),
        "{}",
        plan.stderr
    );
    // `newest` is the same release; the pin to the missing one is refused before any work.
    let newest = s.pgoforge(&["run", "--plan", "--source-version", "newest"]);
    assert_eq!(newest.code, 0, "{}", newest.stderr);
    assert!(newest.stderr.contains("--source-version newest: 1.0"));
    let pin = s.pgoforge(&["source", "--source-version", "1.1"]);
    assert_eq!(pin.code, 2, "{}", pin.stderr);
    assert!(
        pin.stderr
            .contains("its source cannot be fetched from the mirror")
            && pin
                .stderr
                .contains("Releases of pgoforge-fixture the mirror serves: 1.0 (pgotest)")
            && !pin.stderr.contains("E: "),
        "{}",
        pin.stderr
    );
    assert!(s.sources().is_empty(), "{:?}", s.sources());
    // The default is fetched for real: the tree of 1.0, its .dsc's hash recorded.
    let got = s.pgoforge(&["source", "--json"]);
    assert_eq!(got.code, 0, "{}", got.stderr);
    let j: Value = serde_json::from_str(&got.stdout).unwrap();
    let dir = PathBuf::from(j["source"]["dir"].as_str().unwrap());
    let cm = fs::read_to_string(dir.join("CMakeLists.txt")).unwrap();
    assert!(cm.contains("VERSION 1.0"), "{cm}");
    assert_eq!(j["source"]["debian"]["version"], "1.0");
    // Nothing was written under the system's apt configuration.
    let derived = fs::read_dir(s.dir.path().join("cache/pgoforge/apt"))
        .unwrap()
        .flatten()
        .next()
        .expect("the private apt state is in the cache")
        .path();
    let list = fs::read_to_string(derived.join("sources.list")).unwrap();
    assert!(
        list.starts_with("deb-src [trusted=yes] http://127.0.0.1:"),
        "{list}"
    );
}

#[test]
fn a_file_served_with_other_bytes_stops_the_fetch_with_exit_7_and_leaves_no_tree() {
    // The index lists 2.0's tarball with one checksum; the pool serves other bytes of the
    // same size (a corrupted mirror, or a man in the middle of plain http).
    let s = Setup::new("pgocorrupt", &["2.0"], |pool| {
        let f = pool.join("pgoforge-fixture_2.0.tar.xz");
        let mut b = Vec::new();
        fs::File::open(&f).unwrap().read_to_end(&mut b).unwrap();
        let n = b.len();
        b[n / 2] ^= 0xff;
        fs::write(&f, b).unwrap();
    });
    let r = s.pgoforge(&["source"]);
    assert_eq!(r.code, 7, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("cannot fetch pgoforge-fixture 2.0 (pgocorrupt)")
            && r.stderr.contains("pgoforge-fixture_2.0.tar.xz")
            && r.stderr.contains("checksum")
            && r.stderr.contains("nothing was kept"),
        "{}",
        r.stderr
    );
    assert!(
        s.sources().is_empty(),
        "a half-fetched source stayed: {:?}",
        s.sources()
    );
    let logs = s.dir.path().join("work/sources/logs");
    let log = fs::read_dir(&logs)
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    assert!(fs::read_to_string(log)
        .unwrap()
        .contains("Hash Sum mismatch"));
}

#[test]
fn a_mirror_that_does_not_answer_stops_the_fetch_with_exit_7_naming_the_file() {
    // The .dsc is served; the tarball's request is accepted and never answered. The check
    // before the build cannot tell (no answer is not a 404), so the recipe's release is tried,
    // and apt's own timeout ends the download.
    let s = Setup::with_mirror("pgosilent", &["3.0"], |_| {}, Some(".tar.xz"));
    let plan = s.pgoforge(&["run", "--plan"]);
    assert_eq!(plan.code, 0, "{}", plan.stderr);
    assert!(
        plan.stderr
            .contains("cannot tell which releases of pgoforge-fixture the mirror serves")
            && plan.stderr.contains("the mirror did not answer"),
        "{}",
        plan.stderr
    );
    let r = s.pgoforge(&["source"]);
    assert_eq!(r.code, 7, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("cannot fetch pgoforge-fixture 3.0 (pgosilent)")
            && r.stderr.contains("pgoforge-fixture_3.0.tar.xz:")
            && r.stderr.contains("nothing was kept"),
        "{}",
        r.stderr
    );
    assert!(s.sources().is_empty(), "{:?}", s.sources());
}
