"""The three programs in `examples/`, written against mem0's documented API and changed only in
their import, run with the installed package and MiniLM, each in a fresh data directory. The
extractor is off (`MNEMON_EXTRACTOR=none`) so the output is the same on every machine."""

import os
import pathlib
import subprocess
import sys

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


def run(name, tmp_path, stdin=None):
    env = dict(os.environ, MNEMON_DATA=str(tmp_path / "data"), MNEMON_EXTRACTOR="none")
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name)], input=stdin, capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_readme_chat_loop_remembers_what_was_said(tmp_path):
    out = run("mem0_chat.py", tmp_path, "My dog is called Rex and I love sci-fi movies.\nWhat is my dog called?\nexit\n")
    lines = out.splitlines()
    assert "nothing yet" in lines[1]
    assert "My dog is called Rex" in lines[2], out
    assert lines[-1].endswith("Goodbye!")


def test_the_quickstart_operations_give_sensible_results(tmp_path):
    out = dict(line.split(": ", 1) for line in run("mem0_operations.py", tmp_path).splitlines())
    assert "vegetarian" in out["dinner"]
    assert "movie" in out["movies"]
    assert out["sports"] == "['I play tennis every Sunday morning.']"
    assert out["movies, by metadata"] == "2 memories", "the conversation's two rounds keep its metadata"
    assert out["updated"] == "I play tennis every Saturday morning."
    assert out["history"] == "['ADD', 'UPDATE']"
    assert out["after delete"] == "4 memories"
    assert out["after delete_all"] == "[]"


def test_code_written_for_mem0_1x_runs_unchanged(tmp_path):
    out = dict(line.split(": ", 1) for line in run("mem0_v1_style.py", tmp_path).splitlines())
    assert out["jazz"] == "['The user owns the album Blue Train.', 'The user owns the album Kind of Blue.']" or out[
        "jazz"
    ] == "['The user owns the album Kind of Blue.', 'The user owns the album Blue Train.']"
    assert out["before 1960 or rock"] == "['The user owns the album Abbey Road.', 'The user owns the album Blue Train.']"
    assert out["instrument"] == "The user is learning the saxophone."
