"""Closed-form checks of the cost model (trtsim.perf): roofline ops, layouts, collectives."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from trtsim.layout import ParallelLayout
from trtsim.perf import (
    DEEPSEEK_R1_FP4,
    DEEPSEEK_V3,
    GB300,
    GPT_OSS_120B,
    H200_SXM,
    QWEN3_235B_A22B,
    V4_PRO,
    CostModel,
    HostGatherParams,
    Link,
    Op,
    RequestGroup,
    all_gather_time,
    all_reduce_time,
    all_to_all_time,
    attended_pairs,
    comm_cost as cc,
    group_link,
    host_gather_cost,
    reduce_scatter_time,
)
from trtsim.perf.models import FP8_BLOCK_BYTES

FAST = settings(max_examples=40, deadline=None)


def _op(cm: CostModel, layer: int, name: str, groups) -> Op:
    return next(op for op in cm.layer_ops(layer, groups) if op.name == name)


# -- single ops --------------------------------------------------------------------------------
def test_decode_of_a_dense_layer_is_memory_bound_and_costs_bytes_over_bandwidth():
    cm = CostModel(H200_SXM, DEEPSEEK_V3, ParallelLayout())
    op = _op(cm, 0, "dense_mlp", [RequestGroup(1, 1, 0, 1)])   # layer 0 is dense
    params = 3 * 7168 * 18432
    assert op.bytes == pytest.approx(params * FP8_BLOCK_BYTES, rel=1e-3)
    assert op.flops == 2 * params
    assert op.bound(H200_SXM) == "memory"
    assert op.time(H200_SXM) == pytest.approx(op.bytes / (4.8e12 * 0.80))


def test_prefill_of_a_long_prompt_is_compute_bound():
    cm = CostModel(H200_SXM, DEEPSEEK_V3, ParallelLayout(tp_size=8, ep_size=8))
    groups = [RequestGroup(1, 16384, 0, 1, context=True)]
    for layer, name in ((10, "attn_proj"), (10, "attn_core"), (10, "moe_experts"),
                        (0, "dense_mlp")):
        op = _op(cm, layer, name, groups)
        assert op.bound(H200_SXM) == "compute", name
        assert op.time(H200_SXM) == pytest.approx(op.flops / H200_SXM.flops(op.dtype))


def test_op_time_is_max_or_sum_of_terms_with_a_kernel_floor():
    hw = H200_SXM
    op = Op("x", flops=hw.flops("bf16") * 1e-3, bytes=hw.hbm_rate * 2e-3)
    assert op.time(hw) == pytest.approx(2e-3)
    assert op.time(hw, "sum") == pytest.approx(3e-3)
    tiny = Op("t", 1.0, 1.0, kernels=3)
    assert tiny.time(hw) == pytest.approx(3 * hw.kernel_floor_s)
    assert tiny.bound(hw) == "launch"
    ridge = Op("r", flops=hw.ridge_intensity * 1e9, bytes=1e9)
    assert ridge.compute_time(hw) == pytest.approx(ridge.memory_time(hw))


def test_gqa_decode_attention_reads_the_kv_cache_at_hbm_speed():
    cm = CostModel(H200_SXM, QWEN3_235B_A22B, ParallelLayout(tp_size=4, ep_size=4))
    batch, kv = 32, 8192
    op = _op(cm, 5, "attn_core", [RequestGroup(batch, 1, kv, 1)])
    kv_heads = 1                                    # 4 KV heads over TP 4
    kv_read = batch * (kv + 1) * 2 * kv_heads * 128 * 1.0   # FP8 KV
    act = batch * 16 * 2 * 128 * 2
    assert op.bytes == pytest.approx(kv_read + act)
    assert op.bound(H200_SXM) == "memory"
    assert op.time(H200_SXM) == pytest.approx(op.bytes / H200_SXM.hbm_rate)


def test_mla_absorbed_decode_reads_the_latent_once_and_is_compute_heavy():
    cm = CostModel(H200_SXM, DEEPSEEK_V3, ParallelLayout(tp_size=8, ep_size=8, enable_attention_dp=True))
    kv = 16384
    op = _op(cm, 10, "attn_core", [RequestGroup(1, 1, kv, 1)])
    assert op.flops == pytest.approx(2 * (kv + 1) * 128 * (576 + 512))
    assert op.bytes == pytest.approx((kv + 1) * 576 * 1.0 + 128 * 2 * 512 * 2)
    assert op.bound(H200_SXM) == "compute"   # 128 heads share one 576-wide latent


def test_moe_decode_reads_only_the_experts_the_batch_touches():
    cm = CostModel(GB300, DEEPSEEK_R1_FP4, ParallelLayout(tp_size=8, ep_size=8))
    tokens = 4
    op = _op(cm, 20, "moe_experts", [RequestGroup(tokens, 1, 100, 1)])
    touched = 256 * (1 - (1 - 8 / 256) ** tokens) / 8
    eparams = 3 * 7168 * 2048
    acts = tokens * 8 / 8 * (2 * 7168 + 3 * 2048) * 2
    assert op.bytes == pytest.approx(touched * eparams * (0.5 + 1 / 16) + acts)
    assert op.dtype == "fp4"
    many = _op(cm, 20, "moe_experts", [RequestGroup(4096, 1, 100, 1)])
    assert many.bytes > 32 * eparams * 0.5625      # every local expert is read


def test_expected_experts_touched_closed_form_and_monte_carlo():
    moe = DEEPSEEK_V3.moe
    assert moe.expected_experts_touched(0) == 0
    assert moe.expected_experts_touched(1) == pytest.approx(8)
    assert moe.expected_experts_touched(1e6) == pytest.approx(256)
    rng = np.random.default_rng(0)
    e, k, t, trials = 16, 2, 5, 4000
    hits = [len({x for _ in range(t) for x in rng.choice(e, k, replace=False)})
            for _ in range(trials)]
    small = type(moe)(num_experts=e, top_k=k, intermediate_size=1)
    assert np.mean(hits) == pytest.approx(small.expected_experts_touched(t), rel=0.02)


def test_lm_head_vocab_is_sharded_over_tp_without_attention_dp():
    one = CostModel(H200_SXM, DEEPSEEK_V3, ParallelLayout())._lm_head(16)[0]
    eight = CostModel(H200_SXM, DEEPSEEK_V3, ParallelLayout(tp_size=8, ep_size=8))._lm_head(16)[0]
    adp = CostModel(H200_SXM, DEEPSEEK_V3, ParallelLayout(tp_size=8, ep_size=8, enable_attention_dp=True))._lm_head(16)[0]
    assert eight.flops == pytest.approx(one.flops / 8)
    assert adp.flops == pytest.approx(one.flops)
    assert one.flops == pytest.approx(2 * 16 * 7168 * 129280)


# -- sliding windows and pipeline stages -------------------------------------------------------
@FAST
@given(st.integers(0, 60), st.integers(1, 40), st.integers(0, 50))
def test_attended_pairs_matches_brute_force(prefix, new, window):
    brute = sum(min(prefix + i, window) if window else prefix + i for i in range(1, new + 1))
    assert attended_pairs(prefix, new, window) == pytest.approx(brute)


def test_sliding_window_layers_stop_growing_with_context():
    cm = CostModel(H200_SXM, GPT_OSS_120B, ParallelLayout(tp_size=8, ep_size=8))
    short = [RequestGroup(8, 1, 1000, 1)]
    long = [RequestGroup(8, 1, 100000, 1)]
    assert GPT_OSS_120B.window(0) == 128 and GPT_OSS_120B.window(1) == 0
    assert _op(cm, 0, "attn_core", short).flops == _op(cm, 0, "attn_core", long).flops
    assert _op(cm, 1, "attn_core", long).flops > _op(cm, 1, "attn_core", short).flops


def test_pipeline_latency_adds_stages_and_activation_sends():
    one = CostModel(H200_SXM, QWEN3_235B_A22B, ParallelLayout(tp_size=4, ep_size=4))
    two = CostModel(H200_SXM, QWEN3_235B_A22B, ParallelLayout(tp_size=4, pp_size=2, ep_size=4))
    g = [RequestGroup(16, 1, 2048, 1)]
    send = cc.send_time(2 * 16 * 4096 * 2.0, group_link(H200_SXM, 8))
    assert two.forward_time(g) == pytest.approx(
        two.stage_time(0, g) + two.stage_time(1, g) + send + two.step_overhead_s)
    assert two.stage_time(0, g) < one.forward_time(g)


# -- collectives -------------------------------------------------------------------------------
def test_ring_all_reduce_formula():
    link = Link(rate=360e9, step_s=0.6e-6, base_s=6.6e-6)
    n, b = 8, 7168 * 64 * 2
    assert all_reduce_time(n, b, link) == pytest.approx(
        6.6e-6 + 2 * (n - 1) * 0.6e-6 + 2 * (n - 1) / n * b / 360e9)
    assert all_reduce_time(1, b, link) == 0.0
    assert all_gather_time(n, b, link) == pytest.approx(6.6e-6 + 7 * 0.6e-6 + 7 * b / 360e9)
    assert reduce_scatter_time(n, b, link) == pytest.approx(6.6e-6 + 7 * 0.6e-6 + 7 / 8 * b / 360e9)
    assert all_to_all_time(n, b, link) == pytest.approx(6.6e-6 + 0.6e-6 + b / 360e9)


def test_group_link_is_nvlink_inside_the_domain_and_nic_beyond():
    assert group_link(H200_SXM, 8).rate == pytest.approx(450e9 * 0.8)
    assert group_link(H200_SXM, 16).rate == pytest.approx(50e9 * 0.9)
    assert group_link(GB300, 72).rate == pytest.approx(900e9 * 0.8)


def test_tp_layer_pays_two_all_reduces_without_attention_dp():
    cm = CostModel(H200_SXM, DEEPSEEK_V3, ParallelLayout(tp_size=8, ep_size=8))
    link = group_link(H200_SXM, 8)
    assert cm.layer_comm_time(10, 64) == pytest.approx(
        2 * all_reduce_time(8, 64 * 7168 * 2.0, link))


def test_attention_dp_moe_layers_exchange_tokens_and_dense_layers_do_not():
    cm = CostModel(H200_SXM, DEEPSEEK_V3, ParallelLayout(tp_size=8, ep_size=8, enable_attention_dp=True))
    assert cm.layer_comm_time(0, 64) == 0.0           # dense layer, local under ADP
    remote = cc.expected_remote_ranks(256, 8, 8)
    vol = 64 * remote * 7168 * 2.0
    assert cm.layer_comm_time(10, 64) == pytest.approx(
        2 * all_to_all_time(8, vol, group_link(H200_SXM, 8)))
    assert 0 < remote < 7
    ag = CostModel(H200_SXM, DEEPSEEK_V3, ParallelLayout(tp_size=8, ep_size=8, enable_attention_dp=True), moe_comm="allgather")
    link = group_link(H200_SXM, 8)
    assert ag.layer_comm_time(10, 64) == pytest.approx(
        all_gather_time(8, 64 * 7168 * 2.0, link)
        + reduce_scatter_time(8, 8 * 64 * 7168 * 2.0, link))


def test_expected_remote_ranks_limits():
    assert cc.expected_remote_ranks(256, 8, 1) == 0.0
    assert cc.expected_remote_ranks(8, 1, 8) == pytest.approx(7 / 8)      # one expert, one rank
    assert cc.expected_remote_ranks(8, 8, 8) == pytest.approx(7)          # every rank


# -- KV transfer and host costs ----------------------------------------------------------------
def test_kv_transfer_of_one_mla_request_between_single_gpus():
    cm = CostModel(GB300, DEEPSEEK_R1_FP4, ParallelLayout())
    tokens = 1000
    nbytes = math.ceil(tokens / 32) * 32 * 61 * 576 * 1.0
    assert cm.kv_transfer_time(tokens) == pytest.approx(
        GB300.nic_latency_s + cm.transceiver.prepare_s + nbytes / GB300.nic_rate)
    assert cm.kv_transfer_time(0) == 0.0


def test_kv_transfer_moves_only_live_window_blocks():
    cm = CostModel(H200_SXM, GPT_OSS_120B, ParallelLayout())
    full = CostModel(H200_SXM, GPT_OSS_120B.__class__(**{**GPT_OSS_120B.__dict__,
                                                          "layer_windows": ()}), ParallelLayout())
    assert cm.kv_transfer_time(32768) < 0.6 * full.kv_transfer_time(32768)


def test_kv_bytes_per_token_mla_vs_gqa():
    assert DEEPSEEK_V3.kv_bytes_per_token() == 61 * (512 + 64) * 1.0
    assert QWEN3_235B_A22B.kv_bytes_per_token() == 94 * 2 * 4 * 128 * 1.0
    assert GPT_OSS_120B.kv_bytes_per_token() == 36 * 2 * 8 * 64 * 2.0
    mha_equivalent = 61 * 2 * 128 * 128 * 1.0      # MLA vs caching every head's K and V
    assert DEEPSEEK_V3.kv_bytes_per_token() / mha_equivalent == pytest.approx(576 / 32768)


def test_host_gather_cost_formula():
    p = HostGatherParams(fixed_s=1e-4, per_rank_s=2e-4, per_excess_rank_s=1e-3,
                         per_byte_s=1e-9, cores=2)
    assert host_gather_cost(1, 100, p) == 0.0
    assert host_gather_cost(2, 1000, p) == pytest.approx(1e-4 + 4e-4 + 2e-6)
    assert host_gather_cost(8, 1000, p) == pytest.approx(1e-4 + 16e-4 + 6e-3 + 8e-6)


def test_mtp_draft_and_generation_step():
    cm = CostModel(GB300, V4_PRO, ParallelLayout(tp_size=8, ep_size=8))
    assert cm.mtp_draft_time(4, 8192, 0) == 0.0
    d1, d3 = cm.mtp_draft_time(4, 8192, 1), cm.mtp_draft_time(4, 8192, 3)
    assert 0 < d1 < d3
    assert cm.generation_step_time(4, 8192, 3) == pytest.approx(
        cm.decode_step_time(4, 8192, 3) + d3)
    assert d3 < cm.decode_step_time(4, 8192, 3)     # one layer vs 61


def test_sum_combine_bounds_max_from_above():
    a = CostModel(H200_SXM, DEEPSEEK_V3, ParallelLayout(tp_size=8, ep_size=8))
    b = CostModel(H200_SXM, DEEPSEEK_V3, ParallelLayout(tp_size=8, ep_size=8), combine="sum")
    assert b.decode_step_time(64, 4096, 3) > a.decode_step_time(64, 4096, 3)
    assert b.prefill_time(8192) > a.prefill_time(8192)


def test_capacity_helpers():
    cm = CostModel(GB300, DEEPSEEK_R1_FP4, ParallelLayout(tp_size=8, ep_size=8, enable_attention_dp=True))
    assert 0 < cm.weight_bytes_per_gpu() < GB300.hbm_bytes
    assert cm.kv_bytes_per_token_per_gpu() == 61 * 576 * 1.0


# -- validation --------------------------------------------------------------------------------
@pytest.mark.parametrize("build,needle", [
    (lambda: ParallelLayout(tp_size=4, ep_size=3), "ep_size=3 must divide tp_size=4"),
    (lambda: ParallelLayout(tp_size=0), "tp_size=0"),
    (lambda: CostModel(H200_SXM, DEEPSEEK_V3, moe_comm="ring"), "CostModel.moe_comm='ring'"),
    (lambda: CostModel(H200_SXM, DEEPSEEK_V3, ParallelLayout(tp_size=3)), "num_heads=128"),
    (lambda: CostModel(H200_SXM, DEEPSEEK_V3, ParallelLayout(tp_size=3, ep_size=3, enable_attention_dp=True)),
     "num_experts=256"),
    (lambda: CostModel(H200_SXM, DEEPSEEK_V3, combine="avg"), "CostModel.combine='avg'"),
    (lambda: CostModel(H200_SXM, DEEPSEEK_V3, moe_imbalance=0.5), "moe_imbalance=0.5"),
    (lambda: RequestGroup(-1, 1), "RequestGroup.count=-1"),
    (lambda: RequestGroup(1, 0), "RequestGroup.new_tokens=0"),
    (lambda: Op("x", -1.0, 0.0), "flops=-1.0"),
    (lambda: Op("x", 1.0, 0.0, dtype="int8"), "dtype='int8'"),
    (lambda: all_reduce_time(0, 1, group_link(H200_SXM, 2)), "n_ranks=0"),
    (lambda: host_gather_cost(2, -5), "payload_bytes=-5"),
    (lambda: HostGatherParams(-1.0, 0.0, 0.0, 0.0), "HostGatherParams.fixed_s=-1.0"),
])
def test_validation_errors_name_the_field_and_value(build, needle):
    with pytest.raises(ValueError, match=None) as err:
        build()
    assert needle in str(err.value)


# -- monotonicity ------------------------------------------------------------------------------
_CMS = [CostModel(H200_SXM, DEEPSEEK_V3, ParallelLayout(tp_size=8, ep_size=8)),
        CostModel(GB300, DEEPSEEK_R1_FP4, ParallelLayout(tp_size=8, ep_size=8, enable_attention_dp=True)),
        CostModel(H200_SXM, GPT_OSS_120B, ParallelLayout(tp_size=2, pp_size=2, ep_size=2)),
        CostModel(GB300, QWEN3_235B_A22B, ParallelLayout(tp_size=4, ep_size=4, enable_attention_dp=True), moe_comm="allgather")]
_cm = st.sampled_from(_CMS)


@FAST
@given(_cm, st.integers(1, 256), st.integers(1, 64), st.integers(0, 100000), st.integers(0, 4))
def test_decode_is_monotone_in_batch_and_kv_len(cm, batch, extra, kv, k):
    t = cm.decode_step_time(batch, kv, k)
    assert t > 0
    assert cm.decode_step_time(batch + extra, kv, k) >= t
    assert cm.decode_step_time(batch, kv + 1000 * extra, k) >= t
    assert cm.decode_step_time(batch, kv, k + 1) >= t
    assert cm.mtp_draft_time(batch, kv, k + 1) >= cm.mtp_draft_time(batch, kv, k)


@FAST
@given(_cm, st.integers(1, 32768), st.integers(1, 32768), st.integers(0, 65536))
def test_prefill_and_kv_transfer_are_monotone_in_tokens(cm, tokens, extra, prefix):
    assert cm.prefill_time(tokens + extra, 1, prefix) >= cm.prefill_time(tokens, 1, prefix) > 0
    assert cm.prefill_time(tokens, 1, prefix + extra) >= cm.prefill_time(tokens, 1, prefix)
    # KV moves in whole blocks, so the property holds in whole-block steps: a sliding window's
    # live blocks straddle one block boundary more or fewer as the sequence grows by less.
    whole = extra * cm.tokens_per_block
    assert cm.kv_transfer_time(tokens + whole) >= cm.kv_transfer_time(tokens) > 0


def test_a_window_layer_moves_only_the_blocks_its_window_touches():
    """gpt-oss: every other layer has a 128-token window; blocks of 32 tokens. 193 tokens:
    the window (66..192) touches 5 blocks; 223 tokens: 96..222 touches 4, so fewer bytes move
    for the longer sequence. Full-attention layers move ceil(n / 32) blocks either way."""
    cm = CostModel(H200_SXM, GPT_OSS_120B, ParallelLayout())
    assert cm.kv_transfer_time(223) < cm.kv_transfer_time(193)
    full = CostModel(H200_SXM, replace(GPT_OSS_120B, layer_windows=()), ParallelLayout())
    assert full.kv_transfer_time(223) == full.kv_transfer_time(193)   # both 7 blocks a layer


@FAST
@given(st.integers(1, 64), st.integers(0, 63), st.floats(0, 1e9), st.floats(0, 1e9))
def test_collectives_are_monotone_in_ranks_and_bytes(n, dn, b1, b2):
    lo, hi = sorted((b1, b2))
    link = group_link(H200_SXM, 8)
    for f in (all_reduce_time, all_gather_time, reduce_scatter_time, all_to_all_time):
        assert f(n, hi, link) >= f(n, lo, link) >= 0
    assert all_reduce_time(n + dn, lo, link) >= all_reduce_time(n, lo, link)
    assert all_gather_time(n + dn, lo, link) >= all_gather_time(n, lo, link)
    small = min(lo, 1e6)
    assert host_gather_cost(n + dn, small) >= host_gather_cost(n, small)
    assert host_gather_cost(n, min(hi, 1e6)) >= host_gather_cost(n, small)
