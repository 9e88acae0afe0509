"""``trtsim lint`` on vLLM's and SGLang's own files, from their published wheels, and on the
DP program of this folder. Every finding on the frameworks' files is reviewed in docs/LINT.md
("Findings on vLLM and SGLang"): the test holds the lint to exactly the reviewed sites, so a
new finding (or a lost one) fails until it is reviewed."""

import os
from pathlib import Path

import pytest

from tests.realcode import manifest, wheels
from trtsim.lint import LintConfig, lint

HERE = Path(__file__).parent
VLLM = wheels.Pin("vllm", "0.33.0", manifest.LINT_VLLM)
SGLANG = wheels.Pin("sglang", "0.5.23", manifest.LINT_SGLANG)
# vLLM's TP group never spans DP ranks (a DP rank is an engine of its own): its pyproject
# would say attention-dp = false.
VLLM_CONFIG = LintConfig(attention_dp=False)
# SGLang computes these on every rank from the DP-wide all-gather of token counts
# (model_executor/forward_batch_info.py, "global_num_tokens is identical across ranks
# (all-gathered), so the decision is consistent cluster-wide"), outside the files read here.
SGLANG_CONFIG = LintConfig(uniform=frozenset({
    "dp_padding_mode", "global_num_tokens", "global_num_tokens_cpu",
    "global_num_tokens_for_logprob_cpu", "global_dp_buffer_len"}))

# gate site -> verdict, as docs/LINT.md reviews it
VLLM_REVIEWED = {"vllm/v1/worker/gpu/model_runner.py:2152": "true"}
SGLANG_UNDECLARED = {"sglang/srt/layers/dp_attention.py:1011": "false",
                     "sglang/srt/layers/dp_attention.py:1028": "false",
                     "sglang/srt/layers/dp_attention.py:1034": "false",
                     "sglang/srt/layers/dp_attention.py:1136": "false"}


def _root(pin) -> Path:
    try:
        return wheels.extract(pin)
    except wheels.RegistryUnreachable as exc:   # as frameworks.require: fail in CI, else skip
        if os.environ.get("CI"):
            pytest.fail(f"CI needs {pin.requirement}: {exc}", pytrace=False)
        pytest.skip(f"cannot fetch {pin.requirement}: {exc}")


def _files(root: Path, members) -> list[str]:
    return [str(root / m) for m in members]


def _sites(result, root: Path) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for f in result.findings:
        site = f"{Path(f.gate.path).relative_to(root)}:{f.gate.line}"
        out.setdefault(site, set()).add(f.collective.op)
    return out


def test_vllm_findings_are_the_reviewed_ones():
    root = _root(VLLM)
    result = lint(_files(root, manifest.LINT_VLLM), VLLM_CONFIG)
    assert result.collectives > 20
    assert set(_sites(result, root)) == set(VLLM_REVIEWED)
    assert all(v == "true" for v in VLLM_REVIEWED.values())


def test_sglang_findings_are_the_reviewed_ones():
    root = _root(SGLANG)
    files = _files(root, manifest.LINT_SGLANG)
    declared = lint(files, SGLANG_CONFIG)
    assert declared.collectives > 40 and declared.findings == ()
    # without the declaration, the reviewed false findings are those the DP-wide values make
    assert set(_sites(lint(files), root)) == set(SGLANG_UNDECLARED)


def test_the_programs_zero_token_gate_in_front_of_vllms_dp_all_reduce_is_found():
    root = _root(VLLM)
    program = HERE / "vllm_programs.py"
    lines = program.read_text().splitlines()
    skip_line = next(i for i, line in enumerate(lines, 1)
                     if "skip_dp_coordination()" in line and "with" in line)
    test_line = skip_line - 1
    assert "num_tokens == 0" in lines[test_line - 1]
    result = lint([str(program), str(root / "vllm/v1/worker/dp_utils.py"),
                   str(root / "vllm/distributed/parallel_state.py")], VLLM_CONFIG)
    gate = [f for f in result.findings if f.gate.condition == "should_skip_dp_coordination()"
            and f.collective.op == "all_reduce"]
    assert gate, "\n\n".join(f.text() for f in result.findings)
    chain = " ".join(gate[0].origins)
    assert f"skip_dp_coordination() called at {program}:{skip_line}" in chain
    assert "_skip_dp_coordination.set(True)" in chain
    assert gate[0].collective.path.endswith("vllm/v1/worker/dp_utils.py")
