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
import pickle
import re
from dataclasses import dataclass

from .history import FR_JSON, FR_PICKLE, BadDump

_NAME = re.compile(r"^(?P<prefix>.*?)(?P<rank>\d+)(?P<json>\.json)?$")
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
    (NCCL writes it; gloo's is empty or wrong), name -> global ranks."""

    path: str
    rank: int
    form: str
    version: str
    entries: tuple[FREntry, ...]
    pg_ranks: tuple[tuple[str, tuple[int, ...]], ...]


def rank_of_dump_name(basename: str) -> tuple[str, int, bool] | None:
    """(prefix, rank, is_json) a dump's file name says, or None."""
    match = _NAME.match(basename)
    if match is None:
        return None
    return match["prefix"], int(match["rank"]), bool(match["json"])


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
            raise BadDump(path, f"not a readable Flight Recorder pickle ({type(exc).__name__}: "
                          f"{str(exc).splitlines()[0] if str(exc) else 'truncated'})") from None
    if data.lstrip()[:1] == b"{":
        try:
            return json.loads(data), FR_JSON
        except ValueError as exc:
            raise BadDump(path, f"not valid JSON ({exc})") from None
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
               and _is_int(f[1]) and isinstance(f[2], str) for f in key)


_SIZES, _DTYPES = "sizes are not lists of integers", "dtypes are not strings"
_FRAMES = "frames are not (name, filename, line) mappings"


def _entry(e, i: int, path: str, cache: dict) -> FREntry:
    try:
        pg, seq, name, retired = (e["process_group"], e["collective_seq_id"],
                                  e["profiling_name"], e["retired"])
        get = e.get
    except (KeyError, TypeError, AttributeError) as exc:
        why = f"has no {exc.args[0]!r}" if isinstance(exc, KeyError) else \
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
        raise BadDump(path, f"entry {i}: process_group {pg!r} is not (name, description)")
    names = ("collective_seq_id", "record_id", "profiling_name", "state", "retired", "is_p2p",
             "time_created_ns")
    kinds = (int, int, str, str, bool, bool, int)
    for key, value, kind in zip(names, values, kinds):
        if type(value) is not kind:
            raise BadDump(path, f"entry {i}: {key} {value!r} is not what the recorder writes")


def _pg_ranks(config) -> tuple[tuple[str, tuple[int, ...]], ...]:
    out = []
    for name, info in (config or {}).items() if isinstance(config, dict) else ():
        ranks = info.get("ranks") if isinstance(info, dict) else None
        try:
            members = tuple(int(r) for r in json.loads(ranks))
        except (TypeError, ValueError):
            continue
        if name and members:            # gloo files every group under "" (research 6.2)
            out.append((str(name), members))
    return tuple(out)


def read_dump(path: str, rank: int, cache: dict | None = None) -> FRDump:
    """One rank's dump; ``BadDump`` (one line) when it is not one trtsim can read.
    ``cache`` shares recorded stacks between the dumps of one job."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise BadDump(path, f"cannot read ({exc.strerror})") from None
    doc, form = _load(path, data)
    if not isinstance(doc, dict):
        raise BadDump(path, f"the dump is a {type(doc).__name__}, not a mapping")
    version = doc.get("version")
    if not isinstance(version, str) or not _VERSION.match(version):
        raise BadDump(path, f"Flight Recorder format version {version!r}: trtsim reads 2.x")
    entries = doc.get("entries", [])
    if not isinstance(entries, list):
        raise BadDump(path, f"entries is a {type(entries).__name__}, not a list")
    cache = {} if cache is None else cache
    return FRDump(path, rank, form, version,
                  tuple(_entry(e, i, path, cache) for i, e in enumerate(entries)),
                  _pg_ranks(doc.get("pg_config")))
