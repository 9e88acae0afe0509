"""Rank programs that drive vLLM's own distributed layer (module level, so gloo ranks import
them: importing this module loads vLLM through the hook in every rank process).

Each program sets up vLLM as a worker does, ``init_distributed_environment`` then
``initialize_model_parallel``, inside ``set_current_vllm_config``, and then calls its
GroupCoordinators; ``dist`` (trtsim's) only says which rank this is and marks the steps.
No program tears vLLM down (``destroy_model_parallel``): every launch starts from fresh rank
state anyway (a process per rank, or ``rank_local``).
"""

from __future__ import annotations

import torch

from . import frameworks

frameworks.require(frameworks.VLLM)

from vllm.config import (ModelConfig, ParallelConfig, VllmConfig,  # noqa: E402
                         set_current_vllm_config)
from vllm.distributed import parallel_state as ps  # noqa: E402
from vllm.v1.worker import dp_utils  # noqa: E402


def start_vllm(dist, tp: int, pp: int, dp: int = 1) -> ParallelConfig:
    """vLLM's worker start-up on this rank: the world group, then its TP/PP/DP groups."""
    # external_launcher: the world is given whole (torchrun's way), DP ranks included
    config = ParallelConfig(tensor_parallel_size=tp, pipeline_parallel_size=pp,
                            data_parallel_size=dp,
                            data_parallel_rank=dist.global_rank // (tp * pp),
                            distributed_executor_backend="external_launcher")
    dense = ModelConfig(architecture="LlamaForCausalLM", is_moe=False)  # no EP group
    with set_current_vllm_config(VllmConfig(parallel_config=config, model_config=dense)):
        ps.init_distributed_environment(world_size=dist.world_size, rank=dist.global_rank,
                                        distributed_init_method="env://",
                                        local_rank=dist.global_rank, backend="gloo")
        ps.initialize_model_parallel(tensor_model_parallel_size=tp,
                                     pipeline_model_parallel_size=pp)
    return config


def coordinator_loop(dist, steps: int, wrong_op_rank: int | None = None) -> list[dict]:
    """vLLM's TP x PP as the launch's: each step, every kind of GroupCoordinator call once
    (``wrong_op_rank`` all-gathers where its TP peer all-reduces); returns what this rank
    got, for the test to check against what its peers sent."""
    start_vllm(dist, tp=dist.tp_size, pp=dist.pp_size)
    tp, pp, world = ps.get_tp_group(), ps.get_pp_group(), ps.get_world_group()
    me = dist.global_rank
    got = []
    for step in range(steps):
        dist.set_iteration(step)
        value = torch.full((3,), float(me + 10 * step))
        summed = tp.all_gather(value) if me == wrong_op_rank else tp.all_reduce(value)
        gathered = tp.all_gather(torch.tensor([[me, step]]), dim=0)
        obj = tp.broadcast_object({"root": me, "step": step} if tp.rank_in_group == 0 else None)
        tensors = tp.broadcast_tensor_dict(
            {"ids": torch.arange(4) + me, "step": step} if tp.rank_in_group == 0 else None)
        received = None
        if not pp.is_last_rank:
            pp.send_tensor_dict({"hidden": torch.full((2, 2), float(me)), "step": step})
        if not pp.is_first_rank:
            received = pp.recv_tensor_dict()
        world.barrier()
        got.append({"sum": summed.tolist(), "gathered": gathered.tolist(), "object": obj,
                    "ids": tensors["ids"].tolist(), "ids_step": tensors["step"],
                    "received": None if received is None else
                    (received["hidden"].tolist(), received["step"])})
    return got


class DPWorker:
    """The DP step of vLLM's model runner: before each forward pass the DP ranks agree on
    the batch (``coordinate_batch_across_dp``: one all-reduce on the DP group). vLLM leaves
    that out under ``skip_dp_coordination()``; ``idle_skips`` is the #43547 bug, a rank
    whose step has no tokens taking that path alone while its peers coordinate."""

    def __init__(self, config: ParallelConfig, idle_skips: bool):
        self.config, self.idle_skips = config, idle_skips

    def execute_model(self, num_tokens: int) -> list[int]:
        if num_tokens == 0 and self.idle_skips:
            with dp_utils.skip_dp_coordination():
                return self._coordinate(num_tokens)
        return self._coordinate(num_tokens)

    def _coordinate(self, num_tokens: int) -> list[int]:
        _ubatch, tokens_across_dp, _mode = dp_utils.coordinate_batch_across_dp(
            num_tokens_unpadded=num_tokens, allow_microbatching=False,
            parallel_config=self.config)
        return tokens_across_dp.tolist()


DP_STEP = "tests.realcode.vllm_programs:DPWorker.execute_model"    # iteration_marker


def dp_steps(dist, schedule: list[list[int]], idle_skips: bool) -> list[list[int]]:
    """DP2 (one rank each; launch tp=2, attention_dp=True): ``schedule[step][dp_rank]`` tokens.
    The start-up dummy run coordinates nothing on every rank (vLLM's profile run); then each
    step returns what this rank learnt of every DP rank's tokens."""
    config = start_vllm(dist, tp=1, pp=1, dp=2)
    worker = DPWorker(config, idle_skips)
    with dp_utils.skip_dp_coordination():          # legal: every rank skips together
        dp_utils.coordinate_batch_across_dp(1, False, config)
    return [worker.execute_model(step[config.data_parallel_rank]) for step in schedule]
