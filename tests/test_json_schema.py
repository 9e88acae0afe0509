"""The JSON documents carry their schema and version, and docs/JSON.md lists exactly the keys
each one writes."""

import pathlib
import re

from trtsim.app.compare import comparison
from trtsim.app.explore import explore
from trtsim.app.output import SCHEMA_VERSION, document, result_document
from trtsim.jobs.dispatch import run_any

DOC = pathlib.Path(__file__).resolve().parents[1] / "docs" / "JSON.md"
HEADER = ["schema", "schema_version", "trtsim_version"]


def documented() -> dict[str, set[str]]:
    """schema -> the keys its section of docs/JSON.md lists."""
    out, current = {}, None
    for line in DOC.read_text().splitlines():
        head = re.match(r"^## (trtsim/\w+)$", line)
        if head:
            current = out.setdefault(head[1], set())
        row = re.match(r"^\| `(\w+)` \|", line)
        if row and current is not None:
            current.add(row[1])
    return out


def check(doc: dict, optional=()) -> None:
    assert list(doc)[:3] == HEADER and doc["schema_version"] == SCHEMA_VERSION
    listed = documented()[doc["schema"]]
    assert set(doc) - set(HEADER) <= listed, set(doc) - listed
    assert listed - set(doc) <= set(optional), listed - set(doc)


def test_run_perf_compare_and_explore_documents():
    run = run_any("sticky_skip_pp_deadlock")
    check(result_document(run), optional=("census_rows",))
    full = result_document(run, census_rows=True)
    check(full)
    assert len(full["census_rows"]) > len(full["census"])       # the summary is smaller
    assert {"role", "kind", "label", "calls", "per_rank_iteration"} <= set(full["census"][0])
    perf = run_any("incident_sticky_skip")
    check(result_document(perf))
    check(document("compare", comparison(perf, perf).to_dict()))
    check(document("explore", explore("kv_transfer", examples=2).to_dict()))


def test_every_schema_has_its_section():
    assert set(documented()) == {"trtsim/run", "trtsim/perf", "trtsim/compare",
                                 "trtsim/explore", "trtsim/analyze", "trtsim/replay",
                                 "trtsim/lint"}
