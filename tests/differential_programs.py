"""Rank programs as data, for the differential tests: the same program on every backend.

A ``Program`` is a list of steps over the tp2 x pp2 layout (global ranks 0-3; TP groups
[0, 1] and [2, 3], PP groups [0, 2] and [1, 3], the world [0, 1, 2, 3]): collectives on a
TP, PP or world group, and point-to-point tensor messages between two ranks. Every member of
a step's group makes the call; at most one ``Deviation`` makes one rank leave the script
there (a skip, an extra call, an early exit, a wrong op, root, shape or dtype, a raise), and
``legal`` steps are left out by one whole TP or PP group, which strict mode allows (the
divergence of DESIGN 2's ``results.divergence``). ``programs()`` draws them; ``run`` is the
rank program (picklable, module level). ``verdict`` reduces a launch's outcome to what the
backends must agree on.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from hypothesis import strategies as st

import trtsim
from trtsim.strategies import spread

WORLD = (0, 1, 2, 3)
GROUP_OPS = {            # group kind -> the Distributed methods of each op on it
    "tp": {"allgather": "tp_allgather", "broadcast": "tp_broadcast",
           "allreduce": "tp_allreduce", "barrier": "tp_barrier", "gather": "tp_gather"},
    "pp": {"allgather": "pp_allgather", "broadcast": "pp_broadcast", "gather": "pp_gather"},
    "world": {"allgather": "allgather", "broadcast": "broadcast", "allreduce": "allreduce",
              "barrier": "barrier"},
}
TENSOR_OPS = ("allgather", "broadcast", "allreduce")
DTYPES = ("float32", "int64", "float16")
DEVIATIONS = ("skip", "extra", "exit", "wrong_op", "wrong_root", "wrong_shape", "wrong_dtype",
              "raise")


def members(kind: str, rank: int) -> tuple[int, ...]:
    """The global ranks of ``rank``'s group of ``kind`` in the tp2 x pp2 layout."""
    if kind == "tp":
        return (rank - rank % 2, rank - rank % 2 + 1)
    if kind == "pp":
        return (rank % 2, rank % 2 + 2)
    return WORLD


@dataclass(frozen=True)
class Step:
    """One call of the script. ``kind`` tp|pp|world|p2p; for p2p ``pair`` is (src, dst),
    ``send`` is ``blocking``, ``wait`` (``isend_tensor`` then ``wait()``) or ``drop``
    (``isend_tensor``, the handle dropped, as TensorRT-LLM's PP loop does). ``shape`` None:
    a host object payload. ``root``: a group index (rooted ops)."""

    kind: str
    op: str
    iteration: int
    label: str | None = None
    shape: tuple[int, ...] | None = None
    dtype: str = "float32"
    root: int | None = None
    pair: tuple[int, int] = (0, 1)
    send: str = "blocking"

    def ranks(self) -> tuple[int, ...]:
        """Every rank that takes part in this step (both groups of a kind, or the pair)."""
        return self.pair if self.kind == "p2p" else WORLD


@dataclass(frozen=True)
class Deviation:
    """Rank ``rank`` leaves the script at step ``step``: ``kind`` one of DEVIATIONS."""

    kind: str
    rank: int
    step: int


@dataclass(frozen=True)
class Program:
    """Steps, at most one deviation, and legal skips: (step, group) pairs whose every member
    leaves the step out."""

    steps: tuple[Step, ...]
    deviation: Deviation | None = None
    legal: tuple[tuple[int, tuple[int, ...]], ...] = ()

    @property
    def deviators(self) -> frozenset[int]:
        return frozenset() if self.deviation is None else frozenset({self.deviation.rank})


# -- running ---------------------------------------------------------------------------
def _payload(step: Step, rank: int, index: int, shape=None, dtype=None):
    shape, dtype = shape or step.shape, dtype or step.dtype
    if shape is None:
        return {"rank": rank, "step": index}          # host objects legally differ by rank
    return torch.full(shape, rank + 1, dtype=getattr(torch, dtype))


def _other_op(step: Step) -> str:
    ops = [o for o in GROUP_OPS[step.kind] if o != step.op]
    return ops[0]


def _collective(dist, step: Step, index: int, op: str | None = None, root=None,
                shape=None, dtype=None):
    op = op or step.op
    method = getattr(dist, GROUP_OPS[step.kind][op])
    label = step.label
    if op == "barrier":
        return method(label=label)
    payload = _payload(step, dist.global_rank, index, shape, dtype)
    if op in ("broadcast", "gather"):
        return method(payload, root=step.root or 0 if root is None else root, label=label)
    if op == "allreduce" and isinstance(payload, dict):
        payload = index + dist.global_rank
    return method(payload, label=label)


def _p2p(dist, step: Step, index: int, shape=None, dtype=None):
    src, dst = step.pair
    me = dist.global_rank
    if me == src:
        t = _payload(step, me, index)
        if step.send == "blocking":
            dist.send_tensor(t, dst, tag=index, label=step.label)
        else:
            handle = dist.isend_tensor(t, dst, tag=index, label=step.label)
            if step.send == "wait":
                handle.wait()
        return None
    buf = torch.zeros(shape or step.shape, dtype=getattr(torch, dtype or step.dtype))
    return dist.recv_tensor(buf, src, tag=index, label=step.label).tolist()


def _do(dist, step: Step, index: int, **changes):
    if step.kind == "p2p":
        return _p2p(dist, step, index, changes.get("shape"), changes.get("dtype"))
    return _collective(dist, step, index, **changes)


def _deviate(dist, step: Step, index: int, kind: str):
    """What the deviating rank does at its step; returns False to stop the program."""
    if kind == "skip":
        return True
    if kind == "extra":
        _do(dist, step, index)
        _do(dist, step, index)
    elif kind == "raise":
        raise RuntimeError(f"injected failure at step {index}")
    elif kind == "wrong_op":
        _do(dist, step, index, op=_other_op(step))
    elif kind == "wrong_root":
        _do(dist, step, index, root=1 - (step.root or 0))
    elif kind == "wrong_shape":
        _do(dist, step, index, shape=tuple(d + 1 for d in step.shape))
    elif kind == "wrong_dtype":
        _do(dist, step, index, dtype=next(d for d in DTYPES if d != step.dtype))
    return True


def run(dist, program: Program, base: int = 0) -> list:
    """The rank program: this rank's part of every step (its iterations from ``base``)."""
    me = dist.global_rank
    out = []
    dev = program.deviation
    skipped = {(i, g) for i, g in program.legal}
    for i, step in enumerate(program.steps):
        if me not in step.ranks():
            continue
        if step.kind != "p2p" and (i, members(step.kind, me)) in skipped:
            continue
        if dist.iteration != base + step.iteration:
            dist.set_iteration(base + step.iteration)
        if dev is not None and dev.rank == me and dev.step == i:
            if dev.kind == "exit":
                return out
            _deviate(dist, step, i, dev.kind)
            continue
        out.append(_plain(_do(dist, step, i)))
    return out


def _plain(value):
    """A result as plain lists (tensors compare by value across backends)."""
    if isinstance(value, torch.Tensor):
        return value.tolist()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def run_all(dist, programs: tuple[Program, ...]) -> list:
    """Several legal programs one after another in one launch (each at its own iterations):
    one launch of processes instead of one per program."""
    return [run(dist, p, base=100 * k) for k, p in enumerate(programs)]


# -- what the backends must agree on -------------------------------------------------------
@dataclass(frozen=True)
class Verdict:
    """A launch's outcome as the backends must agree on it: the error kind (``ok`` when it
    held), the group, and the culprit ranks. Of a mismatch in a group of more than two, the
    report names the first two members whose records differ in arrival order, which depends
    on the schedule on either backend, so the culprits are the reported ranks the program
    made deviate (the deviating rank must be named, on both)."""

    kind: str
    group_kind: str = ""
    group_ranks: tuple[int, ...] = ()
    culprits: tuple[int, ...] = ()
    message: str = ""          # a failure's exception; every rank's results when it held


def verdict(program: Program, backend: str, timeout: float = 30.0, prog=None,
            args=None) -> Verdict:
    """Launch ``program`` (or ``prog(dist, *args)``) on tp2 x pp2 and reduce the outcome."""
    try:
        results = trtsim.launch(prog or run, tp=2, pp=2, backend=backend, timeout=timeout,
                                args=args if args is not None else (program,))
    except trtsim.RankFailed as err:
        return Verdict("failed", culprits=(err.rank,),
                       message=str(err).splitlines()[0].split(" raised ", 1)[-1])
    except trtsim.CollectiveError as err:
        ranks = tuple(err.ranks)
        if err.kind == "mismatch" and len(err.group_ranks) > 2:
            ranks = tuple(r for r in ranks if r in program.deviators) or ranks
        return Verdict(err.kind, err.group_kind, tuple(err.group_ranks), ranks)
    return Verdict("ok", message=repr(list(results)))


# -- hypothesis ----------------------------------------------------------------------------
_SHAPES = st.sampled_from([(2,), (3,), (2, 2)])


@st.composite
def steps(draw, index: int, iteration: int) -> Step:
    """One step: a collective on a TP, PP or world group, or a p2p tensor message."""
    kind = draw(st.sampled_from(["tp", "pp", "world", "p2p"]))
    label = draw(st.sampled_from([f"s{index}", None]))
    if kind == "p2p":
        pair = tuple(draw(st.permutations(WORLD))[:2])
        return Step("p2p", "send_tensor", iteration, label, draw(_SHAPES),
                    draw(st.sampled_from(DTYPES[:2])), pair=pair,
                    send=draw(st.sampled_from(["blocking", "wait", "drop"])))
    op = draw(st.sampled_from(sorted(GROUP_OPS[kind])))
    tensor = op in TENSOR_OPS and draw(st.booleans())
    root = draw(st.integers(0, 1)) if op in ("broadcast", "gather") else None
    return Step(kind, op, iteration, label, draw(_SHAPES) if tensor else None,
                draw(st.sampled_from(DTYPES)) if tensor else "float32", root)


def _applies(kind: str, step: Step) -> bool:
    if kind in ("wrong_shape", "wrong_dtype"):
        return step.shape is not None
    if kind == "wrong_root":
        return step.root is not None
    if kind == "wrong_op":
        return step.kind != "p2p"
    return True


@st.composite
def programs(draw, deviate: bool | str | None = None, max_steps: int = 5) -> Program:
    """A program of 1..max_steps steps over two or three iterations. ``deviate``: True for
    exactly one deviation, a DEVIATIONS kind for one of that kind, False for none, None for
    either."""
    n = draw(st.integers(1, max_steps))
    iters = sorted(draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)))
    script = tuple(draw(steps(i, it)) for i, it in enumerate(iters))
    legal = ()
    group_steps = [i for i, s in enumerate(script) if s.kind in ("tp", "pp")]
    if group_steps and draw(st.booleans()):
        i = draw(st.sampled_from(group_steps))
        legal = ((i, members(script[i].kind, draw(st.sampled_from(WORLD)))),)
    if deviate is False or (deviate is None and not draw(spread([False, True]))):
        return Program(script, None, legal)
    kind = deviate if isinstance(deviate, str) else draw(spread(list(DEVIATIONS)))
    fits = [i for i, s in enumerate(script) if _applies(kind, s)
            and not any(i == j for j, _ in legal)]
    if not fits:                                   # a step the deviation can change, last
        last = script[-1].iteration
        script += (Step("tp", "broadcast", last, f"s{n}", (2,), root=0)
                   if kind == "wrong_root" else Step("world", "allgather", last, f"s{n}", (2,)),)
        fits = [n]
    i = draw(st.sampled_from(fits))
    return Program(script, Deviation(kind, draw(st.sampled_from(script[i].ranks())), i), legal)
