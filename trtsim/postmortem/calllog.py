"""Reading trtsim's own call logs (``launch(..., log_dir=...)``; format: ``comm.calllog``).

A call log holds what the Flight Recorder cannot: labels, executor iterations, p2p calls with
their tags and pending sends, roots and reduce ops, and the rank's own state (blocked in a
call, running, done, failed with its traceback) when the file was written.
"""

from __future__ import annotations

import json
from dataclasses import replace

from ..comm.calllog import CALL_LOG_FORMAT, CALL_LOG_VERSION, FIELDS, WRITTEN_ON, decode_call
from ..comm.guard.waitfor import BLOCKED
from ..comm.origin import short_site
from .history import CALL_LOG, STATUSES, BadDump, Call, RankHistory

_KEYS = {"rank": int, "name": str, "world_size": int, "layout": list, "written_on": str,
         "status": str, "iteration": int, "pending_sends": list, "failure": str,
         "traceback": str, "dropped": int, "fields": list, "calls": list}
def read_call_log(path: str) -> RankHistory:
    """One rank's call log; ``BadDump`` (one line) when it is not one trtsim can read."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise BadDump(path, f"cannot read ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise BadDump(path, "not a trtsim call log (not UTF-8 text)") from None
    if not text.strip():
        raise BadDump(path, "empty file")
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise BadDump(path, f"not valid JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != CALL_LOG_FORMAT:
        raise BadDump(path, f"not a trtsim call log (format is not {CALL_LOG_FORMAT!r})")
    if doc.get("version") != CALL_LOG_VERSION:
        raise BadDump(path, f"call log version {doc.get('version')!r}: this trtsim reads "
                      f"version {CALL_LOG_VERSION}")
    for key, typ in _KEYS.items():
        if not isinstance(doc.get(key), typ) or isinstance(doc.get(key), bool):
            raise BadDump(path, f"{key}: {doc.get(key)!r} is not {typ.__name__}")
    if doc["status"] not in STATUSES or doc["written_on"] not in WRITTEN_ON:
        raise BadDump(path, f"status {doc['status']!r} / written_on {doc['written_on']!r} "
                      "is not one a call log writes")
    if doc["fields"] != list(FIELDS):
        raise BadDump(path, "fields: not this trtsim's call record fields (another version?)")
    calls = []
    for i, row in enumerate(doc["calls"]):
        try:
            rec, done, t_ns = decode_call(row)
        except ValueError as exc:
            raise BadDump(path, f"call {i}: {exc}") from None
        calls.append(Call(rec, done, t_ns))
        if rec.callsite != short_site(rec.callsite):     # as a replay run here names it
            calls[-1] = Call(replace(rec, callsite=short_site(rec.callsite)), done, t_ns)
    blocked = next((c for c in reversed(calls) if not c.done), None) \
        if doc["status"] == BLOCKED else None
    try:
        pending = tuple((int(d), int(t)) for d, t in doc["pending_sends"])
        layout = tuple((str(n), str(r), int(tp), int(pp), int(cp), bool(adp))
                       for n, r, tp, pp, cp, adp in doc["layout"])
    except (TypeError, ValueError):
        raise BadDump(path, "pending_sends or layout is not as a call log writes it") from None
    return RankHistory(doc["rank"], path, CALL_LOG, str(doc["version"]), tuple(calls),
                       doc["status"], blocked, doc["dropped"], doc["name"], doc["iteration"],
                       pending, doc["failure"], doc["traceback"], doc["written_on"],
                       doc["world_size"], layout)
