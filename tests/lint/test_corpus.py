"""The labelled corpus: every incident shape is found at its gate (the line marked
``# GATE``), and nothing is found in the fixed versions or the legal code."""

import pathlib

import pytest

from trtsim.lint import lint

CORPUS = pathlib.Path(__file__).parent / "corpus"
INCIDENTS = sorted((CORPUS / "incidents").glob("*.py"))
CLEAN = sorted((CORPUS / "fixed").glob("*.py")) + sorted((CORPUS / "legal").glob("*.py"))


def marked(path: pathlib.Path) -> set[int]:
    return {i for i, line in enumerate(path.read_text().splitlines(), 1) if "# GATE" in line}


def test_the_corpus_is_complete():
    names = {p.name for p in INCIDENTS}
    assert names == {"dp_zero_token.py", "drafter_length_bound.py", "free_kv_blocks.py",
                     "warmup_two_comms.py", "image_global_reduce.py", "sticky_flag_adp_pp.py"}
    assert names == {p.name for p in (CORPUS / "fixed").glob("*.py")}
    assert all(len(marked(p)) == 1 for p in INCIDENTS)


@pytest.mark.parametrize("path", INCIDENTS, ids=lambda p: p.stem)
def test_every_incident_is_found_at_its_gate(path):
    result = lint([str(path)])
    assert {f.gate.line for f in result.findings} == marked(path)
    for finding in result.findings:
        assert finding.origins and finding.collective.op and finding.group
        assert finding.gate.condition in path.read_text()


@pytest.mark.parametrize("path", CLEAN, ids=lambda p: f"{p.parent.name}-{p.stem}")
def test_fixed_and_legal_code_has_no_finding(path):
    result = lint([str(path)])
    assert result.findings == (), "\n\n".join(f.text() for f in result.findings)
    assert result.collectives > 0            # the check saw collectives to judge


def test_recall_and_false_positives_over_the_whole_corpus():
    found = sum(bool({f.gate.line for f in lint([str(p)]).findings} & marked(p))
                for p in INCIDENTS)
    false = sum(len(lint([str(p)]).findings) for p in CLEAN)
    assert (found, false) == (len(INCIDENTS), 0)


def test_the_sticky_flag_finding_names_the_chain():
    path = CORPUS / "incidents" / "sticky_flag_adp_pp.py"
    (finding,) = lint([str(path)]).findings
    assert finding.collective.op == "pp_allgather" and finding.group == "pp"
    assert finding.gate.condition == "not self._ever_had_send_session"
    chain = " ".join(finding.origins)
    assert "self._ever_had_send_session set True" in chain
    assert "_create_send_session(req)" in chain
    assert "respond_and_send_async(req)" in chain
    assert "_ctx_consensus" in " ".join(finding.via)


def test_group_judgement_names_its_assumption():
    tp = lint([str(CORPUS / "incidents" / "free_kv_blocks.py")]).findings[0]
    assert tp.group == "tp" and "attention DP" in tp.assumption
    dp = lint([str(CORPUS / "incidents" / "dp_zero_token.py")]).findings[0]
    assert dp.group == "dp" and "DP ranks hold different requests" in dp.assumption


def test_without_attention_dp_a_tp_gate_on_requests_is_uniform(tmp_path):
    # The same free-KV gate, in code that never mentions attention DP: every TP rank of an
    # instance gets the same requests, so the TP allgather is reached alike.
    text = (CORPUS / "incidents" / "free_kv_blocks.py").read_text()
    plain = text.replace("if self.mapping.enable_attention_dp:", "if self.mapping.tp_size > 1:")
    plain = plain.replace("under attention DP", "")
    (tmp_path / "plain.py").write_text(plain)
    assert lint([str(tmp_path / "plain.py")]).findings == ()


def test_trtsims_own_transceiver_is_found_with_its_sticky_variants():
    import trtsim
    disagg = pathlib.Path(trtsim.__file__).parent / "disagg"
    findings = lint([str(disagg)]).findings
    gates = {(f.gate.condition.split("(")[0], f.collective.op) for f in findings}
    assert ("self._may_skip", "pp_allgather") in gates
    sticky = [f for f in findings if f.collective.op == "pp_allgather"
              and f.gate.condition.startswith("self._may_skip(self.ever_had_send_session")]
    assert sticky and "ever_had_send_session set True" in " ".join(sticky[0].origins)
