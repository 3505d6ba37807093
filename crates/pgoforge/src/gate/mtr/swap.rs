//! The directory MTR takes the server under test from: a lone link to the binary, or a shadow of
//! the baseline's build directory in which only the server differs.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::recipe::mtr::ServerSwap;

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
}

/// Makes the directory MTR takes the server from at `at`, with `binary` as the server.
pub fn server_dir(tree: &MtrTree, binary: &Path, at: &Path) -> Result<()> {
    match tree.swap {
        ServerSwap::Link => {
            let link = at.join(&tree.server_rel);
            fs::create_dir_all(link.parent().context("the server path has a directory")?)
                .with_context(|| format!("creating {}", at.display()))?;
            std::os::unix::fs::symlink(binary, &link)
                .with_context(|| format!("linking {} to {}", link.display(), binary.display()))
        }
        ServerSwap::ShadowBuild => shadow(&tree.build_dir, at, &tree.server_rel, binary),
    }
}

/// `to` as a copy of `from` made of links, except along `rel`, whose last component links to
/// `binary`.
fn shadow(from: &Path, to: &Path, rel: &Path, binary: &Path) -> Result<()> {
    let mut parts = rel.components();
    let first = parts
        .next()
        .context("the recipe's binary path is empty")?
        .as_os_str()
        .to_os_string();
    let rest = parts.as_path();
    fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    let entries = fs::read_dir(from).with_context(|| format!("reading {}", from.display()))?;
    for e in entries {
        let e = e.with_context(|| format!("reading {}", from.display()))?;
        let name = e.file_name();
        if name == first {
            continue;
        }
        let (src, dst) = (e.path(), to.join(&name));
        std::os::unix::fs::symlink(&src, &dst)
            .with_context(|| format!("linking {} to {}", dst.display(), src.display()))?;
    }
    let dst = to.join(&first);
    if rest.as_os_str().is_empty() {
        std::os::unix::fs::symlink(binary, &dst)
            .with_context(|| format!("linking {} to {}", dst.display(), binary.display()))
    } else {
        shadow(&from.join(&first), &dst, rest, binary)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let mut tree = MtrTree {
            script: PathBuf::new(),
            tests_dir: PathBuf::new(),
            server_rel: "runtime_output_directory/mysqld".into(),
            server_dir_env: "MTR_BINDIR".into(),
            swap: ServerSwap::ShadowBuild,
            build_dir: build.clone(),
        };
        let at = t.path().join("shadow");
        server_dir(&tree, &variant, &at).unwrap();
        let read = |p: &str| fs::read_to_string(at.join(p)).unwrap();
        // The server is the variant; the clients and everything else the build's.
        assert_eq!(read("runtime_output_directory/mysqld"), "variant");
        assert_eq!(read("runtime_output_directory/mysql"), "mysql");
        assert_eq!(
            fs::read_link(at.join("share")).unwrap(),
            build.join("share")
        );
        assert_eq!(
            fs::read_link(at.join("CMakeCache.txt")).unwrap(),
            build.join("CMakeCache.txt")
        );
        assert!(!fs::symlink_metadata(at.join("runtime_output_directory"))
            .unwrap()
            .file_type()
            .is_symlink());
        // Nothing written through the links: the build's own server is untouched.
        assert_eq!(fs::read_to_string(bin.join("mysqld")).unwrap(), "mysqld");
        let names = |d: &Path| {
            let mut v: Vec<_> = fs::read_dir(d)
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            v.sort();
            v
        };
        assert_eq!(names(&at), names(&build));
        assert_eq!(names(&at.join("runtime_output_directory")), names(&bin));

        // MariaDB's way: the server alone.
        tree.swap = ServerSwap::Link;
        tree.server_rel = "sql/mariadbd".into();
        let at = t.path().join("link");
        server_dir(&tree, &variant, &at).unwrap();
        assert_eq!(names(&at), ["sql"]);
        assert_eq!(
            fs::read_to_string(at.join("sql/mariadbd")).unwrap(),
            "variant"
        );
    }
}
