#!/usr/bin/env bash
# The Python package as a user installs it: maturin builds the wheel (dev profile, so it reuses
# the test build's compiled crates), pip installs it into a fresh venv, and pytest runs
# python/tests against the installed package (never the source tree).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mnemon/target}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# The tools (pinned) live in a venv kept beside the target dir and made again when the pins or the
# Python change; the package under test is always installed into a fresh venv that sees them.
tools="maturin==1.16.0 pytest==8.4.2 mcp==2.3.0"
key=$(printf '%s %s' "$tools" "$(python3 -VV)" | sha256sum | cut -c1-16)
cache="${CARGO_TARGET_DIR}/python-tools-$key"
if [ ! -x "$cache/bin/maturin" ] || ! "$cache/bin/python" -c 'import pytest, mcp' 2>/dev/null; then
  rm -rf "$cache"
  python3 -m venv "$cache"
  # shellcheck disable=SC2086 # the pins are words
  "$cache/bin/pip" install --quiet --disable-pip-version-check $tools
fi
"$cache/bin/maturin" build --quiet --profile dev --manifest-path python/Cargo.toml --out "$work/wheels"
# A fresh venv for the package, layered on the tools' venv (a .pth file adds its site-packages).
python3 -m venv "$work/venv"
purelib='import sysconfig; print(sysconfig.get_paths()["purelib"])'
"$cache/bin/python" -c "$purelib" > "$("$work/venv/bin/python" -c "$purelib")/tools.pth"
"$work/venv/bin/pip" install --quiet --disable-pip-version-check --no-deps "$work"/wheels/mnemon_engine-*.whl
# Run from outside the repository so that `import mnemon` can only find the installed package.
cd "$work" && PATH="$work/venv/bin:$PATH" "$work/venv/bin/python" -m pytest -q -p no:cacheprovider "$OLDPWD/python/tests"
