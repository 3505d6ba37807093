//! Where a server's companions live: error messages (`lc-messages-dir`) and the bootstrap SQL
//! scripts, for an installed prefix (bin/ or sbin/ next to share/) or a build tree plus its source.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

/// The SQL scripts MariaDB's bootstrap runs, in order (mariadb-install-db's list, without the help
/// tables and the test database, which a benchmark does not need).
pub const MARIADB_BOOTSTRAP_SQL: [&str; 5] = [
    "mysql_system_tables.sql",
    "mysql_performance_tables.sql",
    "mysql_system_tables_data.sql",
    "maria_add_gis_sp_bootstrap.sql",
    "mysql_sys_schema.sql",
];

#[derive(Clone, Debug, Default)]
pub struct Layout {
    /// Holds `english/errmsg.sys`.
    pub lc_messages_dir: Option<PathBuf>,
    /// Holds `Index.xml` and the character set definitions compiled-in sets do not cover.
    pub charsets_dir: Option<PathBuf>,
    /// Directories searched, in order, for the bootstrap scripts.
    pub sql_dirs: Vec<PathBuf>,
    /// Set when the binary sits in a CMake build tree.
    pub build_dir: Option<PathBuf>,
    /// Directories searched, in order, for a plugin library: in a build tree each engine's own
    /// (storage/rocksdb), in an installed prefix lib/mysql/plugin and its kin.
    pub plugin_dirs: Vec<PathBuf>,
}

/// The source directory a CMake build tree was configured from.
fn cmake_source_dir(build: &Path) -> Option<PathBuf> {
    let cache = std::fs::read_to_string(build.join("CMakeCache.txt")).ok()?;
    cache
        .lines()
        .find_map(|l| l.strip_prefix("CMAKE_HOME_DIRECTORY:INTERNAL="))
        .map(PathBuf::from)
}

impl Layout {
    /// Looks around `binary`; `share_dir` and `source_dir` override what is found.
    pub fn discover(binary: &Path, share_dir: Option<&Path>, source_dir: Option<&Path>) -> Layout {
        let mut candidates: Vec<PathBuf> = Vec::new();
        if let Some(s) = share_dir {
            candidates.push(s.to_path_buf());
        }
        let mut build_dir = None;
        // A build tree: BUILD/sql/mariadbd (MariaDB) or BUILD/runtime_output_directory/mysqld (MySQL).
        let mut up = binary.parent();
        for _ in 0..3 {
            let Some(d) = up else { break };
            if d.join("CMakeCache.txt").is_file() {
                build_dir = Some(d.to_path_buf());
                break;
            }
            up = d.parent();
        }
        if let Some(b) = &build_dir {
            candidates.extend([b.join("sql/share"), b.join("share"), b.join("scripts")]);
            if let Some(src) = source_dir
                .map(Path::to_path_buf)
                .or_else(|| cmake_source_dir(b))
            {
                candidates.extend([src.join("scripts"), src.join("sql/share")]);
            }
        } else if let Some(prefix) = binary.parent().and_then(Path::parent) {
            candidates.extend([
                prefix.join("share/mysql"),
                prefix.join("share/mariadb"),
                prefix.join("share"),
            ]);
        }
        let lc_messages_dir = candidates
            .iter()
            .find(|d| d.join("english/errmsg.sys").is_file())
            .cloned();
        let charsets_dir = candidates
            .iter()
            .map(|d| d.join("charsets"))
            .find(|d| d.join("Index.xml").is_file());
        let sql_dirs = candidates
            .into_iter()
            .filter(|d| MARIADB_BOOTSTRAP_SQL.iter().any(|f| d.join(f).is_file()))
            .collect();
        let plugin_dirs = match &build_dir {
            Some(b) => vec![b.join("storage/rocksdb"), b.join("plugin")],
            None => binary
                .parent()
                .and_then(Path::parent)
                .map(|prefix| {
                    [
                        "lib/mysql/plugin",
                        "lib/mariadb/plugin",
                        "lib/plugin",
                        "lib64/mysql/plugin",
                    ]
                    .iter()
                    .map(|d| prefix.join(d))
                    .collect()
                })
                .unwrap_or_default(),
        };
        Layout {
            lc_messages_dir,
            charsets_dir,
            sql_dirs,
            build_dir,
            plugin_dirs,
        }
    }

    /// The directory to load `engine`'s plugin from (None for an engine built into every
    /// server), or an error naming where it was looked for and how to get it.
    pub fn engine_plugin_dir(
        &self,
        engine: super::config::Engine,
        binary: &Path,
    ) -> Result<Option<PathBuf>> {
        let Some(file) = engine.plugin() else {
            return Ok(None);
        };
        if let Some(d) = self.plugin_dirs.iter().find(|d| d.join(file).is_file()) {
            return Ok(Some(d.clone()));
        }
        bail!(
            "{} has no {engine} engine: {file} is not in {}; build the server with its plugin \
             or, for an installed server, install the distribution's plugin package of the same \
             release (mariadb-plugin-{engine} on Debian)",
            binary.display(),
            listed(&self.plugin_dirs, "any directory near it")
        )
    }

    /// The path of each bootstrap script, or an error naming the first one missing.
    pub fn bootstrap_scripts(&self, binary: &Path) -> Result<Vec<PathBuf>> {
        let mut found = Vec::new();
        for name in MARIADB_BOOTSTRAP_SQL {
            match self
                .sql_dirs
                .iter()
                .map(|d| d.join(name))
                .find(|p| p.is_file())
            {
                Some(p) => found.push(p),
                None => {
                    bail!(
                        "cannot initialize a datadir for {}: {name} not found (looked in: {}); \
                         give --share-dir DIR (an installed share/mysql) or --source-dir DIR (the \
                         source tree, with the build's scripts/ generated)",
                        binary.display(),
                        listed(&self.sql_dirs, "nowhere near the binary")
                    );
                }
            }
        }
        Ok(found)
    }
}

/// The directories looked in, for an error message; `none` when there were none.
fn listed(dirs: &[PathBuf], none: &str) -> String {
    if dirs.is_empty() {
        return none.to_string();
    }
    dirs.iter()
        .map(|d| d.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn finds_share_files_of_a_build_tree_and_its_source() {
        let t = tempfile::tempdir().unwrap();
        let (src, build) = (t.path().join("src"), t.path().join("build"));
        fs::create_dir_all(src.join("scripts")).unwrap();
        fs::create_dir_all(build.join("sql/share/english")).unwrap();
        fs::create_dir_all(build.join("scripts")).unwrap();
        fs::write(
            build.join("CMakeCache.txt"),
            format!("CMAKE_HOME_DIRECTORY:INTERNAL={}\n", src.display()),
        )
        .unwrap();
        fs::write(build.join("sql/share/english/errmsg.sys"), "").unwrap();
        for f in &MARIADB_BOOTSTRAP_SQL[..3] {
            fs::write(src.join("scripts").join(f), "").unwrap();
        }
        for f in &MARIADB_BOOTSTRAP_SQL[3..] {
            fs::write(build.join("scripts").join(f), "").unwrap();
        }
        let bin = build.join("sql/mariadbd");
        let l = Layout::discover(&bin, None, None);
        assert_eq!(l.build_dir.as_deref(), Some(build.as_path()));
        assert_eq!(l.lc_messages_dir, Some(build.join("sql/share")));
        let scripts = l.bootstrap_scripts(&bin).unwrap();
        assert_eq!(scripts[0], src.join("scripts/mysql_system_tables.sql"));
        assert_eq!(scripts[4], build.join("scripts/mysql_sys_schema.sql"));
        fs::remove_file(build.join("scripts/mysql_sys_schema.sql")).unwrap();
        let e = Layout::discover(&bin, None, None)
            .bootstrap_scripts(&bin)
            .unwrap_err()
            .to_string();
        assert!(e.contains("mysql_sys_schema.sql not found"), "{e}");
    }

    #[test]
    fn an_engine_plugin_is_found_in_a_build_tree_or_a_prefix_or_named_missing() {
        use crate::server::config::Engine;
        let t = tempfile::tempdir().unwrap();
        let build = t.path().join("build");
        fs::create_dir_all(build.join("sql")).unwrap();
        fs::write(build.join("CMakeCache.txt"), "").unwrap();
        let bolted = build.join("sql/mariadbd.bolt");
        let l = Layout::discover(&bolted, None, None);
        assert_eq!(l.engine_plugin_dir(Engine::InnoDb, &bolted).unwrap(), None);
        let e = l
            .engine_plugin_dir(Engine::RocksDb, &bolted)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("has no rocksdb engine: ha_rocksdb.so is not in")
                && e.contains("storage/rocksdb")
                && e.contains("mariadb-plugin-rocksdb"),
            "{e}"
        );
        fs::create_dir_all(build.join("storage/rocksdb")).unwrap();
        fs::write(build.join("storage/rocksdb/ha_rocksdb.so"), "").unwrap();
        assert_eq!(
            l.engine_plugin_dir(Engine::RocksDb, &bolted).unwrap(),
            Some(build.join("storage/rocksdb"))
        );
        // An installed prefix: /usr/sbin/mariadbd loads from /usr/lib/mysql/plugin.
        let prefix = t.path().join("usr");
        fs::create_dir_all(prefix.join("sbin")).unwrap();
        fs::create_dir_all(prefix.join("lib/mysql/plugin")).unwrap();
        fs::write(prefix.join("lib/mysql/plugin/ha_rocksdb.so"), "").unwrap();
        let bin = prefix.join("sbin/mariadbd");
        assert_eq!(
            Layout::discover(&bin, None, None)
                .engine_plugin_dir(Engine::RocksDb, &bin)
                .unwrap(),
            Some(prefix.join("lib/mysql/plugin"))
        );
    }
}
