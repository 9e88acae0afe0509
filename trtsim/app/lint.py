"""``trtsim lint PATH... [--json FILE] [--sarif FILE] [--explain]``: collectives gated by
rank-local state, found in the source (files or packages) before anything runs.

Exit status: 0 no finding, 1 findings (printed), 2 bad input (one line: the path and why).
"""

from __future__ import annotations

import json

from ..safe_write import write_text
from .output import SCHEMA_VERSION, BadInput, write_json

EXIT_OK, EXIT_FINDINGS = 0, 1


def add_parser(sub) -> None:
    """The ``lint`` subcommand's arguments."""
    p = sub.add_parser("lint", help="find collectives gated by rank-local state in Python "
                       "source (no run, no GPU)",
                       description="For each collective call, the conditions that decide "
                       "whether it is reached (followed across calls); a condition whose value "
                       "can differ between the members of the collective's group is reported "
                       "with the chain that makes it rank-local. Silence a gate with "
                       "'# trtsim: uniform(GROUP) -- reason' on its line.",
                       epilog="exit status: 0 no finding, 1 findings, 2 bad input")
    p.add_argument("paths", nargs="+", metavar="PATH", help="Python files or folders")
    p.add_argument("--json", metavar="FILE",
                   help="write the findings as JSON (schema trtsim/lint, docs/JSON.md)")
    p.add_argument("--sarif", metavar="FILE", help="write the findings as SARIF 2.1.0")
    p.add_argument("--explain", action="store_true",
                   help="also list the suppressed gates and their reasons")
    p.set_defaults(func=cmd_lint)


def lint_document(result, version: str) -> dict:
    """The ``trtsim/lint`` document: the header every trtsim document opens with, then the
    result (docs/JSON.md)."""
    return {"schema": "trtsim/lint", "schema_version": SCHEMA_VERSION,
            "trtsim_version": version, **result.to_dict()}


def cmd_lint(args) -> int:
    """Lint, print, write what was asked; 1 when anything was found."""
    from .. import __version__
    from ..lint import lint
    from ..lint.report import sarif, text_report
    from .output_paths import Output, check_outputs
    check_outputs([Output("--json", args.json), Output("--sarif", args.sarif)], args.paths)
    try:
        result = lint(args.paths)
    except (ValueError, RecursionError) as exc:
        raise BadInput(str(exc)) from None
    print(text_report(result, explain=args.explain))
    inputs = list(args.paths)
    if args.json:
        write_json(args.json, lint_document(result, __version__), inputs=inputs)
    if args.sarif:
        write_text(args.sarif, json.dumps(sarif(result, __version__), indent=1) + "\n",
                   inputs=inputs)
    return EXIT_FINDINGS if result.findings else EXIT_OK
