"""vLLM's DP coordination with a balanced schedule (no zero-token step, no report): observe
lists the model runner's token gate for the all-reduce in vLLM's dp_utils.py, and flipping it
gives #43547's report; the legal loops list nothing."""

import trtsim
from tests.realcode import vllm_programs

BALANCED = [[3, 5], [2, 2], [4, 4]]


def _launch(prog, args, gates, **kw):
    return trtsim.launch(prog, tp=2, attention_dp=True, args=args, intercept=("torch",),
                         rank_local=("vllm",), gates=gates, gates_in=("vllm",), **kw)


def test_balanced_schedule_lists_the_token_gate_and_flip_reports_the_skip():
    observed = _launch(vllm_programs.dp_steps, (BALANCED, True), "observe",
                       iteration_marker=vllm_programs.DP_STEP)
    assert [g.condition for g in observed.latent] == ["num_tokens == 0 and self.idle_skips"]
    gate = observed.latent[0]
    assert gate.site.endswith("realcode/vllm_programs.py:"
                              f"{vllm_programs.DPWorker.execute_model.__code__.co_firstlineno + 1}")
    assert gate.values == {0: "num_tokens=3, self.idle_skips=True",
                           1: "num_tokens=5, self.idle_skips=True"}
    flipped = _launch(vllm_programs.dp_steps, (BALANCED, True), "flip",
                      iteration_marker=vllm_programs.DP_STEP)
    report = flipped.latent[0].flip
    assert isinstance(report, trtsim.CollectiveMismatch)
    assert all("dp_utils.py" in rec.callsite for rec in report.calls.values())
    assert gate.site in report.explanation


def test_legal_vllm_loop_lists_nothing():
    results = trtsim.launch(vllm_programs.coordinator_loop, tp=2, pp=2, args=(2,),
                            intercept=("torch",), rank_local=("vllm",), gates="observe")
    assert results.latent == []
