"""trtsim's per-rank call log: the format, in one place (the writer and every reader use it).

A rank launched with ``launch(..., log_dir=DIR)`` on the process backend or under torchrun
writes ``DIR/trtsim_calls_<LAUNCH>_rank<R>.json`` when it exits, when the launch's timeout
passes and when it is ended by a signal, so a hung multi-node job leaves one file per rank,
and launches that share ``DIR`` leave one set each. The file is one JSON object:

- ``format`` (``trtsim/calllog``), ``version`` (an integer, raised when a key changes
  meaning), ``rank`` (global), ``name`` (as reports name the rank), ``world_size``;
- ``launch`` (the launch's id, the same in every rank's log: ``comm.launch_stamp``) and
  ``started_ns`` (when the launch, or under torchrun/mpirun this rank, started: wall clock);
- ``layout``: the launch's instances, ``[name, role, tp, pp, cp, attention_dp]`` each;
- ``written_on`` (``exit`` | ``timeout`` | ``signal``), ``status`` (the wait-for analysis's
  ``running`` | ``blocked`` | ``done`` | ``failed``), ``iteration``, ``pending_sends``
  (``[dst, tag]`` of sends not yet taken), ``failure`` (``Type: message`` or empty) and
  its ``traceback``;
- ``dropped``: calls the log no longer holds (it keeps the last ``CALL_LOG_SIZE``);
- ``fields`` and ``calls``: one row per call the rank entered, oldest first, values in
  ``fields`` order: the CallRecord's fields, then ``done`` (the call returned) and ``t_ns``
  (wall clock when it was entered).
"""

from __future__ import annotations

import re

from .records import CallRecord

CALL_LOG_FORMAT = "trtsim/calllog"
CALL_LOG_VERSION = 2                 # 2: launch, started_ns
CALL_LOG_SIZE = 20_000
RECORD_FIELDS = CallRecord._fields
FIELDS = RECORD_FIELDS + ("done", "t_ns")
WRITTEN_ON = ("exit", "timeout", "signal")
_NAME = re.compile(r"^trtsim_calls_(?:[0-9A-Za-z.-]{1,64}_)?rank(\d{1,9})\.json$")


def log_name(rank: int, launch: str) -> str:
    """The file a rank's call log goes to, inside the launch's ``log_dir``."""
    return f"trtsim_calls_{launch}_rank{rank}.json"


def rank_of_name(basename: str) -> int | None:
    """The rank a call log's file name says (``trtsim_calls_[LAUNCH_]rank<R>.json``), or
    None when it is no call log's name."""
    match = _NAME.match(basename)
    return int(match[1]) if match else None


def encode_call(rec: CallRecord, done: bool, t_ns: int) -> list:
    """One row of ``calls``."""
    row = [getattr(rec, f) for f in RECORD_FIELDS]
    row[RECORD_FIELDS.index("group_ranks")] = list(rec.group_ranks)
    return row + [bool(done), int(t_ns)]


_INT, _STR, _NUM = (int,), (str,), (int, float)
_TYPES = {"op": _STR, "seq": _INT, "label": _STR + (type(None),), "iteration": _INT,
          "callsite": _STR, "signature": _STR, "rank": _INT, "local_rank": _INT,
          "instance": _STR, "group_kind": _STR, "group_ranks": (list, tuple),
          "root": _INT + (type(None),), "reduce_op": _STR + (type(None),),
          "peer": _INT + (type(None),), "tag": _INT + (type(None),), "clock": _NUM,
          "purpose": _STR, "comm": _STR, "api": _STR}


def record_of(values: dict) -> CallRecord:
    """A call record from its fields' values (``RECORD_FIELDS``), each checked for the type
    the record holds; ValueError names the first that is not."""
    if set(values) != set(RECORD_FIELDS):
        odd = sorted(map(str, set(values) ^ set(RECORD_FIELDS)))
        raise ValueError(f"the fields are not a call record's ({', '.join(odd)})")
    for name, types in _TYPES.items():
        value = values[name]
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            raise ValueError(f"{name} {value!r} is not {' or '.join(t.__name__ for t in types)}")
    ranks = values["group_ranks"]
    if not all(isinstance(r, int) and not isinstance(r, bool) for r in ranks):
        raise ValueError(f"group_ranks {ranks!r} are not ranks")
    if values["group_kind"] == "p2p" and (values["peer"] is None or values["tag"] is None):
        raise ValueError(f"a point-to-point {values['op']!r} has no peer or tag")  # .route
    return CallRecord(**dict(values, group_ranks=tuple(ranks)))


def decode_call(row: list, fields: tuple[str, ...] = FIELDS) -> tuple[CallRecord, bool, int]:
    """A row back into its record, done flag and entry time; ValueError names what is wrong."""
    if not isinstance(row, list) or len(row) != len(fields):
        raise ValueError(f"a call row has {len(row) if isinstance(row, list) else 'no'} "
                         f"values for {len(fields)} fields")
    values = dict(zip(fields, row))
    done, t_ns = values.pop("done", None), values.pop("t_ns", None)
    if not isinstance(done, bool) or not isinstance(t_ns, int):
        raise ValueError(f"done {done!r} / t_ns {t_ns!r} are not a flag and a time")
    return record_of(values), done, t_ns
