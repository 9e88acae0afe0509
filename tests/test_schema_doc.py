"""The scenario schema is documented from one source: ``trtsim schema`` and docs/SCENARIOS.md
are printed from the configuration dataclasses, and the committed file is current."""

import pathlib

from trtsim.app.schema_doc import schema_markdown, schema_text
from trtsim.scenario.sections import schema_rows

DOC = pathlib.Path(__file__).resolve().parents[1] / "docs" / "SCENARIOS.md"


def test_docs_scenarios_md_is_current():
    assert DOC.read_text() == schema_markdown(), (
        "docs/SCENARIOS.md is stale: regenerate it with "
        "`trtsim schema --markdown > docs/SCENARIOS.md`")


def test_every_key_of_every_section_is_documented():
    text, doc = schema_text(), DOC.read_text()
    rows = [(kind, name, key) for kind, name, keys in schema_rows() for key, *_ in keys]
    assert len(rows) > 80
    for kind, name, key in rows:
        assert key in text and "`" + key.replace("|", "\\|") + "`" in doc, (kind, name, key)
    for key in ("transceiver.sticky_skip", "executor.pp_handling", "benchmark.concurrency"):
        section, leaf = key.split(".")
        assert any(name == section and leaf in [k for k, *_ in keys]
                   for _, name, keys in schema_rows()), key


def test_a_documented_key_is_accepted_and_an_undocumented_one_refused():
    from trtsim.scenario.functional import ScenarioError, load_scenario
    import pytest
    load_scenario("kv_transfer", {"executor.forward_ms": 2.0})
    with pytest.raises(ScenarioError, match="executor.forward_msec"):
        load_scenario("kv_transfer", {"executor.forward_msec": 2.0})
