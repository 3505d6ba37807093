//! The shell scripts inside the .deb ([`super::deb`]): its maintainer scripts, and the three
//! files that decide, at every start of the server, which binary runs.
//!
//! The design, and why: the .deb diverts Debian's `/usr/sbin/mariadbd` to
//! `/usr/sbin/mariadbd.distrib` and ships the optimized server as `/usr/sbin/mariadbd-pgo`; in
//! `/usr/sbin/mariadbd` it puts a selector that `exec`s one of the two (same pid, so systemd's
//! `Type=notify` and MainPID see the server itself). The optimized server runs only beside the
//! release of `mariadb-server-core` it was built from. The package pre-depends on that release or
//! newer, not on it exactly: an exact dependency held back every Debian security update of the
//! server (apt's `upgrade` and unattended-upgrades never remove a package). When Debian's next
//! release arrives, apt installs it as usual, its binary lands at the diverted name, and the
//! selector runs Debian's new binary from the next start on — never the old optimized binary
//! beside the new release's files — until a mariadb-server-pgo built for that release is
//! installed. [`WHICH`] is the one place that decides; the selector, the status command and the
//! scripts all ask it.
//!
//! A server that does not come up on the optimized binary when the package is configured is
//! rolled back without leaving dpkg half-configured: `postinst` marks the optimized server
//! disabled (the selector then runs Debian's), restarts the service on Debian's binary, says so
//! loudly, and exits 0. A failing `postinst` would leave the package half-configured, and every
//! later `apt-get upgrade` would fail on it.

use super::cpu::CpuRequirement;

/// The distribution package whose binary this one takes the place of, and that binary.
pub const CORE_PACKAGE: &str = "mariadb-server-core";
pub const SERVER_BINARY: &str = "/usr/sbin/mariadbd";
/// The init script and systemd unit Debian's mariadb-server package installs.
pub const SERVICE: &str = "mariadb";
/// The .deb's package name: one optimized server per machine, whatever its variant.
pub const PACKAGE: &str = "mariadb-server-pgo";
/// Prints `optimized`, or `debian REASON`: which binary the next start runs.
pub const WHICH: &str = "/usr/lib/mariadb-server-pgo/which";
/// The CPU check (package/cpu.rs), where the package has a CPU requirement.
pub const CPU_CHECK: &str = "/usr/lib/mariadb-server-pgo/cpu-check";
/// The one-line check an admin runs: which server runs, and why.
pub const STATUS: &str = "/usr/sbin/mariadb-pgo-status";
/// Present (with its reason) when the optimized server did not come up and was rolled back.
pub const DISABLED: &str = "/var/lib/mariadb-server-pgo/disabled";
const STATE_DIR: &str = "/var/lib/mariadb-server-pgo";

/// What the scripts need to know of the package they are in.
pub struct Facts<'a> {
    /// The exact `mariadb-server-core` version the optimized server was built from.
    pub fits: &'a str,
    /// The .deb's own version.
    pub version: &'a str,
    pub variant: &'a str,
}

/// `/usr/lib/mariadb-server-pgo/which`: the decision, printed.
pub fn which(f: &Facts, cpu: bool) -> String {
    let cpu_check = if cpu {
        format!(
            r#"elif ! msg=$({CPU_CHECK} 2>&1); then
    echo "debian $(printf '%s\n' "$msg" | head -n 1 | sed 's/^{PACKAGE}: //')"
"#
        )
    } else {
        String::new()
    };
    format!(
        r#"#!/bin/sh
# {PACKAGE}: which server binary the next start of MariaDB runs on this host. Prints
# "optimized", or "debian" and the reason: the optimized server ({variant}) was built from
# Debian's {CORE_PACKAGE} {fits} and runs only beside that release.
fits='{fits}'
installed=$(dpkg-query -W -f '${{Version}}' {CORE_PACKAGE} 2>/dev/null || true)
if [ -s {DISABLED} ]; then
    echo "debian the optimized server is disabled: $(head -n 1 {DISABLED})"
elif [ "$installed" != "$fits" ]; then
    echo "debian {CORE_PACKAGE} is ${{installed:-not installed}} and the optimized server was built from $fits: install a {PACKAGE} built from ${{installed:-that release}} to run optimized again"
{cpu_check}else
    echo optimized
fi
"#,
        fits = f.fits,
        variant = f.variant,
    )
}

/// `/usr/sbin/mariadbd`: runs the binary [`which`] chooses, in its own pid.
pub fn selector() -> String {
    format!(
        r#"#!/bin/sh
# {PACKAGE}: runs the optimized MariaDB server ({SERVER_BINARY}-pgo) when it fits this host,
# else Debian's own ({SERVER_BINARY}.distrib), saying why on standard error (the journal under
# systemd, the error log under mysqld_safe). {STATUS} tells which runs.
choice=$({WHICH} 2>/dev/null || echo "debian {WHICH} failed")
if [ "$choice" = optimized ]; then
    exec {SERVER_BINARY}-pgo "$@"
fi
case " $* " in
    *" --version "*|*" -V "*|*" --print-defaults "*|*" --help "*) ;;
    *) echo "{PACKAGE}: running Debian's server ({SERVER_BINARY}.distrib): ${{choice#debian }}" >&2 ;;
esac
exec {SERVER_BINARY}.distrib "$@"
"#
    )
}

/// The shell functions the scripts share: is the service up, which binary does it run.
fn service_functions() -> String {
    format!(
        r#"running() {{
    invoke-rc.d --quiet {SERVICE} status >/dev/null 2>&1
}}
# The binary the running server executes: systemd's main pid of the service, else the pid file
# the server's configuration names (Debian's default /run/mysqld/mysqld.pid).
server_exe() {{
    pid=
    if [ -d /run/systemd/system ]; then
        pid=$(systemctl show -p MainPID --value {SERVICE} 2>/dev/null || true)
    fi
    if [ -z "$pid" ] || [ "$pid" = 0 ]; then
        pidfile=$({SERVER_BINARY}.distrib --print-defaults 2>/dev/null | tr ' ' '\n' | sed -n 's/^--pid-file=//p' | tail -n 1)
        pid=$(cat "${{pidfile:-/run/mysqld/mysqld.pid}}" 2>/dev/null || true)
    fi
    [ -n "$pid" ] && readlink "/proc/$pid/exe" 2>/dev/null | sed 's/ (deleted)$//' || true
}}
"#
    )
}

/// `/usr/sbin/mariadb-pgo-status`: one line, and exit 0 only when the optimized server runs.
pub fn status(f: &Facts) -> String {
    format!(
        r#"#!/bin/sh
# {PACKAGE}: which MariaDB server this host runs, and why, in one line. Exit status 0: the
# optimized server runs; 1: Debian's runs (or the next start runs it); 2: the service is down.
{functions}
choice=$({WHICH})
exe=$(server_exe)
case "$exe" in
    {SERVER_BINARY}-pgo) now="the {SERVICE} service runs the optimized server ({variant}, built from {fits})" ;;
    {SERVER_BINARY}.distrib) now="the {SERVICE} service runs Debian's server ($(dpkg-query -W -f '${{Version}}' {CORE_PACKAGE} 2>/dev/null))" ;;
    "") now="the {SERVICE} service is not running" ;;
    *) now="the {SERVICE} service runs $exe" ;;
esac
if [ "$choice" = optimized ]; then
    next="its next start runs the optimized server"
else
    next="its next start runs Debian's server: ${{choice#debian }}"
fi
echo "{PACKAGE} {version}: $now; $next"
case "$exe" in
    {SERVER_BINARY}-pgo) [ "$choice" = optimized ] && exit 0; exit 1 ;;
    "") exit 2 ;;
    *) exit 1 ;;
esac
"#,
        functions = service_functions(),
        fits = f.fits,
        variant = f.variant,
        version = f.version,
    )
}

/// `preinst`: refuse another release of Debian's server and a CPU the server was not compiled
/// for (before anything changes), then divert Debian's binary before dpkg unpacks ours.
pub fn preinst(f: &Facts, cpu: Option<&CpuRequirement>) -> String {
    let check = cpu
        .map(|r| {
            // The check runs before dpkg has unpacked anything: its text is here, not a file.
            format!(
                "        sh <<'PGOFORGE_CPU_CHECK' || exit $?\n{}PGOFORGE_CPU_CHECK\n",
                super::cpu::check_script(r, PACKAGE)
            )
        })
        .unwrap_or_default();
    format!(
        r#"#!/bin/sh
set -e
case "$1" in
    install|upgrade)
        installed=$(dpkg-query -W -f '${{Version}}' {CORE_PACKAGE} 2>/dev/null || true)
        if [ "$installed" != '{fits}' ]; then
            echo "{PACKAGE}: this optimized server was built from Debian's {CORE_PACKAGE} {fits}, but this host has ${{installed:-none}}: refused, nothing changed." >&2
            echo "{PACKAGE}: install the {PACKAGE} built for ${{installed:-the installed release}} (pgoforge run --source-version ...), or this one on a host with {fits}." >&2
            exit 1
        fi
{check}        dpkg-divert --package {PACKAGE} --add --rename \
            --divert {SERVER_BINARY}.distrib {SERVER_BINARY}
        ;;
esac
exit 0
"#,
        fits = f.fits,
    )
}

/// `postinst`: restart a running service on the optimized binary; if it does not come back on
/// it, disable the optimized server, restart the service on Debian's, and say so — exiting 0,
/// so that dpkg and apt stay consistent.
pub fn postinst(f: &Facts) -> String {
    format!(
        r#"#!/bin/sh
set -e
{functions}
if [ "$1" = configure ]; then
    mkdir -p {STATE_DIR}
    # A new install or upgrade tries the optimized server again.
    rm -f {DISABLED}
    choice=$({WHICH})
    if ! running; then
        echo "{PACKAGE}: the {SERVICE} service is not running; its next start: $choice"
    elif [ "$choice" != optimized ]; then
        echo "{PACKAGE}: the {SERVICE} service keeps Debian's server: ${{choice#debian }}"
    elif invoke-rc.d {SERVICE} restart && running && [ "$(server_exe)" = {SERVER_BINARY}-pgo ]; then
        echo "{PACKAGE}: the {SERVICE} service now runs the optimized server"
    else
        echo "the {SERVICE} service did not come up on the optimized server when {PACKAGE} {version} was configured ($(date -u +%Y-%m-%dT%H:%M:%SZ))" > {DISABLED}
        echo "{PACKAGE}: the {SERVICE} service did not come up on the optimized server;" >&2
        echo "{PACKAGE}: rolling back: the optimized server is disabled, Debian's binary ({SERVER_BINARY}.distrib) serves" >&2
        invoke-rc.d {SERVICE} restart || true
        if running && [ "$(server_exe)" = {SERVER_BINARY}.distrib ]; then
            echo "{PACKAGE}: the service runs Debian's binary again; see its error log for why the optimized one failed, then remove this package (apt-get purge {PACKAGE})" >&2
        else
            echo "{PACKAGE}: the service did not start on Debian's binary either: see its error log" >&2
        fi
    fi
fi
exit 0
"#,
        functions = service_functions(),
        version = f.version,
    )
}

/// `postrm`: remove the diversion (Debian's binary back in place) and restart a running
/// service when the package goes or its first install is abandoned; forget the state on purge.
/// A failed upgrade of this package (`abort-upgrade`) keeps the diversion: the old version's
/// files are still installed and still need it.
pub fn postrm() -> String {
    format!(
        r#"#!/bin/sh
set -e
{functions}
case "$1" in
    remove|abort-install|disappear)
        dpkg-divert --package {PACKAGE} --remove --rename \
            --divert {SERVER_BINARY}.distrib {SERVER_BINARY}
        if [ "$1" = remove ] && running; then
            invoke-rc.d {SERVICE} restart || {{
                echo "{PACKAGE}: the {SERVICE} service did not restart on Debian's binary: see its error log" >&2
                exit 1
            }}
        fi
        ;;
    purge)
        rm -rf {STATE_DIR}
        ;;
esac
exit 0
"#,
        functions = service_functions()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn facts() -> Facts<'static> {
        Facts {
            fits: "1:10.11.18-0+deb12u1",
            version: "1:10.11.18-0+deb12u1+pgoforge+pgo+lto.01234567",
            variant: "pgo+lto",
        }
    }

    #[test]
    fn every_script_is_valid_shell_and_uses_invoke_rc_d() {
        let f = facts();
        let v3 = CpuRequirement::new(crate::builder::codegen::CpuLevel::V3, "");
        for (name, text) in [
            ("preinst", preinst(&f, None)),
            ("preinst for v3", preinst(&f, Some(&v3))),
            ("postinst", postinst(&f)),
            ("postrm", postrm()),
            ("which", which(&f, false)),
            ("which with a CPU check", which(&f, true)),
            ("selector", selector()),
            ("status", status(&f)),
        ] {
            let st = Command::new("sh")
                .args(["-n", "-c", &text])
                .status()
                .unwrap();
            assert!(st.success(), "{name}:\n{text}");
            // lintian's maintainer-script-calls-init-script-directly is an error.
            assert!(!text.contains("/etc/init.d"), "{name}");
        }
        assert!(preinst(&f, None).contains("--add --rename"));
        assert!(postrm().contains("--remove --rename"));
        // A failed upgrade keeps the diversion the installed version needs.
        assert!(!postrm().contains("abort-upgrade"));
        // The rollback never fails the configure step.
        assert!(!postinst(&f).contains("exit 1"));
    }

    /// The selector and `which` run for real against stand-ins of dpkg-query and the two
    /// binaries: the optimized one only beside its release and while enabled.
    #[test]
    fn the_selector_runs_the_optimized_server_only_beside_its_release() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        let bin = root.join("bin");
        std::fs::create_dir(&bin).unwrap();
        let f = facts();
        // The scripts name absolute paths; rewrite them into the scratch root.
        let rooted = |s: String| {
            s.replace("/usr/", &format!("{}/usr/", root.display()))
                .replace("/var/", &format!("{}/var/", root.display()))
        };
        let write = |p: &str, text: &str| {
            let p = root.join(p.trim_start_matches('/'));
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, text).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        };
        write(WHICH, &rooted(which(&f, false)));
        write(SERVER_BINARY, &rooted(selector()));
        write(
            "/usr/sbin/mariadbd-pgo",
            "#!/bin/sh\necho optimized \"$@\"\n",
        );
        write(
            "/usr/sbin/mariadbd.distrib",
            "#!/bin/sh\necho debian \"$@\"\n",
        );
        let run = |core: &str| {
            write(
                "/bin/dpkg-query",
                &format!("#!/bin/sh\nprintf '%s' '{core}'\n"),
            );
            let out = Command::new(root.join(SERVER_BINARY.trim_start_matches('/')))
                .arg("--datadir=/x")
                .env(
                    "PATH",
                    format!("{}:/usr/bin:/bin", root.join("bin").display()),
                )
                .output()
                .unwrap();
            (
                String::from_utf8_lossy(&out.stdout).trim().to_string(),
                String::from_utf8_lossy(&out.stderr).trim().to_string(),
            )
        };
        assert_eq!(run(f.fits).0, "optimized --datadir=/x");
        let (out, err) = run("1:10.11.19-0+deb12u1");
        assert_eq!(out, "debian --datadir=/x");
        assert!(
            err.contains("mariadb-server-core is 1:10.11.19-0+deb12u1")
                && err.contains("built from 1:10.11.18-0+deb12u1"),
            "{err}"
        );
        write(DISABLED, "did not come up\n");
        let (out, err) = run(f.fits);
        assert_eq!(out, "debian --datadir=/x");
        assert!(err.contains("disabled: did not come up"), "{err}");
    }
}
