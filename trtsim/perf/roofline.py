"""Per-layer roofline of one GPU and the ``CostModel`` a virtual-time simulator calls.

Each kernel family of a layer is an ``Op`` with the FLOPs and HBM bytes it costs *one GPU*
under the parallel layout. Its time is

    max(flops / achievable_flops(dtype), bytes / achievable_hbm_bw, kernels * kernel_floor)

(``combine='max'``: the roofline, compute and memory overlap inside a kernel), or with the
first two *added* (``combine='sum'``: a stricter upper bound). Ops of a layer run one after
another; the layer's collectives (comm_cost) add on the critical path (no compute/comm overlap).

The layout is trtsim's one layout type (``ParallelLayout``, TensorRT-LLM's Mapping factors):
per pipeline stage ``tp_size`` GPUs. Without
attention DP, attention heads, the dense MLP, shared experts and the vocabulary are split over
``tp`` and every rank sees all tokens (two all-reduces per layer). With attention DP each rank
runs attention, dense MLPs, shared experts and lm_head whole on its own requests; MoE layers
exchange tokens (all-to-all, or all-gather + reduce-scatter). Routed experts are split over
``ep`` ranks and each expert's width over ``tp // ep``. Units: tokens, bytes, FLOPs, seconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..layout.parallel import ParallelLayout, pp_layer_split
from . import comm_cost as cc
from .hardware import Hardware, check_dtype
from .models import ModelSpec, Precision

ACT = 2.0  # bytes per activation element in HBM (bf16)


@dataclass(frozen=True)
class Op:
    """One kernel family on one GPU: FLOPs, HBM bytes, tensor dtype, kernels it launches."""

    name: str
    flops: float          # FLOPs on one GPU
    bytes: float          # HBM bytes read + written on one GPU
    dtype: str = "bf16"   # tensor rate the FLOPs run at
    kernels: int = 1      # kernels launched (each costs at least hardware.kernel_floor_s)

    def __post_init__(self) -> None:
        check_dtype(f"Op({self.name!r})", dtype=self.dtype)
        for n in ("flops", "bytes"):
            v = getattr(self, n)
            if not 0 <= v < math.inf:
                raise ValueError(f"Op({self.name!r}).{n}={v!r} must be a finite number >= 0")

    def compute_time(self, hw: Hardware) -> float:
        return self.flops / hw.flops(self.dtype)

    def memory_time(self, hw: Hardware) -> float:
        return self.bytes / hw.hbm_rate

    def time(self, hw: Hardware, combine: str = "max") -> float:
        c, m = self.compute_time(hw), self.memory_time(hw)
        body = max(c, m) if combine == "max" else c + m
        return max(body, self.kernels * hw.kernel_floor_s)

    def bound(self, hw: Hardware) -> str:
        """'compute', 'memory' or 'launch': which term sets the op's time."""
        c, m, k = self.compute_time(hw), self.memory_time(hw), self.kernels * hw.kernel_floor_s
        return "launch" if k >= max(c, m) else ("compute" if c >= m else "memory")


@dataclass(frozen=True)
class RequestGroup:
    """``count`` alike requests of one attention-DP rank in one forward step."""

    count: int
    new_tokens: float        # tokens each request runs through the model now
    prefix: float = 0.0      # tokens each request already holds in the KV cache
    logits: int = 1          # logits rows each request needs (1, or K+1 for MTP verify)
    context: bool = False    # context phase (MLA unabsorbed); else generation (absorbed)

    def __post_init__(self) -> None:
        if isinstance(self.count, bool) or not isinstance(self.count, int) or self.count < 0:
            raise ValueError(f"RequestGroup.count={self.count!r} must be an int >= 0")
        if not 0 < self.new_tokens < math.inf:
            raise ValueError(f"RequestGroup.new_tokens={self.new_tokens!r} must be > 0")
        if not 0 <= self.prefix < math.inf:
            raise ValueError(f"RequestGroup.prefix={self.prefix!r} must be >= 0")
        if isinstance(self.logits, bool) or not isinstance(self.logits, int) or self.logits < 0:
            raise ValueError(f"RequestGroup.logits={self.logits!r} must be an int >= 0")


def attended_pairs(prefix: float, new: float, window: int) -> float:
    """Query-key pairs of ``new`` causal queries after ``prefix`` cached tokens (window 0 = all)."""
    if window <= 0:
        return new * prefix + new * (new + 1) / 2
    m = min(max(window - prefix, 0.0), new)          # queries that still see every key
    return m * prefix + m * (m + 1) / 2 + (new - m) * window


@dataclass(frozen=True)
class CostModel:
    """Seconds for prefill, decode, MTP draft and KV transfer of one instance. Pure."""

    hardware: Hardware
    model: ModelSpec
    layout: ParallelLayout = field(default_factory=ParallelLayout)
    precision: Precision | None = None       # None: the model's deployed precision
    combine: str = "max"                     # 'max' (roofline) | 'sum' (stricter bound)
    step_overhead_s: float = 20e-6           # s per forward step: graph launch + host sync
    moe_imbalance: float = 1.0               # busiest EP rank's load / mean load (>= 1)
    transceiver: cc.TransceiverOverhead = cc.CPP_TRANSCEIVER
    tokens_per_block: int = 32               # KV-cache block size (tokens), for KV transfer
    kv_link: str = "nic"                     # KV transfer path: 'nic' | 'nvlink'
    moe_comm: str = "alltoall"   # MoE exchange under attention DP: 'alltoall' | 'allgather'

    def __post_init__(self) -> None:
        m, lay, att = self.model, self.layout, self.model.attention
        if self.combine not in ("max", "sum"):
            raise ValueError(f"CostModel.combine={self.combine!r} must be 'max' or 'sum'")
        if self.kv_link not in ("nic", "nvlink"):
            raise ValueError(f"CostModel.kv_link={self.kv_link!r} must be 'nic' or 'nvlink'")
        if self.moe_comm not in ("alltoall", "allgather"):
            raise ValueError(f"CostModel.moe_comm={self.moe_comm!r} must be 'alltoall' or "
                             "'allgather'")
        if not 0 <= self.step_overhead_s < 1:
            raise ValueError(f"CostModel.step_overhead_s={self.step_overhead_s!r} "
                             "must be in [0, 1)")
        if not 1 <= self.moe_imbalance < math.inf:
            raise ValueError(f"CostModel.moe_imbalance={self.moe_imbalance!r} must be >= 1")
        if isinstance(self.tokens_per_block, bool) or not isinstance(self.tokens_per_block, int) \
                or self.tokens_per_block < 1:
            raise ValueError(f"CostModel.tokens_per_block={self.tokens_per_block!r} must be >= 1")
        if att.num_heads % lay.attn_tp_size:
            raise ValueError(f"layout tp_size={lay.tp_size} does not divide num_heads={att.num_heads} "
                             f"of {m.name} (use attention_dp)")
        if m.moe is not None and m.moe.num_experts % lay.ep_size:
            raise ValueError(f"layout ep_size={lay.ep_size} does not divide num_experts="
                             f"{m.moe.num_experts} of {m.name}")
        if lay.pp_size > m.num_layers:
            raise ValueError(f"layout pp_size={lay.pp_size} exceeds num_layers={m.num_layers} of {m.name}")

    # -- shapes on one GPU -------------------------------------------------------------------
    @property
    def prec(self) -> Precision:
        return self.precision or self.model.precision

    def _kv_heads_per_rank(self) -> int:
        att = self.model.attention
        return math.ceil(att.num_kv_heads / self.layout.attn_tp_size) if att.kind == "gqa" else 0

    def _kv_elems_per_rank(self) -> float:
        """Cached elements per token per layer on one GPU (MLA's latent is replicated)."""
        att = self.model.attention
        if att.kind == "mla":
            return att.kv_elems_per_token
        return 2 * att.head_dim * self._kv_heads_per_rank()

    def _attn_params_per_rank(self) -> float:
        att, h, t = self.model.attention, self.model.hidden_size, self.layout.attn_tp_size
        kv = att.kv_head_params(h) / att.num_kv_heads * self._kv_heads_per_rank() \
            if att.kind == "gqa" else 0.0
        return att.replicated_params(h) + att.head_params(h) / t + kv

    # -- ops of one layer --------------------------------------------------------------------
    def _attention_ops(self, groups: list[RequestGroup], window: int) -> list[Op]:
        att, h, p = self.model.attention, self.model.hidden_size, self.prec
        heads = att.num_heads / self.layout.attn_tp_size
        tokens = sum(g.count * g.new_tokens for g in groups)
        params = self._attn_params_per_rank()
        kv_elems = self._kv_elems_per_rank()
        ops = [Op("attn_proj", 2 * tokens * params, params * p.attn_weight_bytes
                  + 2 * tokens * h * ACT, p.attn_compute, 8 if att.kind == "mla" else 4)]
        flops = byts = 0.0
        for g in groups:
            pairs = g.count * attended_pairs(g.prefix, g.new_tokens, window)
            seen = min(g.prefix, window) if window > 0 else g.prefix   # cached keys in reach
            if att.kind == "gqa":
                flops += 2 * pairs * heads * 2 * att.head_dim
                act = g.new_tokens * heads * 2 * att.head_dim * ACT
            elif g.context:        # unabsorbed: per-head K/V, prefix latent up-projected
                qk, dv = att.head_dim + att.rope_head_dim, att.v_head_dim
                flops += 2 * pairs * heads * (qk + dv)
                kv_b = att.kv_lora_rank * heads * (att.head_dim + dv)
                flops += g.count * 2 * seen * kv_b
                act = (g.new_tokens + seen) * heads * (qk + dv) * ACT
            else:                  # absorbed: attention over the shared latent
                lat = att.kv_lora_rank + att.rope_head_dim
                flops += 2 * pairs * heads * (lat + att.kv_lora_rank)
                act = g.new_tokens * heads * 2 * att.kv_lora_rank * ACT
            byts += g.count * ((seen + g.new_tokens) * kv_elems * p.kv_bytes + act)
        ops.append(Op("attn_core", flops, byts, p.attn_core_compute, 2))
        return ops

    def _mlp_op(self, name: str, params_total: float, tokens: float, split: int) -> Op:
        p = self.prec
        params = params_total / split
        inter = params / (3 * self.model.hidden_size)
        return Op(name, 2 * tokens * params, params * p.dense_weight_bytes
                  + tokens * (2 * self.model.hidden_size + 3 * inter) * ACT, p.dense_compute, 3)

    def _moe_ops(self, tokens: float) -> list[Op]:
        moe, h, lay, p = self.model.moe, self.model.hidden_size, self.layout, self.prec
        t_all = tokens * lay.dp_size                                 # tokens entering the MoE
        assign = t_all * moe.top_k / lay.ep_size * self.moe_imbalance  # (token, expert) on this rank
        eparams = moe.expert_params(h) / lay.moe_tp_size
        touched = moe.expected_experts_touched(t_all) / lay.ep_size
        inter = moe.intermediate_size / lay.moe_tp_size
        ops = [Op("moe_gate", 2 * tokens * h * moe.num_experts,
                  h * moe.num_experts * ACT + tokens * moe.num_experts * 4, "bf16", 2),
               Op("moe_experts", 2 * assign * eparams, touched * eparams * p.expert_weight_bytes
                  + assign * (2 * h + 3 * inter) * ACT, p.expert_compute, 5)]
        if moe.num_shared_experts:
            ops.append(self._mlp_op("shared_expert", moe.shared_params(h), tokens, lay.attn_tp_size))
        return ops

    def layer_ops(self, layer: int, groups: list[RequestGroup]) -> list[Op]:
        """Compute ops of decoder layer ``layer`` on one GPU for this step's requests."""
        m = self.model
        tokens = sum(g.count * g.new_tokens for g in groups)
        ops = self._attention_ops(groups, m.window(layer))
        if m.is_moe_layer(layer):
            ops += self._moe_ops(tokens)
        else:
            params = 3 * m.hidden_size * m.dense_intermediate_size
            ops.append(self._mlp_op("dense_mlp", params, tokens, self.layout.attn_tp_size))
        return ops

    def layer_comm_time(self, layer: int, tokens: float) -> float:
        """Collectives of one layer on the critical path (s), ``tokens`` per DP rank."""
        lay, hw, h, a = self.layout, self.hardware, self.model.hidden_size, self.prec.act_bytes
        if not lay.enable_attention_dp:
            link = cc.group_link(hw, lay.tp_size)
            return 2 * cc.all_reduce_time(lay.tp_size, tokens * h * a, link)
        if not self.model.is_moe_layer(layer):
            return 0.0
        moe = self.model.moe
        if self.moe_comm == "alltoall" and lay.ep_size > 1:
            return cc.moe_dispatch_combine_time(tokens, h, a, moe.num_experts, moe.top_k, lay.ep_size,
                                                cc.group_link(hw, lay.ep_size))
        link = cc.group_link(hw, lay.tp_size)
        return cc.all_gather_time(lay.tp_size, tokens * h * a, link) \
            + cc.reduce_scatter_time(lay.tp_size, tokens * lay.dp_size * h * a, link)

    def layer_time(self, layer: int, groups: list[RequestGroup]) -> float:
        tokens = sum(g.count * g.new_tokens for g in groups)
        ops = sum(op.time(self.hardware, self.combine) for op in self.layer_ops(layer, groups))
        return ops + self.layer_comm_time(layer, tokens)

    # -- head and tail -----------------------------------------------------------------------
    def _lm_head(self, rows: float, full_gather: bool = True) -> tuple[Op, float]:
        """lm_head op and its gather (s): full logits, or the draft's local argmax pairs."""
        lay, m, p = self.layout, self.model, self.prec
        vocab = m.vocab_size / lay.attn_tp_size
        op = Op("lm_head", 2 * rows * m.hidden_size * vocab,
                m.hidden_size * vocab * p.lm_head_bytes + rows * vocab * 4, "bf16", 2)
        link = cc.group_link(self.hardware, lay.attn_tp_size)
        per_rank = rows * vocab * p.act_bytes if full_gather else rows * 8
        return op, cc.all_gather_time(lay.attn_tp_size, per_rank, link)

    def stage_time(self, stage: int, groups: list[RequestGroup]) -> float:
        """One PP stage's forward time (s) for one micro-batch of ``groups``."""
        hw, m = self.hardware, self.model
        tokens = sum(g.count * g.new_tokens for g in groups)
        t = sum(self.layer_time(i, groups) for i in pp_layer_split(m.num_layers,
                                                                         self.layout.pp_size)[stage])
        if stage == 0:
            t += Op("embedding", 0.0, 2 * tokens * m.hidden_size * ACT).time(hw, self.combine)
        if stage == self.layout.pp_size - 1:
            rows = sum(g.count * g.logits for g in groups)
            if rows:   # lm_head, logits gather, then sampling reads the full logits once
                op, gather = self._lm_head(rows)
                sample = Op("sampling", 0.0, rows * m.vocab_size * ACT, "bf16", 2)
                t += op.time(hw, self.combine) + gather + sample.time(hw, self.combine)
        return t

    def forward_time(self, groups: list[RequestGroup]) -> float:
        """Latency of one forward step through every stage (s), step overhead included."""
        groups = [g for g in groups if g.count > 0]
        if not groups:
            return 0.0
        lay = self.layout
        tokens = sum(g.count * g.new_tokens for g in groups)
        t = sum(self.stage_time(s, groups) for s in range(lay.pp_size))
        if lay.pp_size > 1:   # hidden states + residual to the next stage
            link = cc.group_link(self.hardware, lay.world_size)
            t += (lay.pp_size - 1) * cc.send_time(2 * tokens * self.model.hidden_size
                                             * self.prec.act_bytes, link)
        return t + self.step_overhead_s

    # -- the simulator's calls ---------------------------------------------------------------
    def prefill_time(self, num_tokens: float, num_requests: int = 1,
                     prefix_tokens: float = 0.0) -> float:
        """Context step (s): ``num_tokens`` new tokens over ``num_requests`` alike requests of
        one DP rank, each after ``prefix_tokens`` cached tokens (chunked prefill)."""
        if num_tokens <= 0:
            return 0.0
        return self.forward_time([RequestGroup(num_requests, num_tokens / num_requests,
                                               prefix_tokens, 1, context=True)])

    def decode_step_time(self, batch: int, kv_len: float, num_draft_tokens: int = 0) -> float:
        """Target-model generation step (s): ``batch`` requests per DP rank, each with ``kv_len``
        cached tokens, verifying ``num_draft_tokens`` drafts (K+1 tokens each)."""
        k = num_draft_tokens
        return self.forward_time([RequestGroup(batch, 1 + k, kv_len, 1 + k)])

    def mixed_step_time(self, ctx_tokens: float, ctx_requests: int, batch: int, kv_len: float,
                        num_draft_tokens: int = 0) -> float:
        """One step holding context chunks and generation requests together (s)."""
        k = num_draft_tokens
        groups = [RequestGroup(batch, 1 + k, kv_len, 1 + k)]
        if ctx_tokens > 0 and ctx_requests > 0:
            groups.append(RequestGroup(ctx_requests, ctx_tokens / ctx_requests, 0.0, 1, True))
        return self.forward_time(groups)

    def mtp_draft_time(self, batch: int, kv_len: float, num_draft_tokens: int) -> float:
        """K sequential draft steps of the (single) MTP layer (s); the first re-runs the K+1
        verified positions. Each step: eh_proj, one decoder layer, lm_head + argmax gather."""
        k = num_draft_tokens
        if k <= 0 or batch <= 0:
            return 0.0
        m, hw, h = self.model, self.hardware, self.model.hidden_size
        layer = m.num_layers - 1 if m.moe is not None else 0   # an MoE layer when there are any
        t = 0.0
        for j in range(k):
            per_req = (1 + k) if j == 0 else 1
            g = [RequestGroup(batch, per_req, kv_len + j, 1)]
            tokens = batch * per_req
            t += Op("mtp_eh_proj", 2 * tokens * 2 * h * h, 2 * h * h * self.prec.lm_head_bytes
                    + 3 * tokens * h * ACT).time(hw, self.combine)
            t += self.layer_time(layer, g)
            op, gather = self._lm_head(batch, full_gather=False)
            argmax = Op("draft_argmax", 0.0, batch * m.vocab_size / self.layout.attn_tp_size * ACT)
            t += op.time(hw, self.combine) + gather + argmax.time(hw, self.combine)
        return t

    def generation_step_time(self, batch: int, kv_len: float, num_draft_tokens: int = 0) -> float:
        """Verify step plus the next drafts (s): one generation iteration with one-model MTP."""
        return self.decode_step_time(batch, kv_len, num_draft_tokens) \
            + self.mtp_draft_time(batch, kv_len, num_draft_tokens)

    def kv_transfer_time(self, num_tokens: float, gen_layout: ParallelLayout | None = None,
                         num_requests: int = 1) -> float:
        """Move ``num_requests`` requests of ``num_tokens`` tokens of KV cache from this
        (context) layout to ``gen_layout`` (s): the busiest sender or receiver sets the pace."""
        if num_tokens <= 0 or num_requests <= 0:
            return 0.0
        gen = gen_layout or self.layout
        m, att, b = self.model, self.model.attention, self.tokens_per_block
        per_tok = att.kv_elems_per_token * self.prec.kv_bytes
        total = 0.0
        for layer in range(m.num_layers):      # whole blocks; stale window blocks stay behind
            blocks = math.ceil(num_tokens / b)
            w = m.window(layer)
            if w > 0:
                blocks -= max(0, int((num_tokens + 1 - w) // b))
            total += blocks * b * per_tok

        def head_groups(lay: ParallelLayout) -> int:   # distinct KV slices one stage holds
            if att.kind == "mla" or lay.enable_attention_dp:
                return 1
            return att.num_kv_heads // math.ceil(att.num_kv_heads / lay.tp_size)

        def need_ranks(lay: ParallelLayout) -> int:    # ranks of one stage that need this request's KV
            return 1 if lay.enable_attention_dp else lay.tp_size

        recv = total / gen.pp_size / head_groups(gen)          # what one gen rank needs
        delivered = recv * gen.pp_size * need_ranks(gen)         # summed over the gen ranks
        send = delivered / (self.layout.pp_size * need_ranks(self.layout))  # ctx holders share it
        hw = self.hardware
        rate, lat = (hw.nic_rate, hw.nic_latency_s) if self.kv_link == "nic" \
            else (hw.nvlink_rate, hw.nvlink_latency_s)
        return cc.kv_transfer_time(num_requests * max(recv, send), num_requests, rate, lat,
                                   self.transceiver.prepare_s)

    def transceiver_poll_time(self, open_requests: int) -> float:
        """Host time per executor iteration polling ``open_requests`` transfers (s)."""
        return max(0, open_requests) * self.transceiver.poll_s

    # -- capacity ----------------------------------------------------------------------------
    def weight_bytes_per_gpu(self) -> float:
        """Weight bytes on the most loaded GPU (the last stage holds lm_head and MTP layers)."""
        m, lay, p, h = self.model, self.layout, self.prec, self.model.hidden_size

        def layer_bytes(i: int) -> float:
            b = self._attn_params_per_rank() * p.attn_weight_bytes
            if m.is_moe_layer(i):
                moe = m.moe
                b += moe.num_experts / lay.ep_size * moe.expert_params(h) / lay.moe_tp_size \
                    * p.expert_weight_bytes
                b += moe.shared_params(h) / lay.attn_tp_size * p.dense_weight_bytes
                b += h * moe.num_experts * ACT
            else:
                b += 3 * h * m.dense_intermediate_size / lay.attn_tp_size * p.dense_weight_bytes
            return b

        ranges = pp_layer_split(m.num_layers, lay.pp_size)
        head = m.vocab_size / lay.attn_tp_size * h
        per_stage = [sum(layer_bytes(i) for i in r) for r in ranges]
        per_stage[0] += head * ACT
        per_stage[-1] += head * p.lm_head_bytes + m.num_mtp_layers * (
            layer_bytes(m.num_layers - 1) + 2 * h * h * p.lm_head_bytes)
        return max(per_stage)

    def kv_bytes_per_token_per_gpu(self) -> float:
        """KV-cache bytes one token occupies on the most loaded GPU."""
        layers = max(len(r) for r in pp_layer_split(self.model.num_layers, self.layout.pp_size))
        return layers * self._kv_elems_per_rank() * self.prec.kv_bytes

    def breakdown(self, groups: list[RequestGroup]) -> dict:
        """Seconds per op name and for 'comm' over all layers of all stages (no overhead)."""
        out: dict = {}
        tokens = sum(g.count * g.new_tokens for g in groups)
        for i in range(self.model.num_layers):
            for op in self.layer_ops(i, groups):
                out[op.name] = out.get(op.name, 0.0) + op.time(self.hardware, self.combine)
            out["comm"] = out.get("comm", 0.0) + self.layer_comm_time(i, tokens)
        return out
