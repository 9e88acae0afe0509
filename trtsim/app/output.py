"""What the command writes for programs: versioned JSON documents (docs/JSON.md).

Every document is an object whose first keys say what it is: ``schema`` (``trtsim/run``,
``trtsim/perf``, ``trtsim/compare``, ``trtsim/explore``, ``trtsim/analyze``,
``trtsim/replay``), ``schema_version`` (an integer, raised when a key changes meaning or goes
away; new keys may appear within a version) and ``trtsim_version``.
"""

from __future__ import annotations

import json
import os

SCHEMA_VERSION = 1
SCHEMAS = ("run", "perf", "compare", "explore", "analyze", "replay")


class BadInput(Exception):
    """Input the command cannot use; its message is the one line printed."""


def document(schema: str, body: dict) -> dict:
    """``body`` under the header naming its schema and version."""
    from .. import __version__
    if schema not in SCHEMAS:
        raise ValueError(f"schema={schema!r} is not one of {', '.join(SCHEMAS)}")
    return {"schema": f"trtsim/{schema}", "schema_version": SCHEMA_VERSION,
            "trtsim_version": __version__, **body}


def result_document(result, census_rows: bool = False) -> dict:
    """A run's document: ``trtsim/run`` for a functional scenario, ``trtsim/perf`` for a perf
    one, or the schema the result names (``trtsim/replay``)."""
    if getattr(result, "schema", None):
        return document(result.schema, result.to_dict(census_rows=census_rows))
    if result.census is None:                       # a perf run keeps no census of ranks
        return document("perf", result.to_dict())
    return document("run", result.to_dict(census_rows=census_rows))


def write_json(path: str, data, flag: str = "--json") -> None:
    """Write JSON atomically: a reader never sees half a file."""
    tmp = f"{path}.tmp"
    try:
        with open(tmp, "w") as f:
            json.dump(data, f, indent=2, default=str)
        os.replace(tmp, path)
    except OSError as exc:
        raise BadInput(f"{flag} {path}: cannot write ({exc.strerror})") from None
