"""The official `openai` Python package against `mnemon proxy`, in front of a small
OpenAI-compatible upstream started here (the test double; the proxy is the real binary).

Usage: proxy_client.py MNEMON_BINARY DATA_DIR

Checks, each printed: the recalled block reached the upstream as a system message; answers come
back unchanged, streamed and not; each round is stored once, also when the client retries with an
Idempotency-Key; nothing is stored for an upstream error, a broken stream or a client that stops
reading; tools, images and other fields reach the upstream untouched; /v1/models passes through;
the user comes from the `user` field or X-Mnemon-User.
"""

import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import openai

BINARY, DATA = sys.argv[1], sys.argv[2]

# What the upstream received, in order, and how often each marker was seen.
received = []
seen = {}
finished = threading.Event()


def reply_text(request):
    """The upstream's answer: deterministic, but different on each attempt of one question."""
    last = [m for m in request["messages"] if m["role"] == "user"][-1]["content"]
    if isinstance(last, list):
        last = " ".join(p.get("text", "") for p in last)
    n = seen.get(last, 0)
    seen[last] = n + 1
    if "beagle" in last:
        return last, n, "Congratulations on Toby! Beagles love long walks."
    return last, n, f"Answer {n} to: {last}"


class Upstream(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send_json(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-Upstream", "test-double")
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/v1/models":
            self.send_json(200, {"object": "list", "data": [{"id": "tiny-1", "object": "model", "created": 0, "owned_by": "test"}]})
        else:
            self.send_json(404, {"error": {"message": "no such route"}})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        received.append({"body": body, "headers": {k.lower(): v for k, v in self.headers.items()}})
        last, attempt, text = reply_text(body)
        if "FAIL" in last or ("FLAKY" in last and attempt == 0):
            self.send_json(500, {"error": {"message": "upstream failure", "type": "server_error"}})
            return
        if not body.get("stream"):
            self.send_json(200, {
                "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": body["model"],
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            })
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        words = text.split(" ")
        try:
            for i, word in enumerate(words):
                piece = word if i == 0 else " " + word
                chunk = {"id": "chatcmpl-2", "object": "chat.completion.chunk", "created": 0, "model": body["model"],
                         "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
                if "BREAK" in last and i == 1:
                    # The upstream dies mid-answer: no finish_reason, no [DONE].
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if "SLOW" in last:
                    time.sleep(0.2)
            end = {"id": "chatcmpl-2", "object": "chat.completion.chunk", "created": 0, "model": body["model"],
                   "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
            self.wfile.write(f"data: {json.dumps(end)}\n\ndata: [DONE]\n\n".encode())
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            if "SLOW" in last:
                finished.set()


upstream = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
threading.Thread(target=upstream.serve_forever, daemon=True).start()
upstream_url = f"http://127.0.0.1:{upstream.server_address[1]}/v1"

with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
proxy = subprocess.Popen(
    [BINARY, "proxy", "--addr", f"127.0.0.1:{port}", "--upstream", upstream_url, "--embedder", "hashing",
     "--data", DATA, "--create-stores"],
    stderr=subprocess.PIPE, text=True,
)
for _ in range(600):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        break
    except OSError:
        time.sleep(0.05)
base = f"http://127.0.0.1:{port}"


def export(user):
    """The user's memory as Markdown, from mnemon's own API."""
    with urllib.request.urlopen(f"{base}/v1/export?user_id={user}") as r:
        return r.read().decode()


def asked(user, text):
    """How many of the user's stored rounds ask `text`."""
    return export(user).count(f"**user:** {text}")


def check(condition, what):
    if not condition:
        print("FAILED:", what)
        proxy.kill()
        print(proxy.stderr.read(), file=sys.stderr)
        sys.exit(1)
    print("ok:", what)


try:
    client = openai.OpenAI(base_url=f"{base}/v1", api_key="sk-not-checked", max_retries=0)

    # A round is stored after a plain answer, for the user named by the `user` field.
    first = client.chat.completions.create(
        model="tiny-1", user="alice",
        messages=[{"role": "system", "content": "Be brief."},
                  {"role": "user", "content": "I just adopted a beagle named Toby."}],
    )
    check(first.choices[0].message.content == "Congratulations on Toby! Beagles love long walks.",
          "a plain answer comes back unchanged")
    check(received[-1]["body"]["messages"][0] == {"role": "system", "content": "Be brief."}
          and len(received[-1]["body"]["messages"]) == 2, "nothing is added when nothing is remembered")
    check(asked("alice", "I just adopted a beagle named Toby.") == 1, "the round is stored under the `user` field's user")
    check(received[-1]["headers"].get("authorization") == "Bearer sk-not-checked",
          "the caller's key goes upstream when the server has no tokens")

    # The recalled block reaches the upstream; a streamed answer comes back unchanged.
    alice = client.with_options(default_headers={"X-Mnemon-User": "alice"})
    stream = alice.chat.completions.create(
        model="tiny-1", stream=True,
        messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is my dog called?"}],
    )
    streamed = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    check(streamed == "Answer 0 to: What is my dog called?", "a streamed answer comes back unchanged")
    sent = received[-1]["body"]["messages"]
    check(len(sent) == 3 and sent[0]["content"] == "Be brief." and sent[1]["role"] == "system",
          "the memory is a system message after the request's own")
    check("<memory-" in sent[1]["content"] and "Toby" in sent[1]["content"],
          "the recalled block (framed, with the beagle) reached the upstream")
    check(sent[1]["content"].startswith("Current date: ") and "the proxy's clock" in sent[1]["content"],
          "the block says which date it used")
    check(asked("alice", "What is my dog called?") == 1, "a streamed round is stored once it completed")

    # The request's own date.
    dated = client.with_options(default_headers={"X-Mnemon-User": "alice", "X-Mnemon-Date": "2026-03-02T09:00:00"})
    dated.chat.completions.create(model="tiny-1", messages=[{"role": "user", "content": "Remind me of my dog"}])
    check("Current date: 2026-03-02T09:00:00 (the request's X-Mnemon-Date)" in received[-1]["body"]["messages"][0]["content"],
          "the request's date is used and said")
    check("2026-03-02T09:00:00" in export("alice"), "the round has the request's date")

    # Retries: the first attempt fails upstream, the client retries with the same key; then the
    # same request again with the same key. The upstream's answers differ each time.
    retrying = client.with_options(max_retries=2, default_headers={"X-Mnemon-User": "bob"})
    for _ in range(2):
        r = retrying.chat.completions.create(
            model="tiny-1", messages=[{"role": "user", "content": "FLAKY question about plums"}],
            extra_headers={"Idempotency-Key": "plums-1"},
        )
        check(r.choices[0].message.content.startswith("Answer "), "a retried request is answered")
    check(seen["FLAKY question about plums"] == 3, "the upstream saw the failed attempt and both successes")
    check(asked("bob", "FLAKY question about plums") == 1, "a retried round is stored once")
    for _ in range(2):
        chunks = retrying.chat.completions.create(
            model="tiny-1", stream=True, messages=[{"role": "user", "content": "FLAKY stream about pears"}],
            extra_headers={"Idempotency-Key": "pears-1"},
        )
        check("".join(c.choices[0].delta.content or "" for c in chunks if c.choices).startswith("Answer "),
              "a retried stream is answered")
    check(asked("bob", "FLAKY stream about pears") == 1, "a retried streamed round is stored once")

    # No memory for an upstream error, a broken stream, or a client that stops reading.
    carol = client.with_options(default_headers={"X-Mnemon-User": "carol"})
    carol.chat.completions.create(model="tiny-1", messages=[{"role": "user", "content": "Hello there"}])
    try:
        carol.chat.completions.create(model="tiny-1", messages=[{"role": "user", "content": "FAIL always"}])
        check(False, "an upstream error reaches the client")
    except openai.InternalServerError as e:
        check(e.status_code == 500 and e.body["message"] == "upstream failure",
              "an upstream error reaches the client unchanged")
    try:
        broken = carol.chat.completions.create(
            model="tiny-1", stream=True, messages=[{"role": "user", "content": "BREAK this stream please now"}])
        "".join(c.choices[0].delta.content or "" for c in broken if c.choices)
    except Exception:  # the client's own transport error (openai 3 uses httpx2)
        pass
    slow = carol.chat.completions.create(
        model="tiny-1", stream=True, messages=[{"role": "user", "content": "SLOW answer with many words in it"}])
    next(iter(slow))
    slow.close()
    check(finished.wait(10), "the upstream finished the abandoned stream")
    time.sleep(0.5)
    check(asked("carol", "Hello there") == 1 and "FAIL" not in export("carol") and "BREAK" not in export("carol")
          and "SLOW" not in export("carol"),
          "nothing is stored for an upstream error, a broken stream or an abandoned stream")

    # Tools, images and other fields reach the upstream untouched.
    tools = [{"type": "function", "function": {"name": "weather", "description": "the weather",
              "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    client.chat.completions.create(
        model="tiny-1", tools=tools, tool_choice="auto", temperature=0.25, seed=7,
        messages=[{"role": "user", "content": [{"type": "text", "text": "What is in this picture?"}, image]}],
        extra_body={"vendor_option": {"a": [1, 2]}},
    )
    got = received[-1]["body"]
    check(got["tools"] == tools and got["tool_choice"] == "auto" and got["temperature"] == 0.25
          and got["seed"] == 7 and got["vendor_option"] == {"a": [1, 2]}
          and got["messages"][-1]["content"][1] == image, "tools, images and other fields pass untouched")

    # /v1/models passes through.
    check([m.id for m in client.models.list()] == ["tiny-1"], "/v1/models passes through")
    under_serve = openai.OpenAI(base_url=f"{base}/openai/v1", api_key="sk-not-checked", max_retries=0)
    check([m.id for m in under_serve.models.list()] == ["tiny-1"], "the same routes answer under /openai/v1")
    raw = client.chat.completions.with_raw_response.create(model="tiny-1", messages=[{"role": "user", "content": "hi"}])
    check(raw.headers.get("x-upstream") == "test-double", "the upstream's headers come back")

    # The examples of docs/PROXY.md, as written, against this proxy.
    doc = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "PROXY.md")).read()
    blocks = re.findall(r"```(python|sh)\n(.*?)```", doc, re.S)
    python_example = [b for lang, b in blocks if lang == "python"][0].replace("http://127.0.0.1:7424", base)
    printed = subprocess.run([sys.executable, "-c", python_example], capture_output=True, text=True, check=True).stdout
    check(printed.strip().startswith("Answer ") and printed.strip().endswith("to: What is my dog called?")
          and "Toby" in received[-1]["body"]["messages"][0]["content"], "the Python example of docs/PROXY.md runs")
    shell = [b for lang, b in blocks if lang == "sh" and "curl" in b][0]
    curl = shell[shell.index("curl"):].replace("http://127.0.0.1:7424", base)
    streamed = subprocess.run(["bash", "-c", curl], capture_output=True, text=True, check=True).stdout
    check(streamed.rstrip().endswith("data: [DONE]") and "Any" in streamed, "the curl example of docs/PROXY.md runs")
    check(asked("alice", "Any dog news?") == 1, "the curl example's round is stored")
finally:
    proxy.kill()
    upstream.shutdown()

print("all checks passed")
