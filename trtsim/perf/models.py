"""Model shapes and deployed weight formats, from each model's public config.json.

Counts are parameters or elements of the whole (unsharded) model; sharding is the roofline's job.
Bytes per parameter include block scales: NVFP4 = 4 bits + one E4M3 scale per 16 elements
(4.5 bits), MXFP4 = 4 bits + one E8M0 scale per 32 (4.25 bits), DeepSeek's block FP8 = 8 bits +
one fp32 scale per 128x128 block. Sources and dates are in docs/COST_MODEL.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import MappingProxyType

from .hardware import check_dtype, check_positive

NVFP4_BYTES = 0.5 + 1 / 16          # bytes/param: 4-bit values + E4M3 scale per 16
MXFP4_BYTES = 0.5 + 1 / 32          # bytes/param: 4-bit values + E8M0 scale per 32
FP8_BLOCK_BYTES = 1 + 4 / (128 * 128)  # bytes/param: fp8 + fp32 scale per 128x128 block


def _check_int(owner: str, minimum: int, **values: int) -> None:
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ValueError(f"{owner}.{name}={value!r} must be an int >= {minimum}")


@dataclass(frozen=True)
class Precision:
    """How a deployment stores weights and KV and which tensor rate each GEMM family runs at."""

    name: str
    attn_weight_bytes: float    # bytes/param, attention projections
    dense_weight_bytes: float   # bytes/param, dense-layer MLPs and shared experts
    expert_weight_bytes: float  # bytes/param, routed experts
    lm_head_bytes: float        # bytes/param, output projection (and MTP eh_proj)
    kv_bytes: float             # bytes per cached K/V (or latent) element
    act_bytes: float = 2.0      # bytes per activation element moved between GPUs
    attn_compute: str = "bf16"  # tensor dtype of attention-projection GEMMs
    dense_compute: str = "bf16"
    expert_compute: str = "bf16"
    attn_core_compute: str = "bf16"  # tensor dtype of the attention kernel (QK^T, PV)

    def __post_init__(self) -> None:
        owner = f"Precision({self.name!r})"
        check_positive(owner, attn_weight_bytes=self.attn_weight_bytes,
                       dense_weight_bytes=self.dense_weight_bytes,
                       expert_weight_bytes=self.expert_weight_bytes,
                       lm_head_bytes=self.lm_head_bytes, kv_bytes=self.kv_bytes,
                       act_bytes=self.act_bytes)
        check_dtype(owner, attn_compute=self.attn_compute, dense_compute=self.dense_compute,
                    expert_compute=self.expert_compute, attn_core_compute=self.attn_core_compute)


BF16 = Precision("bf16", 2.0, 2.0, 2.0, 2.0, kv_bytes=2.0)
FP8 = Precision("fp8_block", FP8_BLOCK_BYTES, FP8_BLOCK_BYTES, FP8_BLOCK_BYTES, 2.0, kv_bytes=1.0,
                attn_compute="fp8", dense_compute="fp8", expert_compute="fp8")
# nvidia/DeepSeek-R1-FP4: linear layers of the MLP/MoE in NVFP4; attention kept in bf16;
# lm_head bf16; FP8 KV cache as TensorRT-LLM's FP4 perf configurations run it.
DEEPSEEK_NVFP4 = Precision("nvfp4", 2.0, NVFP4_BYTES, NVFP4_BYTES, 2.0, kv_bytes=1.0,
                           dense_compute="fp4", expert_compute="fp4")
# openai/gpt-oss-120b: MoE experts in MXFP4, everything else bf16, bf16 KV.
GPT_OSS_MXFP4 = Precision("mxfp4", 2.0, 2.0, MXFP4_BYTES, 2.0, kv_bytes=2.0,
                          expert_compute="fp4")
# DeepSeek-V4-Pro checkpoint: routed experts FP4 (MXFP4), the rest FP8 block-scaled.
V4_FP4_FP8 = Precision("fp4_fp8", FP8_BLOCK_BYTES, FP8_BLOCK_BYTES, MXFP4_BYTES, 2.0,
                       kv_bytes=1.0, attn_compute="fp8", dense_compute="fp8",
                       expert_compute="fp4")


@dataclass(frozen=True)
class AttentionSpec:
    """Attention geometry. ``kind='mla'``: DeepSeek multi-head latent attention; ``'gqa'``."""

    kind: str
    num_heads: int
    head_dim: int            # GQA: q/k/v head dim; MLA: qk_nope_head_dim
    num_kv_heads: int = 0    # GQA only
    v_head_dim: int = 0      # MLA only
    q_lora_rank: int = 0     # MLA: rank of the q down-projection (0 = full-rank q)
    kv_lora_rank: int = 0    # MLA: latent width cached per token
    rope_head_dim: int = 0   # MLA: decoupled rope width cached per token

    def __post_init__(self) -> None:
        owner = "AttentionSpec"
        if self.kind not in ("mla", "gqa"):
            raise ValueError(f"{owner}.kind={self.kind!r} must be 'mla' or 'gqa'")
        _check_int(owner, 1, num_heads=self.num_heads, head_dim=self.head_dim)
        _check_int(owner, 0, num_kv_heads=self.num_kv_heads, v_head_dim=self.v_head_dim,
                   q_lora_rank=self.q_lora_rank, kv_lora_rank=self.kv_lora_rank,
                   rope_head_dim=self.rope_head_dim)
        if self.kind == "gqa":
            _check_int(owner, 1, num_kv_heads=self.num_kv_heads)
            if self.num_heads % self.num_kv_heads:
                raise ValueError(f"{owner}.num_heads={self.num_heads} is not a multiple of "
                                 f"num_kv_heads={self.num_kv_heads}")
        else:
            _check_int(owner, 1, kv_lora_rank=self.kv_lora_rank, v_head_dim=self.v_head_dim)

    @property
    def kv_elems_per_token(self) -> int:
        """Cached elements per token per layer: K and V of each KV head, or MLA's latent + rope."""
        if self.kind == "mla":
            return self.kv_lora_rank + self.rope_head_dim
        return 2 * self.num_kv_heads * self.head_dim

    def replicated_params(self, hidden: int) -> int:
        """Projection parameters every TP rank holds whole (MLA's down-projections)."""
        if self.kind == "gqa":
            return 0
        q_a = hidden * self.q_lora_rank
        kv_a = hidden * (self.kv_lora_rank + self.rope_head_dim)
        return q_a + kv_a

    def head_params(self, hidden: int) -> int:
        """Projection parameters split by query head under TP (q, MLA's kv_b, o)."""
        if self.kind == "gqa":
            return 2 * hidden * self.num_heads * self.head_dim
        qk = self.head_dim + self.rope_head_dim
        q_in = self.q_lora_rank or hidden
        q_b = q_in * self.num_heads * qk
        kv_b = self.kv_lora_rank * self.num_heads * (self.head_dim + self.v_head_dim)
        o = self.num_heads * self.v_head_dim * hidden
        return q_b + kv_b + o

    def kv_head_params(self, hidden: int) -> int:
        """GQA's k and v projections (split by KV head, replicated when TP > KV heads)."""
        return 2 * hidden * self.num_kv_heads * self.head_dim if self.kind == "gqa" else 0

    def params(self, hidden: int) -> int:
        return self.replicated_params(hidden) + self.head_params(hidden) \
            + self.kv_head_params(hidden)


@dataclass(frozen=True)
class MoESpec:
    """Routed experts (gated: gate, up and down matrices) plus always-on shared experts."""

    num_experts: int
    top_k: int
    intermediate_size: int
    num_shared_experts: int = 0
    shared_intermediate_size: int = 0  # 0 = same as intermediate_size

    def __post_init__(self) -> None:
        _check_int("MoESpec", 1, num_experts=self.num_experts, top_k=self.top_k,
                   intermediate_size=self.intermediate_size)
        _check_int("MoESpec", 0, num_shared_experts=self.num_shared_experts,
                   shared_intermediate_size=self.shared_intermediate_size)
        if self.top_k > self.num_experts:
            raise ValueError(f"MoESpec.top_k={self.top_k} exceeds num_experts={self.num_experts}")

    def expert_params(self, hidden: int) -> int:
        return 3 * hidden * self.intermediate_size

    def shared_params(self, hidden: int) -> int:
        inter = self.shared_intermediate_size or self.intermediate_size
        return 3 * hidden * inter * self.num_shared_experts

    def expected_experts_touched(self, tokens: float) -> float:
        """Expected distinct experts chosen by ``tokens`` tokens under uniform top-k routing.

        A token picks k distinct experts of E, so it misses a given expert with probability
        1 - k/E; ``tokens`` independent tokens all miss it with (1 - k/E)^T.
        """
        if tokens <= 0:
            return 0.0
        return self.num_experts * (1.0 - (1.0 - self.top_k / self.num_experts) ** tokens)


@dataclass(frozen=True)
class ModelSpec:
    """A decoder-only model: ``num_dense_layers`` dense layers, then MoE layers (if ``moe``)."""

    name: str
    hidden_size: int
    num_layers: int
    vocab_size: int
    attention: AttentionSpec
    moe: MoESpec | None = None
    num_dense_layers: int = 0          # leading layers with a dense MLP (first_k_dense_replace)
    dense_intermediate_size: int = 0   # dense MLP width (gated)
    layer_windows: tuple = ()          # per-layer sliding window in tokens, 0 = full; () = all full
    num_mtp_layers: int = 0            # DeepSeek num_nextn_predict_layers
    precision: Precision = field(default=BF16)
    source: str = ""

    def __post_init__(self) -> None:
        owner = f"ModelSpec({self.name!r})"
        _check_int(owner, 1, hidden_size=self.hidden_size, num_layers=self.num_layers,
                   vocab_size=self.vocab_size)
        _check_int(owner, 0, num_dense_layers=self.num_dense_layers,
                   dense_intermediate_size=self.dense_intermediate_size,
                   num_mtp_layers=self.num_mtp_layers)
        if self.num_dense_layers > self.num_layers:
            raise ValueError(f"{owner}.num_dense_layers={self.num_dense_layers} exceeds "
                             f"num_layers={self.num_layers}")
        if self.moe is None and self.num_dense_layers != self.num_layers:
            raise ValueError(f"{owner}.num_dense_layers={self.num_dense_layers} must equal "
                             f"num_layers={self.num_layers} when moe is None")
        if self.num_dense_layers and not self.dense_intermediate_size:
            raise ValueError(f"{owner}.dense_intermediate_size=0 but num_dense_layers="
                             f"{self.num_dense_layers}")
        if not isinstance(self.layer_windows, tuple) or \
                (self.layer_windows and len(self.layer_windows) != self.num_layers):
            raise ValueError(f"{owner}.layer_windows={self.layer_windows!r} must be () or a tuple "
                             f"of num_layers={self.num_layers} ints")
        for w in self.layer_windows:
            if isinstance(w, bool) or not isinstance(w, int) or w < 0:
                raise ValueError(f"{owner}.layer_windows has {w!r}; windows are ints >= 0")
        if not isinstance(self.precision, Precision):
            raise ValueError(f"{owner}.precision={self.precision!r} must be a Precision")

    def window(self, layer: int) -> int:
        """Sliding window of ``layer`` in tokens (0 = full attention)."""
        return self.layer_windows[layer] if self.layer_windows else 0

    def is_moe_layer(self, layer: int) -> bool:
        return self.moe is not None and layer >= self.num_dense_layers

    def kv_bytes_per_token(self) -> float:
        """KV-cache bytes one token occupies across all layers of the unsharded model."""
        return self.num_layers * self.attention.kv_elems_per_token * self.precision.kv_bytes

    def _layer_params(self, layer: int, active: bool) -> float:
        h = self.hidden_size
        n = self.attention.params(h)
        if self.is_moe_layer(layer):
            moe = self.moe
            routed = moe.top_k if active else moe.num_experts
            n += routed * moe.expert_params(h) + moe.shared_params(h) + h * moe.num_experts
        else:
            n += 3 * h * self.dense_intermediate_size
        return n

    def total_params(self) -> float:
        """Parameters of the main model (embedding, layers, lm_head; MTP layers excluded)."""
        layers = sum(self._layer_params(i, False) for i in range(self.num_layers))
        return layers + 2 * self.vocab_size * self.hidden_size

    def active_params(self) -> float:
        """Parameters one token runs through (top-k routed experts; lm_head in, embedding out)."""
        layers = sum(self._layer_params(i, True) for i in range(self.num_layers))
        return layers + self.vocab_size * self.hidden_size

    def with_precision(self, precision: Precision) -> "ModelSpec":
        return replace(self, precision=precision)


_DSV3_MLA = AttentionSpec("mla", num_heads=128, head_dim=128, v_head_dim=128, q_lora_rank=1536,
                          kv_lora_rank=512, rope_head_dim=64)

DEEPSEEK_V3 = ModelSpec(
    name="DeepSeek-V3", hidden_size=7168, num_layers=61, vocab_size=129280, attention=_DSV3_MLA,
    moe=MoESpec(num_experts=256, top_k=8, intermediate_size=2048, num_shared_experts=1),
    num_dense_layers=3, dense_intermediate_size=18432, num_mtp_layers=1, precision=FP8,
    source="huggingface.co/deepseek-ai/DeepSeek-V3 config.json")
# DeepSeek-R1 has V3's architecture; as deployed in TensorRT-LLM's FP4 configurations.
DEEPSEEK_R1_FP4 = replace(DEEPSEEK_V3, name="DeepSeek-R1-FP4", precision=DEEPSEEK_NVFP4,
                          source="huggingface.co/deepseek-ai/DeepSeek-R1 config.json; "
                                 "huggingface.co/nvidia/DeepSeek-R1-FP4")

GPT_OSS_120B = ModelSpec(
    name="gpt-oss-120b", hidden_size=2880, num_layers=36, vocab_size=201088,
    attention=AttentionSpec("gqa", num_heads=64, head_dim=64, num_kv_heads=8),
    moe=MoESpec(num_experts=128, top_k=4, intermediate_size=2880),
    layer_windows=tuple(128 if i % 2 == 0 else 0 for i in range(36)),
    precision=GPT_OSS_MXFP4, source="huggingface.co/openai/gpt-oss-120b config.json")

QWEN3_235B_A22B = ModelSpec(
    name="Qwen3-235B-A22B", hidden_size=4096, num_layers=94, vocab_size=151936,
    attention=AttentionSpec("gqa", num_heads=64, head_dim=128, num_kv_heads=4),
    moe=MoESpec(num_experts=128, top_k=8, intermediate_size=1536),
    precision=FP8, source="huggingface.co/Qwen/Qwen3-235B-A22B config.json")

# Approximation: DeepSeek-V4-Pro's public geometry (61 layers, hidden 7168, 384 routed experts
# top-6 + 1 shared of width 3072, vocab 129,280, one MTP layer, FP4 experts + FP8 rest) with
# DeepSeek-V3's MLA in place of V4's hybrid compressed (CSA/HCA) attention, and every layer MoE.
V4_PRO = ModelSpec(
    name="V4-Pro", hidden_size=7168, num_layers=61, vocab_size=129280, attention=_DSV3_MLA,
    moe=MoESpec(num_experts=384, top_k=6, intermediate_size=3072, num_shared_experts=1),
    num_mtp_layers=1, precision=V4_FP4_FP8,
    source="DeepSeek-V4-Pro config.json as quoted publicly; attention approximated by V3's MLA")

MODELS = MappingProxyType({m.name: m for m in (DEEPSEEK_V3, DEEPSEEK_R1_FP4, GPT_OSS_120B,
                                              QWEN3_235B_A22B, V4_PRO)})


def get_model(name: str) -> ModelSpec:
    """The catalogue entry called ``name`` (case-insensitive); ValueError lists the names."""
    for key, model in MODELS.items():
        if key.lower() == str(name).lower():
            return model
    raise ValueError(f"model={name!r} unknown; known: {', '.join(MODELS)}")
