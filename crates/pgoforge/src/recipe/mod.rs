//! Recipes: how to get and build one server family, as TOML.
//!
//! The embedded recipes (`recipes/*.toml`, compiled in) cover MariaDB 10.11 (the default), MySQL
//! 8.0/8.4/9.7 and Percona Server 8.0/8.4. A user recipe may `extends = "NAME"` an embedded one and
//! override any field; unknown fields are errors that name the field.

pub mod mtr;
pub mod precompile;

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

const EMBEDDED: [(&str, &str); 6] = [
    (
        "mariadb-10.11",
        include_str!("../../../../recipes/mariadb-10.11.toml"),
    ),
    (
        "mysql-8.0",
        include_str!("../../../../recipes/mysql-8.0.toml"),
    ),
    (
        "mysql-8.4",
        include_str!("../../../../recipes/mysql-8.4.toml"),
    ),
    (
        "mysql-9.7",
        include_str!("../../../../recipes/mysql-9.7.toml"),
    ),
    (
        "percona-8.0",
        include_str!("../../../../recipes/percona-8.0.toml"),
    ),
    (
        "percona-8.4",
        include_str!("../../../../recipes/percona-8.4.toml"),
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
        /// The server's binary package built from this source (`mariadb-server-core`): apt's
        /// lists show its versions, so `doctor`, `run --plan` and the report can say when the
        /// distribution serves a newer release (a security fix) than `version`, or another
        /// version is installed (`source::release`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        server_package: Option<String>,
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
    /// GCC's `-fprofile-partial-training` in profile-use builds (default on, as MySQL's own
    /// `cmake/fprofile.cmake` has it): code the training never ran is optimized as without a
    /// profile; off, GCC optimizes it for size. Absent from the build key while on, so turning it
    /// on again finds the builds made before the setting existed.
    #[serde(default = "on", skip_serializing_if = "is_on")]
    pub profile_partial_training: bool,
    /// Precompiled headers: CMake target → headers (relative to the source directory) compiled
    /// once and put in front of each of the target's C++ sources (`builder::pch`). A build-time
    /// cut that changes under 1 % of MySQL's functions (static initializers, some optimization
    /// decisions: docs/bench/mysql-build.md), so the setting is part of the build key when set
    /// (and absent from it when empty, keeping other recipes' keys).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub precompile_headers: BTreeMap<String, Vec<String>>,
    /// The compiler used when `--compiler` is not given (`gcc`, `clang` or a versioned name such
    /// as `clang-22`; never a path: a recipe must not name a program to run). Absent: gcc. It
    /// chooses the compiler, which is in the build key already, so it is left out of the key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_compiler: Option<String>,
}

/// A compiler a recipe may name by default: a family name, optionally versioned.
fn is_compiler_name(s: &str) -> bool {
    let versioned = |prefix: &str| {
        s.strip_prefix(prefix)
            .is_some_and(|v| !v.is_empty() && v.len() <= 3 && v.chars().all(|c| c.is_ascii_digit()))
    };
    matches!(s, "gcc" | "clang") || versioned("gcc-") || versioned("clang-")
}

fn on() -> bool {
    true
}

fn is_on(b: &bool) -> bool {
    *b
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
    /// The server's own regression tests for the gate (absent: the quick gate only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtr: Option<mtr::MtrSpec>,
    /// What this recipe's builds and gate took on 2 cores, measured in seconds: what a plan
    /// estimates the run's total from (`pipeline::estimate`). Absent: the plan times the rest and
    /// says the builds are not known. Never part of a key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timings: Option<Timings>,
    /// Storage engines the recipe can build beside the server (`[engines.rocksdb]`), for a run
    /// whose tables are in one (`run --engine rocksdb`); absent from every other run's builds,
    /// so their keys stay.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub engines: BTreeMap<String, EngineBuild>,
    /// Precompiled headers the recipe offers on request (`--precompiled-headers`; `follow`'s
    /// cycles ask), in `[build.precompile_headers]`'s form: for a recipe whose builds were
    /// published and measured without them, so its default builds keep their keys and bytes.
    /// Outside `build`, so never part of a key until asked for.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub optional_precompile_headers: BTreeMap<String, Vec<String>>,
}

/// What building a storage engine's plugin adds to every build of a run on that engine.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineBuild {
    /// CMake arguments; each replaces the build's argument for the same variable (the recipe's
    /// `-DPLUGIN_ROCKSDB=NO`, say), or is added.
    pub cmake_args: Vec<String>,
    /// Targets built beside the recipe's.
    pub targets: Vec<String>,
    /// The engine's own regression tests, run by the MTR gate beside the recipe's subset.
    #[serde(default)]
    pub mtr_tests: Vec<String>,
    /// Tools those tests need, built with MTR's (MyRocks' suite skips itself without sst_dump).
    #[serde(default)]
    pub mtr_targets: Vec<String>,
    /// What those tools and tests add to the MTR gate on 2 cores, in seconds: once, and per
    /// binary (for the plan's estimate).
    #[serde(default)]
    pub mtr_tools_seconds: u32,
    #[serde(default)]
    pub mtr_seconds_per_binary: u32,
    /// The distribution's package of the plugin, unpacked beside its server of the built release
    /// when that server is compared (`mariadb-plugin-rocksdb`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debian_package: Option<String>,
    /// What the plugin adds to each build on 2 cores, in seconds (for the plan's estimate).
    #[serde(default)]
    pub build_seconds: u32,
}

/// Measured seconds on a 2-core machine (`[timings]`); the estimate scales them by the cores.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Timings {
    /// Where the figures were measured (a results page), for whoever updates them.
    pub measured: String,
    /// Builds with clang and with GCC; a compiler without figures makes the builds unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clang: Option<BuildSeconds>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gcc: Option<BuildSeconds>,
    /// The MTR gate: its tools built once, then the subset per binary.
    #[serde(default)]
    pub mtr_tools: u32,
    #[serde(default)]
    pub mtr_per_binary: u32,
}

/// Seconds of one build of each kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BuildSeconds {
    /// No profile, no LTO.
    pub baseline: u32,
    /// Instrumented (pgo-gen, cs-pgo-gen).
    pub instrumented: u32,
    /// With a profile or LTO (the bolt-ready build among them).
    pub optimized: u32,
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
    let r = Recipe::deserialize(toml::Value::Table(t))
        .map_err(|e| anyhow::anyhow!("recipe {name}: {e}"))?;
    r.check().with_context(|| format!("recipe {name}"))?;
    Ok(r)
}

/// A name that is safe as one path component: letters, digits, `.`, `_`, `-`, not starting with
/// a dot (so never `..`), at most 64 characters.
pub fn is_safe_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && !s.starts_with('.')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '+'))
}

/// A Debian package name (policy 5.6.1): lowercase letters, digits, `+ - .`, starting with a
/// letter or digit — so never an apt option (`-o...`).
fn is_debian_package(s: &str) -> bool {
    s.len() >= 2
        && s.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '+' | '-' | '.'))
}

impl Recipe {
    /// The recipe building `version` of its Debian source package instead of the one it pins
    /// (`--source-version`): the same build, checked as a recipe's own version is; its
    /// description says which version it builds.
    pub fn with_source_version(mut self, version: &str) -> Result<Recipe> {
        let SourceSpec::Debian { version: v, .. } = &mut self.source else {
            bail!(
                "--source-version applies to recipes built from a Debian source package; recipe {} \
                 is not (give another source with --source)",
                self.name
            );
        };
        if v != version {
            *v = version.to_string();
            self.description = format!("{} — built at {version}", self.description);
        }
        self.check()
            .with_context(|| format!("--source-version {}", version.escape_debug()))?;
        Ok(self)
    }

    /// The recipe whose builds carry the plugin of the engine named `engine` (`[engines.NAME]`;
    /// the caller leaves InnoDB, built into every server, alone). Refused, naming the fix, when
    /// the recipe does not build the engine.
    pub fn with_engine(mut self, engine: &str) -> Result<Recipe, String> {
        let Some(e) = self.engines.get(engine).cloned() else {
            return Err(format!(
                "recipe {} does not build the {engine} engine (it has no [engines.{engine}] \
                 section); use a recipe that does (mariadb-10.11), or run on InnoDB",
                self.name,
            ));
        };
        // `-DVAR=VALUE`'s variable (the whole argument when it sets none).
        let var = |a: &str| a.split_once('=').map_or(a, |(v, _)| v).to_string();
        for arg in &e.cmake_args {
            self.build.cmake_args.retain(|a| var(a) != var(arg));
            self.build.cmake_args.push(arg.clone());
        }
        for t in &e.targets {
            if !self.build.targets.contains(t) {
                self.build.targets.push(t.clone());
            }
        }
        if let Some(m) = &mut self.mtr {
            m.tests.extend(e.mtr_tests.iter().cloned());
            m.targets.extend(e.mtr_targets.iter().cloned());
        }
        if let Some(t) = &mut self.timings {
            for b in [&mut t.clang, &mut t.gcc].into_iter().flatten() {
                b.baseline += e.build_seconds;
                b.instrumented += e.build_seconds;
                b.optimized += e.build_seconds;
            }
            t.mtr_tools += e.mtr_tools_seconds;
            t.mtr_per_binary += e.mtr_seconds_per_binary;
        }
        self.description = format!("{}, with {engine}", self.description);
        Ok(self)
    }

    /// Whether a build of this recipe can use precompiled headers: its own, or offered on request.
    pub fn offers_precompiled_headers(&self) -> bool {
        !self.build.precompile_headers.is_empty() || !self.optional_precompile_headers.is_empty()
    }

    /// The recipe whose builds use the precompiled headers it offers on request
    /// (`--precompiled-headers`): they move into `build`, and so into every build's key. A recipe
    /// that uses its own already is returned as it is; one that offers none is refused, naming
    /// the fix.
    pub fn with_precompiled_headers(mut self) -> Result<Recipe, String> {
        if !self.build.precompile_headers.is_empty() {
            return Ok(self);
        }
        if self.optional_precompile_headers.is_empty() {
            return Err(format!(
                "recipe {} offers no precompiled headers (it has no [optional_precompile_headers] \
                 table); leave --precompiled-headers out, or add the table to a recipe file of \
                 your own",
                self.name
            ));
        }
        self.build.precompile_headers = std::mem::take(&mut self.optional_precompile_headers);
        self.description = format!("{}, with precompiled headers", self.description);
        Ok(self)
    }

    /// Values that reach file names, apt (as root) and /etc/apt must be what they claim to be.
    fn check(&self) -> Result<()> {
        if !is_safe_name(&self.name) {
            bail!(
                "name '{}' must be letters, digits, '.', '_', '+' or '-' (it names directories)",
                self.name.escape_debug()
            );
        }
        if !self.build.profile_partial_training && self.build.pgo_style == PgoStyle::Mysql {
            // Measured: MySQL 9.7's build with the setting off had the very .text of the default
            // one (docs/bench/mysql.md).
            bail!(
                "build.profile_partial_training = false has no effect with pgo_style = \"mysql\": \
                 MySQL's cmake/fprofile.cmake appends -fprofile-partial-training itself (GCC 10 \
                 and later), after pgoforge's flags; set pgo_style = \"flags\" too, and train \
                 the profile with that same recipe (a profile from a MySQL-style pgo-gen build \
                 does not match a flags-style build: MySQL's FPROFILE_* switches also map the \
                 source paths)"
            );
        }
        precompile::check(&self.build.precompile_headers)?;
        precompile::check(&self.optional_precompile_headers)
            .context("optional_precompile_headers")?;
        if let Some(c) = &self.build.default_compiler {
            if !is_compiler_name(c) {
                bail!(
                    "build.default_compiler '{}' must be gcc, clang or a versioned name such as \
                     clang-22 (a compiler given by path belongs on the command line: --compiler \
                     PATH --flag-family gcc|clang)",
                    c.escape_debug()
                );
            }
        }
        if let Some(p) = self.apt_packages.iter().find(|p| !is_debian_package(p)) {
            bail!(
                "apt_packages: '{}' is not a Debian package name (lowercase letters, digits, + - .)",
                p.escape_debug()
            );
        }
        if let SourceSpec::Debian {
            package,
            version,
            suite,
            server_package,
        } = &self.source
        {
            if let Some(p) = server_package.as_ref().filter(|p| !is_debian_package(p)) {
                bail!(
                    "source.server_package '{}' is not a Debian package name",
                    p.escape_debug()
                );
            }
            if !is_debian_package(package) {
                bail!(
                    "source.package '{}' is not a Debian package name",
                    package.escape_debug()
                );
            }
            let version_ok = !version.is_empty()
                && version
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '+' | '-' | ':' | '~'));
            if !version_ok {
                bail!(
                    "source.version '{}' is not a Debian version",
                    version.escape_debug()
                );
            }
            let suite_ok = !suite.is_empty()
                && suite
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
            if !suite_ok {
                bail!(
                    "source.suite '{}' is not a Debian suite name (e.g. bookworm, unstable)",
                    suite.escape_debug()
                );
            }
        }
        Ok(())
    }
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
    fn another_source_version_is_checked_and_described_and_only_for_debian_sources() {
        let d = Recipe::embedded(DEFAULT).unwrap();
        let r = d
            .clone()
            .with_source_version("1:10.11.20-0+deb12u1")
            .unwrap();
        assert!(
            matches!(r.source, SourceSpec::Debian { ref version, .. } if version == "1:10.11.20-0+deb12u1")
        );
        assert!(r.description.ends_with("built at 1:10.11.20-0+deb12u1"));
        let e = d.clone().with_source_version("1.0 -o Dir=/").unwrap_err();
        assert!(
            format!("{e:#}").contains("is not a Debian version"),
            "{e:#}"
        );
        let user = Recipe::embedded("mysql-9.7").unwrap();
        if !matches!(user.source, SourceSpec::Debian { .. }) {
            let e = user.with_source_version("1").unwrap_err();
            assert!(format!("{e:#}").contains("applies to recipes built from a Debian source"));
        }
    }

    #[test]
    fn every_embedded_recipe_parses() {
        for n in Recipe::embedded_names() {
            let r = Recipe::embedded(n).unwrap();
            assert_eq!(r.name, n);
            assert!(!r.build.targets.is_empty());
        }
        let d = Recipe::embedded(DEFAULT).unwrap();
        // The default names the server package whose installed release a .deb must fit (the
        // release built is resolved against the mirror at run time: source/release.rs).
        assert!(
            matches!(d.source, SourceSpec::Debian { ref server_package, .. }
                if server_package.as_deref() == Some("mariadb-server-core")),
            "{:?}",
            d.source
        );
        assert!(d
            .build
            .cmake_args
            .iter()
            .any(|a| a == "-DWITH_LIBFMT=system"));
    }

    /// The MySQL 9.7 build's time cuts (docs/bench/mysql-build.md), each with what it needs
    /// installed: Ninja, -g1, Debian's ICU and protobuf instead of the bundled ones.
    #[test]
    fn the_mysql_recipe_builds_with_ninja_minimal_debug_info_and_debians_icu_and_protobuf() {
        let r = Recipe::embedded("mysql-9.7").unwrap();
        assert_eq!(r.build.generator, "Ninja");
        assert_eq!(r.build.default_compiler.as_deref(), Some("clang"));
        for arg in [
            "-DMINIMAL_RELWITHDEBINFO=ON",
            "-DWITH_ICU=system",
            "-DWITH_PROTOBUF=system",
        ] {
            assert!(r.build.cmake_args.iter().any(|a| a == arg), "{arg}");
        }
        for pkg in [
            "ninja-build",
            "libicu-dev",
            "libprotobuf-dev",
            "libprotoc-dev",
            "protobuf-compiler",
        ] {
            assert!(r.apt_packages.iter().any(|p| p == pkg), "{pkg}");
        }
        // Precompiled headers for the heaviest targets, each header a path in the source.
        for t in ["sql_main", "sql_dd", "innobase", "perfschema"] {
            assert!(
                r.build
                    .precompile_headers
                    .get(t)
                    .is_some_and(|h| !h.is_empty()),
                "{t}"
            );
        }
        // MariaDB's build is unchanged by them (its build keys stay valid): the empty setting
        // is not even serialized into the key.
        let m = Recipe::embedded(DEFAULT).unwrap();
        assert_eq!(m.build.generator, "Unix Makefiles");
        assert!(m.build.precompile_headers.is_empty());
        let key_text = serde_json::to_string(&m.build).unwrap();
        assert!(!key_text.contains("precompile_headers"), "{key_text}");
        // It offers them on request: asked for, they are in the build and so in its key.
        for t in ["sql", "innobase", "perfschema"] {
            assert!(m.optional_precompile_headers.contains_key(t), "{t}");
        }
        let asked = m.clone().with_precompiled_headers().unwrap();
        assert_eq!(
            asked.build.precompile_headers,
            m.optional_precompile_headers
        );
        assert!(asked.optional_precompile_headers.is_empty());
        assert!(serde_json::to_string(&asked.build)
            .unwrap()
            .contains("precompile_headers"));
        // MySQL's recipe uses its own always: asking changes nothing.
        assert_eq!(r.clone().with_precompiled_headers().unwrap(), r);
        // A recipe that offers none is refused, naming the fix.
        let mut bare = m.clone();
        bare.optional_precompile_headers.clear();
        let e = bare.with_precompiled_headers().unwrap_err();
        assert!(e.contains("leave --precompiled-headers out"), "{e}");
    }

    #[test]
    fn a_user_recipe_with_hostile_precompiled_headers_is_refused() {
        let e = Recipe::parse_user(
            "mine.toml",
            "extends = \"mysql-9.7\"\n[build.precompile_headers]\nsql_main = [\"../../etc/x.h\"]\n",
        )
        .unwrap_err();
        assert!(
            format!("{e:#}").contains("relative to the source directory"),
            "{e:#}"
        );
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
        let e = Recipe::parse_user(
            "np.toml",
            "extends = \"mysql-9.7\"\n[build]\nprofile_partial_training = false\n",
        )
        .unwrap_err();
        assert!(
            format!("{e:#}").contains("set pgo_style = \"flags\" too"),
            "{e:#}"
        );
        assert!(Recipe::parse_user(
            "np.toml",
            "extends = \"mysql-9.7\"\n[build]\nprofile_partial_training = false\npgo_style = \"flags\"\n",
        )
        .is_ok());
        let e = Recipe::parse_user("bad.toml", "extends = \"mariadb-9\"\n").unwrap_err();
        assert!(e.to_string().contains("mariadb-9"), "{e}");
        let e = Recipe::embedded("nope").unwrap_err();
        assert!(e.to_string().contains("mariadb-10.11"), "{e}");
    }

    #[test]
    fn a_default_compiler_is_a_name_never_a_path() {
        let parse = |v: &str| {
            Recipe::parse_user(
                "c.toml",
                &format!("extends = \"mariadb-10.11\"\n[build]\ndefault_compiler = \"{v}\"\n"),
            )
        };
        for ok in ["gcc", "clang", "clang-22", "gcc-12"] {
            let r = parse(ok).unwrap();
            assert_eq!(r.build.default_compiler.as_deref(), Some(ok));
        }
        for bad in [
            "/tmp/evil",
            "clang-",
            "clang-22; rm",
            "icx",
            "clang-1234",
            "gcc-x",
        ] {
            let e = format!("{:#}", parse(bad).unwrap_err());
            assert!(
                e.contains("build.default_compiler") && e.contains("--compiler PATH"),
                "{bad}: {e}"
            );
        }
        // Absent, it is not serialized: recipes without it keep their build keys' text.
        let m = Recipe::embedded("mysql-8.4").unwrap();
        assert_eq!(m.build.default_compiler, None);
        assert_eq!(
            Recipe::embedded(DEFAULT)
                .unwrap()
                .build
                .default_compiler
                .as_deref(),
            Some("clang"),
            "MariaDB builds with clang (docs/results/mariadb-10.11-clang-vs-gcc-main-job/)"
        );
        let key_text = serde_json::to_string(&m.build).unwrap();
        assert!(!key_text.contains("default_compiler"), "{key_text}");
    }

    #[test]
    fn values_that_reach_apt_and_paths_are_checked() {
        let bad = |extra: &str| {
            let e = Recipe::parse_user("x.toml", &format!("extends = \"mysql-9.7\"\n{extra}"))
                .unwrap_err();
            format!("{e:#}")
        };
        // A newline in the suite would add stanzas to a root-owned deb822 file.
        let e = bad("[source]\nkind = \"debian\"\npackage = \"mysql-9.7\"\nversion = \"9.7.2-4\"\nsuite = \"unstable\\nTypes: deb\"\n");
        assert!(e.contains("source.suite") && e.contains("\\n"), "{e}");
        // An apt option smuggled in as a package would run as root.
        let e = bad("apt_packages = [\"-oAPT::Update::Pre-Invoke::=touch /tmp/x\"]\n");
        assert!(e.contains("not a Debian package name"), "{e}");
        let e = bad("name = \"../escape\"\n");
        assert!(e.contains("names directories"), "{e}");
        assert!(is_safe_name("mysql-9.7") && is_safe_name("pgo+bolt") && !is_safe_name("a/b"));
    }
}
