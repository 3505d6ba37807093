//! The default recipe's source as a user meets it, from the machine's real mirror: fetched for
//! real (apt checks every file against the index, dpkg-source against the .dsc), the release the
//! plan and doctor name, and the installed server against it. This test fails when the main
//! job's first step would: a default whose source the mirror does not serve is a red CI.

use std::fs;
use std::path::PathBuf;

use pgoforge::source::release::{self, ReleaseCheck};
use serde_json::Value;

use crate::common::pgoforge;

fn plan(extra: &[&str]) -> (Value, String) {
    let w = tempfile::tempdir().unwrap();
    let dir = format!("--work-dir={}", w.path().display());
    let mut args = vec!["run", "--plan", dir.as_str()];
    args.extend(extra);
    let r = pgoforge(&args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    (serde_json::from_str(&r.stdout).unwrap(), r.stderr)
}

/// `major.minor.patch` of a Debian version (`1:10.11.18-0+deb12u1` → `10.11.18`).
fn upstream(v: &str) -> &str {
    let v = v.split_once(':').map_or(v, |(_, r)| r);
    let v = v.rsplit_once('-').map_or(v, |(u, _)| u);
    v.split(['+', '~']).next().unwrap_or(v)
}

#[test]
fn the_default_recipes_source_is_fetched_from_the_real_mirror_and_is_the_release_planned() {
    let (p, _) = plan(&[]);
    let c: ReleaseCheck = serde_json::from_value(p["source_release"].clone()).unwrap();
    assert!(c.unchecked.is_none(), "the mirror must be asked: {c:?}");
    let w = tempfile::tempdir().unwrap();
    let dir = format!("--work-dir={}", w.path().display());
    let r = pgoforge(&["source", "--json", dir.as_str()]);
    assert_eq!(
        r.code, 0,
        "the main job's first step fails on this machine: the default source cannot be fetched\n{}",
        r.stderr
    );
    let j: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(j["source"]["debian"]["version"], c.building.as_str());
    // The tree is the release it says: MariaDB's VERSION file.
    let tree = PathBuf::from(j["source"]["dir"].as_str().unwrap());
    let version = fs::read_to_string(tree.join("VERSION")).unwrap();
    let field = |k: &str| {
        version
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{k}=")))
            .unwrap_or_else(|| panic!("{k} in VERSION: {version}"))
            .trim()
            .to_string()
    };
    assert_eq!(
        format!(
            "{}.{}.{}",
            field("MYSQL_VERSION_MAJOR"),
            field("MYSQL_VERSION_MINOR"),
            field("MYSQL_VERSION_PATCH")
        ),
        upstream(&c.building)
    );
    assert_eq!(j["source"]["hash"].as_str().unwrap().len(), 64);
    // Every release newer than the one built was found unfetchable, and the warning says so.
    for r in &c.available {
        if release::compare(&r.version, &c.building).is_gt() {
            assert!(r.unfetchable.is_some(), "{c:?}");
        }
    }
}

#[test]
fn doctor_and_the_plan_name_the_release_built_the_listed_ones_and_the_installed_one() {
    let (p, stderr) = plan(&[]);
    let c: ReleaseCheck = serde_json::from_value(p["source_release"].clone()).unwrap();
    let building = c.building.clone();
    assert!(
        c.available
            .iter()
            .any(|r| r.version == building && r.unfetchable.is_none()),
        "the release built is listed and served: {c:?}"
    );
    assert!(
        c.available.iter().any(|r| r.suite == "bookworm-security"),
        "the security suite is looked at: {c:?}"
    );
    for r in c.unfetchable_newer() {
        assert!(
            stderr.contains(&format!(
                "mariadb {} is listed in {}, but its source cannot be fetched",
                r.version, r.suite
            )),
            "{stderr}"
        );
    }
    // The installed server (install-test-deps.sh installs apt's candidate) against the build:
    // when they differ the plan says so up front, with the apt command that aligns them.
    let installed =
        release::installed("mariadb-server-core").expect("mariadb-server-core installed");
    assert_eq!(c.installed.as_deref(), Some(installed.as_str()));
    let says = format!("the installed mariadb-server-core is {installed}, not {building}");
    if installed != building {
        assert!(stderr.contains(&says), "{stderr}");
        let cmd = c.align.as_deref().expect("an apt command");
        assert!(
            cmd.starts_with("apt-get install --allow-downgrades ")
                && cmd.contains(&format!("mariadb-server-core={building}")),
            "{cmd}"
        );
        assert!(stderr.contains(cmd), "{stderr}");
    } else {
        assert!(!stderr.contains(&says), "{stderr}");
    }

    let d = pgoforge(&["doctor"]);
    assert!(
        d.stdout.contains(&format!("builds     mariadb {building}")),
        "{}",
        d.stdout
    );
    assert!(d
        .stdout
        .contains(&format!("installed  mariadb-server-core {installed}")));
    let j: Value = serde_json::from_str(&pgoforge(&["doctor", "--json"]).stdout).unwrap();
    assert_eq!(j["source_release"]["building"], building.as_str());
}

#[test]
fn a_bad_or_unfetchable_source_version_is_refused_with_exit_2_and_names_the_fix() {
    let w = tempfile::tempdir().unwrap();
    let dir = format!("--work-dir={}", w.path().display());
    for (args, says) in [
        (
            vec!["--source-version", "1.0;reboot"],
            "is not a Debian version",
        ),
        (
            vec!["--source-version", "1:10.11.1-1"],
            "the mirror's index does not list it",
        ),
        (
            vec!["--source-version", "1", "--recipe", "mysql-9.7"],
            "Releases of mysql-9.7 the mirror serves: 9.7",
        ),
        (
            vec!["--source-version", "1", "--source", "/nonexistent"],
            "cannot be used with",
        ),
    ] {
        let mut a = vec!["run", "--plan", dir.as_str()];
        a.extend(args.iter().copied());
        let r = pgoforge(&a);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{args:?}: {}", r.stderr);
        assert!(!r.stderr.contains("\nE: "), "apt's raw lines: {}", r.stderr);
    }
}
