#!/usr/bin/env bash
# The whole test suite, as CI runs it: fetch the pinned models (idempotent), then format check,
# clippy with warnings as errors, and every test (unit, integration, CLI, doctests).
#
# Clippy runs inside the test builds, not as a build of its own: clippy-driver wraps rustc for the
# workspace's crates (RUSTC_WORKSPACE_WRAPPER, as `cargo clippy` sets it), lints each crate and then
# compiles it as rustc would. The test build covers the targets `cargo clippy --all-targets` covers
# (libraries, binaries, tests; the workspace has no benches or Rust examples), so the lints are the
# same and the dependencies are compiled once, not once for a check and again for the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
# A target dir outside the clone is reused across clones to save build time; nothing depends on it.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mnemon/target}"
# Property tests draw the same cases on every run, so a run's result depends on the code alone
# (another number draws other cases; a failure prints its input, to keep as a unit test).
export PROPTEST_RNG_SEED="${PROPTEST_RNG_SEED:-20261206}"
# Where the time goes: each step's start, on stderr.
phase() { echo "== test.sh: $1 (at $SECONDS s)" >&2; }
phase "system packages and models"
scripts/system-deps.sh
scripts/fetch-models.sh --qwen
phase "rustfmt"
cargo fmt --all --check
RUSTC_WORKSPACE_WRAPPER="$(rustc --print sysroot)/bin/clippy-driver"
[ -x "$RUSTC_WORKSPACE_WRAPPER" ] || { echo "test.sh: clippy is not installed (rustup component add clippy)" >&2; exit 1; }
# `cargo clippy -- -D warnings` passes its lint flags to clippy-driver this way.
CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
export RUSTC_WORKSPACE_WRAPPER CLIPPY_ARGS
# PostgreSQL 18 + pgvector (from the Python registry) for the PostgreSQL store's tests; stopped at exit.
MNEMON_PG_URL=$(scripts/postgres.sh start)
export MNEMON_PG_URL
trap 'scripts/postgres.sh stop' EXIT
phase "every test of the workspace, linted by clippy as it builds"
cargo test --locked --workspace
phase "the store-facing tests on PostgreSQL"
# The store-facing tests again, every store on PostgreSQL (tests/common: MNEMON_TEST_PG_URL). The
# rest are a file's own (corruption, backup, migrations from older files, crashes of a writer).
# The files' own are filtered out by name, so the count says what ran on PostgreSQL. The binary is
# the one the workspace run built: `cargo test -p mnemon` unifies features differently and would
# build the library again.
integration=$(cargo test --locked --workspace --no-run --message-format=json 2>/dev/null | python3 -c '
import json, os, sys
root = os.path.realpath("Cargo.toml")
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "integration" \
            and os.path.realpath(m["manifest_path"]) == root and m.get("executable"):
        print(m["executable"])
')
[ -x "$integration" ] || { echo "test.sh: the workspace built no integration binary" >&2; exit 1; }
MNEMON_TEST_PG_URL=$MNEMON_PG_URL "$integration" notes:: read_path:: contexts:: write_path:: facts:: parts:: \
  framing:: concurrency:: forget:: processes:: browse:: chats:: --skip parts::older_files::
phase "the TypeScript client"
scripts/ts-test.sh
phase "the Python package"
# The Python package, built as a wheel and tested as installed.
scripts/python-test.sh
phase "the library without its model runtimes"
# The library without its model runtimes (no llama.cpp, no ONNX Runtime): it must build, lint
# clean and pass.
cargo test --locked -p mnemon --no-default-features
phase "done"
