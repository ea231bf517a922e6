"""The `mnemon` command, as installed with the Python package: the same CLI as the binary."""

import sys

from . import _native


def main() -> None:
    sys.exit(_native.cli(["mnemon", *sys.argv[1:]]))
