"""trtsim's per-rank call log: the format, in one place (the writer and every reader use it).

A rank launched with ``launch(..., log_dir=DIR)`` on the process backend or under torchrun
writes ``DIR/trtsim_calls_rank<R>.json`` when it exits, when the launch's timeout passes and
when it is ended by a signal, so a hung multi-node job leaves one file per rank. The file is
one JSON object:

- ``format`` (``trtsim/calllog``), ``version`` (an integer, raised when a key changes
  meaning), ``rank`` (global), ``name`` (as reports name the rank), ``world_size``;
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

import dataclasses
import re

from .records import CallRecord

CALL_LOG_FORMAT = "trtsim/calllog"
CALL_LOG_VERSION = 1
CALL_LOG_SIZE = 20_000
RECORD_FIELDS = tuple(f.name for f in dataclasses.fields(CallRecord))
FIELDS = RECORD_FIELDS + ("done", "t_ns")
WRITTEN_ON = ("exit", "timeout", "signal")
_NAME = re.compile(r"^trtsim_calls_rank(\d+)\.json$")


def log_name(rank: int) -> str:
    """The file a rank's call log goes to, inside the launch's ``log_dir``."""
    return f"trtsim_calls_rank{rank}.json"


def rank_of_name(basename: str) -> int | None:
    """The rank a call log's file name says, or None when it is no call log's name."""
    match = _NAME.match(basename)
    return int(match[1]) if match else None


def encode_call(rec: CallRecord, done: bool, t_ns: int) -> list:
    """One row of ``calls``."""
    row = [getattr(rec, f) for f in RECORD_FIELDS]
    row[RECORD_FIELDS.index("group_ranks")] = list(rec.group_ranks)
    return row + [bool(done), int(t_ns)]


def decode_call(row: list, fields: tuple[str, ...] = FIELDS) -> tuple[CallRecord, bool, int]:
    """A row back into its record, done flag and entry time; ValueError names what is wrong."""
    if not isinstance(row, list) or len(row) != len(fields):
        raise ValueError(f"a call row has {len(row) if isinstance(row, list) else 'no'} "
                         f"values for {len(fields)} fields")
    values = dict(zip(fields, row))
    try:
        values["group_ranks"] = tuple(int(r) for r in values["group_ranks"])
        done, t_ns = bool(values.pop("done")), int(values.pop("t_ns"))
        return CallRecord(**values), done, t_ns
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"a call row does not make a call record ({exc})") from None
