#!/usr/bin/env bash
# Everything CI checks, after scripts/install-test-deps.sh: formatting, clippy with warnings
# denied, then every test (the fast, server and build tiers, unit tests, examples, doc tests).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo test --workspace --locked
