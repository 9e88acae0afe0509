"""Reading PyTorch Flight Recorder dumps: the pickle and the JSON form, as torch writes them.

A dump is one rank's ring buffer (torch's format version ``2.x``): a mapping with
``version``, ``pg_config``, ``pg_status`` and ``entries``, oldest first. The file is named
``<prefix><global rank>`` (the pickle; the prefix is ``TORCH_FR_DUMP_TEMP_FILE``, by default
``comm_lib_trace_rank_``); the JSON form (``_dump_fr_trace_json``) is read from
``<prefix><rank>.json``. The pickle holds only plain containers, so it is loaded with an
unpickler that refuses every class: a dump cannot run code. Anything else is refused with one
line naming the file and why.
"""

from __future__ import annotations

import io
import json
import operator
import os
import pickle
import re
import stat
from dataclasses import dataclass

from ..checks import (MAX_DEPTH, MAX_ENTRIES, MAX_INPUT_BYTES, MAX_LINE, MAX_RANKS, excerpt,
                      json_depth_within)
from .history import FR_JSON, FR_PICKLE, BadDump

# <prefix><rank>[.<extension>]: any prefix (torch's default, nccl_trace_rank_, rank_), the rank
# the digits before the extension
_NAME = re.compile(r"^(?P<prefix>.*?)(?P<rank>\d+)(?P<ext>\.[A-Za-z][A-Za-z0-9]*)?$")
NOT_DUMPS = (".yaml", ".yml", ".txt", ".md", ".log", ".py", ".csv", ".html", ".png", ".svg")
_VERSION = re.compile(r"^2\.\d+$")
_FRAME = operator.itemgetter("filename", "line", "name")


@dataclass(frozen=True)
class FREntry:
    """One Flight Recorder entry, the fields a post-mortem uses. ``frames``: the Python
    stack when the op was issued, ``(filename, line, function)`` innermost first (the JSON
    form has none)."""

    record_id: int
    pg_name: str
    pg_desc: str
    seq: int
    profiling_name: str
    input_sizes: tuple[tuple[int, ...], ...]
    input_dtypes: tuple[str, ...]
    output_sizes: tuple[tuple[int, ...], ...]
    frames: tuple[tuple[str, int, str], ...]
    state: str
    retired: bool
    is_p2p: bool
    time_ns: int


@dataclass(frozen=True)
class FRDump:
    """One rank's dump. ``pg_ranks``: the groups whose ``pg_config`` names their ranks
    (NCCL writes it; gloo's is empty or wrong), name -> global ranks. ``world``: one past the
    highest rank ``pg_config`` names (gloo's too: it names one group's ranks under "")."""

    path: str
    rank: int
    form: str
    version: str
    entries: tuple[FREntry, ...]
    pg_ranks: tuple[tuple[str, tuple[int, ...]], ...]
    world: int = 0                     # the job's ranks its pg_config implies (0: unknown)


def rank_of_dump_name(basename: str) -> tuple[str, int, bool] | None:
    """(prefix, rank, is_json) a dump's file name says, or None; a ``.json`` extension is the
    JSON form, any other the pickle. A rank past the limit of ``checks.MAX_RANKS`` is
    ``BadDump`` (before anything is sized by it)."""
    match = _NAME.match(basename)
    if match is None:
        return None
    digits, ext = match["rank"], match["ext"] or ""
    if len(digits) > 6 or int(digits) >= MAX_RANKS:
        raise BadDump(basename, f"rank {excerpt(digits, 20)} in the file name: more than the "
                      f"limit of {MAX_RANKS:,} ranks")
    return match["prefix"], int(digits), ext.lower() == ".json"


class _NoClasses(pickle.Unpickler):
    def find_class(self, module, name):
        """Every class is refused: a dump holds plain containers only."""
        raise pickle.UnpicklingError(f"it refers to {module}.{name}, and a dump holds no "
                                     "classes")


def _load(path: str, data: bytes) -> tuple[dict, str]:
    if not data:
        raise BadDump(path, "empty file")
    if data[:1] == b"\x80":
        try:
            # through a buffered reader: the unpickler reads it in blocks, not per opcode
            return _NoClasses(io.BufferedReader(io.BytesIO(data))).load(), FR_PICKLE
        except Exception as exc:  # noqa: BLE001 - any unpickling failure is bad input
            first = str(exc).splitlines()[0] if str(exc) else "truncated"
            raise BadDump(path, f"not a readable Flight Recorder pickle ({type(exc).__name__}: "
                          f"{excerpt(first)})") from None
    if data.lstrip()[:1] == b"{":
        if not json_depth_within(data):          # json.loads recurses
            raise BadDump(path, f"JSON nested more than {MAX_DEPTH} deep: not a Flight "
                          "Recorder dump")
        try:
            return json.loads(data), FR_JSON
        except ValueError as exc:
            raise BadDump(path, f"not valid JSON ({excerpt(str(exc))})") from None
    raise BadDump(path, "not a Flight Recorder dump (neither a pickle nor JSON)")


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _nested(value) -> tuple:
    return tuple([tuple(v) if isinstance(v, list) else v for v in value])


def _stack_key(value) -> tuple:
    return tuple(map(_FRAME, value))


def _checked(value, cache: dict, check, path: str, i: int, what: str, make_key=_nested):
    """``value`` as nested tuples, checked once per distinct value: the few shapes, dtypes
    and stacks of a job repeat in every entry, so each is one shared tuple."""
    if value is None:
        return ()
    try:
        key = make_key(value)
        known = cache.get(key)
    except (TypeError, KeyError):              # not a list, not mappings, unhashable items
        key = known = None
    if known is not None:
        return known
    if key is None or not isinstance(value, list) or not check(key):
        raise BadDump(path, f"entry {i}: {what}")
    return cache.setdefault(key, key)


def _ints(key) -> bool:
    return all(isinstance(s, tuple) and all(map(_is_int, s)) for s in key)


def _strs(key) -> bool:
    return all(isinstance(v, str) for v in key)


def _stack(key) -> bool:
    return all(isinstance(f, tuple) and len(f) == 3 and isinstance(f[0], str)
               and _is_int(f[1]) and 0 <= f[1] <= MAX_LINE and isinstance(f[2], str)
               for f in key)


_SIZES, _DTYPES = "sizes are not lists of integers", "dtypes are not strings"
_FRAMES = f"frames are not (name, filename, line 0..{MAX_LINE:,}) mappings"


def _entry(e, i: int, path: str, cache: dict) -> FREntry:
    try:
        pg, seq, name, retired = (e["process_group"], e["collective_seq_id"],
                                  e["profiling_name"], e["retired"])
        get = e.get
    except (KeyError, TypeError, AttributeError) as exc:
        why = f"has no {excerpt(exc.args[0])}" if isinstance(exc, KeyError) else \
            f"is a {type(e).__name__}, not a mapping"
        raise BadDump(path, f"entry {i} {why}") from None
    record_id, state = get("record_id", i), get("state", "")
    is_p2p, created = get("is_p2p", False), get("time_created_ns") or 0
    if not (type(pg) in (tuple, list) and len(pg) == 2 and type(pg[0]) is str
            and type(pg[1]) is str and type(seq) is int and type(record_id) is int
            and type(name) is str and type(state) is str and type(retired) is bool
            and type(is_p2p) is bool and type(created) is int):
        _bad_field(path, i, pg, seq, record_id, name, state, retired, is_p2p, created)
    return FREntry(record_id, pg[0], pg[1], seq, name,
                   _checked(get("input_sizes"), cache, _ints, path, i, _SIZES),
                   _checked(get("input_dtypes"), cache, _strs, path, i, _DTYPES),
                   _checked(get("output_sizes"), cache, _ints, path, i, _SIZES),
                   _checked(get("frames"), cache, _stack, path, i, _FRAMES, _stack_key),
                   state, retired, is_p2p, created)


def _bad_field(path, i, pg, *values) -> None:
    if not (isinstance(pg, (list, tuple)) and len(pg) == 2 and all(
            isinstance(x, str) for x in pg)):
        raise BadDump(path, f"entry {i}: process_group {excerpt(pg)} is not (name, "
                      "description)")
    names = ("collective_seq_id", "record_id", "profiling_name", "state", "retired", "is_p2p",
             "time_created_ns")
    kinds = (int, int, str, str, bool, bool, int)
    for key, value, kind in zip(names, values, kinds):
        if type(value) is not kind:
            raise BadDump(path, f"entry {i}: {key} {excerpt(value)} is not what the recorder "
                          "writes")


_RANKS = re.compile(r"^\[\s*(?:\d{1,6}\s*(?:,\s*\d{1,6}\s*)*)?\]$")


def _pg_ranks(path: str, config, cache: dict
              ) -> tuple[tuple[tuple[str, tuple[int, ...]], ...], int]:
    """The groups ``pg_config`` names members of, and the ranks of the job it implies (one
    past the highest rank it names, 0 when none). Every rank's dump repeats the job's
    groups: each list is read once (``cache``) and shared, or n dumps of an n-rank job
    would hold n*n rank numbers."""
    out, world = [], 0
    for name, info in config.items() if isinstance(config, dict) else ():
        ranks = info.get("ranks") if isinstance(info, dict) else None
        # a list of rank numbers, as torch writes it ("[0, 1]"); anything else says nothing
        if not isinstance(name, str) or not isinstance(ranks, str) or \
                len(ranks) > 8 * MAX_RANKS:
            continue
        known = cache.get(("pg_config", ranks))
        if known is None:
            if not _RANKS.match(ranks):
                continue
            members = tuple(json.loads(ranks))
            if any(r >= MAX_RANKS for r in members):
                raise BadDump(path, f"pg_config {excerpt(name)}: a rank past the limit of "
                              f"{MAX_RANKS:,} ranks")
            known = cache[("pg_config", ranks)] = (members, max(members, default=-1) + 1)
        members, top = known
        world = max(world, top)
        if name and members:            # gloo files every group under "" (research 6.2)
            out.append((name, members))
    return tuple(out), world


def read_dump(path: str, rank: int, cache: dict | None = None) -> FRDump:
    """One rank's dump; ``BadDump`` (one line) when it is not one trtsim can read.
    ``cache`` shares recorded stacks between the dumps of one job."""
    doc, form = _load(path, read_regular(path))
    if not isinstance(doc, dict):
        raise BadDump(path, f"the dump is a {type(doc).__name__}, not a mapping")
    version = doc.get("version")
    if not isinstance(version, str) or not _VERSION.match(version):
        raise BadDump(path, f"Flight Recorder format version {excerpt(version)}: trtsim reads "
                      "2.x")
    entries = doc.get("entries", [])
    if not isinstance(entries, list):
        raise BadDump(path, f"entries is a {type(entries).__name__}, not a list")
    if len(entries) > MAX_ENTRIES:
        raise BadDump(path, f"{len(entries):,} entries, more than the limit of "
                      f"{MAX_ENTRIES:,}")
    cache = {} if cache is None else cache
    parsed = tuple(_entry(e, i, path, cache) for i, e in enumerate(entries))
    _sequences_unique(path, parsed)
    groups, world = _pg_ranks(path, doc.get("pg_config"), cache)
    return FRDump(path, rank, form, version, parsed, groups, world)


def _sequences_unique(path: str, entries: tuple[FREntry, ...]) -> None:
    """A group numbers its collectives from 1, each once: a zero, or a number met twice,
    would align calls that never paired (p2p entries have their own numbers)."""
    seen: dict[tuple[str, int], int] = {}
    for i, e in enumerate(entries):
        if e.is_p2p:
            continue
        if e.seq < 1:
            raise BadDump(path, f"entry {i}: collective_seq_id {e.seq} (group "
                          f"{excerpt(e.pg_name, 40)}): the recorder numbers a group's "
                          "collectives from 1")
        j = seen.setdefault((e.pg_name, e.seq), i)
        if j != i:
            raise BadDump(path, f"entry {i}: collective_seq_id {e.seq} of group "
                          f"{excerpt(e.pg_name, 40)} again (entry {j} has it): a group "
                          "numbers each collective once")


def read_regular(path: str) -> bytes:
    """The bytes of a regular file of at most ``MAX_INPUT_BYTES``, else ``BadDump``: a FIFO
    would block, a device (``/dev/zero``) never ends. Opened without blocking, checked on
    the open file (not on a name that could change in between)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) |
                     getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise BadDump(path, f"cannot read ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise BadDump(path, "not a regular file (a FIFO, a device or a socket): a dump "
                          "is a file")
        if info.st_size > MAX_INPUT_BYTES:
            raise BadDump(path, f"{info.st_size:,} bytes, more than the limit of "
                          f"{MAX_INPUT_BYTES:,}")
        data = f.read(info.st_size)              # (read(n) allocates n bytes first)
        if f.read(1):
            raise BadDump(path, "it grew while being read: a dump is written whole")
    return data
