"""Rank programs that drive SGLang's own distributed layer (module level, so gloo ranks import
them: importing this module loads SGLang through the hook in every rank process).

Each program starts SGLang as its worker bootstrap does (``distributed/bootstrap.py``): the
parallel widths stated, ``init_distributed_environment``, ``initialize_model_parallel``,
``initialize_dp_attention``; then it calls the GroupCoordinators and the DP-attention gather.
It does not tear SGLang down: ``destroy_model_parallel`` imports its server bootstrap
(FastAPI, uvicorn), and every launch starts from fresh rank state anyway.
"""

from __future__ import annotations

from types import SimpleNamespace

import torch

from . import frameworks

frameworks.require(frameworks.SGLANG)

from sglang.srt.distributed import parallel_state as ps  # noqa: E402
from sglang.srt.layers import dp_attention  # noqa: E402
from sglang.srt.runtime_context import get_flags, get_parallel  # noqa: E402

HIDDEN = 2


def start_sglang(dist, tp: int, pp: int, attn_dp: int) -> None:
    """This rank's SGLang groups: TP x PP, attention DP inside each TP group."""
    ps.set_custom_all_reduce(False)      # as its bootstrap does for --disable-custom-all-reduce
    # the widths a published ServerArgs would give (publishing one resolves a model's config)
    get_parallel().override_permanently(
        tp_size=tp, pp_size=pp, tp_rank=dist.global_rank % tp, pp_rank=dist.global_rank // tp,
        attn_dp_size=attn_dp, attn_dp_enabled=attn_dp > 1, attn_cp_size=1, attn_dcp_size=1,
        moe_ep_size=1, moe_dp_size=1, shared_experts_tp_size=None)
    ps.init_distributed_environment(backend="gloo", world_size=dist.world_size,
                                    rank=dist.global_rank, local_rank=dist.global_rank,
                                    distributed_init_method="env://")
    ps.initialize_model_parallel()
    # initialize_dp_attention without its elastic-EP joiner check, which reads the published
    # ServerArgs: its flag and its placement
    parallel = get_parallel()
    get_flags().dp.enabled = parallel.attn_dp_enabled
    attn_tp_rank, _, attn_dp_rank, attn_dp_size = dp_attention.compute_dp_attention_world_info(
        parallel.tp_rank, parallel.tp_size, parallel.attn_dp_size, parallel.attn_cp_size)
    parallel.override_permanently(attn_dp_size=attn_dp_size, attn_dp_rank=attn_dp_rank,
                                  attn_tp_rank=attn_tp_rank, attn_cp_rank=0)


def dp_gather(tokens_per_rank: list[int], rank_tokens: torch.Tensor) -> torch.Tensor:
    """SGLang's DP-attention gather before the MLP: every attention-DP rank's rows land in
    its slot of one buffer (``dp_gather_partial``; the batch fields are the ones it reads
    of a ForwardBatch)."""
    batch = SimpleNamespace(global_num_tokens_gpu=torch.tensor(tokens_per_rank),
                            global_num_tokens_cpu=list(tokens_per_rank),
                            dp_local_start_pos=None, dp_local_num_tokens=None,
                            dp_padding_mode=None)
    out = torch.empty((sum(tokens_per_rank), HIDDEN))
    dp_attention.dp_gather_partial(out, rank_tokens, batch)
    return out


def rows(rank: int, n: int) -> torch.Tensor:
    """Rank ``rank``'s ``n`` hidden-state rows: recognisable values, ``rank * 100 + row``
    (floating point: SGLang sums integer rows with a CUDA-only custom op)."""
    return (rank * 100 + torch.arange(n, dtype=torch.float32)).repeat_interleave(HIDDEN).view(
        n, HIDDEN)


def coordinator_loop(dist, schedule: list[list[int]], idle_skips: bool = False,
                     wrong_op_rank: int | None = None) -> list[dict]:
    """SGLang's TP x PP as the launch's, attention DP over each TP group: each step, the DP
    gather (``schedule[step][tp_rank]`` tokens; ``idle_skips``: a rank with none returns
    before it, the SGLang #25404 shape), then the TP group's all_reduce (``wrong_op_rank``
    broadcasts there instead) and all_gather, broadcast_object and broadcast_tensor_dict, the PP
    send/recv_tensor_dict, a barrier."""
    start_sglang(dist, tp=dist.tp_size, pp=dist.pp_size, attn_dp=dist.tp_size)
    tp, pp, world = ps.get_tp_group(), ps.get_pp_group(), ps.get_world_group()
    me = dist.global_rank
    got = []
    for step, tokens in enumerate(schedule):
        dist.set_iteration(step)
        mine = tokens[tp.rank_in_group]
        gathered = None
        if mine or not idle_skips:
            gathered = dp_gather(tokens, rows(tp.rank_in_group, mine)).tolist()
        value = torch.full((3,), float(me + 10 * step))
        summed = tp.broadcast(value) if me == wrong_op_rank else tp.all_reduce(value)
        stacked = tp.all_gather(torch.tensor([float(me), float(step)]))   # all_gather_single
        obj = tp.broadcast_object({"root": me, "step": step} if tp.rank_in_group == 0 else None)
        tensors = tp.broadcast_tensor_dict(
            {"ids": torch.arange(4) + me, "step": step} if tp.rank_in_group == 0 else None)
        received = None
        if not pp.is_last_rank:
            pp.send_tensor_dict({"hidden": torch.full((2, 2), float(me)), "step": step})
        if not pp.is_first_rank:
            received = pp.recv_tensor_dict()
        world.barrier()
        got.append({"gathered": gathered, "sum": summed.tolist(), "stacked": stacked.tolist(),
                    "object": obj,
                    "ids": tensors["ids"].tolist(), "ids_step": tensors["step"],
                    "received": None if received is None else
                    (received["hidden"].tolist(), received["step"])})
    return got
