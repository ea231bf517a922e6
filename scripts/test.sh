#!/usr/bin/env bash
# The whole test suite, as CI runs it: fetch the pinned models (idempotent), then format check,
# clippy with warnings as errors, and every test (unit, integration, CLI, doctests).
set -euo pipefail
cd "$(dirname "$0")/.."
# A target dir outside the clone is reused across clones to save build time; nothing depends on it.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mnemon/target}"
scripts/system-deps.sh
scripts/fetch-models.sh
cargo fmt --all --check
cargo clippy --locked --workspace --all-targets -- -D warnings
cargo test --locked --workspace
# The library without its model runtimes (no llama.cpp, no ONNX Runtime): it must build and pass.
cargo clippy --locked -p mnemon --no-default-features --all-targets -- -D warnings
cargo test --locked -p mnemon --no-default-features
