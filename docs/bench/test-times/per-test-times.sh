#!/bin/bash
# Per-test wall times of the server and build tiers (libtest's --report-time on stable through
# RUSTC_BOOTSTRAP), each tier's binary run as `cargo test` runs it (2 test threads). Run on a
# quiet machine; writes TIER.log and the tiers' wall times into OUT (default: the current
# directory).
set -euo pipefail
out=$(realpath "${1:-.}")
cd "$(dirname "$0")/../../../crates/pgoforge"
export PGOFORGE_REQUIRE_REFERENCE=1 RUST_BACKTRACE=1
for tier in server build; do
  bin=$(cargo test -p pgoforge --locked --test "$tier" --no-run 2>&1 |
    grep -o 'target/debug/deps/[^)]*' | tail -1)
  s=$(date +%s)
  RUSTC_BOOTSTRAP=1 "../../$bin" -Z unstable-options --report-time > "$out/$tier.log" 2>&1 || true
  echo "$tier $(( $(date +%s) - s )) s" >> "$out/summary.txt"
done
