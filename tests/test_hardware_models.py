"""Catalogue checks: hardware figures and model shapes against their published totals."""

from __future__ import annotations

import pytest

from trtsim.perf import (B200, DEEPSEEK_V3, GB200, GB300, GPT_OSS_120B, H100_SXM, H200_SXM,
                         HARDWARE, MODELS, QWEN3_235B_A22B, V4_PRO, AttentionSpec, Hardware,
                         ModelSpec, MoESpec, Precision, get_hardware, get_model)
from trtsim.perf.models import MXFP4_BYTES, NVFP4_BYTES


def test_catalogue_names_and_lookup():
    assert set(HARDWARE) == {"H100_SXM", "H200_SXM", "B200", "GB200", "GB300"}
    assert get_hardware("gb300") is GB300
    with pytest.raises(ValueError) as err:
        get_hardware("A100")
    assert "hardware='A100'" in str(err.value) and "GB300" in str(err.value)
    assert get_model("deepseek-v3") is DEEPSEEK_V3
    with pytest.raises(ValueError, match="model='llama'"):
        get_model("llama")
    with pytest.raises(TypeError):
        HARDWARE["x"] = H100_SXM           # read-only mapping


def test_dense_rates_links_and_domains():
    assert H100_SXM.bf16_flops == H200_SXM.bf16_flops == pytest.approx(989.5e12)
    assert H200_SXM.hbm_bw == 4.8e12 and H100_SXM.hbm_bw == 3.35e12
    assert H100_SXM.nvlink_bw_bidir == pytest.approx(900e9)
    assert GB300.nvlink_bw_bidir == pytest.approx(1.8e12)
    assert (H200_SXM.nvlink_domain, B200.nvlink_domain, GB200.nvlink_domain) == (8, 8, 72)
    assert GB300.nic_bw == pytest.approx(100e9) and GB200.nic_bw == pytest.approx(50e9)
    assert GB300.fp4_flops == 1.5 * GB200.fp4_flops
    for hw in HARDWARE.values():
        assert hw.fp8_flops == pytest.approx(2 * hw.bf16_flops)


def test_measured_h200_fractions():
    assert H200_SXM.flops("bf16") == pytest.approx(791.5e12, rel=0.01)   # 786 measured
    assert H200_SXM.hbm_rate == pytest.approx(3.84e12)                   # 3.72-3.82 measured
    assert H200_SXM.ridge_intensity == pytest.approx(206, rel=0.01)


def test_fp4_without_tensor_cores_runs_at_fp8():
    assert H200_SXM.peak_flops("fp4") == H200_SXM.fp8_flops
    assert H200_SXM.flops("fp4") == H200_SXM.flops("fp8")
    assert GB300.flops("fp4") == pytest.approx(15e15 * 0.72)


def test_hardware_validation_names_field_and_value():
    base = dict(name="X", bf16_flops=1e15, fp8_flops=2e15, fp4_flops=0.0, hbm_bytes=1e11,
                hbm_bw=1e12, nvlink_bw=1e11, nvlink_latency_s=1e-6, nvlink_domain=8,
                nic_bw=5e10, nic_latency_s=1e-6, collective_base_s=1e-6, kernel_floor_s=1e-6)
    Hardware(**base)
    for field, bad, needle in [("hbm_bw", -1.0, "hbm_bw=-1.0"), ("hbm_eff", 1.5, "hbm_eff=1.5"),
                               ("nvlink_domain", 0, "nvlink_domain=0"),
                               ("fp4_flops", -2.0, "fp4_flops=-2.0"), ("name", "", "name=''")]:
        with pytest.raises(ValueError) as err:
            Hardware(**{**base, field: bad})
        assert needle in str(err.value)
    with pytest.raises(ValueError, match="dtype='fp16'"):
        H200_SXM.flops("fp16")


@pytest.mark.parametrize("model,total,active,tol", [
    (DEEPSEEK_V3, 671e9, 36.6e9, 0.01),     # model card: 671B, 36.6B activated with lm_head
    (GPT_OSS_120B, 116.8e9, 5.13e9, 0.01),  # model card: 116.8B total, 5.13B active
    (QWEN3_235B_A22B, 235e9, 22e9, 0.03),   # 235B total, 22B activated
])
def test_parameter_totals_match_the_model_cards(model, total, active, tol):
    assert model.total_params() == pytest.approx(total, rel=tol)
    assert model.active_params() == pytest.approx(active, rel=tol)


def test_v4_pro_approximation_is_the_right_size():
    assert V4_PRO.total_params() == pytest.approx(1.6e12, rel=0.05)
    assert V4_PRO.active_params() < 49e9           # V4's own attention is larger than V3's MLA
    assert V4_PRO.moe.num_experts == 384 and V4_PRO.moe.top_k == 6


def test_model_shapes_from_config():
    assert DEEPSEEK_V3.num_dense_layers == 3 and DEEPSEEK_V3.num_mtp_layers == 1
    assert DEEPSEEK_V3.attention.kv_elems_per_token == 576
    assert [GPT_OSS_120B.window(i) for i in range(4)] == [128, 0, 128, 0]
    assert QWEN3_235B_A22B.attention.kv_elems_per_token == 2 * 4 * 128
    assert not QWEN3_235B_A22B.moe.num_shared_experts


def test_block_scaled_formats():
    assert NVFP4_BYTES == pytest.approx(4.5 / 8)
    assert MXFP4_BYTES == pytest.approx(4.25 / 8)


def test_model_validation_names_field_and_value():
    att = AttentionSpec("gqa", num_heads=8, head_dim=64, num_kv_heads=2)
    with pytest.raises(ValueError, match="AttentionSpec.kind='mha'"):
        AttentionSpec("mha", 8, 64)
    with pytest.raises(ValueError, match="num_heads=6 is not a multiple of num_kv_heads=4"):
        AttentionSpec("gqa", num_heads=6, head_dim=64, num_kv_heads=4)
    with pytest.raises(ValueError, match="MoESpec.top_k=9 exceeds num_experts=8"):
        MoESpec(num_experts=8, top_k=9, intermediate_size=16)
    with pytest.raises(ValueError, match="layer_windows"):
        ModelSpec("m", 64, 2, 100, att, MoESpec(4, 2, 16), layer_windows=(0,))
    with pytest.raises(ValueError, match="num_dense_layers=1 must equal num_layers=2"):
        ModelSpec("m", 64, 2, 100, att, None, num_dense_layers=1, dense_intermediate_size=8)
    with pytest.raises(ValueError, match="kv_bytes=0"):
        Precision("p", 1.0, 1.0, 1.0, 1.0, kv_bytes=0)
    with pytest.raises(ValueError, match="expert_compute='int4'"):
        Precision("p", 1.0, 1.0, 1.0, 1.0, kv_bytes=1.0, expert_compute="int4")


def test_catalogue_is_immutable():
    with pytest.raises(Exception):
        DEEPSEEK_V3.hidden_size = 1
    assert set(MODELS) >= {"DeepSeek-V3", "gpt-oss-120b", "Qwen3-235B-A22B", "V4-Pro"}
