//! What a tarball carries to run as a service without pgoforge: `etc/my.cnf`, a configuration
//! written for the package unpacked at `/opt/NAME` (its `bin/`, `lib/`, `share/`), a systemd unit
//! `systemd/pgoforge-FAMILY.service` running the server with that file, and `README.md` saying
//! how to install, initialize, start and roll back — commands, not an install script, so a DBA
//! sees every step. The server gets its own datadir, socket, port and unit name, so it runs
//! beside (never over) a distribution's server; Debian-sourced MariaDB has the .deb instead
//! (`deb.rs`) to take the distribution server's place.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use super::{cpu, Manifest};
use crate::server::flavor::{Family, Flavor};

/// Where the files assume the package is unpacked (`/opt/NAME`); README says how to move it.
pub const PREFIX_DIR: &str = "/opt";

/// The package's deployment files: (path inside the package, contents).
pub struct Kit {
    pub files: Vec<(PathBuf, String)>,
}

/// What the kit is written for.
pub struct KitFor<'a> {
    pub manifest: &'a Manifest,
    pub flavor: &'a Flavor,
    /// The server binary's name in `bin/`.
    pub server: &'a str,
    /// `share/FAMILY`, the directory of the error messages (and character sets, if packaged).
    pub share_family: &'a str,
    pub has_charsets: bool,
    /// The server tells systemd when it is ready (it calls sd_notify, [`notifies`]): the unit is
    /// `Type=notify`, so `systemctl start` returns once clients can connect.
    pub notify: bool,
}

/// Whether `binary` calls sd_notify (built with systemd support, as Debian's and the default
/// recipe's MariaDB are): its dynamic symbols name it. A unit of `Type=notify` on a server that
/// never notifies would fail after its start timeout; one of `Type=simple` is "active" before
/// the server can take a connection.
pub fn notifies(binary: &std::path::Path) -> bool {
    std::process::Command::new("readelf")
        .args(["--dyn-syms", "--wide"])
        .arg(binary)
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout).lines().any(|l| {
                l.split_whitespace()
                    .nth(7)
                    .is_some_and(|n| n.starts_with("sd_notify"))
            })
        })
        .unwrap_or(false)
}

/// `mariadb` or `mysql` (Percona included): the unit, run and data directories' suffix.
pub fn service_family(f: &Flavor) -> &'static str {
    match f.family {
        Family::MariaDb => "mariadb",
        Family::MySql | Family::Percona => "mysql",
    }
}

/// The unit's name: never the distribution's `mariadb.service` or `mysql.service`.
pub fn unit_name(f: &Flavor) -> String {
    format!("pgoforge-{}.service", service_family(f))
}

/// The package's directory once unpacked where the files expect it.
pub fn prefix(m: &Manifest) -> String {
    format!("{PREFIX_DIR}/{}", m.name)
}

pub fn kit(k: &KitFor) -> Kit {
    let cnf = PathBuf::from("etc/my.cnf");
    let unit = PathBuf::from("systemd").join(unit_name(k.flavor));
    let mut files = vec![
        (cnf, my_cnf(k)),
        (unit, systemd_unit(k)),
        (PathBuf::from("README.md"), readme(k)),
    ];
    if let Some(r) = cpu_needed(k.manifest) {
        files.push((
            PathBuf::from(cpu::TARBALL_CHECK),
            cpu::check_script(r, &k.manifest.name),
        ));
    }
    Kit { files }
}

/// The package's CPU requirement when it asks more than every amd64 CPU has.
pub fn cpu_needed(m: &Manifest) -> Option<&cpu::CpuRequirement> {
    m.cpu.as_ref().filter(|r| !r.flags.is_empty())
}

/// The directories `my.cnf` names inside the package (`basedir`, `lc-messages-dir`,
/// `character-sets-dir`), relative to the package root, for `package verify` to check against
/// the files the package really has.
pub fn package_dirs_named(cnf: &str, m: &Manifest) -> Vec<(String, Option<PathBuf>)> {
    let root = prefix(m);
    cnf.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once('=')?;
            let (k, v) = (k.trim(), v.trim());
            matches!(
                k,
                "basedir" | "lc-messages-dir" | "character-sets-dir" | "plugin-dir"
            )
            .then(|| {
                let rel = Path::new(v).strip_prefix(&root).ok().map(Path::to_path_buf);
                (k.to_string(), rel)
            })
        })
        .collect()
}

fn my_cnf(k: &KitFor) -> String {
    let p = prefix(k.manifest);
    let fam = service_family(k.flavor);
    let mut c = String::new();
    let _ = writeln!(
        c,
        "# {} ({}) — optimized by pgoforge, packaged as {}.\n\
         # Written for the package unpacked at {p}; unpacked elsewhere, replace {p} in this file and\n\
         # in systemd/{} (README.md). Its own datadir, socket and port: it runs beside a\n\
         # distribution's server, never over it.\n\
         [mysqld]\n\
         basedir            = {p}\n\
         lc-messages-dir    = {p}/share/{}",
        k.flavor,
        k.manifest.variant,
        k.manifest.name,
        unit_name(k.flavor),
        k.share_family
    );
    if k.has_charsets {
        let _ = writeln!(
            c,
            "character-sets-dir = {p}/share/{}/charsets",
            k.share_family
        );
    }
    let _ = writeln!(
        c,
        "datadir            = /var/lib/pgoforge-{fam}\n\
         socket             = /run/pgoforge-{fam}/mysqld.sock\n\
         pid-file           = /run/pgoforge-{fam}/mysqld.pid\n\
         # Only this machine; a remote client needs its address here (and an account for it).\n\
         bind-address       = 127.0.0.1\n\
         # 3307, not 3306: the distribution's server may keep 3306.\n\
         port               = 3307\n\
         skip-name-resolve  = ON\n\
         # Size it for the machine (pgoforge benchmarked with 2 GiB).\n\
         innodb_buffer_pool_size = 2G"
    );
    if let Some(file) = k.manifest.engine.plugin() {
        let _ = writeln!(
            c,
            "# The {} engine the package was measured on: its plugin, built with this server.\n\
             plugin-dir         = {p}/{}\n\
             plugin-load-add    = {file}",
            k.manifest.engine,
            super::PLUGIN_DIR
        );
    }
    if k.flavor.family.is_mysql_like() && k.flavor.at_least(8, 0, 0) {
        let _ = writeln!(
            c,
            "mysqlx-bind-address = 127.0.0.1\n\
             mysqlx-socket      = /run/pgoforge-{fam}/mysqlx.sock\n\
             mysqlx-port        = 33070"
        );
    }
    let _ = writeln!(
        c,
        "\n[client]\nsocket             = /run/pgoforge-{fam}/mysqld.sock\nport               = 3307"
    );
    c
}

fn systemd_unit(k: &KitFor) -> String {
    let p = prefix(k.manifest);
    let fam = service_family(k.flavor);
    format!(
        "# {unit}: {flavor} ({variant}) optimized by pgoforge. Install: README.md.\n\
         [Unit]\n\
         Description={flavor} optimized by pgoforge ({variant}, {name})\n\
         Documentation=file:{p}/README.md\n\
         After=network.target\n\
         \n\
         [Service]\n\
         # The server stays in the foreground and logs to stderr: the journal keeps its log.\n\
         {kind}\n\
         User=mysql\n\
         Group=mysql\n\
         RuntimeDirectory=pgoforge-{fam}\n\
         RuntimeDirectoryMode=0755\n\
         {cpu_check}\
         ExecStart={p}/bin/{server} --defaults-file={p}/etc/my.cnf\n\
         # A large buffer pool takes a while to write back at shutdown.\n\
         TimeoutStartSec=900\n\
         TimeoutStopSec=900\n\
         Restart=on-abort\n\
         LimitNOFILE=32768\n\
         PrivateTmp=true\n\
         ProtectSystem=full\n\
         ProtectHome=true\n\
         NoNewPrivileges=true\n\
         \n\
         [Install]\n\
         WantedBy=multi-user.target\n",
        unit = unit_name(k.flavor),
        kind = if k.notify {
            "# It says when it is ready (sd_notify): `systemctl start` returns once it serves.\nType=notify"
        } else {
            "# It cannot say when it is ready (built without systemd): active before it serves.\nType=simple"
        },
        flavor = k.flavor,
        variant = k.manifest.variant,
        name = k.manifest.name,
        server = k.server,
        cpu_check = match cpu_needed(k.manifest) {
            // A disk or VM moved to an older CPU: refused with the reason in the journal.
            Some(r) => format!(
                "# Compiled for {}: refuses to start on a CPU without it (exit {}).\nExecStartPre={p}/{}\n",
                r.describe(),
                cpu::EXIT_CPU,
                cpu::TARBALL_CHECK
            ),
            None => String::new(),
        },
    )
}

/// The datadir's initialization, as the README gives it: MySQL's own `--initialize` (a random
/// root password in the log); MariaDB's system-table scripts through `--bootstrap` (what
/// mariadb-install-db does; root then logs in through the OS root's socket only).
pub fn init_command(k: &KitFor) -> String {
    let p = prefix(k.manifest);
    if k.flavor.family.is_mysql_like() {
        format!(
            "sudo -u mysql {p}/bin/{} --defaults-file={p}/etc/my.cnf --initialize",
            k.server
        )
    } else {
        let scripts: Vec<String> = crate::server::layout::MARIADB_BOOTSTRAP_SQL
            .iter()
            .map(|s| format!("{p}/share/{}/{s}", k.share_family))
            .collect();
        // --bootstrap takes one statement per line.
        format!(
            "{{ printf '%s\\n' 'create database if not exists mysql;' 'use mysql;' \"SET @auth_root_socket='root';\"; \\\n    cat {}; }} \\\n  | sudo -u mysql {p}/bin/{} --defaults-file={p}/etc/my.cnf --bootstrap",
            scripts.join(" \\\n        "),
            k.server
        )
    }
}

/// Step 2's first line: what tar and the server need from Debian, installed only where missing
/// (`dpkg -s` fails when any is not installed), so the step also runs on a host without a mirror
/// that has them all.
fn needs_line(m: &Manifest) -> String {
    let mut pkgs = vec!["zstd".to_string()];
    pkgs.extend(m.runtime_packages.iter().cloned());
    let list = pkgs.join(" ");
    let why = if m.runtime_packages.is_empty() {
        "tar needs zstd; not on every host"
    } else {
        "tar needs zstd, the server these libraries; not on every host"
    };
    format!(
        "dpkg -s {list} >/dev/null 2>&1 || sudo apt-get install -y --no-install-recommends {list}   # {why}"
    )
}

fn readme(k: &KitFor) -> String {
    let m = k.manifest;
    let p = prefix(m);
    let fam = service_family(k.flavor);
    let unit = unit_name(k.flavor);
    let mut gains = String::new();
    for g in &m.gains {
        let _ = writeln!(
            gains,
            "- {} at {} thread{}: {}",
            g.workload,
            g.threads,
            if g.threads == 1 { "" } else { "s" },
            g.verdict
        );
    }
    if gains.is_empty() {
        gains = "- (none recorded in manifest.json)\n".into();
    }
    let against = m.gains_against_words("the baseline");
    let connect = if k.flavor.family.is_mysql_like() {
        format!(
            "    mysql -S /run/pgoforge-{fam}/mysqld.sock -u root -p   # the temporary password step 3 printed\n    # then: ALTER USER root@localhost IDENTIFIED BY '...';\n"
        )
    } else {
        format!("    sudo mariadb -S /run/pgoforge-{fam}/mysqld.sock               # root through the OS root's socket\n")
    };
    format!(
        "# {name}\n\n\
         {flavor}, variant {variant}, built by pgoforge {pv} from {source}.\n\
         How it was made and what it measured: manifest.json. Measured against {against}:\n\n{gains}\n\
         Layout: `bin/{server}` (the server), `lib/` (libraries from its build tree, if any),\n\
         `share/{share}/` (error messages{charsets}{bootstrap}), `etc/my.cnf`,\n\
         `systemd/{unit}`, `manifest.json`, `SHA256SUMS`.\n\n\
         {cpu}\
         ## Run it under systemd\n\n\
         The files expect the package at `{p}`. Elsewhere, replace that path first:\n\
         `sed -i 's|{p}|/your/dir|g' etc/my.cnf systemd/{unit}`.\n\
         It gets its own datadir (/var/lib/pgoforge-{fam}), socket (/run/pgoforge-{fam}/), port\n\
         (3307, 127.0.0.1 only) and unit name, so it runs beside the distribution's server; point\n\
         `datadir` at a copy of an existing datadir of the same major version to serve that data.\n\n\
         1. Check it: `pgoforge package verify {name}.tar.zst` (hashes, version, a short start on a\n\
         \x20  scratch datadir), or without pgoforge `cd {name} && sha256sum -c SHA256SUMS`.\n\
         2. Unpack and make the service's user and datadir:\n\n\
         \x20   {needs}\n\
         \x20   sudo tar --zstd -xf {name}.tar.zst -C {prefix_dir}\n\
         \x20   id mysql || sudo useradd --system --no-create-home --shell /usr/sbin/nologin mysql\n\
         \x20   sudo install -d -o mysql -g mysql -m 0750 /var/lib/pgoforge-{fam}\n\
         \x20   sudo install -d -o mysql -g mysql -m 0755 /run/pgoforge-{fam}\n\n\
         3. Initialize the datadir (once):\n\n\
         \x20   {init}\n\n\
         4. Install and start the unit:\n\n\
         \x20   sudo cp {p}/systemd/{unit} /etc/systemd/system/\n\
         \x20   sudo systemctl daemon-reload\n\
         \x20   sudo systemctl enable --now {unit}\n\
         \x20   systemctl status {unit}\n\n\
         5. Connect:\n\n{connect}\n\
         ## Roll back\n\n\
         Nothing else was changed: stop and remove the unit, and the machine is as before (the\n\
         distribution's server, if any, never stopped).\n\n\
         \x20   sudo systemctl disable --now {unit}\n\
         \x20   sudo rm /etc/systemd/system/{unit} && sudo systemctl daemon-reload\n\
         \x20   sudo rm -r {p}          # and /var/lib/pgoforge-{fam} once its data is not needed\n",
        name = m.name,
        flavor = k.flavor,
        variant = m.variant,
        pv = m.pgoforge_version,
        source = if m.source.is_empty() { "its source" } else { m.source.as_str() },
        server = k.server,
        share = k.share_family,
        charsets = if k.has_charsets { ", character sets" } else { "" },
        bootstrap = if k.flavor.family.is_mysql_like() {
            ""
        } else {
            ", the system-table scripts"
        },
        prefix_dir = PREFIX_DIR,
        needs = needs_line(m),
        init = init_command(k).replace('\n', "\n    "),
        cpu = match cpu_needed(m) {
            Some(r) => format!(
                "## The CPU it needs\n\nCompiled for {}: a CPU without {} dies with SIGILL. `bin/cpu-check` says \
                 whether this\nmachine has them (exit {} naming what it lacks; `PGOFORGE_CPUINFO=FILE` checks another\n\
                 machine's /proc/cpuinfo); the unit runs it before the server.\n\n",
                r.describe(),
                r.flags.join(" "),
                cpu::EXIT_CPU
            ),
            None => String::new(),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(version_line: &str, server: &str, share: &str) -> (Manifest, Vec<(PathBuf, String)>) {
        let m = Manifest {
            name: "mysql-9.7.2-pgo+lto-gcc-12".into(),
            variant: "pgo+lto".into(),
            ..Manifest::default()
        };
        let flavor = Flavor::parse(version_line).unwrap();
        let k = kit(&KitFor {
            manifest: &m,
            flavor: &flavor,
            server,
            share_family: share,
            has_charsets: true,
            notify: false,
        });
        (m, k.files)
    }

    /// MySQL's kit (CI has no MySQL build to package): X protocol kept local and off the
    /// distribution's ports, `--initialize` (a random root password), the unit on mysqld.
    #[test]
    fn a_mysql_kit_initializes_with_a_random_password_and_keeps_x_protocol_local() {
        let (m, f) = files(
            "/usr/sbin/mysqld  Ver 9.7.2 for Linux on x86_64 (Source distribution)",
            "mysqld",
            "mysql",
        );
        let names: Vec<String> = f.iter().map(|(p, _)| p.display().to_string()).collect();
        assert_eq!(
            names,
            ["etc/my.cnf", "systemd/pgoforge-mysql.service", "README.md"]
        );
        let cnf = &f[0].1;
        for line in [
            "basedir            = /opt/mysql-9.7.2-pgo+lto-gcc-12",
            "lc-messages-dir    = /opt/mysql-9.7.2-pgo+lto-gcc-12/share/mysql",
            "bind-address       = 127.0.0.1",
            "mysqlx-bind-address = 127.0.0.1",
            "port               = 3307",
        ] {
            assert!(cnf.lines().any(|l| l == line), "{line}:\n{cnf}");
        }
        assert!(f[1].1.contains(
            "ExecStart=/opt/mysql-9.7.2-pgo+lto-gcc-12/bin/mysqld --defaults-file=/opt/mysql-9.7.2-pgo+lto-gcc-12/etc/my.cnf"
        ));
        assert!(f[2].1.contains("--initialize\n"), "{}", f[2].1);
        assert!(!f[2].1.contains("--initialize-insecure"));
        // verify reads the directories back, relative to the package.
        let dirs = package_dirs_named(cnf, &m);
        assert_eq!(
            dirs,
            [
                ("basedir".to_string(), Some(PathBuf::new())),
                (
                    "lc-messages-dir".to_string(),
                    Some(PathBuf::from("share/mysql"))
                ),
                (
                    "character-sets-dir".to_string(),
                    Some(PathBuf::from("share/mysql/charsets"))
                ),
            ]
        );
        let moved = cnf.replace("/opt/", "/srv/");
        assert!(package_dirs_named(&moved, &m)
            .iter()
            .all(|(_, r)| r.is_none()));
    }

    #[test]
    fn a_mariadb_kit_bootstraps_one_statement_per_line_and_has_no_x_protocol() {
        let (_, f) = files(
            "mariadbd  Ver 10.11.19-MariaDB-pgo for debian-linux-gnu on x86_64 (Source distribution)",
            "mariadbd",
            "mariadb",
        );
        assert!(!f[0].1.contains("mysqlx"));
        let readme = &f[2].1;
        assert!(
            readme.contains("printf '%s\\n' 'create database if not exists mysql;' 'use mysql;'"),
            "{readme}"
        );
        assert!(readme.contains("mysql_system_tables_data.sql"));
        assert!(readme.contains("--bootstrap"));
        assert!(f[1].1.contains("RuntimeDirectory=pgoforge-mariadb"));
        // A server that cannot notify gets a simple unit (a notify unit would time out).
        assert!(f[1].1.contains("\nType=simple\n"), "{}", f[1].1);
        assert!(readme.contains(
            "dpkg -s zstd >/dev/null 2>&1 || sudo apt-get install -y --no-install-recommends zstd   #"
        ));
    }

    /// A MySQL built on Debian's ICU and protobuf: step 2 installs them where missing.
    #[test]
    fn the_readme_installs_the_libraries_the_manifest_names_only_where_missing() {
        let m = Manifest {
            name: "mysql-9.7.2-pgo".into(),
            runtime_packages: vec!["libicu72".into(), "libprotobuf-lite32".into()],
            ..Manifest::default()
        };
        let flavor =
            Flavor::parse("/usr/sbin/mysqld  Ver 9.7.2 for Linux on x86_64 (Source distribution)")
                .unwrap();
        let k = kit(&KitFor {
            manifest: &m,
            flavor: &flavor,
            server: "mysqld",
            share_family: "mysql",
            has_charsets: true,
            notify: false,
        });
        let readme = &k.files[2].1;
        let line = "dpkg -s zstd libicu72 libprotobuf-lite32 >/dev/null 2>&1 || sudo apt-get install -y \
                    --no-install-recommends zstd libicu72 libprotobuf-lite32   # tar needs zstd, the server these libraries";
        assert!(readme.contains(line), "{readme}");
        // Before the unpacking: the server cannot start without them.
        assert!(readme.find(line) < readme.find("sudo tar --zstd"));
    }

    #[test]
    fn only_a_server_that_calls_sd_notify_gets_a_notify_unit() {
        // /bin/sh calls no sd_notify; the booted-Debian tests check a server that does.
        assert!(!notifies(std::path::Path::new("/bin/sh")));
        assert!(!notifies(std::path::Path::new("/nonexistent")));
        let m = Manifest::default();
        let flavor = Flavor::parse(
            "mariadbd  Ver 10.11.19-MariaDB-pgo for debian-linux-gnu on x86_64 (Source distribution)",
        )
        .unwrap();
        let unit = |notify| {
            systemd_unit(&KitFor {
                manifest: &m,
                flavor: &flavor,
                server: "mariadbd",
                share_family: "mariadb",
                has_charsets: true,
                notify,
            })
        };
        assert!(unit(true).contains("\nType=notify\n"));
        assert!(unit(false).contains("\nType=simple\n"));
    }
}
