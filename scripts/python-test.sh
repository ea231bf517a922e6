#!/usr/bin/env bash
# The Python package as a user installs it: maturin builds the wheel (dev profile, so it reuses
# the test build's compiled crates), pip installs it into a fresh venv, and pytest runs
# python/tests against the installed package (never the source tree).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mnemon/target}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --disable-pip-version-check maturin==1.16.0 pytest==8.4.2 mcp==2.3.0
"$work/venv/bin/maturin" build --quiet --profile dev --manifest-path python/Cargo.toml --out "$work/wheels"
"$work/venv/bin/pip" install --quiet --disable-pip-version-check "$work"/wheels/mnemon_engine-*.whl
# Run from outside the repository so that `import mnemon` can only find the installed package.
cd "$work" && PATH="$work/venv/bin:$PATH" "$work/venv/bin/python" -m pytest -q -p no:cacheprovider "$OLDPWD/python/tests"
