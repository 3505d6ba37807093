//! Which server a binary is: MariaDB, MySQL or Percona Server, and its version, from `--version`.

use std::fmt;
use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    MariaDb,
    MySql,
    Percona,
}

impl Family {
    /// Percona Server behaves as MySQL of the same version.
    pub fn is_mysql_like(self) -> bool {
        matches!(self, Family::MySql | Family::Percona)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Flavor {
    pub family: Family,
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
    /// The whole version string, e.g. `10.11.18-MariaDB-0+deb12u1`.
    pub version: String,
}

impl fmt::Display for Flavor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self.family {
            Family::MariaDb => "MariaDB",
            Family::MySql => "MySQL",
            Family::Percona => "Percona Server",
        };
        write!(f, "{name} {}", self.version)
    }
}

/// Whether the program before " Ver " is called mysqld (a source build says only "Source
/// distribution", and names itself by its full path).
fn program_is_mysqld(line: &str) -> bool {
    let program = line.split(" Ver ").next().unwrap_or("").trim();
    Path::new(program)
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with("mysqld"))
}

impl Flavor {
    pub fn at_least(&self, major: u32, minor: u32, patch: u32) -> bool {
        (self.major, self.minor, self.patch) >= (major, minor, patch)
    }

    /// Parses the line `mysqld --version` prints.
    pub fn parse(text: &str) -> Option<Flavor> {
        let line = text.lines().find(|l| l.contains(" Ver "))?;
        let after = line.split(" Ver ").nth(1)?;
        let version = after.split_whitespace().next()?.to_string();
        let mut nums = version
            .split(|c: char| !c.is_ascii_digit())
            .filter(|s| !s.is_empty())
            .map(|s| s.parse::<u32>().ok());
        let (major, minor, patch) = (nums.next()??, nums.next()??, nums.next()??);
        let family = if line.contains("MariaDB") {
            Family::MariaDb
        } else if line.contains("Percona") {
            Family::Percona
        } else if line.contains("MySQL") || program_is_mysqld(line) {
            Family::MySql
        } else {
            return None;
        };
        Some(Flavor {
            family,
            major,
            minor,
            patch,
            version,
        })
    }

    /// Runs `binary --version` and recognises the server.
    pub fn detect(binary: &Path) -> Result<Flavor> {
        crate::infra::fs::require_file(
            binary,
            "server binary",
            "give --binary PATH to a mariadbd or mysqld",
        )?;
        let out = crate::infra::runner::output_retrying_busy(
            Command::new(binary).arg("--no-defaults").arg("--version"),
        )
        .with_context(|| format!("running {} --version", binary.display()))?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        Flavor::parse(&text).with_context(|| {
            let shown: String = text.trim().chars().take(200).collect();
            format!(
                "{} is not a MySQL-family server: `--version` printed {:?}, expected a line like \
                 \"mariadbd  Ver 10.11.18-MariaDB ...\" or \"mysqld  Ver 8.4.3 for Linux ...\"",
                binary.display(),
                shown
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_the_three_families() {
        let m = Flavor::parse(
            "mariadbd  Ver 10.11.18-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64 (Debian 12)",
        )
        .unwrap();
        assert_eq!(
            (m.family, m.major, m.minor, m.patch),
            (Family::MariaDb, 10, 11, 18)
        );
        let y = Flavor::parse(
            "/usr/sbin/mysqld  Ver 8.4.3 for Linux on x86_64 (MySQL Community Server - GPL)",
        )
        .unwrap();
        assert_eq!(
            (y.family, y.major, y.minor, y.patch),
            (Family::MySql, 8, 4, 3)
        );
        let p = Flavor::parse("mysqld  Ver 8.0.36-28 for Linux on x86_64 (Percona Server (GPL), Release '28', Revision '47601f19')").unwrap();
        assert_eq!(p.family, Family::Percona);
        assert!(p.family.is_mysql_like() && p.at_least(8, 0, 30));
        // A source build (MySQL 9.7.2 built here): a full path, no "MySQL" in the line.
        let b = Flavor::parse("/w/builds/mysql-9.7-baseline-gcc-12-d4fc/build/runtime_output_directory/mysqld  Ver 9.7.2-pgo for Linux on x86_64 (Source distribution)").unwrap();
        assert_eq!(
            (b.family, b.major, b.minor, b.patch),
            (Family::MySql, 9, 7, 2)
        );
        assert_eq!(b.version, "9.7.2-pgo");
        assert!(Flavor::parse("/x/mysqld-not  Ver 1.2.3 (x)").is_some());
        assert!(Flavor::parse("/usr/bin/vim  Ver 9.0.1 (x)").is_none());
        assert!(Flavor::parse("ls (GNU coreutils) 9.1").is_none());
        assert!(Flavor::parse("").is_none());
    }
}
