"""Every reduce op torch has, through the package's names, c10d's module and the functional
collectives, on 4 ranks (module-level: spawned ranks import it); written as a torchrun
script's main would be."""

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol

WORLD = 4


def _outcome(call):
    try:
        return call()
    except Exception as exc:  # noqa: BLE001 - the outcome (a backend's refusal) is compared
        return f"raised {type(exc).__name__}: {str(exc).splitlines()[0]}"


def reductions():
    """AVG and PREMUL_SUM (a scalar and a tensor factor, each rank its own) through the
    package's names, c10d's module and the functional collectives; what each gave or the
    error it raised."""
    dist.init_process_group("gloo")
    r = dist.get_rank()
    avg, group = dist.ReduceOp.AVG, dist.group.WORLD

    def all_reduce(op, t, by=dist):
        by.all_reduce(t, op=op)
        return t

    def reduce_scatter(op):
        out = torch.zeros(2)
        dist.reduce_scatter_tensor(out, torch.arange(8.0) * (r + 1), op=op)
        return out

    return {
        "avg": _outcome(lambda: all_reduce(avg, torch.tensor([1.0, 2.0]) * (r + 1))),
        "avg_c10d": _outcome(lambda: all_reduce(avg, torch.tensor([3.0]) * r,
                                                dist.distributed_c10d)),
        "avg_reduce_scatter": _outcome(lambda: reduce_scatter(avg)),
        "avg_funcol": _outcome(lambda: funcol.all_reduce(torch.ones(2) * r, "avg", group) + 0),
        "avg_int": _outcome(lambda: all_reduce(avg, torch.tensor([5, 7]) * (r + 1))),
        "premul_scalar": _outcome(lambda: all_reduce(dist.ReduceOp.PREMUL_SUM(0.5 * (r + 1)),
                                                     torch.tensor([1.0, 2.0]))),
        "premul_tensor": _outcome(lambda: reduce_scatter(
            dist.ReduceOp.PREMUL_SUM(torch.tensor(0.25)))),
    }


def reference_reductions():
    """What AVG and PREMUL_SUM give, computed in one process (rank r's results)."""
    ranks = range(WORLD)
    scatter = sum(torch.arange(8.0) * (r + 1) for r in ranks)
    return [{
        "avg": sum(torch.tensor([1.0, 2.0]) * (r + 1) for r in ranks) / WORLD,
        "avg_c10d": sum(torch.tensor([3.0]) * r for r in ranks) / WORLD,
        "avg_reduce_scatter": scatter.chunk(WORLD)[me] / WORLD,
        "avg_funcol": torch.ones(2) * sum(ranks) / WORLD,
        "premul_scalar": sum(torch.tensor([1.0, 2.0]) * 0.5 * (r + 1) for r in ranks),
        "premul_tensor": scatter.chunk(WORLD)[me] * 0.25,
    } for me in ranks]


def op_disagreement():
    """Rank 3 averages where the others sum."""
    dist.init_process_group("gloo")
    op = dist.ReduceOp.AVG if dist.get_rank() == 3 else dist.ReduceOp.SUM
    dist.all_reduce(torch.ones(2), op=op)
