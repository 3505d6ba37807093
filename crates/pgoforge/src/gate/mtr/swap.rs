//! The directories MTR takes the binary under test from: a lone link to the server, or a shadow
//! of the baseline's build directory in which only the server (and the engine plugin built with
//! it) differs.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::recipe::mtr::ServerSwap;
use crate::server::config::Engine;
use crate::server::layout::Layout;

/// The variable both MariaDB's and MySQL's MTR read the build directory from: clients, tools and
/// (MariaDB) the plugins it links into its vardir come from there.
const BINDIR_ENV: &str = "MTR_BINDIR";

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MtrTree {
    /// The mysql-test-run script.
    pub script: PathBuf,
    /// Where the test files live: mysqltest writes a failing test's output beside its expected
    /// result there.
    pub tests_dir: PathBuf,
    /// The server binary's path inside the directory MTR takes it from (the recipe's binary,
    /// e.g. `sql/mariadbd`).
    pub server_rel: PathBuf,
    pub server_dir_env: String,
    pub swap: ServerSwap,
    /// The baseline's build directory, which a shadow mirrors.
    pub build_dir: PathBuf,
    /// The run's engine. A plugin engine (MyRocks) is compiled with each server, so each binary
    /// is tested with the plugin found beside it, not the baseline's.
    #[serde(default, skip_serializing_if = "Engine::is_innodb")]
    pub engine: Engine,
}

/// Makes the directories MTR takes `binary` from under `at` and returns the variables that name
/// them. The server: MariaDB's `MTR_BINDIR_FORCED` names a directory holding only a link to it;
/// MySQL's `MTR_BINDIR` a shadow of the baseline's build directory with the server's link
/// swapped. An engine plugin: MTR links every plugin of its build directory into its vardir, so
/// the build directory it is given becomes a shadow with this binary's plugin in the baseline's.
pub fn server_dir(tree: &MtrTree, binary: &Path, at: &Path) -> Result<Vec<(String, PathBuf)>> {
    let plugin = own_plugin(tree, binary)?;
    let mut swaps: Vec<(PathBuf, PathBuf)> = Vec::new();
    let mut env = Vec::new();
    match tree.swap {
        ServerSwap::Link => {
            let dir = at.join("server");
            let link = dir.join(&tree.server_rel);
            fs::create_dir_all(link.parent().context("the server path has a directory")?)
                .with_context(|| format!("creating {}", dir.display()))?;
            std::os::unix::fs::symlink(binary, &link)
                .with_context(|| format!("linking {} to {}", link.display(), binary.display()))?;
            env.push((tree.server_dir_env.clone(), dir));
        }
        ServerSwap::ShadowBuild => swaps.push((tree.server_rel.clone(), binary.to_path_buf())),
    }
    swaps.extend(plugin);
    if !swaps.is_empty() {
        let dir = at.join("build");
        shadow(&tree.build_dir, &dir, &swaps)?;
        let var = match tree.swap {
            ServerSwap::ShadowBuild => tree.server_dir_env.clone(),
            ServerSwap::Link => BINDIR_ENV.to_string(),
        };
        env.push((var, dir));
    }
    Ok(env)
}

/// The MTR script to run with the variables `server_dir` returned. An out-of-source MariaDB
/// build's `mysql-test/mariadb-test-run.pl` is a wrapper that sets `MTR_BINDIR` to that build
/// and calls the source tree's script: where the build directory is a shadow, the source's
/// script is run directly (from its own directory, as the wrapper does).
pub fn script(tree: &MtrTree, env: &[(String, PathBuf)]) -> PathBuf {
    let shadowed = tree.swap == ServerSwap::Link && env.iter().any(|(k, _)| k == BINDIR_ENV);
    match (shadowed, tree.script.file_name()) {
        (true, Some(name)) => tree.tests_dir.join(name),
        _ => tree.script.clone(),
    }
}

/// Where the baseline's tree has the engine's plugin (relative to its build directory) and where
/// `binary`'s own is: the plugin the benchmark loads beside it (a build tree's, or an installed
/// server's plugin directory). None for an engine built into every server.
fn own_plugin(tree: &MtrTree, binary: &Path) -> Result<Option<(PathBuf, PathBuf)>> {
    let Some(file) = tree.engine.plugin() else {
        return Ok(None);
    };
    let base_server = tree.build_dir.join(&tree.server_rel);
    let Some(base) = Layout::discover(&base_server, None, None)
        .engine_plugin_dir(tree.engine, &base_server)
        .context("MTR takes its plugins from the baseline's build directory")?
    else {
        return Ok(None);
    };
    let rel = base
        .strip_prefix(&tree.build_dir)
        .with_context(|| {
            format!(
                "the baseline's {file} is in {}, outside its build directory {}",
                base.display(),
                tree.build_dir.display()
            )
        })?
        .join(file);
    let own = Layout::discover(binary, None, None)
        .engine_plugin_dir(tree.engine, binary)?
        .map(|d| d.join(file));
    Ok(own.map(|o| (rel, o)))
}

/// `to` as a copy of `from` made of links, except along each swap's relative path, whose last
/// component links to the swap's target.
fn shadow(from: &Path, to: &Path, swaps: &[(PathBuf, PathBuf)]) -> Result<()> {
    fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    // A swap's first component here, and the rest of its path below it.
    let split = |(rel, target): &(PathBuf, PathBuf)| {
        let mut parts = rel.components();
        let first = parts.next()?.as_os_str().to_os_string();
        Some((first, (parts.as_path().to_path_buf(), target.clone())))
    };
    let swaps: Vec<_> = swaps.iter().filter_map(split).collect();
    let entries = fs::read_dir(from).with_context(|| format!("reading {}", from.display()))?;
    let mut names: Vec<std::ffi::OsString> = Vec::new();
    for e in entries {
        let e = e.with_context(|| format!("reading {}", from.display()))?;
        names.push(e.file_name());
    }
    // A swapped file the baseline lacks is made too.
    for (first, _) in &swaps {
        if !names.contains(first) {
            names.push(first.clone());
        }
    }
    for name in names {
        let dst = to.join(&name);
        let below: Vec<(PathBuf, PathBuf)> = swaps
            .iter()
            .filter(|(f, _)| *f == name)
            .map(|(_, s)| s.clone())
            .collect();
        let target = match below.iter().find(|(rest, _)| rest.as_os_str().is_empty()) {
            Some((_, t)) => t.clone(),
            None if below.is_empty() => from.join(&name),
            None => {
                shadow(&from.join(&name), &dst, &below)?;
                continue;
            }
        };
        std::os::unix::fs::symlink(&target, &dst)
            .with_context(|| format!("linking {} to {}", dst.display(), target.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(d: &Path) -> Vec<std::ffi::OsString> {
        let mut v: Vec<_> = fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        v.sort();
        v
    }

    fn tree(build: &Path, swap: ServerSwap, server_rel: &str, env: &str) -> MtrTree {
        MtrTree {
            script: PathBuf::new(),
            tests_dir: PathBuf::new(),
            server_rel: server_rel.into(),
            server_dir_env: env.into(),
            swap,
            build_dir: build.to_path_buf(),
            engine: Engine::InnoDb,
        }
    }

    #[test]
    fn a_shadow_build_dir_differs_from_the_build_dir_only_in_the_server() {
        let t = tempfile::tempdir().unwrap();
        let build = t.path().join("build");
        let bin = build.join("runtime_output_directory");
        fs::create_dir_all(&bin).unwrap();
        fs::create_dir_all(build.join("share/english")).unwrap();
        for f in ["mysqld", "mysql", "mysqltest"] {
            fs::write(bin.join(f), f).unwrap();
        }
        fs::write(build.join("CMakeCache.txt"), "").unwrap();
        let variant = t.path().join("variant-mysqld");
        fs::write(&variant, "variant").unwrap();
        let tree = tree(
            &build,
            ServerSwap::ShadowBuild,
            "runtime_output_directory/mysqld",
            "MTR_BINDIR",
        );
        let at = t.path().join("mysql");
        let env = server_dir(&tree, &variant, &at).unwrap();
        let shadow = at.join("build");
        assert_eq!(env, [("MTR_BINDIR".to_string(), shadow.clone())]);
        let read = |p: &str| fs::read_to_string(shadow.join(p)).unwrap();
        // The server is the variant; the clients and everything else the build's.
        assert_eq!(read("runtime_output_directory/mysqld"), "variant");
        assert_eq!(read("runtime_output_directory/mysql"), "mysql");
        assert_eq!(
            fs::read_link(shadow.join("share")).unwrap(),
            build.join("share")
        );
        assert_eq!(
            fs::read_link(shadow.join("CMakeCache.txt")).unwrap(),
            build.join("CMakeCache.txt")
        );
        assert!(
            !fs::symlink_metadata(shadow.join("runtime_output_directory"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        // Nothing written through the links: the build's own server is untouched.
        assert_eq!(fs::read_to_string(bin.join("mysqld")).unwrap(), "mysqld");
        assert_eq!(names(&shadow), names(&build));
        assert_eq!(names(&shadow.join("runtime_output_directory")), names(&bin));

        // MariaDB's way: the server alone, and no build directory of its own.
        let tree = MtrTree {
            swap: ServerSwap::Link,
            server_rel: "sql/mariadbd".into(),
            server_dir_env: "MTR_BINDIR_FORCED".into(),
            ..tree
        };
        let at = t.path().join("mariadb");
        let env = server_dir(&tree, &variant, &at).unwrap();
        assert_eq!(env, [("MTR_BINDIR_FORCED".to_string(), at.join("server"))]);
        assert_eq!(names(&at), ["server"]);
        assert_eq!(names(&at.join("server")), ["sql"]);
        assert_eq!(
            fs::read_to_string(at.join("server/sql/mariadbd")).unwrap(),
            "variant"
        );
    }

    /// A MariaDB build tree with a server and, when given, a MyRocks plugin.
    fn mariadb_tree(dir: &Path, plugin: Option<&str>) -> PathBuf {
        fs::create_dir_all(dir.join("sql")).unwrap();
        fs::create_dir_all(dir.join("storage/rocksdb")).unwrap();
        fs::create_dir_all(dir.join("storage/innobase")).unwrap();
        fs::write(dir.join("CMakeCache.txt"), "").unwrap();
        fs::write(dir.join("storage/innobase/x.a"), "").unwrap();
        fs::write(dir.join("storage/rocksdb/sst_dump"), "tool").unwrap();
        if let Some(p) = plugin {
            fs::write(dir.join("storage/rocksdb/ha_rocksdb.so"), p).unwrap();
        }
        let server = dir.join("sql/mariadbd");
        fs::write(&server, "server").unwrap();
        server
    }

    #[test]
    fn each_binary_is_tested_with_the_engine_plugin_built_beside_it() {
        let t = tempfile::tempdir().unwrap();
        let build = t.path().join("baseline");
        mariadb_tree(&build, Some("baseline's plugin"));
        let variant = mariadb_tree(&t.path().join("variant"), Some("variant's plugin"));
        let tree = MtrTree {
            engine: Engine::RocksDb,
            ..tree(
                &build,
                ServerSwap::Link,
                "sql/mariadbd",
                "MTR_BINDIR_FORCED",
            )
        };
        let at = t.path().join("mtr");
        let env = server_dir(&tree, &variant, &at).unwrap();
        let shadow = at.join("build");
        assert_eq!(
            env,
            [
                ("MTR_BINDIR_FORCED".to_string(), at.join("server")),
                ("MTR_BINDIR".to_string(), shadow.clone()),
            ]
        );
        let read = |p: &Path| fs::read_to_string(p).unwrap();
        assert_eq!(read(&at.join("server/sql/mariadbd")), "server");
        // The plugin MTR links into its vardir is the variant's; its tools stay the baseline's.
        assert_eq!(
            read(&shadow.join("storage/rocksdb/ha_rocksdb.so")),
            "variant's plugin"
        );
        assert_eq!(
            fs::read_link(shadow.join("storage/rocksdb/sst_dump")).unwrap(),
            build.join("storage/rocksdb/sst_dump")
        );
        assert_eq!(
            fs::read_link(shadow.join("storage/innobase")).unwrap(),
            build.join("storage/innobase")
        );
        assert_eq!(names(&shadow), names(&build));
        assert_eq!(
            read(&build.join("storage/rocksdb/ha_rocksdb.so")),
            "baseline's plugin"
        );
        // The build's wrapper would name the baseline's tree again: the source's script runs.
        let tree = MtrTree {
            script: build.join("mysql-test/mariadb-test-run.pl"),
            tests_dir: t.path().join("source/mysql-test"),
            ..tree
        };
        assert_eq!(
            script(&tree, &env),
            t.path().join("source/mysql-test/mariadb-test-run.pl")
        );
        assert_eq!(script(&tree, &env[..1]), tree.script);

        // A binary built without the plugin is refused, naming what it lacks.
        let bare = mariadb_tree(&t.path().join("bare"), None);
        let err = server_dir(&tree, &bare, &t.path().join("mtr-bare")).unwrap_err();
        assert!(format!("{err:#}").contains("ha_rocksdb.so"), "{err:#}");
    }
}
