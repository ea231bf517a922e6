#!/usr/bin/env bash
# The byte-identity run of the batched extractor on real rounds (issue 13): a row-invariant
# release build (llama.cpp without llamafile and repacking, the only build that decodes rounds
# together), then N LongMemEval evidence rounds decoded alone, then the same rounds in groups of
# GROUP, both with drafts of up to DRAFT tokens, compared byte for byte with
# `eval extract --same-as`. Resumable: rerun it until it exits 0.
# About 30 s of this 2-core machine per round in all; run nothing else beside it.
#
# usage: scripts/extract-identity.sh [ROUNDS=100] [GROUP=4] [DRAFT=8]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-100}"
group="${2:-4}"
draft="${3:-8}"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/mnemon"
runs="$cache/runs"
mkdir -p "$runs"
# Its own target dir: llama-cpp-sys-2 never reconfigures CMake, so these options must not meet
# a build made without them.
export CARGO_TARGET_DIR="$cache/target-rowinv"
GGML_LLAMAFILE=OFF GGML_CPU_REPACK=OFF cargo build --release --locked -p mnemon-cli
bin="$CARGO_TARGET_DIR/release/mnemon"
data=../shared/data/longmemeval_s.dev.json.gz
model="${MNEMON_MODELS:-$cache/models}/gguf/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
scripts/fetch-models.sh --qwen > /dev/null
"$bin" eval extract --dataset "$data" --extractor "$model" --extract-contract open --evidence "$rounds" --other 0 --extract-batch 1 --extract-draft "$draft" \
  --out "$runs/id-alone-d$draft-$rounds"
"$bin" eval extract --dataset "$data" --extractor "$model" --extract-contract open --evidence "$rounds" --other 0 --extract-batch "$group" \
  --extract-draft "$draft" --out "$runs/id-b$group-d$draft-$rounds" --same-as "$runs/id-alone-d$draft-$rounds"
