"""The ``trtsim`` command. Exit status: 0 the run holds, 1 an invariant is violated (the
report is printed), 2 bad input (one line naming the file, field and value)."""

from __future__ import annotations

import argparse
import sys

EXIT_OK, EXIT_VIOLATION, EXIT_BAD_INPUT = 0, 1, 2


class BadInput(Exception):
    """Input the command cannot use; its message is the one line printed."""


def _cmd_topologies(args) -> int:
    from .topology import format_table
    print(format_table())
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="trtsim", description="Launch every rank of a disaggregated deployment and check "
        "that every member of a group enters the same collective, in the same order, for the "
        "same purpose.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("topologies", help="list the topology ids of TRT-LLM's transceiver tests")
    p.set_defaults(func=_cmd_topologies)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except BadInput as exc:
        print(f"trtsim: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("trtsim: interrupted", file=sys.stderr)
        return 130
