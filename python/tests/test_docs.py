"""Every Python example of the documentation (the repository's README and the package's README)
runs with the installed package and MiniLM, each in a fresh working and data directory. The
extractor is off (`MNEMON_EXTRACTOR=none`) so the output is the same on every machine."""

import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", ROOT / "python" / "README.md"]


# What an example prints, where it prints anything: the answer its question asks for.
PRINTS = {"README.md[0]": ["Lisbon", "<memory-"]}


def examples():
    for doc in DOCS:
        for n, block in enumerate(re.findall(r"```python\n(.*?)```", doc.read_text(), re.S)):
            name = f"{doc.relative_to(ROOT)}[{n}]"
            yield pytest.param(name, block, id=name)


@pytest.mark.parametrize("name,code", list(examples()))
def test_the_documentation_example_runs(name, code, tmp_path):
    env = dict(os.environ, MNEMON_DATA=str(tmp_path / "data"), MNEMON_EXTRACTOR="none")
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr
    for expected in PRINTS.get(name, []):
        assert expected in done.stdout, done.stdout


def test_every_documentation_file_with_python_has_its_examples_run():
    assert len(list(examples())) >= 2
