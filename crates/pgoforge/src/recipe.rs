//! Recipes: how to get and build one server family, as TOML.
//!
//! The embedded recipes (`recipes/*.toml`, compiled in) cover MariaDB 10.11 (the default), MySQL
//! 8.0/8.4/9.7 and Percona Server 8.0/8.4. A user recipe may `extends = "NAME"` an embedded one and
//! override any field; unknown fields are errors that name the field.

use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

const EMBEDDED: [(&str, &str); 6] = [
    (
        "mariadb-10.11",
        include_str!("../../../recipes/mariadb-10.11.toml"),
    ),
    ("mysql-8.0", include_str!("../../../recipes/mysql-8.0.toml")),
    ("mysql-8.4", include_str!("../../../recipes/mysql-8.4.toml")),
    ("mysql-9.7", include_str!("../../../recipes/mysql-9.7.toml")),
    (
        "percona-8.0",
        include_str!("../../../recipes/percona-8.0.toml"),
    ),
    (
        "percona-8.4",
        include_str!("../../../recipes/percona-8.4.toml"),
    ),
];

pub const DEFAULT: &str = "mariadb-10.11";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    Mariadb,
    Mysql,
    Percona,
    /// Anything else built the same way (the test fixture).
    Other,
}

/// Where the source comes from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum SourceSpec {
    /// A Debian source package, fetched with `apt-get source` (deb-src entries added as needed).
    Debian {
        package: String,
        version: String,
        suite: String,
    },
    /// A tarball or directory the user passes with `--source`.
    User { hint: String },
    /// A URL with its required sha256 (for machines with internet access).
    Url { url: String, sha256: String },
}

/// How PGO flags reach the build.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PgoStyle {
    /// Injected into CMAKE_C_FLAGS/CMAKE_CXX_FLAGS and the linker flags (MariaDB).
    Flags,
    /// MySQL's and Percona's -DFPROFILE_GENERATE / -DFPROFILE_USE / -DFPROFILE_DIR switches.
    Mysql,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BuildSpec {
    pub targets: Vec<String>,
    /// The server binary, relative to the build directory.
    pub binary: String,
    pub pgo_style: PgoStyle,
    pub cmake_args: Vec<String>,
    /// A CMake argument that marks the version string of optimized builds (e.g. `-pgo`).
    #[serde(default)]
    pub version_suffix_arg: Option<String>,
    #[serde(default = "default_generator")]
    pub generator: String,
}

fn default_generator() -> String {
    "Unix Makefiles".into()
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recipe {
    pub name: String,
    pub family: Family,
    pub description: String,
    /// Debian packages the build needs (libraries and tools beyond the compiler), checked and
    /// installed by `pgoforge run`.
    #[serde(default)]
    pub apt_packages: Vec<String>,
    pub source: SourceSpec,
    pub build: BuildSpec,
}

fn parse_value(name: &str, text: &str) -> Result<toml::Table> {
    text.parse::<toml::Table>()
        .with_context(|| format!("recipe {name} is not valid TOML"))
}

/// Overlays `over` on `base`, table by table.
fn merge(base: &mut toml::Table, over: toml::Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

fn from_table(name: &str, t: toml::Table) -> Result<Recipe> {
    Recipe::deserialize(toml::Value::Table(t)).map_err(|e| anyhow::anyhow!("recipe {name}: {e}"))
}

impl Recipe {
    pub fn embedded_names() -> impl Iterator<Item = &'static str> {
        EMBEDDED.iter().map(|(n, _)| *n)
    }

    pub fn embedded(name: &str) -> Result<Recipe> {
        let Some((_, text)) = EMBEDDED.iter().find(|(n, _)| *n == name) else {
            let names: Vec<_> = Self::embedded_names().collect();
            bail!("no recipe named '{name}'; the embedded recipes are {} (or give a recipe file path)", names.join(", "));
        };
        from_table(name, parse_value(name, text)?)
    }

    /// A recipe by embedded name or TOML file path; a file may `extends = "NAME"`.
    pub fn load(name_or_path: &str) -> Result<Recipe> {
        let path = Path::new(name_or_path);
        if !(name_or_path.ends_with(".toml") || path.is_file()) {
            return Self::embedded(name_or_path);
        }
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading recipe {}", path.display()))?;
        Self::parse_user(&path.display().to_string(), &text)
    }

    pub fn parse_user(origin: &str, text: &str) -> Result<Recipe> {
        let mut t = parse_value(origin, text)?;
        let table = match t.remove("extends") {
            Some(toml::Value::String(base)) => {
                let (_, base_text) =
                    EMBEDDED.iter().find(|(n, _)| *n == base).with_context(|| {
                        format!("recipe {origin} extends '{base}', which is not an embedded recipe")
                    })?;
                let mut b = parse_value(&base, base_text)?;
                merge(&mut b, t);
                b
            }
            Some(_) => bail!("recipe {origin}: `extends` must be a recipe name"),
            None => t,
        };
        from_table(origin, table)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_embedded_recipe_parses() {
        for n in Recipe::embedded_names() {
            let r = Recipe::embedded(n).unwrap();
            assert_eq!(r.name, n);
            assert!(!r.build.targets.is_empty());
        }
        let d = Recipe::embedded(DEFAULT).unwrap();
        assert!(
            matches!(d.source, SourceSpec::Debian { ref version, .. } if version == "1:10.11.18-0+deb12u1")
        );
        assert!(d
            .build
            .cmake_args
            .iter()
            .any(|a| a == "-DWITH_LIBFMT=system"));
    }

    #[test]
    fn user_recipes_extend_and_reject_unknown_fields_by_name() {
        let r = Recipe::parse_user(
            "mine.toml",
            "extends = \"mariadb-10.11\"\nname = \"mine\"\n[build]\ntargets = [\"mariadbd\"]\n",
        )
        .unwrap();
        assert_eq!(r.name, "mine");
        assert_eq!(r.build.targets, vec!["mariadbd"]);
        assert_eq!(
            r.build.binary, "sql/mariadbd",
            "unchanged fields come from the base"
        );
        let e = Recipe::parse_user(
            "bad.toml",
            "extends = \"mariadb-10.11\"\n[build]\ntargtes = [\"x\"]\n",
        )
        .unwrap_err();
        assert!(e.to_string().contains("unknown field `targtes`"), "{e}");
        let e = Recipe::parse_user("bad.toml", "extends = \"mariadb-9\"\n").unwrap_err();
        assert!(e.to_string().contains("mariadb-9"), "{e}");
        let e = Recipe::embedded("nope").unwrap_err();
        assert!(e.to_string().contains("mariadb-10.11"), "{e}");
    }
}
