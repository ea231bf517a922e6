"""`python -m mnemon ...`: the `mnemon` command."""

from ._cli import main

main()
