#!/usr/bin/env python3
"""How fast `mnemon import-chats` stores a real-sized history (not part of the test suite; the
figures of docs/DECISIONS.md).

Usage: scripts/import-speed.py [MNEMON] [--conversations N] [--extract N] [--embedder NAME]

MNEMON is the release binary (default: $CARGO_TARGET_DIR's or target/release/mnemon). The
script writes a ChatGPT `conversations.json` from the LongMemEval-S development haystacks
(../shared/data: real user and assistant text, each session a conversation with its date, as the
app exports it: a tree with a hidden system message, the branch `current_node` ends), then times
`import-chats` into a fresh store: the whole file, again (nothing new), and, with --extract N,
the first N conversations with the default GGUF extractor.
"""

import argparse
import datetime
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def export(n):
    data = json.load(gzip.open(os.path.join(HERE, "..", "..", "shared", "data", "longmemeval_s.dev.json.gz")))
    conversations, seen = [], set()
    for q in data:
        for sid, date, session in zip(q["haystack_session_ids"], q["haystack_dates"], q["haystack_sessions"]):
            if sid in seen or not session:
                continue
            seen.add(sid)
            start = datetime.datetime.strptime(date[:10] + date[-6:], "%Y/%m/%d %H:%M").replace(
                tzinfo=datetime.timezone.utc).timestamp()
            mapping = {"root": {"id": "root", "message": None, "parent": None, "children": ["sys"]},
                       "sys": {"id": "sys", "parent": "root", "children": [], "message": {
                           "id": "sys", "author": {"role": "system"}, "create_time": None, "recipient": "all",
                           "content": {"content_type": "text", "parts": [""]},
                           "metadata": {"is_visually_hidden_from_conversation": True}}}}
            parent = "sys"
            for i, m in enumerate(session):
                node = f"m{i}"
                mapping[parent]["children"].append(node)
                mapping[node] = {"id": node, "parent": parent, "children": [], "message": {
                    "id": node, "author": {"role": m["role"]}, "create_time": start + 20 * i, "recipient": "all",
                    "content": {"content_type": "text", "parts": [m["content"]]}, "metadata": {}}}
                parent = node
            conversations.append({"title": sid, "conversation_id": sid, "create_time": start,
                                  "current_node": parent, "mapping": mapping})
            if len(conversations) == n:
                return conversations
    return conversations


def timed(cmd):
    started = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return time.perf_counter() - started, json.loads(out)


def main():
    default = os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"), "release", "mnemon")
    ap = argparse.ArgumentParser()
    ap.add_argument("mnemon", nargs="?", default=default)
    ap.add_argument("--conversations", type=int, default=1000)
    ap.add_argument("--extract", type=int, default=0)
    ap.add_argument("--embedder", default="minilm")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="mnemon-import-")
    conversations = export(args.conversations)
    path = os.path.join(work, "conversations.json")
    with open(path, "w") as f:
        json.dump(conversations, f)
    size = os.path.getsize(path)
    base = [args.mnemon, "import-chats", "--user", "ana", "--format", "chatgpt", "--embedder", args.embedder]
    rows = []
    for label, store in (("first import", "a.db"), ("again (nothing new)", "a.db")):
        seconds, s = timed(base + ["--store", os.path.join(work, store), path])
        rows.append((label, s["conversations"], s["rounds_stored"] + s["rounds_duplicate"], seconds))
    if args.extract:
        small = os.path.join(work, "small.json")
        with open(small, "w") as f:
            json.dump(conversations[: args.extract], f)
        seconds, s = timed(base + ["--store", os.path.join(work, "x.db"), "--extractor", "default", small])
        rows.append((f"with the default extractor (facts: {s['facts']})", s["conversations"], s["rounds_stored"], seconds))
    print(f"import-chats, a ChatGPT export of {len(conversations)} conversations ({size / 1e6:.1f} MB), "
          f"embedder {args.embedder}, {os.cpu_count()} cores")
    print("| run | conversations | rounds | seconds | conversations/s | rounds/s |")
    print("|---|---|---|---|---|---|")
    for label, c, r, sec in rows:
        print(f"| {label} | {c} | {r} | {sec:.1f} | {c / sec:.1f} | {r / sec:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
