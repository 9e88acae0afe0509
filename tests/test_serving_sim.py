"""The cluster-scale serving simulation: closed-form cases, the incident scenarios, speed."""

import time

import pytest

from trtsim.jobs.perf_run import run_perf
from trtsim.layout import ParallelLayout
from trtsim.perf.serving_sim import (BenchmarkConfig, ControlPlane, InstanceConfig, PerfConfig,
                                     _Models, simulate)
from trtsim.scenario.functional import ScenarioError
from trtsim.scenario.perf import load_perf


def single(concurrency=1, prompts=4, k=0, alpha=0.0, control=ControlPlane(), osl=8):
    return PerfConfig("H200_SXM", "DeepSeek-V3", InstanceConfig(layout=ParallelLayout(tp_size=8, ep_size=8)),
                      InstanceConfig(layout=ParallelLayout(tp_size=8, ep_size=8), max_batch_size=1),
                      BenchmarkConfig(concurrency=concurrency, num_prompts=prompts,
                                      input_length=1024, output_length=osl),
                      max_draft_len=k, acceptance=alpha, control=control)


def test_one_request_at_a_time_has_the_analytic_latency():
    cfg = single()
    m = _Models(cfg)
    prefill = m.prefill(1024, 1) + m.tx.prepare_s
    transfer = m.transfer(1024)
    res = simulate(cfg)
    rec = res.records[0]
    first_step = m.gen_step(1, 1024 // 64 * 64 + 64)
    assert rec.first_token == pytest.approx(prefill + transfer + first_step)
    # 7 more tokens, one per step (no MTP); kv grows but stays in one bucket
    assert rec.end - rec.first_token == pytest.approx(7 * first_step, rel=1e-6)
    assert res.metrics["avg_decoded_tokens_per_iter"] == pytest.approx(1.0)


def test_control_plane_cost_adds_to_every_step():
    base = simulate(single())
    gathers = ControlPlane(gen=((8, 4.0),))
    slow = simulate(single(control=gathers))
    m = _Models(single())
    per_step = gathers.cost("gen", m.host)
    # 8 generation steps per request, 4 requests back to back
    assert slow.metrics["duration"] - base.metrics["duration"] == pytest.approx(
        4 * 8 * per_step, rel=1e-6)


def test_mtp_acceptance_length_follows_alpha():
    res = simulate(single(prompts=64, concurrency=8, k=3, alpha=0.6, osl=200))
    assert res.metrics["avg_decoded_tokens_per_iter"] == pytest.approx(
        (1 - 0.6 ** 4) / 0.4, rel=0.05)


def test_same_seed_same_prediction():
    a = simulate(single(prompts=16, concurrency=4, k=3, alpha=0.7))
    b = simulate(single(prompts=16, concurrency=4, k=3, alpha=0.7))
    assert a.metrics == b.metrics


def test_sticky_skip_removes_generation_gathers_in_the_5_3_scenario():
    before = run_perf("scenarios/incident_sticky_skip.yaml")
    after = run_perf("scenarios/incident_sticky_skip.yaml",
                     {"transceiver.sticky_skip": "guarded"})
    assert sum(n for _, n in after.control.gen) < sum(n for _, n in before.control.gen) - 3
    assert after.metrics["output_throughput"] > before.metrics["output_throughput"]
    assert {k for k, *_ in before.comparison()} >= {"output_throughput", "mean_tpot_ms",
                                                   "mean_ttft_ms", "duration"}


def test_async_consensus_keeps_the_context_pipeline_full():
    before = run_perf("scenarios/incident_pp4_consensus.yaml",
                      {"benchmark.num_prompts": 32, "benchmark.concurrency": 32,
                       "benchmark.output_length": 256})
    after = run_perf("scenarios/incident_pp4_consensus.yaml",
                     {"benchmark.num_prompts": 32, "benchmark.concurrency": 32,
                      "benchmark.output_length": 256, "transceiver.async_consensus": True})
    assert after.metrics["mean_ttft_ms"] < before.metrics["mean_ttft_ms"] * 0.8
    assert after.breakdown["ctx_compute"] < before.breakdown["ctx_compute"]


def test_the_5_3_benchmark_simulates_within_ten_seconds():
    t0 = time.perf_counter()
    res = run_perf("scenarios/incident_sticky_skip.yaml")
    assert res.metrics["completed"] == 1024
    assert time.perf_counter() - t0 < 10.0


@pytest.mark.parametrize("overrides,message", [
    ({"hardware": "TPU"}, "hardware='TPU' unknown; known: H100_SXM"),
    ({"gen.tp": 0}, "gen.tp: tp_size=0 must be an integer >= 1"),
    ({"benchmark.colour": 1}, "benchmark.colour: 1 is not a known key"),
    ({"transceiver.sticky_skip": "maybe"},
     "transceiver.sticky_skip: sticky_skip='maybe'; expected one of off"),
    ({"speculative.acceptance": 1.5}, "acceptance=1.5 must be in [0, 1)"),
])
def test_bad_perf_scenarios_name_the_key(overrides, message):
    with pytest.raises(ScenarioError) as info:
        load_perf("scenarios/incident_sticky_skip.yaml", overrides)
    assert message in str(info.value) and "incident_sticky_skip.yaml" in str(info.value)
