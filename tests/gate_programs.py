"""Rank programs shaped like the field's latent-gate hangs, each with its fixed version (the
legal programs are in ``gate_legal_programs``).

Every incident program reaches its collective through at least two helper frames, and is
launched with inputs on which the ranks agree (no report): only the gate's operands differ.
``GATE_LINES`` names the line of each program's gate (the test ``tests/test_latent_gates.py``
checks the site against it).
"""

from __future__ import annotations

import inspect

from trtsim import ReduceOp


# -- vLLM #43547: a DP rank with zero tokens skips the DP all-reduce ---------------------------
def _dp_sync(dist, num_tokens):
    return dist.allreduce(num_tokens, label="dp_num_tokens")


def _dp_coordinate(dist, num_tokens):
    return _dp_sync(dist, num_tokens)


def _dp_model_step(dist, num_tokens):
    if num_tokens > 0:                                    # gate: dp_zero_token
        return _dp_coordinate(dist, num_tokens)
    return 0


def dp_zero_token(dist, schedule):
    return [_dp_model_step(dist, step[dist.global_rank]) for step in schedule]


def _dp_model_step_fixed(dist, num_tokens):
    total = dist.allreduce(num_tokens, op=ReduceOp.MAX, label="dp_any_tokens")
    if total > 0:
        return _dp_coordinate(dist, num_tokens)
    return 0


def dp_zero_token_fixed(dist, schedule):
    return [_dp_model_step_fixed(dist, step[dist.global_rank]) for step in schedule]


# -- vLLM #49027 / #44954: the MTP drafter gate near max_model_len, decided per rank ------------
MAX_MODEL_LEN = 64


def _draft_gather(dist, tokens):
    return dist.tp_allgather(tokens, label="draft_logits")


def _propose(dist, tokens):
    return _draft_gather(dist, tokens)


def _maybe_draft(dist, seq_len, num_spec):
    if seq_len + num_spec < MAX_MODEL_LEN:                # gate: drafter_len
        return _propose(dist, [seq_len] * num_spec)
    return None


def drafter_len(dist, lengths, num_spec=3):
    return [_maybe_draft(dist, step[dist.tp_rank], num_spec) for step in lengths]


def drafter_len_fixed(dist, lengths, num_spec=3):
    out = []
    for step in lengths:
        seq_len = dist.tp_allreduce(step[dist.tp_rank], op=ReduceOp.MAX, label="seq_len")
        out.append(_maybe_draft(dist, seq_len, num_spec))
    return out


# -- TensorRT-LLM #14020: each rank's count of free KV blocks gates a TP allgather ---------------
class KvPool:
    def __init__(self, free_blocks):
        self.free_blocks = free_blocks


def _gather_schedule(dist, request):
    return dist.tp_allgather(request, label="schedule")


def _admit(dist, request):
    return _gather_schedule(dist, request)


def _schedule(dist, pool, request, needed=4):
    if pool.free_blocks >= needed:                        # gate: free_kv_blocks
        return _admit(dist, request)
    return None


def free_kv_blocks(dist, frees):
    pool = KvPool(0)
    out = []
    for i, step in enumerate(frees):
        pool.free_blocks = step[dist.tp_rank]
        out.append(_schedule(dist, pool, i))
    return out


def free_kv_blocks_fixed(dist, frees):
    pool = KvPool(0)
    out = []
    for i, step in enumerate(frees):
        pool.free_blocks = dist.tp_allreduce(step[dist.tp_rank], op=ReduceOp.MIN,
                                             label="free_blocks")
        out.append(_schedule(dist, pool, i))
    return out


# -- TensorRT-LLM #13998 / #14126: warm-up ranks without a batch skip the tp_comm allgather ----
def _tp_comm_gather(dist, batch_tokens):
    return dist.tp_allgather(batch_tokens, label="tp_comm")


def _pp_comm_gather(dist, batch_tokens):
    return dist.pp_allgather(batch_tokens, label="pp_comm")


def _warmup_forward(dist, batch_tokens):
    if batch_tokens:                                      # gate: warmup
        _tp_comm_gather(dist, batch_tokens)
        _pp_comm_gather(dist, batch_tokens)


def warmup(dist, batches):
    for step in batches:
        _warmup_forward(dist, step[dist.global_rank])
    return True


def warmup_fixed(dist, batches):
    for step in batches:
        agreed = dist.allreduce(step[dist.global_rank], op=ReduceOp.MIN, label="has_batch")
        _warmup_forward(dist, agreed)
    return True


# -- SGLang #34442: a vision encoder reduces on the global TP group only where an image came ----
def _encoder_reduce(dist, features):
    return dist.allreduce(features, label="vision_encoder")


def _encode(dist, n_images):
    return _encoder_reduce(dist, float(n_images))


def _embed(dist, n_images):
    return _encode(dist, n_images) if n_images > 0 else 0.0   # gate: image_only


def image_only(dist, images):
    return [_embed(dist, step[dist.global_rank]) for step in images]


def image_only_fixed(dist, images):
    out = []
    for step in images:
        most = dist.allreduce(step[dist.global_rank], op=ReduceOp.MAX, label="any_image")
        out.append(_embed(dist, most))
    return out


def _line_of(fn, marker: str) -> int:
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, text in enumerate(lines) if marker in text)


GATE_LINES = {name: _line_of(fn, f"# gate: {name}") for name, fn in (
    ("dp_zero_token", _dp_model_step), ("drafter_len", _maybe_draft),
    ("free_kv_blocks", _schedule), ("warmup", _warmup_forward), ("image_only", _embed))}


# -- the DP zero-token skip through unmodified torch.distributed and mpi4py -------------------
def _torch_all_reduce(num_tokens):
    import torch
    import torch.distributed as tdist
    t = torch.tensor([num_tokens], dtype=torch.int64)
    tdist.all_reduce(t)
    return int(t.item())


def _torch_step(num_tokens):
    if num_tokens > 0:                                    # gate: torch_zero_token
        return _torch_all_reduce(num_tokens)
    return 0


def torch_zero_token(schedule):
    import torch.distributed as tdist
    tdist.init_process_group("gloo")
    rank = tdist.get_rank()
    return [_torch_step(step[rank]) for step in schedule]


def _mpi_all_reduce(comm, num_tokens):
    return comm.allreduce(num_tokens)


def _mpi_step(comm, num_tokens):
    if num_tokens > 0:                                    # gate: mpi_zero_token
        return _mpi_all_reduce(comm, num_tokens)
    return 0


def mpi_zero_token(schedule):
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    return [_mpi_step(comm, step[comm.Get_rank()]) for step in schedule]


GATE_LINES.update({name: _line_of(fn, f"# gate: {name}") for name, fn in (
    ("torch_zero_token", _torch_step), ("mpi_zero_token", _mpi_step))})


# -- an outcome that changes at different iterations on different members ---------------------
class Readiness:
    """A rank's own notion of when a feature turns on (no operand shows it: a method)."""

    def __init__(self, at: int):
        self.at = at

    def ready(self, step: int) -> bool:
        return step >= self.at


def _exchange(dist, value):
    return dist.allreduce(value, label="exchange")


def switch_steps(dist, steps, switch_at):
    state = Readiness(switch_at[dist.global_rank])
    out = []
    for step in range(steps):
        dist.set_iteration(step)
        if state.ready(step):                             # gate: switch
            out.append(_exchange(dist, 1.0))
        else:
            out.append(_exchange(dist, 0.0))
    return out


GATE_LINES["switch"] = _line_of(switch_steps, "# gate: switch")
