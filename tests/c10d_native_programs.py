"""A program calling every method of a rank's default ProcessGroup that torch's c10d calls
itself, as it calls them: with torch's option objects and roots as group ranks; then the
native functional ops (C++ calling the group's virtual methods) and torch's own functions
reached past the interception (module-level: spawned ranks import it). It runs the same on
every backend, 2 ranks; the test compares what each backend computed."""

import torch
import torch.distributed as tdist
from torch._C._distributed_c10d import AllgatherOptions

SUM, MAX, MIN, PROD = (tdist.ReduceOp.SUM, tdist.ReduceOp.MAX, tdist.ReduceOp.MIN,
                       tdist.ReduceOp.PRODUCT)


def _x(*values) -> torch.Tensor:
    return torch.tensor([float(v) for v in values])


def _z(n: int) -> torch.Tensor:
    return torch.zeros(n)


def _opts(cls, **fields):
    o = cls()
    for k, v in fields.items():
        setattr(o, k, v)
    return o


def _after(work, *tensors) -> list:
    work.wait()
    return [t.tolist() for t in tensors]


def group_methods(pg, r: int) -> dict:
    """Method name -> a call of it on ``pg``, returning what this rank holds afterwards."""
    m = {}

    def method(fn):
        m[fn.__name__] = fn
        return fn

    @method
    def allreduce():
        t = _x(r + 1, 5 - r)
        return _after(pg.allreduce([t], _opts(tdist.AllreduceOptions, reduceOp=MAX)), t)

    @method
    def allreduce_coalesced():
        ts = [_x(r), _x(r, 2 * r)]
        return _after(pg.allreduce_coalesced(ts, _opts(tdist.AllreduceCoalescedOptions,
                                                       reduceOp=SUM)), *ts)

    @method
    def reduce():
        t = _x(r + 2)
        _after(pg.reduce([t], _opts(tdist.ReduceOptions, rootRank=1, reduceOp=PROD)))
        return t.tolist() if r == 1 else "not the root"  # gloo leaves the others unspecified

    @method
    def broadcast():
        t = _x(r, r)
        return _after(pg.broadcast([t], _opts(tdist.BroadcastOptions, rootRank=1)), t)

    @method
    def allgather():
        outs = [_z(1), _z(1)]
        return _after(pg.allgather([outs], [_x(r + 7)], AllgatherOptions()), *outs)

    @method
    def allgather_coalesced():
        outs = [[_z(1), _z(2)] for _ in range(2)]               # [rank][input]
        work = pg.allgather_coalesced(outs, [_x(r), _x(r, r + 10)], AllgatherOptions())
        return _after(work, *outs[0], *outs[1])

    @method
    def all_gather_single():
        out = _z(4)
        return _after(pg.all_gather_single(out, _x(r, -r), AllgatherOptions()), out)

    @method
    def _allgather_base():
        out = _z(2)
        return _after(pg._allgather_base(out, _x(r + 3), AllgatherOptions()), out)

    @method
    def all_gather_single_coalesced():
        outs = [_z(2), _z(4)]
        work = pg.all_gather_single_coalesced(outs, [_x(r), _x(r, 1)], AllgatherOptions())
        return _after(work, *outs)

    @method
    def reduce_scatter():
        out = _z(1)
        return _after(pg.reduce_scatter([out], [[_x(r + 1), _x(10 - r)]],
                                        _opts(tdist.ReduceScatterOptions, reduceOp=MIN)), out)

    @method
    def reduce_scatter_single():
        out = _z(2)
        return _after(pg.reduce_scatter_single(out, torch.arange(4.0) * (r + 1),
                                               _opts(tdist.ReduceScatterOptions)), out)

    @method
    def _reduce_scatter_base():
        out = _z(1)
        return _after(pg._reduce_scatter_base(out, _x(r, r + 5),
                                              _opts(tdist.ReduceScatterOptions)), out)

    @method
    def reduce_scatter_single_coalesced():
        outs = [_z(1), _z(2)]
        work = pg.reduce_scatter_single_coalesced(outs, [_x(r, 1), torch.arange(4.0)],
                                                  _opts(tdist.ReduceScatterOptions))
        return _after(work, *outs)

    @method
    def gather():
        outs = [_z(1), _z(1)] if r == 0 else []
        return _after(pg.gather([outs] if r == 0 else [], [_x(r + 4)],
                                _opts(tdist.GatherOptions, rootRank=0)), *outs)

    @method
    def scatter():
        out = _z(1)
        return _after(pg.scatter([out], [[_x(11), _x(12)]] if r == 1 else [],
                                 _opts(tdist.ScatterOptions, rootRank=1)), out)

    @method
    def alltoall():
        outs = [_z(1), _z(1)]
        return _after(pg.alltoall(outs, [_x(10 * r), _x(10 * r + 1)],
                                  _opts(tdist.AllToAllOptions)), *outs)

    @method
    def all_to_all_single():
        out, splits = _z(3), ([2, 1] if r == 0 else [1, 2])
        data = _x(r, r, 9) if r == 0 else _x(5, 6, 7)
        return _after(pg.all_to_all_single(out, data, splits, splits,
                                           _opts(tdist.AllToAllOptions)), out)

    @method
    def barrier():
        return _after(pg.barrier(_opts(tdist.BarrierOptions)))

    @method
    def send_recv():
        if r == 0:
            return _after(pg.send([_x(42)], 1, 3))
        t = _z(1)
        return _after(pg.recv([t], 0, 3), t)

    return m


def functional_ops(name: str, r: int) -> dict:
    """The native functional collectives on the group named ``name``."""
    ops = torch.ops._c10d_functional
    done = lambda t: ops.wait_tensor(t).tolist()  # noqa: E731
    each = lambda ts: [done(t) for t in ts]  # noqa: E731
    return {
        "ops.all_reduce": lambda: done(ops.all_reduce(_x(r + 1), "max", name)),
        "ops.all_reduce_coalesced": lambda: each(ops.all_reduce_coalesced(
            [_x(r), _x(r + 1, 1)], "sum", name)),
        "ops.all_gather_into_tensor": lambda: done(ops.all_gather_into_tensor(
            _x(r, r), 2, name)),
        "ops.all_gather_into_tensor_coalesced": lambda: each(
            ops.all_gather_into_tensor_coalesced([_x(r), _x(r, 1)], 2, name)),
        "ops.reduce_scatter_tensor": lambda: done(ops.reduce_scatter_tensor(
            torch.arange(4.0) + r, "sum", 2, name)),
        "ops.reduce_scatter_tensor_coalesced": lambda: each(
            ops.reduce_scatter_tensor_coalesced([_x(r, 1), torch.arange(4.0)], "sum", 2, name)),
        "ops.all_to_all_single": lambda: done(ops.all_to_all_single(
            _x(10 * r, 10 * r + 1), [1, 1], [1, 1], name)),
        "ops.broadcast": lambda: done(ops.broadcast(_x(r + 1), 1, name)),
    }


def torch_functions(pg, r: int) -> dict:
    """torch's own ``distributed_c10d`` functions, called by their module (not the
    intercepted names), and what it asks of the group."""
    c10d = tdist.distributed_c10d

    def all_gather_into_tensor():
        out = _z(2)
        c10d.all_gather_into_tensor(out, _x(r + 1))
        return out.tolist()

    def all_gather_coalesced():
        outs = [[_z(1), _z(2)] for _ in range(2)]
        c10d.all_gather_coalesced(outs, [_x(r), _x(r, 5)])
        return [[t.tolist() for t in o] for o in outs]

    def coalescing_manager():
        t = _x(r)
        with c10d._coalescing_manager(pg, torch.device("cpu")):
            c10d.all_reduce(t)
        return t.tolist()

    return {"c10d.all_gather_into_tensor": all_gather_into_tensor,
            "c10d.all_gather_coalesced": all_gather_coalesced,
            "c10d._coalescing_manager": coalescing_manager,
            "c10d._device_capability": lambda: sorted(c10d._device_capability(pg))}


def native_calls(dist):
    """Runs every call above in order; returns name -> what it computed, or the class of
    what it raised (the outcome compared across backends)."""
    r = dist.global_rank
    tdist.init_process_group("gloo")
    pg = tdist.distributed_c10d._get_default_group()
    calls = {**group_methods(pg, r), **functional_ops(pg.group_name, r),
             **torch_functions(pg, r)}
    out = {}
    for name, call in calls.items():
        try:
            out[name] = call()
        except Exception as exc:  # noqa: BLE001 - the outcome class is what is compared
            out[name] = f"raised {type(exc).__name__}: {str(exc).splitlines()[0]}"
    return out
