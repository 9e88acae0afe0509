"""A replay: a scenario (``kind: replay``) that re-issues each rank's recorded calls on the
inproc backend (``comm.reissue``), where the guard reports what the analysis reported.

What it holds, per rank, is the part of the history that decides the report: every
communicator's calls from where all its members' histories are complete (``align``),
less the prefix every member finished in agreement (two of those are kept, to show where
the trouble starts); p2p calls all; and the call the rank is blocked in, always. At the
reported mismatch the members enter in the recorded order (``RankScript.turns``), so the
report names the same records on any schedule. Dropping a prefix that every member finished changes
nothing later: each of those calls completed, so every later call meets the same members
as before. Calls keep their recorded sequence numbers, call sites and purposes. The file is
YAML: the report it reproduces as comments on top, then one row of CallRecord fields per
call.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..checks import MAX_RANKS, excerpt
from ..calls.call_log_format import RECORD_FIELDS, encode_call, record_of
from ..guard.rules import differences
from ..guard.waitfor import BLOCKED, FAILED
from ..comm.reissue import RankScript
from .analysis import Analysis
from .history import BadDump
from .report_key import ReportKey

REPLAY_VERSION = 3             # 3: ``expect``, the report's typed key; 2: rows name their
READS = (2, 3)                 # group's ranks by index into ``groups`` (read: no key)
KEEP = 2                        # agreed, finished calls kept before the first that matters
_KEYS = ("kind", "version", "description", "made_from", "guard", "seed", "timeout", "layout",
         "expect_report", "expect", "fields", "groups", "ranks")
_GROUP = RECORD_FIELDS.index("group_ranks")


@dataclass(frozen=True)
class Replay:
    """A replay scenario: the launch layout (``(name, role, tp, pp, cp, attention_dp)`` per
    instance), one script per global rank, and the report it reproduces: as text, and as
    the typed key a run is judged by (``expect``; None in a file written before the key)."""

    source: str
    layout: tuple[tuple, ...]
    scripts: tuple[RankScript, ...]
    expect_report: str
    seed: int = 0
    guard: str = "strict"
    timeout: float = 30.0
    description: str = ""
    made_from: tuple[str, ...] = ()
    expect: ReportKey | None = None

    @property
    def name(self) -> str:
        """The replay as a run's summary names a scenario: its file."""
        return self.source

    @property
    def calls(self) -> int:
        """Recorded calls it re-issues, all ranks."""
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


def _turns(analysis: Analysis) -> dict[int, int]:
    """Per rank, its turn at the reported mismatch's sequence: the members the report names
    in the order they entered, then the others (who entered after the divergence)."""
    err = analysis.error
    if err is None or err.kind != "mismatch" or not err.calls:
        return {}
    entered = list(err.calls)                  # the report's records, in entry order
    rec = err.calls[entered[0]]
    return {m: entered.index(m) if m in entered else len(entered) for m in rec.group_ranks}


def build_replay(analysis: Analysis, keep: int = KEEP, seed: int = 0) -> Replay:
    """The replay of an analysed job (see the module note)."""
    job = analysis.job
    windows = _windows(analysis, keep)
    turns = _turns(analysis)
    at = next(iter(analysis.error.calls.values())) if turns else None
    scripts = []
    for h in analysis.alignment.histories:
        calls = tuple(c.record for c in h.calls if c is h.blocked or c.record.is_p2p
                      or c.record.seq >= windows[c.record.group_key])
        end = "failed" if h.status == FAILED and h.failure else \
            "blocked" if h.status == BLOCKED else "done"
        mine = tuple((i, turns[h.rank]) for i, rec in enumerate(calls)
                     if at is not None and h.rank in turns and not rec.is_p2p
                     and rec.group_key == at.group_key and rec.seq == at.seq)
        scripts.append(RankScript(calls, end, h.failure, mine))
    layout = job.layout or (("", "", len(scripts), 1, 1, False),)
    made_from = tuple(h.source for h in job.histories)
    return Replay("<analysis>", layout, tuple(scripts),
                  str(analysis.error) if analysis.error else "", seed,
                  description=f"replay of {len(scripts)} ranks' {job.form} "
                  f"({analysis.verdict}), made by trtsim analyze", made_from=made_from,
                  expect=ReportKey.of(analysis.error))


def replay_text(replay: Replay) -> str:
    """The replay as a scenario file. Each group's ranks are written once (``groups``) and
    a row names its group by index, so the file grows with the calls, not with calls times
    ranks (a world call of 10,000 ranks would repeat 10,000 numbers in every row)."""
    groups: dict[tuple[int, ...], int] = {}
    rows = []
    for script in replay.scripts:
        for rec in script.calls:
            row = encode_call(rec, True, 0)[:-2]
            row[_GROUP] = groups.setdefault(rec.group_ranks, len(groups))
            rows.append(json.dumps(row))
    rows.reverse()
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
              *([f"expect: {dump(replay.expect.to_json())}"] if replay.expect else []),
              f"fields: {dump(list(RECORD_FIELDS))}",
              f"groups: {dump([list(g) for g in groups])}", "ranks:"]
    for rank, script in enumerate(replay.scripts):
        lines += [f"- rank: {rank}", f"  end: {script.end}",
                  f"  failure: {dump(script.failure)}",
                  f"  turns: {dump([list(t) for t in script.turns])}",
                  "  calls:" if script.calls else "  calls: []"]
        lines += [f"  - {rows.pop()}" for _ in script.calls]
    return "\n".join(lines) + "\n"


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
    if raw.get("version") not in READS:
        raise bad("version", f"{excerpt(raw.get('version'))}: this trtsim reads replays of "
                  f"version {' or '.join(map(str, READS))} (write it again with trtsim analyze "
                  "--replay)")
    try:
        expect = ReportKey.from_json(raw["expect"]) if "expect" in raw else None
    except ValueError as exc:
        raise bad("expect", f"{excerpt(raw['expect'])}: {exc}") from None
    if raw["version"] >= 3 and expect is None:
        raise bad("expect", "missing: a replay of this version names the report it reproduces")
    if raw.get("fields") != list(RECORD_FIELDS):
        raise bad("fields", "are not this trtsim's call record fields (made by another "
                  "version?)")
    if raw.get("guard", "strict") not in ("strict", "lockstep", "off"):
        raise bad("guard", f"{excerpt(raw.get('guard'))} is not strict, lockstep or off")
    seed, timeout = raw.get("seed", 0), raw.get("timeout", 30.0)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise bad("seed", f"{excerpt(seed)} must be an integer")
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or not timeout > 0:
        raise bad("timeout", f"{excerpt(timeout)} must be a positive number of seconds")
    made_from = raw.get("made_from") or []
    if not isinstance(made_from, list) or not isinstance(raw.get("ranks"), list):
        raise bad("ranks", "made_from and ranks must be lists")
    layout = _layout(raw.get("layout"), bad)
    groups = _groups(raw.get("groups"), bad)
    if len(raw["ranks"]) > MAX_RANKS:
        raise bad("ranks", f"{len(raw['ranks']):,} ranks: more than the limit of {MAX_RANKS:,}")
    try:
        scripts = tuple(_script(entry, i, groups) for i, entry in enumerate(raw["ranks"]))
    except ValueError as exc:
        raise bad("ranks", f"not as a replay writes them ({exc})") from None
    if len(scripts) != sum(tp * pp * cp for _, _, tp, pp, cp, _ in layout):
        raise bad("ranks", f"{len(scripts)} ranks for a layout of "
                  f"{sum(tp * pp * cp for _, _, tp, pp, cp, _ in layout)}")
    return Replay(source, layout, scripts, str(raw.get("expect_report", "")), seed,
                  raw.get("guard", "strict"), float(timeout), str(raw.get("description", "")),
                  tuple(map(str, made_from)), expect)


def _layout(value, bad) -> tuple[tuple, ...]:
    rows = value if isinstance(value, list) and value else None
    out = []
    for row in rows or [None]:
        if not (isinstance(row, list) and len(row) == 6 and all(isinstance(x, str)
                                                                for x in row[:2])
                and all(isinstance(x, int) and not isinstance(x, bool) and x > 0
                        for x in row[2:5]) and isinstance(row[5], bool)):
            raise bad("layout", f"{excerpt(value)}: one [name, role, tp, pp, cp, attention_dp] per "
                      "instance")
        out.append(tuple(row))
    return tuple(out)


def _groups(value, bad) -> list[list[int]]:
    if not isinstance(value, list) or not all(
            isinstance(g, list) and 0 < len(g) <= MAX_RANKS and all(
                type(r) is int and 0 <= r < MAX_RANKS for r in g) for g in value):
        raise bad("groups", "not a list of groups' ranks (lists of rank numbers)")
    return value


def _script(entry: dict, i: int, groups: list[list[int]]) -> RankScript:
    if not isinstance(entry, dict) or entry.get("rank") != i or \
            entry.get("end") not in ("done", "blocked", "failed"):
        raise ValueError(f"rank entry {i} is not {{rank: {i}, end: done | blocked | failed}}")
    rows = entry.get("calls") or []
    if not isinstance(rows, list) or not all(isinstance(row, list) for row in rows):
        raise ValueError(f"rank {i}: calls are not rows of call record fields")
    calls = tuple(record_of(dict(zip(RECORD_FIELDS, _with_group(row, groups), strict=True)))
                  for row in rows)
    turns = entry.get("turns") or []
    if not (isinstance(turns, list) and all(
            isinstance(t, list) and len(t) == 2 and all(type(x) is int for x in t)
            and 0 <= t[0] < len(calls) for t in turns)):
        raise ValueError(f"rank {i}: turns are not [call index, turn] pairs")
    return RankScript(calls, entry["end"], str(entry.get("failure", "")),
                      tuple(tuple(t) for t in turns))


def _with_group(row: list, groups: list[list[int]]) -> list:
    index = row[_GROUP] if len(row) > _GROUP else None
    if type(index) is not int or not 0 <= index < len(groups):
        raise ValueError(f"a call's group {excerpt(index, 40)} is not an index into groups")
    return row[:_GROUP] + [groups[index]] + row[_GROUP + 1:]

