#!/usr/bin/env bash
# Installs the system packages that building and testing mnemon need and a fresh Debian machine
# lacks: cmake and clang (llama.cpp's build, through llama-cpp-sys-2), libclang-dev (its bindgen),
# Python's venv module (the MCP tests make a venv for the official MCP Python SDK), Chromium (the
# web page's tests drive it with Playwright), Node.js and npm (the TypeScript client is built and
# tested with them), and gcc, make and the C library's headers
# (scripts/postgres.sh builds pgvector for the PostgreSQL tests). Idempotent: does nothing when all are present. Uses
# apt-get, as root or through sudo.
set -euo pipefail

missing=()
command -v cmake > /dev/null || missing+=(cmake)
command -v clang > /dev/null || missing+=(clang)
compgen -G "/usr/lib/llvm-*/lib/libclang*.so*" > /dev/null || compgen -G "/usr/lib/x86_64-linux-gnu/libclang*.so*" > /dev/null \
  || missing+=(libclang-dev)
python3 -c "import venv, ensurepip" 2> /dev/null || missing+=(python3-venv)
command -v chromium > /dev/null || missing+=(chromium)
command -v node > /dev/null || missing+=(nodejs)
command -v npm > /dev/null || missing+=(npm)
command -v gcc > /dev/null || missing+=(gcc)
command -v make > /dev/null || missing+=(make)
[[ -f /usr/include/stdio.h ]] || missing+=(libc6-dev)
if ((${#missing[@]} == 0)); then
  exit 0
fi
echo "installing system packages: ${missing[*]}" >&2
sudo=""
if [[ "$(id -u)" != 0 ]]; then
  command -v sudo > /dev/null || { echo "error: need root or sudo to install ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get install -y --no-install-recommends "${missing[@]}" > /dev/null \
  || { $sudo apt-get update > /dev/null && $sudo apt-get install -y --no-install-recommends "${missing[@]}" > /dev/null; } \
  || { echo "error: apt-get could not install ${missing[*]}" >&2; exit 1; }
