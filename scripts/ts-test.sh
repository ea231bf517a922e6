#!/usr/bin/env bash
# The TypeScript client (clients/typescript): installs its one development dependency (TypeScript,
# pinned by package-lock.json), builds the package, type-checks what its types allow and refuse,
# and runs its tests and its README's examples with Node's own test runner against the real
# `mnemon serve` the workspace's test build made (or $MNEMON_BIN).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mnemon/target}"
export MNEMON_BIN="${MNEMON_BIN:-$CARGO_TARGET_DIR/debug/mnemon}"
[ -x "$MNEMON_BIN" ] || cargo build --locked -p mnemon-cli --bin mnemon
cd clients/typescript
npm ci --no-audit --no-fund --loglevel=error
npm test
