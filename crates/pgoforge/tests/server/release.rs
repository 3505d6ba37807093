//! The default recipe's source release against what Debian serves and what is installed, as a
//! user meets it: `doctor`, `run --plan` and `--source-version`. Uses apt's real lists and dpkg's
//! real database (scripts/install-test-deps.sh installs Debian's server at the recipe's version,
//! from bookworm-security) — nothing is fetched or installed here.

use pgoforge::recipe::{Recipe, SourceSpec, DEFAULT};
use pgoforge::source::release::{self, ReleaseCheck};
use serde_json::Value;

use crate::common::pgoforge;

fn recipe_version() -> String {
    match Recipe::embedded(DEFAULT).unwrap().source {
        SourceSpec::Debian { version, .. } => version,
        s => panic!("the default recipe is not a Debian source: {s:?}"),
    }
}

fn plan(extra: &[&str]) -> (Value, String) {
    let w = tempfile::tempdir().unwrap();
    let dir = format!("--work-dir={}", w.path().display());
    let mut args = vec!["run", "--plan", dir.as_str()];
    args.extend(extra);
    let r = pgoforge(&args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    (serde_json::from_str(&r.stdout).unwrap(), r.stderr)
}

#[test]
fn doctor_and_the_plan_name_the_release_built_the_newest_served_and_the_installed_one() {
    let building = recipe_version();
    let installed = release::installed("mariadb-server-core");
    assert_eq!(
        installed.as_deref(),
        Some(building.as_str()),
        "install-test-deps.sh installs Debian's server at the default recipe's version"
    );
    let (p, stderr) = plan(&[]);
    let c: ReleaseCheck = serde_json::from_value(p["source_release"].clone()).unwrap();
    assert_eq!(c.building, building);
    assert_eq!(c.installed.as_deref(), Some(building.as_str()));
    assert!(
        c.available.iter().any(|r| r.version == building),
        "apt offers the version built: {c:?}"
    );
    assert!(
        c.available.iter().any(|r| r.suite == "bookworm-security"),
        "the security suite is looked at: {c:?}"
    );
    // A newer release, if Debian has published one since, is named — and only then.
    assert_eq!(
        stderr.contains("Debian serves a newer release"),
        c.newer().is_some(),
        "{stderr}"
    );
    assert!(
        !stderr.contains("the installed mariadb-server-core is"),
        "{stderr}"
    );

    let d = pgoforge(&["doctor"]);
    assert!(
        d.stdout.contains(&format!("builds     mariadb {building}")),
        "{}",
        d.stdout
    );
    assert!(d
        .stdout
        .contains(&format!("installed  mariadb-server-core {building}")));
    let j: Value = serde_json::from_str(&pgoforge(&["doctor", "--json"]).stdout).unwrap();
    assert_eq!(j["source_release"]["building"], building.as_str());
}

/// The version before the default recipe's (bookworm's own 10.11.18 while the recipe builds
/// the security release): the plan builds it, records it, and warns twice — a newer release
/// exists, and it is not the installed server's version.
#[test]
fn an_older_pin_is_warned_about_and_newest_resolves_to_the_newest_served() {
    let building = recipe_version();
    let (p, _) = plan(&[]);
    let c: ReleaseCheck = serde_json::from_value(p["source_release"].clone()).unwrap();
    let older = c
        .available
        .iter()
        .filter(|r| release::compare(&r.version, &building).is_lt())
        .max_by(|a, b| release::compare(&a.version, &b.version))
        .expect("apt offers a release older than the recipe's (bookworm's own)")
        .version
        .clone();
    let (p, stderr) = plan(&["--source-version", &older]);
    assert_eq!(p["request"]["recipe"]["source"]["version"], older.as_str());
    assert!(
        stderr.contains(&format!(
            "this run builds mariadb {older}, but Debian serves a newer release"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "the installed mariadb-server-core is {building}, not {older}"
        )),
        "{stderr}"
    );
    let newest = c.newest().unwrap().version.clone();
    let (p, stderr) = plan(&["--source-version", "newest"]);
    assert_eq!(p["request"]["recipe"]["source"]["version"], newest.as_str());
    assert!(
        stderr.contains(&format!("--source-version newest: {newest}")),
        "{stderr}"
    );
}

#[test]
fn a_bad_source_version_is_refused_with_exit_2_and_names_the_fix() {
    let w = tempfile::tempdir().unwrap();
    let dir = format!("--work-dir={}", w.path().display());
    for (args, says) in [
        (
            vec!["--source-version", "1.0;reboot"],
            "is not a Debian version",
        ),
        (vec!["--source-version", "1", "--recipe", "mysql-9.7"], ""),
        (
            vec!["--source-version", "1", "--source", "/nonexistent"],
            "cannot be used with",
        ),
    ] {
        let mut a = vec!["run", "--plan", dir.as_str()];
        a.extend(args.iter().copied());
        let r = pgoforge(&a);
        if args.contains(&"mysql-9.7") {
            // MySQL's recipe fetches Debian unstable's source too: another version of it is
            // planned like any other, and apt's bookworm lists cannot tell what sid serves.
            assert_eq!(r.code, 0, "{}", r.stderr);
            let r = pgoforge(&[
                "run",
                "--plan",
                dir.as_str(),
                "--recipe",
                "mysql-9.7",
                "--source-version",
                "newest",
            ]);
            assert_eq!(r.code, 2, "{}", r.stderr);
            assert!(
                r.stderr.contains("names its server_package")
                    || r.stderr.contains("give the version itself"),
                "{}",
                r.stderr
            );
            continue;
        }
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{args:?}: {}", r.stderr);
    }
}
