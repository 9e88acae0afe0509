"""The cluster-scale serving simulation: closed-form cases, one prefill batch at a time per
context server, the incident scenarios."""

from dataclasses import replace

import pytest

from trtsim.jobs.perf_run import run_perf
from trtsim.layout import ParallelLayout
from trtsim.perf.acceptance import acceptance_length
from trtsim.perf.iteration import HostCollectives
from trtsim.perf.serving_sim import (BenchmarkConfig, ControlPlane, InstanceConfig, PerfConfig,
                                     _Models, simulate)
from trtsim.scenario.functional import ScenarioError
from trtsim.scenario.perf import load_perf


def single(concurrency=1, prompts=4, k=0, rates=(), control=ControlPlane(), osl=8,
           overlap=True, gen_host_ms=0.0):
    tep8 = ParallelLayout(tp_size=8, ep_size=8)
    return PerfConfig("H200_SXM", "DeepSeek-V3",
                      InstanceConfig(layout=tep8, disable_overlap_scheduler=not overlap),
                      InstanceConfig(layout=tep8, max_batch_size=1, host_work_ms=gen_host_ms,
                                     disable_overlap_scheduler=not overlap),
                      BenchmarkConfig(concurrency=concurrency, num_prompts=prompts,
                                      input_length=1024, output_length=osl),
                      max_draft_len=k, acceptance=rates, control=control)


@pytest.mark.parametrize("overlap", [True, False])
def test_one_request_at_a_time_has_the_analytic_latency(overlap):
    cfg = single(overlap=overlap)
    m = _Models(cfg)
    # the transfer's host preparation overlaps the prefill, or follows it
    prefill = max(m.prefill(1024, 1), m.tx.prepare_s) if overlap else \
        m.prefill(1024, 1) + m.tx.prepare_s
    transfer = m.transfer(1024)
    res = simulate(cfg)
    rec = res.records[0]
    first_step = m.gen_step(1, 1024 // 64 * 64 + 64)
    assert rec.first_token == pytest.approx(prefill + transfer + first_step)
    # 7 more tokens, one per step (no MTP); kv grows but stays in one bucket
    assert rec.end - rec.first_token == pytest.approx(7 * first_step, rel=1e-6)
    assert res.metrics["avg_decoded_tokens_per_iter"] == pytest.approx(1.0)


GATHERS = ControlPlane(gen=HostCollectives(sync=((8, 2.0),), aligned=((8, 2.0),),
                                           rooted=((8, 1.0),)))


def test_a_host_bound_step_pays_every_collective():
    """20 ms of host work per iteration against a ~3 ms GPU step: the host sets the step,
    so each iteration's latency and wait land on every step (8 steps per request, 4 requests
    in turn)."""
    base = simulate(single(gen_host_ms=20.0))
    slow = simulate(single(gen_host_ms=20.0, control=GATHERS))
    path = _Models(single(gen_host_ms=20.0, control=GATHERS)).host_path("gen", 0, 20e-3)
    assert path.latency_s > 0 and path.wait_s > 0
    assert slow.metrics["duration"] - base.metrics["duration"] == pytest.approx(
        4 * 8 * path.total_s, rel=1e-6)
    assert slow.breakdown["gen_host_bound_steps"] == slow.breakdown["gen_steps"] == 32
    assert slow.breakdown["gen_wait"] == pytest.approx(32 * path.wait_s)


def test_per_request_calls_land_on_the_iteration_that_admits_the_request():
    """One receive check per request: 4 requests, 4 priced iterations of 32."""
    once = ControlPlane(gen_per_request=HostCollectives(sync=((8, 1.0),)))
    res = simulate(single(gen_host_ms=20.0, control=once))
    path = _Models(single(gen_host_ms=20.0, control=once)).host_path("gen", 1, 20e-3)
    assert res.breakdown["gen_latency"] == pytest.approx(4 * path.latency_s)
    assert res.breakdown["gen_wait"] == pytest.approx(4 * path.wait_s)


def test_one_context_server_runs_one_prefill_batch_at_a_time():
    """Four requests sent at once to one context server that takes one per batch: four
    prefills one after another, never side by side (each starts when the last ends)."""
    cfg = single(concurrency=4, prompts=4)
    res = simulate(replace(cfg, ctx=replace(cfg.ctx, max_batch_size=1)))
    prefills = sorted((start, end) for server, start, end, kind in res.events
                      if kind == "prefill")
    assert len(prefills) == 4
    for (s0, e0), (s1, _) in zip(prefills, prefills[1:]):
        assert s1 >= e0 - 1e-12
    assert res.breakdown["ctx_steps"] == 4
    ttft = sorted(r.first_token - r.send for r in res.records)
    assert ttft[-1] > 3 * prefills[0][1]        # the last one queued behind three prefills


def test_a_gpu_bound_step_hides_the_host_behind_the_overlap():
    """No host work: the collectives' microseconds fit under the GPU step with overlap and
    add to it without."""
    hidden = simulate(single(control=GATHERS)), simulate(single())
    assert hidden[0].metrics["duration"] == pytest.approx(hidden[1].metrics["duration"])
    assert hidden[0].breakdown["gen_host_bound_steps"] == 0
    serial = simulate(single(control=GATHERS, overlap=False)), simulate(single(overlap=False))
    assert serial[0].metrics["duration"] > serial[1].metrics["duration"]


def test_price_quantiles_order_the_predictions():
    cfg = single(gen_host_ms=20.0, control=GATHERS)
    durations = [simulate(replace(cfg, price_quantile=q)).metrics["duration"]
                 for q in ("low", "central", "high")]
    assert durations == sorted(durations) and durations[0] < durations[2]


@pytest.mark.parametrize("rates", [(0.8, 0.6, 0.4), (1.0, 0.654, 0.0), (1.0, 1.0, 1.0)])
def test_mtp_acceptance_length_follows_the_rates_per_depth(rates):
    res = simulate(single(prompts=64, concurrency=8, k=3, rates=rates, osl=200))
    assert res.metrics["avg_decoded_tokens_per_iter"] == pytest.approx(
        acceptance_length(rates), rel=0.05)


def test_same_seed_same_prediction():
    a = simulate(single(prompts=16, concurrency=4, k=3, rates=(0.7, 0.7, 0.7)))
    b = simulate(single(prompts=16, concurrency=4, k=3, rates=(0.7, 0.7, 0.7)))
    assert a.metrics == b.metrics


def test_sticky_skip_removes_generation_gathers_in_the_5_3_scenario():
    before = run_perf("scenarios/incident_sticky_skip.yaml")
    after = run_perf("scenarios/incident_sticky_skip.yaml",
                     {"transceiver.sticky_skip": "guarded"})
    assert before.control.gen.calls - after.control.gen.calls == pytest.approx(2.0)
    assert after.metrics["output_throughput"] > before.metrics["output_throughput"]
    # 128 prompts of 923 tokens at the before row's AL: the benchmark's one run
    assert before.metrics["completed"] == 128
    assert before.metrics["avg_decoded_tokens_per_iter"] == pytest.approx(2.654, rel=0.01)
    # host-bound: 12.5 ms of sourced host work against the roofline's ~4.1 ms
    assert before.breakdown["gen_host_bound_steps"] == before.breakdown["gen_steps"]
    lo, hi = before.band["output_throughput"]
    assert lo <= before.metrics["output_throughput"] <= hi and lo < hi
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
    # the stages' serial time is the same; the full pipeline hides part of it
    assert after.breakdown["ctx_gpu"] == pytest.approx(before.breakdown["ctx_gpu"])
    assert after.breakdown["ctx_overlap"] > before.breakdown["ctx_overlap"]


@pytest.mark.parametrize("overrides,message", [
    ({"hardware": "TPU"}, "hardware='TPU' unknown; known: H100_SXM"),
    ({"gen.tp": 0}, "gen.tp: tp_size=0 must be an integer >= 1"),
    ({"benchmark.colour": 1}, "benchmark.colour: 1 is not a known key"),
    ({"transceiver.sticky_skip": "maybe"},
     "transceiver.sticky_skip: sticky_skip='maybe'; expected one of off"),
    ({"speculative.acceptance_length": 0, "speculative.acceptance": [1.5, 0, 0]},
     "every rate must be in [0, 1]"),
    ({"gen.host_work_ms": -1}, "host_work_ms=-1 must be a number of ms >= 0"),
    ({"host_backend": "nccl"}, "host_backend: 'nccl' is not one of mpi, gloo"),
    ({"executor.version": "v9"}, "executor.version: version='v9'; expected one of trtsim"),
])
def test_bad_perf_scenarios_name_the_key(overrides, message):
    with pytest.raises(ScenarioError) as info:
        load_perf("scenarios/incident_sticky_skip.yaml", overrides)
    assert message in str(info.value) and "incident_sticky_skip.yaml" in str(info.value)
