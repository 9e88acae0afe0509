"""From the paths a user gives to one job's rank histories, or one line saying what is wrong.

Paths are files or folders (a folder's own files, not its sub-folders). A file named
``trtsim_calls_rank<R>.json`` is a call log; any other name ending in the rank (optionally
``.json``) is a Flight Recorder dump. One job is one kind of file under one name prefix, one
format version, and a file for every rank from 0 up; a rank with both the pickle and the JSON
form is read from the pickle (it has the Python frames).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Sequence

from ..comm.calllog import rank_of_name
from .calllog import read_call_log
from .dumps import rank_of_dump_name, read_dump
from .fr_records import fr_histories
from .history import BadDump, RankHistory, gc_paused


@dataclass(frozen=True)
class Job:
    """One job's histories, by rank, and notes on what its files cannot say."""

    histories: tuple[RankHistory, ...]
    notes: tuple[str, ...] = ()

    @property
    def form(self) -> str:
        """The kind of files read (forms joined with `` + `` when mixed)."""
        return " + ".join(sorted({h.form for h in self.histories}))

    @property
    def layout(self) -> tuple[tuple, ...]:
        """The launch's instances (call logs say them); () for a plain world."""
        return self.histories[0].layout if self.histories else ()


def _files(paths: Sequence[str]) -> list[tuple[str, bool]]:
    """(file, given by name) for every path; a folder gives its own files."""
    out = []
    for path in paths:
        if os.path.isdir(path):
            names = sorted(os.listdir(path))
            out += [(os.path.join(path, n), False) for n in names   # not half-written ones
                    if os.path.isfile(os.path.join(path, n)) and ".tmp" not in n]
        elif os.path.exists(path):
            out.append((path, True))
        else:
            raise BadDump(path, "no such file or folder")
    return out


def _one_each(found: dict[int, list[str]], what: str) -> dict[int, str]:
    for rank, files in found.items():
        if len(files) > 1:
            raise BadDump(files[1], f"a second {what} for rank {rank} (also {files[0]})")
    return {rank: files[0] for rank, files in found.items()}


def load_job(paths: Sequence[str], groups: dict[str, tuple[int, ...]] | None = None) -> Job:
    """Read one job's files; ``BadDump`` (one line naming the file) for unusable input.
    ``groups``: process-group members the dumps cannot say (name -> global ranks)."""
    with gc_paused():
        return _load(paths, groups)


def _load(paths, groups) -> Job:
    logs: dict[int, list[str]] = {}
    pickles: dict[int, list[str]] = {}
    jsons: dict[int, list[str]] = {}
    prefixes: dict[str, str] = {}
    for path, named in _files(paths):
        base = os.path.basename(path)
        rank = rank_of_name(base)
        if rank is not None:
            logs.setdefault(rank, []).append(path)
            continue
        parsed = rank_of_dump_name(base)
        if parsed is None:
            if named:
                raise BadDump(path, "its name does not end in a rank: a Flight Recorder dump "
                              "is <prefix><rank>, a trtsim call log trtsim_calls_rank<R>.json")
            continue
        prefix, rank, is_json = parsed
        prefixes.setdefault(prefix, path)
        (jsons if is_json else pickles).setdefault(rank, []).append(path)
    if not (logs or pickles or jsons):
        raise BadDump(", ".join(paths) or "(no path)", "no Flight Recorder dump or trtsim call "
                      "log there")
    if logs and (pickles or jsons):
        raise BadDump(next(iter(logs.values()))[0], "call logs and Flight Recorder dumps mixed: "
                      "give one kind of file for one job")
    if len(prefixes) > 1:
        a, b = sorted(prefixes.values())[:2]
        raise BadDump(b, f"its name prefix differs from {a}'s: the dumps of two jobs?")
    if logs:
        histories = []
        for rank, path in sorted(_one_each(logs, "call log").items()):
            histories.append(read_call_log(path))
            if histories[-1].rank != rank:
                raise BadDump(path, f"it is rank {histories[-1].rank}'s log, named rank {rank}'s")
        notes: tuple[str, ...] = ()
        _check_log_ranks(histories)
    else:
        chosen = dict(_one_each(jsons, "JSON dump"))
        chosen.update(_one_each(pickles, "dump"))
        cache: dict = {}
        dumps = tuple(read_dump(p, r, cache) for r, p in sorted(chosen.items()))
        _same_version(dumps)
        _no_gaps([(d.rank, d.path) for d in dumps], None)
        if not any(d.entries for d in dumps):
            raise BadDump(dumps[0].path, "no dump holds an entry (was the Flight Recorder off: "
                          "TORCH_FR_BUFFER_SIZE=0?)")
        histories, notes = fr_histories(dumps, groups)
    return Job(tuple(histories), notes)


def _same_version(dumps) -> None:
    first = dumps[0]
    for d in dumps[1:]:
        if d.version != first.version:
            raise BadDump(d.path, f"format version {d.version}, but {first.path} has "
                          f"{first.version}: dumps of one job have one version")


def _no_gaps(ranks: list[tuple[int, str]], world: int | None) -> None:
    have = {r for r, _ in ranks}
    want = set(range(world if world is not None else max(have) + 1))
    missing = sorted(want - have)
    if missing:
        raise BadDump(ranks[0][1], f"no file for rank{'s' if len(missing) > 1 else ''} "
                      f"{', '.join(map(str, missing))} of this job (ranks {min(want)}.."
                      f"{max(want)})")
    extra = sorted(have - want)
    if extra:
        path = next(p for r, p in ranks if r == extra[0])
        raise BadDump(path, f"rank {extra[0]} is outside the job's {world} ranks")


def _check_log_ranks(histories: list[RankHistory]) -> None:
    first = histories[0]
    for h in histories:
        if (h.world_size, h.layout) != (first.world_size, first.layout):
            raise BadDump(h.source, f"its launch ({h.world_size} ranks, {h.layout}) is not "
                          f"{first.source}'s: the call logs of two launches?")
        if h.version != first.version:
            raise BadDump(h.source, f"call log version {h.version}, {first.source} has "
                          f"{first.version}")
    _no_gaps([(h.rank, h.source) for h in histories], first.world_size)
