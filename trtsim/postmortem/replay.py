"""A replay: a scenario (``kind: replay``) that re-issues each rank's recorded calls on the
inproc backend (``comm.reissue``), where the guard reports what the analysis reported.

What it holds, per rank, is the part of the history that decides the report: every
communicator's calls from where all its members' histories are complete (``align``),
less the prefix every member finished in agreement (two of those are kept, to show where
the trouble starts); p2p calls all. Dropping a prefix that every member finished changes
nothing later: each of those calls completed, so every later call meets the same members
as before. Calls keep their recorded sequence numbers, call sites and purposes. The file is
YAML: the report it reproduces as comments on top, then one row of CallRecord fields per
call.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..comm.calllog import RECORD_FIELDS
from ..comm.guard.rules import differences
from ..comm.guard.waitfor import BLOCKED, FAILED
from ..comm.records import CallRecord
from ..comm.reissue import RankScript
from .analysis import Analysis
from .history import BadDump

REPLAY_VERSION = 1
KEEP = 2                        # agreed, finished calls kept before the first that matters
_KEYS = ("kind", "version", "description", "made_from", "guard", "seed", "timeout", "layout",
         "expect_report", "fields", "ranks")


@dataclass(frozen=True)
class Replay:
    """A replay scenario: the launch layout (``(name, role, tp, pp, cp, attention_dp)`` per
    instance), one script per global rank, and the report it reproduces."""

    source: str
    layout: tuple[tuple, ...]
    scripts: tuple[RankScript, ...]
    expect_report: str
    seed: int = 0
    guard: str = "strict"
    timeout: float = 30.0
    description: str = ""
    made_from: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.source

    @property
    def calls(self) -> int:
        return sum(len(s.calls) for s in self.scripts)


def _windows(analysis: Analysis, keep: int) -> dict[tuple, int]:
    """Per communicator, the first sequence the replay issues."""
    err = analysis.error
    out = {}
    for g in analysis.alignment.groups:
        start = g.start
        if err is not None and err.kind == "mismatch" and err.calls:
            rec = next(iter(err.calls.values()))
            if rec.group_key == g.key:
                start = min(start, rec.seq)
        settled = start
        for seq in sorted(s for s in g.at if s >= start):
            calls = g.at[seq]
            ref = calls.get(min(calls)) if calls else None
            if len(calls) < len(g.members) or not all(c.done for c in calls.values()) or any(
                    differences(ref.record, c.record) for c in calls.values()):
                break
            settled = seq + 1
        out[g.key] = max(start, settled - keep)
    return out


def build_replay(analysis: Analysis, keep: int = KEEP, seed: int = 0) -> Replay:
    """The replay of an analysed job (see the module note)."""
    job = analysis.job
    windows = _windows(analysis, keep)
    scripts = []
    for h in analysis.alignment.histories:
        calls = tuple(c.record for c in h.calls
                      if c.record.is_p2p or c.record.seq >= windows[c.record.group_key])
        end = "failed" if h.status == FAILED and h.failure else \
            "blocked" if h.status == BLOCKED else "done"
        scripts.append(RankScript(calls, end, h.failure))
    layout = job.layout or (("", "", len(scripts), 1, 1, False),)
    made_from = tuple(h.source for h in job.histories)
    return Replay("<analysis>", layout, tuple(scripts),
                  str(analysis.error) if analysis.error else "", seed,
                  description=f"replay of {len(scripts)} ranks' {job.form} "
                  f"({analysis.verdict}), made by trtsim analyze", made_from=made_from)


def replay_text(replay: Replay) -> str:
    """The replay as a scenario file."""
    lines = ["# trtsim replay: re-issues each rank's recorded calls on the inproc backend.",
             "# Run it: trtsim run THIS_FILE. The report it reproduces:"]
    lines += [f"#   {line}" for line in (replay.expect_report or "(consistent)").splitlines()]
    dump = json.dumps
    lines += ["kind: replay", f"version: {REPLAY_VERSION}",
              f"description: {dump(replay.description)}",
              f"made_from: {dump(list(replay.made_from))}", f"guard: {replay.guard}",
              f"seed: {replay.seed}", f"timeout: {replay.timeout}",
              f"layout: {dump([list(i) for i in replay.layout])}",
              f"expect_report: {dump(replay.expect_report)}",
              f"fields: {dump(list(RECORD_FIELDS))}", "ranks:"]
    for rank, script in enumerate(replay.scripts):
        lines += [f"- rank: {rank}", f"  end: {script.end}",
                  f"  failure: {dump(script.failure)}",
                  "  calls:" if script.calls else "  calls: []"]
        lines += [f"  - {dump(_row(rec))}" for rec in script.calls]
    return "\n".join(lines) + "\n"


def _row(rec: CallRecord) -> list:
    row = [getattr(rec, f) for f in RECORD_FIELDS]
    row[RECORD_FIELDS.index("group_ranks")] = list(rec.group_ranks)
    return row


def is_replay(raw: dict) -> bool:
    """A scenario file that is a replay."""
    return raw.get("kind") == "replay"


def load_replay(raw: dict, source: str) -> Replay:
    """A replay scenario's mapping as a Replay; ``BadDump`` (one line) when it is not one."""
    def bad(key, why):
        return BadDump(source, f"{key}: {why}")
    for key in raw:
        if key not in _KEYS:
            raise bad(key, f"is not a key of a replay (keys: {', '.join(_KEYS)})")
    if raw.get("version") != REPLAY_VERSION:
        raise bad("version", f"{raw.get('version')!r}: this trtsim reads replays of version "
                  f"{REPLAY_VERSION}")
    fields = tuple(raw.get("fields") or ())
    if fields != RECORD_FIELDS:
        raise bad("fields", "are not this trtsim's call record fields (made by another "
                  "version?)")
    if raw.get("guard", "strict") not in ("strict", "lockstep", "off"):
        raise bad("guard", f"{raw.get('guard')!r} is not strict, lockstep or off")
    for key, typ in (("seed", int), ("timeout", (int, float))):
        if not isinstance(raw.get(key, 0), typ) or isinstance(raw.get(key, 0), bool):
            raise bad(key, f"{raw.get(key)!r} must be a number")
    try:
        layout = tuple((str(n), str(r), int(tp), int(pp), int(cp), bool(adp))
                       for n, r, tp, pp, cp, adp in raw["layout"])
        scripts = tuple(_script(entry, i, fields) for i, entry in enumerate(raw["ranks"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise BadDump(source, f"layout or ranks: not as a replay writes them ({exc})") from None
    if len(scripts) != sum(tp * pp * cp for _, _, tp, pp, cp, _ in layout):
        raise bad("ranks", f"{len(scripts)} ranks for a layout of "
                  f"{sum(tp * pp * cp for _, _, tp, pp, cp, _ in layout)}")
    return Replay(source, layout, scripts, str(raw.get("expect_report", "")),
                  int(raw.get("seed", 0)), str(raw.get("guard", "strict")),
                  float(raw.get("timeout", 30.0)), str(raw.get("description", "")),
                  tuple(map(str, raw.get("made_from") or ())))


def _script(entry: dict, i: int, fields: tuple[str, ...]) -> RankScript:
    if entry.get("rank") != i or entry.get("end") not in ("done", "blocked", "failed"):
        raise ValueError(f"rank entry {i} has rank {entry.get('rank')!r}, end "
                         f"{entry.get('end')!r}")
    calls = []
    for row in entry.get("calls") or ():
        values = dict(zip(fields, row, strict=True))
        values["group_ranks"] = tuple(int(r) for r in values["group_ranks"])
        calls.append(CallRecord(**values))
    return RankScript(tuple(calls), entry["end"], str(entry.get("failure", "")))

