"""The `dmlops` command line: `parser.py` builds the argument parser, `explain.py` and
`commands.py` run the commands, `text.py` writes descriptors as text."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from ..errors import DmlError
from .parser import build_parser
from .text import format_desc, format_tensor

__all__ = ["build_parser", "main", "format_tensor", "format_desc"]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `dmlops` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["bench"]:
        from ..bench import main as bench_main

        return bench_main(argv[1:])
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except DmlError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
