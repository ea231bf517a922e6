#!/usr/bin/env bash
# mnemon's main job end to end: fetch the pinned models (idempotent), build, and run `mnemon demo`
# (ingest a conversation with facts made by the default GGUF, Qwen2.5-Coder-0.5B, print a
# budgeted context and the Markdown export). Extra arguments go to `mnemon demo` (e.g. --store
# demo.db to keep the store).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mnemon/target}"
scripts/system-deps.sh
scripts/fetch-models.sh --qwen >&2
cargo build --locked --quiet -p mnemon-cli
exec "$CARGO_TARGET_DIR/debug/mnemon" demo "$@"
