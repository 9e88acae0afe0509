"""What the command writes for programs: versioned JSON documents (docs/JSON.md).

Every document is an object whose first keys say what it is: ``schema`` (``trtsim/run``,
``trtsim/perf``, ``trtsim/compare``, ``trtsim/explore``, ``trtsim/analyze``,
``trtsim/replay``), ``schema_version`` (an integer, raised when a key changes meaning or goes
away; new keys may appear within a version) and ``trtsim_version``.
"""

from __future__ import annotations

import contextlib
import json
from typing import Sequence

from ..safe_write import OutputIsInput, atomic_writer

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


def write_json(path: str, data, flag: str = "--json", inputs: Sequence[str] = ()) -> None:
    """Write JSON whole, safely (``safe_write``): a reader never sees half a file, a planted
    link is never followed, an input is never overwritten (``BadInput`` naming the flag)."""
    with writing(flag, path):
        with atomic_writer(path, inputs=inputs) as f:
            json.dump(data, f, indent=2, default=str)


@contextlib.contextmanager
def writing(flag: str, path: str):
    """A write's failures as the one line of bad input naming the flag and the path."""
    try:
        yield
    except OutputIsInput as exc:
        raise BadInput(f"{flag} {path}: {exc}") from None
    except OSError as exc:
        raise BadInput(f"{flag} {path}: cannot write ({exc.strerror or exc})") from None
