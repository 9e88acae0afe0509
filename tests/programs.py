"""Rank programs shared by tests: module-level functions so spawned processes can import them.

Each takes ``dist`` first, as every rank program does. The violation programs reproduce one
kind of asymmetry each; ``SYMMETRIC`` programs must never be flagged.
"""

import time

import torch


# -- legal programs ----------------------------------------------------------------------
def gathers(dist, iterations=3):
    """TP and PP gathers, broadcasts, a gather on a root, all-reduces: symmetric."""
    out = []
    for it in range(iterations):
        dist.set_iteration(it)
        out.append(dist.tp_allgather({"rank": dist.rank, "it": it}, label="tp_state"))
        out.append(dist.pp_allgather([dist.rank] * (it + 1), label="pp_ids"))
        out.append(dist.tp_broadcast(f"from-tp-root-{dist.rank}", root=dist.tp_size - 1))
        out.append(dist.pp_broadcast(dist.rank * 10, root=0))
        out.append(dist.tp_gather(dist.rank, root=0, label="responses"))
        out.append(dist.allreduce(dist.rank + it, op="sum"))
        out.append(dist.tp_allreduce(dist.rank, op="max"))
        out.append(dist.allgather(dist.rank, label="world"))
        out.append(dist.broadcast((it, "world-root"), root=dist.world_size - 1))
    dist.barrier(label="end")
    return out


def tensors(dist):
    """All-reduces of tensors with every op, tensor gathers, and a PP ring of activations."""
    x = torch.arange(4, dtype=torch.float32) + dist.rank
    out = [dist.tp_allreduce(x, op=op) for op in ("sum", "max", "min", "prod")]
    out.append(dist.allgather(torch.full((2,), dist.rank, dtype=torch.int64)))
    if dist.pp_size > 1:
        act = torch.full((3, 2), float(dist.rank))
        handle = dist.isend_object(act.sum().item(), dist.mapping.next_pp_rank(), tag=7)
        out.append(dist.recv_object(dist.mapping.prev_pp_rank(), tag=7))
        handle.wait()
        if dist.mapping.is_first_pp_rank():
            dist.send_tensor(act, dist.mapping.next_pp_rank(), tag=1)
        else:
            buf = torch.empty(3, 2)
            out.append(dist.recv_tensor(buf, dist.mapping.prev_pp_rank(), tag=1))
            if not dist.mapping.is_last_pp_rank():
                dist.send_tensor(buf + 1, dist.mapping.next_pp_rank(), tag=1)
    return out


def nonblocking_p2p(dist):
    """Receives posted before the sends, polled, then waited: objects and tensors."""
    peer = dist.rank ^ 1
    objs = [dist.irecv_object(peer, tag=3 + i) for i in range(2)]
    buf = torch.empty(4, dtype=torch.float64)
    tens = dist.irecv_tensor(buf, peer, tag=9)
    sends = [dist.isend_object({"from": dist.rank, "i": i}, peer, tag=3 + i) for i in range(2)]
    sends.append(dist.isend_tensor(torch.full((4,), float(dist.rank), dtype=torch.float64),
                                   peer, tag=9))
    dist.barrier(label="sent")
    out = [h.wait() for h in objs] + [tens.wait().tolist()]
    for h in sends:
        h.wait()
    return out + [all(h.is_completed() for h in objs)]


def pp_group_skip_under_adp(dist, iterations=4):
    """Under attention DP a whole PP group (one DP rank) skips a gather: legal per group."""
    out = []
    for it in range(iterations):
        dist.set_iteration(it)
        if dist.dp_rank != it % dist.dp_size:
            out.append(dist.pp_allgather(dist.rank, label="gen_consensus"))
        out.append(dist.tp_allgather(it, label="tp_state"))
    return out


def slow_rank(dist, delay=0.2):
    """Rank 1 computes ten times longer than its peers before each gather: not a deadlock."""
    for it in range(3):
        dist.set_iteration(it)
        time.sleep(delay if dist.rank == 1 else delay / 10)
        dist.tp_allgather(dist.rank, label="state")
    return dist.rank


# -- violations ---------------------------------------------------------------------------
def skip_pp_allgather(dist, labelled=False):
    """Rank 2 (PP stage 1 of tp2 x pp2) skips one pp_allgather in iteration 1 (DESIGN 4)."""
    for it in range(3):
        dist.set_iteration(it)
        if not (dist.rank == 2 and it == 1):
            dist.pp_allgather(dist.rank, label="gen_consensus" if labelled else None)
    return dist.rank


def op_mismatch(dist):
    if dist.tp_rank == 1:
        return dist.tp_broadcast(dist.rank, root=0, label="sched")
    return dist.tp_allgather(dist.rank, label="sched")


def root_mismatch(dist):
    return dist.tp_broadcast(dist.rank, root=min(dist.tp_rank, 1), label="sched")


def reduce_op_mismatch(dist):
    return dist.tp_allreduce(dist.rank, op="max" if dist.tp_rank == 0 else "sum", label="votes")


def shape_mismatch(dist):
    return dist.tp_allreduce(torch.zeros(4 + dist.tp_rank), label="logits")


def label_mismatch(dist):
    if dist.tp_rank == 0:
        dist.tp_allgather(1, label="ctx_consensus")
    dist.tp_allgather(2, label="gen_consensus")
    if dist.tp_rank != 0:
        dist.tp_allgather(1, label="ctx_consensus")


def _gather_states(dist):
    return dist.tp_allgather(dist.rank)


def _gather_votes(dist):
    return dist.tp_allgather(dist.rank)


def purpose_mismatch(dist):
    """Unlabelled gathers at one sequence made by two different functions: two purposes."""
    return _gather_states(dist) if dist.tp_rank == 0 else _gather_votes(dist)


def cross_group_cycle(dist):
    """Ranks 0 and 3 enter PP first, ranks 1 and 2 TP first: a wait cycle over 4 ranks."""
    order = ("pp", "tp") if dist.rank in (0, 3) else ("tp", "pp")
    for kind in order:
        getattr(dist, f"{kind}_allgather")(dist.rank, label=kind)


def early_exit(dist):
    """The last rank returns before its TP group's final gather."""
    dist.tp_allgather(0, label="a")
    if dist.rank == dist.world_size - 1:
        return "left"
    dist.tp_allgather(1, label="b")


def p2p_tag_mismatch(dist):
    if dist.rank == 0:
        dist.isend_object("x", 1, tag=1)
        dist.barrier(label="after")
    elif dist.rank == 1:
        dist.recv_object(0, tag=2)
        dist.barrier(label="after")
    else:
        dist.barrier(label="after")


def raising_rank(dist):
    dist.tp_allgather(0, label="a")
    if dist.rank == 1:
        raise RuntimeError("boom on rank 1")
    dist.tp_allgather(1, label="b")


def busy_loop(dist):
    dist.barrier()
    if dist.rank == 0:
        while True:
            pass
    dist.barrier()


# -- GPU programs (process backend, nccl) ---------------------------------------------------
def gpu_tensors(dist):
    """All-reduces and gathers of CUDA tensors, and a PP ring of activations on the GPU."""
    x = torch.arange(4, dtype=torch.float32, device=dist.device) + dist.rank
    out = [dist.tp_allreduce(x, op="sum").cpu(), dist.pp_allgather(x)[0].cpu()]
    if dist.pp_size > 1:
        act = torch.full((2, 3), float(dist.rank), device=dist.device)
        if dist.mapping.is_first_pp_rank():
            dist.send_tensor(act, dist.mapping.next_pp_rank(), tag=1)
        else:
            buf = torch.empty(2, 3, device=dist.device)
            out.append(dist.recv_tensor(buf, dist.mapping.prev_pp_rank(), tag=1).cpu())
    return [str(dist.device)] + out


def gpu_skip(dist):
    """skip_pp_allgather with CUDA tensors in between."""
    for it in range(3):
        dist.set_iteration(it)
        dist.tp_allreduce(torch.ones(2, device=dist.device), label="logits")
        if not (dist.rank == 2 and it == 1):
            dist.pp_allgather(dist.rank, label="gen_consensus")
    return dist.rank
