#!/usr/bin/env python3
"""Slow clients against a release `mnemon serve` while `mnemon loadtest` runs: the figures of
the second hardening round (not part of the test suite).

Usage: scripts/slow-clients.py [MNEMON] [--slow-bodies N] [--slowloris N] [--seconds S]
                               [--per-client N]

MNEMON is the release binary (default: target/release/mnemon, or $CARGO_TARGET_DIR's). The
script starts `serve` on a free loopback port with the hashing embedder, opens N slow-body
clients (each declares a 2,017-byte body and sends one byte a second) and N slowloris
connections (each sends its headers one byte a second), runs `loadtest` beside them, and prints
the load test's figures (admitted p99, errors) and what became of the slow clients: how many got
408, how many were closed by the header timeout, and how long each took.

Every client here shares one address (loopback), so the server runs with
`--max-connections-per-client` raised to --per-client (default 1,024): with the default 256 the
slow clients would take the address's places and the load test's connections would be closed at
accept, which is the cap doing its work against one attacking address, not what this measures.
"""

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def slow_body(port, results):
    started = time.monotonic()
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=60)
        s.sendall(
            f"POST /v1/memories/list HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            "Content-Type: application/json\r\nContent-Length: 2017\r\n\r\n".encode()
        )
        reply = b""
        s.settimeout(1.0)
        for _ in range(60):
            try:
                s.sendall(b" ")
            except OSError:
                break
            try:
                chunk = s.recv(4096)
                if not chunk:
                    break
                reply += chunk
                if b"\r\n\r\n" in reply:
                    break
            except socket.timeout:
                pass
        status = reply.split(b" ", 2)[1].decode() if reply.startswith(b"HTTP/") else "closed"
    except OSError as e:
        status = f"error {e.errno}"
    results.append((status, time.monotonic() - started))


def slowloris(port, results):
    started = time.monotonic()
    head = f"GET /v1/count?user_id=ana HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Pad: {'a' * 200}\r\n\r\n"
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=60)
        s.settimeout(1.0)
        outcome = "held"
        for byte in head.encode():
            try:
                s.sendall(bytes([byte]))
            except OSError:
                outcome = "closed"
                break
            try:
                if not s.recv(4096):
                    outcome = "closed"
                    break
            except socket.timeout:
                pass
    except OSError as e:
        outcome = f"error {e.errno}"
    results.append((outcome, time.monotonic() - started))


def summary(name, results):
    by = {}
    for outcome, took in results:
        by.setdefault(outcome, []).append(took)
    for outcome, times in sorted(by.items()):
        times.sort()
        print(f"{name}: {len(times)} {outcome}, after {times[len(times) // 2]:.1f} s (median), {times[-1]:.1f} s (max)")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(here, "..", "target"))
    parser = argparse.ArgumentParser()
    parser.add_argument("mnemon", nargs="?", default=os.path.join(target, "release", "mnemon"))
    parser.add_argument("--slow-bodies", type=int, default=200)
    parser.add_argument("--slowloris", type=int, default=500)
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--per-client", type=int, default=1024)
    args = parser.parse_args()
    port = free_port()
    data = tempfile.mkdtemp(prefix="mnemon-slow-")
    server = subprocess.Popen(
        [args.mnemon, "serve", "--embedder", "hashing", "--data", data, "--addr", f"127.0.0.1:{port}",
         "--create-stores", "--max-connections-per-client", str(args.per_client)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        bodies, loris = [], []
        threads = [threading.Thread(target=slow_body, args=(port, bodies)) for _ in range(args.slow_bodies)]
        threads += [threading.Thread(target=slowloris, args=(port, loris)) for _ in range(args.slowloris)]
        for t in threads:
            t.start()
        load = subprocess.run(
            [args.mnemon, "loadtest", "--url", f"http://127.0.0.1:{port}", "--clients", "50",
             "--seconds", str(args.seconds), "--seed", "200"],
            capture_output=True, text=True,
        )
        for t in threads:
            t.join()
        print(load.stdout.strip())
        if load.returncode != 0:
            print(load.stderr.strip(), file=sys.stderr)
        summary("slow bodies", bodies)
        summary("slowloris", loris)
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
