"""``trtsim analyze PATH... [--json F] [--replay OUT] [--group NAME=RANKS]``: a hang's files
(Flight Recorder dumps or trtsim call logs) judged with the guard's rules, and a replay.

Exit status: 0 the files are consistent, 1 they show a violation or ranks that never
arrived (the report is printed), 2 unreadable input (one line: the file and why).
"""

from __future__ import annotations

import sys
import time

from ..safe_write import write_text
from .output import BadInput, document, write_json, writing
from .output_paths import Output, check_outputs

EXIT_OK, EXIT_VIOLATION = 0, 1


def add_parser(sub) -> None:
    """The ``analyze`` subcommand's arguments."""
    p = sub.add_parser("analyze", help="read a hang's Flight Recorder dumps or trtsim call "
                       "logs, report what the guard would have, write a replay")
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="dump files or folders (<prefix><rank> pickles, <prefix><rank>.json, "
                   "trtsim_calls_rank<R>.json); one job")
    p.add_argument("--json", metavar="FILE",
                   help="write the analysis as JSON (schema trtsim/analyze, docs/JSON.md)")
    p.add_argument("--replay", metavar="OUT",
                   help="write a replay scenario: trtsim run OUT re-issues every rank's "
                   "recorded calls on the inproc backend and reports the same")
    p.add_argument("--group", action="append", metavar="NAME=RANKS",
                   help="a process group's members, where the dumps cannot say them "
                   "(gloo): --group 1=0,1 (repeatable)")
    p.set_defaults(func=cmd_analyze)


def parse_groups(items: list[str] | None) -> dict[str, tuple[int, ...]]:
    """``NAME=r,r,...`` pairs into group name -> global ranks."""
    out = {}
    for item in items or []:
        name, sep, ranks = item.partition("=")
        try:
            members = tuple(sorted({int(r) for r in ranks.split(",") if r.strip()}))
        except ValueError:
            members = ()
        if not sep or not name or not members:
            raise BadInput(f"--group {item!r}: expected NAME=RANKS, e.g. --group 1=0,1")
        out[name] = members
    return out


def cmd_analyze(args) -> int:
    """Read, judge, print; with ``--replay`` write the replay, with ``--json`` the document."""
    from ..postmortem.analysis import analyze
    from ..postmortem.inputs import load_job
    outputs = [Output("--json", args.json), Output("--replay", args.replay)]
    check_outputs(outputs, args.paths)
    t0 = time.perf_counter()
    job = load_job(args.paths, parse_groups(args.group), getattr(args, "launch", None))
    inputs = [*args.paths, *(h.source for h in job.histories)]
    check_outputs(outputs, inputs)          # a file a folder gave is known only now
    analysis = analyze(job)
    seconds = time.perf_counter() - t0
    print(analysis.summary())
    replay = None
    if args.replay:
        replay = _write_replay(analysis, args.replay, inputs)
    if args.json:
        body = dict(analysis.to_dict(), seconds=seconds, replay=replay)
        write_json(args.json, document("analyze", body), inputs=inputs)
    # A partial launch (ranks without a log) is never "consistent": exit 1 with its report.
    return EXIT_OK if analysis.error is None and not analysis.job.missing else EXIT_VIOLATION


def _write_replay(analysis, path: str, inputs: list[str]) -> dict:
    """Write the replay with the first seed that reproduces the report; say what it does."""
    from ..jobs.replay_job import reproducing_seed
    from ..postmortem.replay import build_replay, replay_text
    from dataclasses import replace
    from .commands import _single_threaded_torch
    _single_threaded_torch()
    replay = build_replay(analysis)
    seed, result = reproducing_seed(replay)
    replay = replace(replay, seed=seed, source=path)
    with writing("--replay", path):
        write_text(path, replay_text(replay), inputs=inputs)
    if result.reproduced:
        print(f"replay: {path} ({replay.calls} calls, seed {seed}) reproduces this report on "
              f"the inproc backend in {result.wall_s:.3f} s: trtsim run {path}")
    else:
        print(f"replay: {path} ({replay.calls} calls) reports something else on the inproc "
              f"backend (verdict {result.verdict}); the report there:\n{result.error}",
              file=sys.stderr)
    return {"path": path, "seed": seed, "calls": replay.calls, "verdict": result.verdict,
            "reproduced": result.reproduced, "wall_s": result.wall_s}
