"""Programs that reach their collectives through PyTorch's own libraries: FSDP2, DTensor
tensor parallelism, pipelining schedules, differentiable functional collectives and a
``torch.compile``d one (module-level: spawned ranks import them). Each is written as a
torchrun script's main would be (it knows nothing of trtsim), runs on 4 ranks, and takes a
``bug``: None (legal), ``"skip"`` (rank 2 never makes the library call), ``"extra"`` (rank 1
makes it once more) or ``"backward"`` (rank 2 runs the forward and skips the backward).
Each legal one has a single-process reference (``reference_*``) to compare with."""

import threading

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol

WORLD = 4
BUGGY_RANK = {"skip": 2, "extra": 1, "backward": 2}


def _buggy(bug, what: str) -> bool:
    """Whether this rank's ``bug`` is ``what``."""
    return bug == what and dist.get_rank() == BUGGY_RANK[what]


def _mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))


def _batch(rank: int) -> torch.Tensor:
    return torch.arange(16.0).reshape(2, 8) / 16 + rank


# -- FSDP2 ---------------------------------------------------------------------------------
def fsdp2(bug=None, divide_factor=None):
    """One training step of a 2-layer MLP sharded with ``fully_shard`` (its defaults: AVG
    gradients; ``divide_factor``: ``set_gradient_divide_factor``, a PREMUL_SUM)."""
    from torch.distributed.fsdp import fully_shard
    dist.init_process_group("gloo")
    model = _mlp()
    for layer in (model[0], model[2]):
        fully_shard(layer)
    fully_shard(model)
    if divide_factor is not None:
        for m in model.modules():
            if hasattr(m, "set_gradient_divide_factor"):
                m.set_gradient_divide_factor(divide_factor)
    steps = 2 if _buggy(bug, "extra") else 0 if _buggy(bug, "skip") else 1
    for _ in range(steps):
        loss = model(_batch(dist.get_rank())).square().sum()
        if not _buggy(bug, "backward"):
            loss.backward()
    return {n: p.grad.full_tensor() for n, p in model.named_parameters() if p.grad is not None}


def reference_fsdp2(divide_factor=None):
    """The gradients FSDP2 gives: every rank's, summed, divided by the factor (the world
    size by default)."""
    model = _mlp()
    for r in range(WORLD):
        model(_batch(r)).square().sum().backward()
    return {n: p.grad / (divide_factor or WORLD) for n, p in model.named_parameters()}


# -- functional collectives, forward and backward -------------------------------------------
def _weights(n: int) -> torch.Tensor:
    return torch.arange(1.0, n + 1)


def funcol_autograd(bug=None):
    """A gather, a reduce-scatter and an all-to-all whose results feed a loss: the backward
    pass runs the adjoint collective of each."""
    dist.init_process_group("gloo")
    r = dist.get_rank()
    x = (torch.arange(4.0) + 4 * r).requires_grad_()
    group = dist.group.WORLD
    if _buggy(bug, "skip"):
        return None
    gathered = funcol.all_gather_single(x, 0, group)          # 16 values
    scattered = funcol.reduce_scatter_single(gathered * 2, "sum", 0, group)   # 4 values
    swapped = funcol.all_to_all_single_autograd(scattered, None, None, group)
    if _buggy(bug, "extra"):
        swapped = funcol.all_reduce(swapped, "sum", group)
    loss = (swapped * _weights(4)).sum() + (gathered * _weights(16)).sum()
    if not _buggy(bug, "backward"):
        loss.backward()
    return {"forward": (swapped + 0).detach(), "grad": x.grad}


def reference_funcol_autograd():
    """Every rank's forward value and gradient, computed in one process."""
    xs = [(torch.arange(4.0) + 4 * r).requires_grad_() for r in range(WORLD)]
    gathered = torch.cat(xs)
    scattered = (gathered * 2 * WORLD).chunk(WORLD)      # every rank gathered the same
    swapped = [torch.cat([scattered[j].chunk(WORLD)[i] for j in range(WORLD)])
               for i in range(WORLD)]
    loss = sum((s * _weights(4)).sum() for s in swapped) + \
        WORLD * (gathered * _weights(16)).sum()
    loss.backward()
    return [{"forward": swapped[r].detach(), "grad": xs[r].grad} for r in range(WORLD)]


# -- a functional collective inside a named submodule ----------------------------------------
# torch 2.13's differentiable gather; torch 2.11 (the GPU host's) has only the autograd variant
_GATHER = getattr(funcol, "all_gather_single", None) or funcol.all_gather_tensor_autograd


class MLP(torch.nn.Module):
    """Gathers its projection from every rank (the backward reduce-scatters the gradient)."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)

    def forward(self, x):
        return _GATHER(self.proj(x), 0, dist.group.WORLD)


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.mlp = MLP()

    def forward(self, x):
        return self.mlp(x)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.layers = torch.nn.Sequential(torch.nn.Linear(4, 4), Block())

    def forward(self, x):
        return self.layers(x)


def module_funcol(bug=None):
    """``Net``'s forward gathers inside ``layers.1.mlp``; its backward reduce-scatters there."""
    dist.init_process_group("gloo")
    model = Net()
    loss = model(torch.full((2, 4), float(dist.get_rank()))).square().sum()
    if not _buggy(bug, "backward"):
        loss.backward()
    return {n: p.grad for n, p in model.named_parameters()}


class _CopyToTP(torch.autograd.Function):
    """Megatron's copy into the tensor-parallel region: identity forward, all-reduce of the
    gradient in backward (a ``torch.distributed`` call made by autograd, not by the caller)."""

    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        grad = grad.contiguous()
        dist.all_reduce(grad)
        return grad


class TPLinear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.proj(_CopyToTP.apply(x))


def tp_copy(bug=None, device="cpu", in_a_thread=False):
    """A row of ``TPLinear`` after a layer of the rank's own: the backward all-reduces the
    gradient inside ``1 (TPLinear)``. On CUDA autograd runs it on a device thread of its own;
    ``in_a_thread``: ``backward()`` on a thread the program starts. Either thread's context
    is empty: no rank's. (Called with every argument: a launch that is given fewer arguments
    than the program has parameters passes the rank's ``dist`` first.)"""
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), TPLinear()).to(device)
    loss = model(torch.full((2, 4), float(dist.get_rank()), device=device)).square().sum()
    if not _buggy(bug, "backward"):
        worker = threading.Thread(target=loss.backward) if in_a_thread else None
        if worker is None:
            loss.backward()
        else:
            worker.start()
            worker.join()
    return {n: None if p.grad is None else p.grad.cpu() for n, p in model.named_parameters()}


# -- a compiled function with a functional collective ---------------------------------------
def _scaled_sum(x, group):
    return funcol.all_reduce(x * 2, "sum", group) + 1


def _doubled_gather(x, group):
    return funcol.all_gather_single(x * 2, 0, group)


def compiled_funcol(bug=None):
    """A compiled all-reduce, then a compiled differentiable gather whose backward pass
    reduce-scatters (the compiled backward graph's collective)."""
    dist.init_process_group("gloo")
    r = dist.get_rank()
    step = torch.compile(_scaled_sum, backend="aot_eager")
    calls = 2 if _buggy(bug, "extra") else 0 if _buggy(bug, "skip") else 1
    out = None
    for _ in range(calls):
        out = step(torch.full((3,), float(r)), dist.group.WORLD)
    x = torch.full((3,), float(r), requires_grad=True)
    loss = torch.compile(_doubled_gather, backend="aot_eager")(x, dist.group.WORLD)
    loss = loss.square().sum()
    if not _buggy(bug, "backward"):
        loss.backward()
    return {"sum": out, "grad": x.grad}


# -- pipelining ------------------------------------------------------------------------------
MICROBATCHES = 4


def _stage_layer(i: int) -> torch.nn.Module:
    torch.manual_seed(i)
    return torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh())


def _pipe_data():
    return torch.arange(32.0).reshape(8, 4) / 32, torch.ones(8, 4)


def _pipe_loss(output, target):
    return (output - target).square().sum()


def pipeline(schedule="gpipe", bug=None):
    """One step of a pipeline of 4 stages (``interleaved``: 8, two a rank), 4 microbatches;
    each rank returns its stages' gradients. ``bug="backward"``: rank 2 runs ``eval`` (the
    forward passes alone) while the others run ``step``."""
    from torch.distributed import pipelining as pp
    dist.init_process_group("gloo")
    r = dist.get_rank()
    per_rank = 2 if schedule == "interleaved" else 1
    n = WORLD * per_rank
    mine = [r + WORLD * k for k in range(per_rank)]
    layers = {i: _stage_layer(i) for i in mine}
    stages = [pp.PipelineStage(layers[i], i, n, torch.device("cpu")) for i in mine]
    if schedule == "interleaved":
        sched = pp.ScheduleInterleaved1F1B(stages, MICROBATCHES, loss_fn=_pipe_loss)
    else:
        cls = {"gpipe": pp.ScheduleGPipe, "1f1b": pp.Schedule1F1B}[schedule]
        sched = cls(stages[0], MICROBATCHES, loss_fn=_pipe_loss)
    x, target = _pipe_data()
    args = (x,) if 0 in mine else ()
    kwargs = {"target": target} if n - 1 in mine else {}
    runs = 2 if _buggy(bug, "extra") else 0 if _buggy(bug, "skip") else 1
    for _ in range(runs):
        if _buggy(bug, "backward"):
            sched.eval(*args, **kwargs)
        else:
            sched.step(*args, **kwargs)
    return {i: {k: p.grad for k, p in layers[i].named_parameters()} for i in mine}


def reference_pipeline(schedule="gpipe"):
    n = WORLD * (2 if schedule == "interleaved" else 1)
    layers = [_stage_layer(i) for i in range(n)]
    model = torch.nn.Sequential(*layers)
    x, target = _pipe_data()
    loss = sum(_pipe_loss(model(xb), tb) for xb, tb in
               zip(x.chunk(MICROBATCHES), target.chunk(MICROBATCHES))) / MICROBATCHES
    loss.backward()
    return {i: {k: p.grad for k, p in layers[i].named_parameters()} for i in range(n)}


# -- DTensor tensor parallelism ---------------------------------------------------------------
def dtensor_tp(mesh_shape=(4,), bug=None):
    """A 2-layer MLP, column- then row-parallel on the mesh's ``tp`` dimension (a 2-D mesh:
    ``("dp", "tp")``, each dp replica on its own batch, the loss summed over dp)."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel,
                                                   parallelize_module)
    dist.init_process_group("gloo")
    names = ("tp",) if len(mesh_shape) == 1 else ("dp", "tp")
    mesh = init_device_mesh("cpu", mesh_shape, mesh_dim_names=names)
    model = _mlp()
    if not _buggy(bug, "skip"):
        parallelize_module(model, mesh["tp"], {"0": ColwiseParallel(), "2": RowwiseParallel()})
    dp = mesh["dp"].get_local_rank() if "dp" in names else 0
    x = _batch(dp).requires_grad_()
    passes = 2 if _buggy(bug, "extra") else 1
    for _ in range(passes):
        out = model(x)
    loss = out.square().sum()
    if "dp" in names:
        total = loss.detach().clone()
        dist.all_reduce(total, group=mesh.get_group("dp"))
    if not _buggy(bug, "backward"):
        loss.backward()
    grads = {k: (p.grad.full_tensor() if hasattr(p.grad, "full_tensor") else p.grad)
             for k, p in model.named_parameters() if p.grad is not None}
    return {"out": out.detach(), "grads": grads, "x_grad": x.grad}


def reference_dtensor_tp(dp: int = 0):
    model = _mlp()
    x = _batch(dp).requires_grad_()
    out = model(x)
    out.square().sum().backward()
    return {"out": out.detach(), "grads": {k: p.grad for k, p in model.named_parameters()},
            "x_grad": x.grad}


# -- what the guard saw ------------------------------------------------------------------------
def with_census(dist_, name: str, *args):
    """Runs the program ``name`` and returns its result with the rank's census (iteration,
    kind, label) -> calls: what the guard recorded (trtsim's ``dist``, given to a program
    with ``*args``)."""
    result = globals()[name](*args)
    return {"result": result, "census": dict(dist_.census)}
