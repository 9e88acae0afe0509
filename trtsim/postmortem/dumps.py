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
import pickle
import re
from dataclasses import dataclass

from .history import FR_JSON, FR_PICKLE, BadDump

_NAME = re.compile(r"^(?P<prefix>.*?)(?P<rank>\d+)(?P<json>\.json)?$")
_VERSION = re.compile(r"^2\.\d+$")
_REQUIRED = ("collective_seq_id", "process_group", "profiling_name", "retired")


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
        raise pickle.UnpicklingError(f"it refers to {module}.{name}, and a dump holds no "
                                     "classes")


def _load(path: str, data: bytes) -> tuple[dict, str]:
    if not data:
        raise BadDump(path, "empty file")
    if data[:1] == b"\x80":
        try:
            return _NoClasses(io.BytesIO(data)).load(), FR_PICKLE
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


def _shapes(value, path: str, where: str) -> tuple[tuple[int, ...], ...]:
    if value is None:
        return ()
    if isinstance(value, list) and all(isinstance(s, list) and all(map(_is_int, s))
                                       for s in value):
        return tuple(tuple(s) for s in value)
    raise BadDump(path, f"{where}: sizes {value!r} are not lists of integers")


def _strings(value, path: str, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise BadDump(path, f"{where}: dtypes {value!r} are not strings")


def _frames(value, path: str, where: str, cache: dict) -> tuple[tuple[str, int, str], ...]:
    if value is None:
        return ()
    try:
        key = tuple((f["filename"], f["line"], f["name"]) for f in value)
    except (TypeError, KeyError):
        key = None
    if key is None or not all(isinstance(f, str) and _is_int(line) and isinstance(n, str)
                              for f, line, n in key):
        raise BadDump(path, f"{where}: frames are not (name, filename, line) mappings")
    return cache.setdefault(key, key)


def _entry(e, i: int, path: str, cache: dict) -> FREntry:
    where = f"entry {i}"
    if not isinstance(e, dict):
        raise BadDump(path, f"{where} is a {type(e).__name__}, not a mapping")
    for key in _REQUIRED:
        if key not in e:
            raise BadDump(path, f"{where} has no {key!r}")
    pg = e["process_group"]
    if not isinstance(pg, (list, tuple)) or len(pg) != 2 or not all(
            isinstance(x, str) for x in pg):
        raise BadDump(path, f"{where}: process_group {pg!r} is not (name, description)")
    checks = (("collective_seq_id", e["collective_seq_id"], _is_int),
              ("record_id", e.get("record_id", i), _is_int),
              ("profiling_name", e["profiling_name"], lambda v: isinstance(v, str)),
              ("state", e.get("state", ""), lambda v: isinstance(v, str)),
              ("retired", e["retired"], lambda v: isinstance(v, bool)),
              ("is_p2p", e.get("is_p2p", False), lambda v: isinstance(v, bool)),
              ("time_created_ns", e.get("time_created_ns") or 0, _is_int))
    for key, value, ok in checks:
        if not ok(value):
            raise BadDump(path, f"{where}: {key} {value!r} is not what the recorder writes")
    return FREntry(e.get("record_id", i), pg[0], pg[1], e["collective_seq_id"],
                   e["profiling_name"], _shapes(e.get("input_sizes"), path, where),
                   _strings(e.get("input_dtypes"), path, where),
                   _shapes(e.get("output_sizes"), path, where),
                   _frames(e.get("frames"), path, where, cache), e.get("state", ""),
                   e["retired"], e.get("is_p2p", False), e.get("time_created_ns") or 0)


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
