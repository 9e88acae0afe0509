"""From the paths a user gives to one job's rank histories, or one line saying what is wrong.

Paths are files or folders (a folder's own files, not its sub-folders). A file named
``trtsim_calls_[LAUNCH_]rank<R>.json`` is a call log; any other name ending in the rank,
optionally followed by an extension (``rank_3.pkl``, ``nccl_trace_rank_3``), is a Flight
Recorder dump. One job is one kind of file under one name prefix, one format version, and a
file for every rank of the job (its size from the dumps' group configs, else from the highest
rank); a rank with both the pickle and the JSON form is read from the pickle (it has the
Python frames). Call logs name their launch: one launch is read, its missing ranks named
(``calllog.choose_launch``). Sizes are checked against ``checks``'s limits before anything is
made from them.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from typing import Sequence

from ..checks import MAX_FILES, MAX_RANKS, excerpt
from ..calls.call_log_format import rank_of_name
from .calllog import choose_launch
from .dumps import NOT_DUMPS, rank_of_dump_name, read_dump
from .fr_records import fr_histories
from .history import BadDump, RankHistory, gc_paused


@dataclass(frozen=True)
class Job:
    """One job's histories, by rank, and notes on what its files cannot say."""

    histories: tuple[RankHistory, ...]
    notes: tuple[str, ...] = ()
    missing: tuple[int, ...] = ()         # ranks of the launch with no file: a partial job

    @property
    def form(self) -> str:
        """The kind of files read (forms joined with `` + `` when mixed)."""
        return " + ".join(sorted({h.form for h in self.histories}))

    @property
    def layout(self) -> tuple[tuple, ...]:
        """The launch's instances (call logs say them); () for a plain world."""
        return self.histories[0].layout if self.histories else ()


def _files(paths: Sequence[str]) -> list[tuple[str, bool]]:
    """(file, given by name) for every path; a folder gives its own regular files, less
    half-written ones and the kinds of file no dump is (a replay, notes); a file given by
    name must be a regular one (a FIFO would block, ``/dev/zero`` never ends)."""
    out = []
    for path in paths:
        if os.path.isdir(path):
            names = sorted(os.listdir(path))
            out += [(os.path.join(path, n), False) for n in names
                    if os.path.isfile(os.path.join(path, n)) and ".tmp" not in n
                    and not n.lower().endswith(NOT_DUMPS)]
        elif os.path.exists(path):
            if not stat.S_ISREG(os.stat(path).st_mode):
                raise BadDump(path, "not a regular file (a FIFO, a device or a socket): give "
                              "the dump or call log files")
            out.append((path, True))
        else:
            raise BadDump(path, "no such file or folder")
        if len(out) > MAX_FILES:
            raise BadDump(path, f"more than the limit of {MAX_FILES:,} files for one job")
    return out


def _one_each(found: dict[int, list[str]], what: str) -> dict[int, str]:
    for rank, files in found.items():
        if len(files) > 1:
            raise BadDump(files[1], f"a second {what} for rank {rank} (also {files[0]})")
    return {rank: files[0] for rank, files in found.items()}


def load_job(paths: Sequence[str], groups: dict[str, tuple[int, ...]] | None = None,
             launch: str | None = None) -> Job:
    """Read one job's files; ``BadDump`` (one line naming the file) for unusable input.
    ``groups``: process-group members the dumps cannot say (name -> global ranks);
    ``launch``: the launch whose call logs to read, where the files hold several."""
    with gc_paused():
        return _load(paths, groups, launch)


def _load(paths, groups, launch=None) -> Job:
    logs: dict[int, list[str]] = {}
    pickles: dict[int, list[str]] = {}
    jsons: dict[int, list[str]] = {}
    prefixes: dict[str, str] = {}
    for path, named in _files(paths):
        base = os.path.basename(path)
        rank = rank_of_name(base)
        if rank is not None:
            if rank >= MAX_RANKS:
                raise BadDump(path, f"rank {rank} in the file name: more than the limit of "
                              f"{MAX_RANKS:,} ranks")
            logs.setdefault(rank, []).append(path)
            continue
        try:
            parsed = rank_of_dump_name(base)
        except BadDump as exc:
            raise BadDump(path, exc.why) from None
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
    missing: tuple[int, ...] = ()
    if logs:
        picked = choose_launch(logs, launch)
        histories, notes, missing = list(picked.histories), picked.notes, picked.missing
    elif launch is not None:
        raise BadDump(", ".join(paths), "--launch is for call logs; these are Flight "
                      "Recorder dumps")
    else:
        chosen = dict(_one_each(jsons, "JSON dump"))
        chosen.update(_one_each(pickles, "dump"))
        cache: dict = {}
        dumps = tuple(read_dump(p, r, cache) for r, p in sorted(chosen.items()))
        _same_version(dumps)
        # the job's size as the group configs say it (a lone rank-0 dump of a 2-rank job
        # is missing rank 1, not a 1-rank job), else as the highest rank's file says
        world = max([d.world for d in dumps] + [dumps[-1].rank + 1])
        _no_gaps([(d.rank, d.path) for d in dumps], world)
        if not any(d.entries for d in dumps):
            raise BadDump(dumps[0].path, "no dump holds an entry (was the Flight Recorder off: "
                          "TORCH_FR_BUFFER_SIZE=0?)")
        histories, notes = fr_histories(dumps, groups)
    _members_include_themselves(histories)
    return Job(tuple(histories), notes, missing)


def _members_include_themselves(histories) -> None:
    """Every call's group holds the rank that made it (each group checked once)."""
    for h in histories:
        known: set[int] = set()
        for i, call in enumerate(h.calls):
            ranks = call.record.group_ranks
            if id(ranks) in known or call.record.is_p2p:
                continue
            if h.rank not in ranks:
                raise BadDump(h.source, f"call {i}: its group's ranks {excerpt(ranks)} omit "
                              f"rank {h.rank}, the rank that made it")
            known.add(id(ranks))


def _same_version(dumps) -> None:
    first = dumps[0]
    for d in dumps[1:]:
        if d.version != first.version:
            raise BadDump(d.path, f"format version {d.version}, but {first.path} has "
                          f"{first.version}: dumps of one job have one version")


def _no_gaps(ranks: list[tuple[int, str]], world: int) -> None:
    """A file for every rank of ``world`` (at most ``MAX_RANKS``), and none beyond."""
    if not 1 <= world <= MAX_RANKS:
        raise BadDump(ranks[0][1], f"a job of {excerpt(world, 40)} ranks: the limit is "
                      f"{MAX_RANKS:,}")
    have = {r for r, _ in ranks}
    want = set(range(world))
    missing = sorted(want - have)
    if missing:
        shown = ", ".join(map(str, missing[:8])) + (f" and {len(missing) - 8} more"
                                                    if len(missing) > 8 else "")
        raise BadDump(ranks[0][1], f"no file for rank{'s' if len(missing) > 1 else ''} "
                      f"{shown} of this job (ranks 0..{world - 1})")
    extra = sorted(have - want)
    if extra:
        path = next(p for r, p in ranks if r == extra[0])
        raise BadDump(path, f"rank {extra[0]} is outside the job's {world} ranks")
