"""MTP workers: the entry-point contract, acceptance lengths against the formula, the tree and
relaxed variants, TP-sharded drafting with a real collective, and the executor's step."""

import math

import pytest
import torch

import trtsim
from trtsim.jobs.run import run
from trtsim.spec import GenerationStep, MTPEagleWorker, MTPWorker, SpecConfig, SpecWorker
from trtsim.spec.incident import bypassing_worker_class

SMALL = dict(vocab_size=1024, hidden_size=32)


def test_overriding_forward_is_refused_at_class_definition():
    with pytest.raises(TypeError, match=r"Tree.*overrides forward\(\); implement _forward_impl"):
        class Tree(trtsim.spec.MTPEagleDynamicTreeWorker):  # noqa: F841
            def forward(self, inputs):
                return self._forward_impl(inputs)


def test_subclasses_implementing_forward_impl_are_fine():
    class Custom(MTPEagleWorker):
        def _forward_impl(self, inputs):
            return super()._forward_impl(inputs)

    assert issubclass(Custom, SpecWorker)


def test_the_incident_builder_bypasses_the_entry_point():
    cls = bypassing_worker_class(MTPWorker)
    assert cls.forward is not SpecWorker.forward and not cls._entry_point_checked
    step = GenerationStep(SpecConfig(bypass_entry_point=True, **SMALL))
    step.run([(0, 20), (1, 30)])
    assert type(step.worker).__name__ == "BypassingMTPWorker"


def measured_al(cfg, requests=24, steps=30, seed=0, device="cpu"):
    step = GenerationStep(cfg, seed=seed, device=device)
    lens = {rid: 32 for rid in range(requests)}
    for _ in range(steps):
        for (rid, n), e in zip(list(lens.items()), step.run(list(lens.items()))):
            lens[rid] = n + e
    return step.acceptance_length, step.num_steps


@pytest.mark.parametrize("decoding", ["MTP", "MTPEagle"])
@pytest.mark.parametrize("k,alpha", [(1, 0.5), (3, 0.0), (3, 0.7), (5, 0.9)])
def test_acceptance_length_matches_the_formula(decoding, k, alpha):
    cfg = SpecConfig(decoding_type=decoding, max_draft_len=k, acceptance=alpha, **SMALL)
    al, n = measured_al(cfg)
    expected = cfg.expected_acceptance_length
    # per-step emitted count: truncated geometric; its variance bounds the sampling error
    var = sum((j + 1) ** 2 * (alpha ** j * (1 - alpha) if j < k else alpha ** k)
              for j in range(k + 1)) - expected ** 2
    assert abs(al - expected) <= 4 * math.sqrt(max(var, 1e-9) / n) + 1e-9


def test_dynamic_tree_accepts_at_least_the_chain():
    chain, _ = measured_al(SpecConfig(max_draft_len=3, acceptance=0.5, **SMALL))
    tree, _ = measured_al(SpecConfig(decoding_type="DynamicTree", max_draft_len=3,
                                     acceptance=0.5, tree_topk=2, tree_nodes=8, **SMALL))
    assert tree > chain + 0.3


def test_relaxed_acceptance_takes_the_runner_up():
    strict, _ = measured_al(SpecConfig(max_draft_len=3, acceptance=0.3, **SMALL))
    relaxed, _ = measured_al(SpecConfig(max_draft_len=3, acceptance=0.3, relaxed=True,
                                        relaxed_delta=0.5, **SMALL))
    assert relaxed == pytest.approx(4.0) and strict < 2.0


def _sharded_drafts(dist):
    step = GenerationStep(SpecConfig(max_draft_len=3, acceptance=0.6, **SMALL), dist=dist, seed=3)
    out = [step.run([(0, 20), (1, 33), (2, 41)]) for _ in range(4)]
    return out, step.drafts


def test_tp_sharded_drafting_equals_unsharded():
    sharded = trtsim.launch(_sharded_drafts, tp=4)
    single = trtsim.launch(_sharded_drafts, tp=1)[0]
    assert all(res == single for res in sharded)


def test_executor_generation_step_reports_the_acceptance_length():
    cfg = {"decoding_type": "MTP", "max_draft_len": 3, "acceptance": 0.6, **SMALL}
    res = run({"name": "mtp", "topology": "tp2_pp1", "speculative": cfg,
               "workload": {"kind": "serving", "num_requests": 8, "output_len": 40}})
    assert res.verdict == "ok" and res.kv_verified is True
    assert abs(res.metrics["avg_decoded_tokens_per_iter"] - 2.176) < 0.3
    assert res.census.count(role="gen", label="mtp_draft_argmax") > 0


@pytest.mark.gpu
def test_graph_replay_equals_eager_on_cuda():
    cfg = SpecConfig(max_draft_len=3, acceptance=0.6, **SMALL)
    graphs = GenerationStep(cfg, seed=5, device="cuda")
    eager = GenerationStep(SpecConfig(cuda_graphs=False, max_draft_len=3, acceptance=0.6,
                                      **SMALL), seed=5, device="cuda")
    cpu = GenerationStep(cfg, seed=5, device="cpu")
    reqs = [(0, 20), (1, 33), (2, 41), (3, 50)]
    for _ in range(6):
        a, b, c = graphs.run(reqs), eager.run(reqs), cpu.run(reqs)
        assert a == b == c
        reqs = [(rid, n + e) for (rid, n), e in zip(reqs, a)]
    assert graphs.worker.num_graph_replays == 6 and eager.worker.num_eager_steps == 6
    assert graphs.drafts == cpu.drafts
    assert torch.equal(graphs.worker.past_tokens.cpu(), cpu.worker.past_tokens)


@pytest.mark.gpu
def test_dynamic_tree_on_cuda_accepts_like_cpu():
    """Equal-probability branches may be ordered differently by the two devices' top-k, so
    the trees can differ in their ties; the acceptance they reach must not."""
    cfg = SpecConfig(decoding_type="DynamicTree", max_draft_len=3, acceptance=0.5, **SMALL)
    gpu_al, _ = measured_al(cfg, requests=16, steps=20, device="cuda")
    step = GenerationStep(cfg, seed=0, device="cuda")
    step.run([(0, 20), (1, 33)])
    assert step.worker.num_graph_replays >= 1
    cpu_al, _ = measured_al(cfg, requests=16, steps=20)
    assert abs(gpu_al - cpu_al) < 0.3
