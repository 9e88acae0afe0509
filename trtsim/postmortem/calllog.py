"""Reading trtsim's own call logs (``launch(..., log_dir=...)``; format: ``calls.call_log_format``).

A call log holds what the Flight Recorder cannot: labels, executor iterations, p2p calls with
their tags and pending sends, roots and reduce ops, and the rank's own state (blocked in a
call, running, done, failed with its traceback) when the file was written.

Each log names its launch (id and start time), so a folder that several launches wrote into
is read one launch at a time (``choose_launch``): the one asked for, else the newest whose
every rank left a log, else the newest; the others are named in a note. A launch with ranks
missing is read as it is: its report is what the present ranks show, and the missing ranks
are named. Sizes are checked before they size anything: the file (``MAX_CALL_LOG_BYTES``,
regular files only), the world size and rank (``MAX_RANKS``), the number of files.
"""

from __future__ import annotations

import json
import os
import stat
import time
from dataclasses import dataclass

from ..checks import MAX_CALL_LOG_BYTES, MAX_DEPTH, MAX_LOG_FILES, MAX_RANKS, json_depth_within
from ..calls.call_log_format import CALL_LOG_FORMAT, CALL_LOG_VERSION, FIELDS, WRITTEN_ON, decode_call
from ..guard.waitfor import BLOCKED, RankStatus
from ..comm.launch_stamp import LaunchStamp
from ..comm.origin import short_site
from .history import CALL_LOG, STATUSES, BadDump, Call, RankHistory

_KEYS = {"rank": int, "name": str, "world_size": int, "layout": list, "launch": str,
         "started_ns": int, "written_on": str, "status": str, "iteration": int,
         "pending_sends": list, "failure": str, "traceback": str, "dropped": int,
         "fields": list, "calls": list}
_EXCERPT = 200                 # characters of an input value an error line shows
_SHOWN = 8                     # ranks a note lists by number before it says "and N more"


@dataclass(frozen=True)
class LoggedRank:
    """One call log: the rank's history and the launch it belongs to."""

    history: RankHistory
    launch: LaunchStamp


@dataclass(frozen=True)
class LaunchChoice:
    """The histories of the launch read, notes on what was skipped or is missing, and the
    ranks of that launch that left no log (a partial report when any)."""

    histories: tuple[RankHistory, ...]
    notes: tuple[str, ...]
    missing: tuple[int, ...]


def _shown(value) -> str:
    """A value of the input as an error line shows it: bounded, never a container's repr."""
    if isinstance(value, str):
        return repr(value[:_EXCERPT]) + ("..." if len(value) > _EXCERPT else "")
    if value is None or isinstance(value, (bool, int, float)):
        return repr(value)[:_EXCERPT]
    return f"a {type(value).__name__}"


def _text(path: str) -> str:
    """The file's text, read only if it is a regular file within the size limit."""
    try:
        with open(path, "rb", opener=lambda p, flags: os.open(p, flags | os.O_NONBLOCK)) as f:
            info = os.fstat(f.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise BadDump(path, "not a regular file")
            if info.st_size > MAX_CALL_LOG_BYTES:
                raise BadDump(path, f"{info.st_size:,} bytes: more than a call log's limit "
                              f"of {MAX_CALL_LOG_BYTES:,}")
            data = f.read(MAX_CALL_LOG_BYTES + 1)
    except OSError as exc:
        raise BadDump(path, f"cannot read ({exc.strerror})") from None
    if len(data) > MAX_CALL_LOG_BYTES:
        raise BadDump(path, f"more than a call log's limit of {MAX_CALL_LOG_BYTES:,} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise BadDump(path, "not a trtsim call log (not UTF-8 text)") from None


def _document(path: str) -> dict:
    text = _text(path)
    if not text.strip():
        raise BadDump(path, "empty file")
    if not json_depth_within(text.encode()):          # before json.loads recurses
        raise BadDump(path, f"JSON nested more than {MAX_DEPTH} deep: not a trtsim call log")
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise BadDump(path, f"not valid JSON ({str(exc)[:200]})") from None
    if not isinstance(doc, dict) or doc.get("format") != CALL_LOG_FORMAT:
        raise BadDump(path, f"not a trtsim call log (format is not {CALL_LOG_FORMAT!r})")
    if doc.get("version") != CALL_LOG_VERSION:
        raise BadDump(path, f"call log version {_shown(doc.get('version'))}: this trtsim "
                      f"reads version {CALL_LOG_VERSION}")
    for key, typ in _KEYS.items():
        if not isinstance(doc.get(key), typ) or isinstance(doc.get(key), bool):
            raise BadDump(path, f"{key}: {_shown(doc.get(key))} is not {typ.__name__}")
    if not 1 <= doc["world_size"] <= MAX_RANKS or not 0 <= doc["rank"] < doc["world_size"]:
        raise BadDump(path, f"rank {doc['rank']} of world_size {doc['world_size']}: a world "
                      f"is 1 to {MAX_RANKS:,} ranks, numbered from 0")
    return doc


def read_log(path: str) -> LoggedRank:
    """One rank's call log and its launch; ``BadDump`` (one line) when it is not one trtsim
    can read."""
    doc = _document(path)
    try:
        stamp = LaunchStamp(doc["launch"], doc["started_ns"])
    except ValueError as exc:
        raise BadDump(path, str(exc)) from None
    if doc["status"] not in STATUSES or doc["written_on"] not in WRITTEN_ON:
        raise BadDump(path, f"status {_shown(doc['status'])} / written_on "
                      f"{_shown(doc['written_on'])} is not one a call log writes")
    if doc["fields"] != list(FIELDS):
        raise BadDump(path, "fields: not this trtsim's call record fields (another version?)")
    calls = []
    for i, row in enumerate(doc["calls"]):
        try:
            rec, done, t_ns = decode_call(row)
        except ValueError as exc:
            raise BadDump(path, f"call {i}: {str(exc)[:200]}") from None
        if rec.callsite != short_site(rec.callsite):     # as a replay run here names it
            rec = rec._replace(callsite=short_site(rec.callsite))
        calls.append(Call(rec, done, t_ns))
    blocked = next((c for c in reversed(calls) if not c.done), None) \
        if doc["status"] == BLOCKED else None
    try:
        pending = tuple((int(d), int(t)) for d, t in doc["pending_sends"])
        layout = tuple((str(n), str(r), int(tp), int(pp), int(cp), bool(adp))
                       for n, r, tp, pp, cp, adp in doc["layout"])
    except (TypeError, ValueError):
        raise BadDump(path, "pending_sends or layout is not as a call log writes it") from None
    history = RankHistory(doc["rank"], path, CALL_LOG, str(doc["version"]), tuple(calls),
                          RankStatus(doc["status"]), blocked, doc["dropped"], doc["name"],
                          doc["iteration"], pending, doc["failure"], doc["traceback"],
                          doc["written_on"], doc["world_size"], layout)
    return LoggedRank(history, stamp)


def read_call_log(path: str) -> RankHistory:
    """One rank's call log; ``BadDump`` (one line) when it is not one trtsim can read."""
    return read_log(path).history


def _ranks(ranks) -> str:
    ranks = sorted(ranks)
    shown = ", ".join(map(str, ranks[:_SHOWN]))
    return shown + (f" and {len(ranks) - _SHOWN} more" if len(ranks) > _SHOWN else "")


def _when(ns: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ns // 10**9))


def _by_launch(paths: dict[int, list[str]]) -> dict[str, dict[int, LoggedRank]]:
    """Every log read, by launch and rank; two logs of one rank of one launch, or logs of
    one launch that disagree on its shape, are bad input."""
    if sum(map(len, paths.values())) > MAX_LOG_FILES:
        first = next(iter(paths.values()))[0]
        raise BadDump(first, f"more than {MAX_LOG_FILES:,} call logs in one analyze")
    launches: dict[str, dict[int, LoggedRank]] = {}
    for named, files in sorted(paths.items()):
        for path in files:
            log = read_log(path)
            h = log.history
            if h.rank != named:
                raise BadDump(path, f"it is rank {h.rank}'s log, named rank {named}'s")
            logs = launches.setdefault(log.launch.id, {})
            if h.rank in logs:
                raise BadDump(path, f"a second call log for rank {h.rank} of launch "
                              f"{log.launch.id} (also {logs[h.rank].history.source})")
            first = next(iter(logs.values()), log).history
            if (h.world_size, h.layout, h.version) != \
                    (first.world_size, first.layout, first.version):
                raise BadDump(path, f"launch {log.launch.id}: its shape ({h.world_size} ranks, "
                              f"{h.layout}) is not {first.source}'s")
            logs[h.rank] = log
    return launches


def choose_launch(paths: dict[int, list[str]], launch: str | None = None) -> LaunchChoice:
    """The histories of one launch among the call logs ``paths`` (by the rank their names
    say): ``launch`` when given, else the newest complete one, else the newest."""
    launches = _by_launch(paths)
    started = {k: min(log.launch.started_ns for log in logs.values())
               for k, logs in launches.items()}
    world = {k: next(iter(logs.values())).history.world_size for k, logs in launches.items()}
    complete = [k for k, logs in launches.items() if len(logs) == world[k]]
    if launch is not None:
        if launch not in launches:
            where = next(iter(paths.values()))[0]
            raise BadDump(os.path.dirname(where) or where, f"no call log of launch {launch!r} "
                          f"(launches there: {', '.join(sorted(launches))})")
        chosen = launch
    else:
        chosen = max(complete or launches, key=lambda k: (started[k], k))
    notes = [f"skipped launch {k} (started {_when(started[k])}, logs of {len(launches[k])} of "
             f"its {world[k]} ranks): analyze it with --launch {k}"
             for k in sorted(launches, key=lambda k: -started[k]) if k != chosen]
    logs = launches[chosen]
    histories = tuple(logs[r].history for r in sorted(logs))
    missing = tuple(r for r in range(world[chosen]) if r not in logs) \
        if len(logs) < world[chosen] else ()
    if missing:
        notes.insert(0, _partial_note(chosen, world[chosen], histories, missing))
    if len(launches) > 1:
        notes.insert(0, f"launch {chosen} (started {_when(started[chosen])}) of "
                     f"{len(launches)} launches in these files")
    return LaunchChoice(histories, tuple(notes), missing)


def _partial_note(launch: str, world: int, histories, missing: tuple[int, ...]) -> str:
    """What a launch with missing logs can still say: who is missing, and which present
    ranks are blocked in a call one of them is a member of."""
    gone = set(missing)
    waits = [f"{h.label} waits in {h.blocked.record.short()}" for h in histories
             if h.blocked is not None and gone & set(h.blocked.record.group_ranks)]
    text = (f"partial: no call log of rank{'s' if len(missing) > 1 else ''} {_ranks(missing)} "
            f"of launch {launch} ({world} ranks); this report is what ranks "
            f"{_ranks(h.rank for h in histories)} show")
    if waits:
        text += f"; {'; '.join(waits[:_SHOWN])}, a call with a missing rank in its group"
    return text
