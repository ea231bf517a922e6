#!/usr/bin/env python3
"""What `mnemon proxy` adds to a chat request's latency, upstream excluded (not part of the test
suite; the figures of docs/DECISIONS.md).

Usage: scripts/proxy-overhead.py [MNEMON] [--requests N] [--rounds N] [--embedder NAME]

MNEMON is the release binary (default: $CARGO_TARGET_DIR's or target/release/mnemon). The
script starts an OpenAI-compatible upstream here that answers at once (a canned completion, or a
stream of 20 events), then `mnemon proxy` in front of it on a free loopback port, fills the
user's memory with --rounds rounds through the proxy itself, and times N requests of each kind,
one at a time over a kept-alive connection: straight to the upstream, then through the proxy.
The overhead at each percentile is the proxy's latency minus the upstream's; for a stream, the
time to the last byte (the round is stored before the stream's end is sent, so that is in it).
"""

import argparse
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

COMPLETION = json.dumps({
    "id": "c", "object": "chat.completion", "created": 0, "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Sure, noted."}, "finish_reason": "stop"}],
}).encode()
EVENTS = b"".join(
    b"data: " + json.dumps({"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
                            "choices": [{"index": 0, "delta": {"content": f"w{i} "}, "finish_reason": None}]}).encode()
    + b"\n\n" for i in range(20)
) + b'data: {"id":"c","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'


class Upstream(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # else the body waits on the headers' ACK (40 ms)

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        data, kind = (EVENTS, "text/event-stream") if body.get("stream") else (COMPLETION, "application/json")
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def timed(port, path, body, n, first_byte=False):
    """Seconds per request (to its first byte of body, with `first_byte`), one at a time over
    one connection."""
    conn = http.client.HTTPConnection("127.0.0.1", port)
    conn.connect()
    conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    out = []
    for i in range(n):
        payload = json.dumps(body(i))
        started = time.perf_counter()
        conn.request("POST", path, payload, {"Content-Type": "application/json"})
        response = conn.getresponse()
        response.read(1)
        first = time.perf_counter() - started
        response.read()
        out.append(first if first_byte else time.perf_counter() - started)
        assert response.status == 200, response.status
    conn.close()
    return sorted(out)


def pct(xs, p):
    return xs[min(len(xs) - 1, int(len(xs) * p / 100))]


def main():
    default = os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"), "release", "mnemon")
    ap = argparse.ArgumentParser()
    ap.add_argument("mnemon", nargs="?", default=default)
    ap.add_argument("--requests", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--embedder", default="hashing")
    args = ap.parse_args()

    upstream = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    up_port = upstream.server_address[1]
    port = free_port()
    data = tempfile.mkdtemp(prefix="mnemon-proxy-")
    proxy = subprocess.Popen(
        [args.mnemon, "proxy", "--addr", f"127.0.0.1:{port}", "--upstream", f"http://127.0.0.1:{up_port}/v1",
         "--embedder", args.embedder, "--data", data, "--create-stores"],
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(600):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        topics = ["my garden", "the beagle", "work at the lab", "a trip to Porto", "learning the cello"]

        def ask(i, stream=False):
            return {"model": "m", "user": "bench", "stream": stream, "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": f"Note {i}: something new about {topics[i % len(topics)]}, number {i}."}]}

        timed(port, "/v1/chat/completions", lambda i: ask(100000 + i), args.rounds)  # the memory
        rows = []
        for name, stream, first, offset in (("plain", False, False, 0), ("stream, to its end", True, False, 1000),
                                             ("stream, to its first event", True, True, 2000)):
            # New questions each time: each is recalled against the memory and stored.
            body = lambda i, s=stream, o=offset: ask(o + i, s)
            direct = timed(up_port, "/v1/chat/completions", body, args.requests, first)
            proxied = timed(port, "/v1/chat/completions", body, args.requests, first)
            rows.append((name, direct, proxied))
        print(f"mnemon proxy overhead, {args.requests} requests each, one at a time; memory of "
              f"{args.rounds} rounds; embedder {args.embedder}; {os.cpu_count()} cores")
        print("| request | upstream p50 | proxied p50 | overhead p50 | upstream p99 | proxied p99 | overhead p99 |")
        print("|---|---|---|---|---|---|---|")
        for name, direct, proxied in rows:
            ms = lambda x: f"{x * 1000:.2f} ms"
            print(f"| {name} | {ms(pct(direct, 50))} | {ms(pct(proxied, 50))} | {ms(pct(proxied, 50) - pct(direct, 50))} "
                  f"| {ms(pct(direct, 99))} | {ms(pct(proxied, 99))} | {ms(pct(proxied, 99) - pct(direct, 99))} |")
    finally:
        proxy.kill()
        upstream.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
