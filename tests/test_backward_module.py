"""A backward collective names the module whose forward made it: its site is the user's
``backward()`` line (CPU: autograd runs on the caller's thread) with ``backward of NAME
(Class)``, NAME the module's qualified name in the model (``layers.1.mlp``); where autograd
runs on a thread of its own (CUDA), no user frame exists and the module alone is the site."""

import _thread
import inspect
import os
import threading

import pytest
import torch

from tests import torchlib_programs as P
from tests.torchlib_checks import (BACKENDS, WORLD, launch, names_rank_and_line, report_of,
                                   reported_alike, same)
from trtsim.comm.origin import OriginFinder
from trtsim.intercept.torch.module_trail import ModuleTrail

MODULE = "backward of layers.1.mlp (MLP)"


def _backward_line() -> int:
    lines, first = inspect.getsourcelines(P.module_funcol)
    return first + next(i for i, text in enumerate(lines) if "loss.backward()" in text)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_backward_only_skip_names_the_module_and_the_backward_line(backend):
    err = reported_alike(P.module_funcol, backend, P.BUGGY_RANK["backward"], "backward")
    site = f"tests/{P.__name__.rsplit('.', 1)[-1]}.py:{_backward_line()} in module_funcol"
    assert {c.callsite for c in err.calls.values()} == {f"{site}, {MODULE}"}, str(err)
    assert f"at {site}, {MODULE}" in str(err)


def test_the_legal_program_has_the_gradients_of_one_process():
    results = launch(P.module_funcol, "inproc", None)
    for r in range(WORLD):
        model = P.Net()
        local = model.layers[1].mlp.proj(model.layers[0](torch.full((2, 4), float(r))))
        # every rank's loss holds rank r's rows once: the gather's adjoint sums WORLD of them
        (WORLD * local.square().sum()).backward()
        want = {n: p.grad for n, p in model.named_parameters()}
        assert same(results[r], want, atol=1e-4), (r, results[r], want)


class _Tap(torch.autograd.Function):
    """Identity whose backward asks the trail, as a backward collective's site does."""

    seen: list = []

    @staticmethod
    def forward(ctx, x, trail):
        ctx.trail = trail
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        _Tap.seen.append(ctx.trail.note())
        return grad, None


def test_the_innermost_module_whose_forward_made_the_node_is_named():
    trail, seen = ModuleTrail(), _Tap.seen
    seen.clear()
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Sequential(torch.nn.Tanh()))
    x = torch.ones(1, 2, requires_grad=True)

    trail.enter(model)                 # what the global forward hooks do around forwards
    h = _Tap.apply(x * 2, trail)                         # a node of the root's own
    trail.enter(model[1])
    h = _Tap.apply(model[1](model[0](h)), trail)         # a node of the child's forward
    trail.leave(model[1])
    trail.leave(model)
    assert trail.note() is None                        # no autograd node runs: forward
    h.sum().backward()
    assert seen == ["backward of 1 (Sequential)", "backward of Sequential"], seen


def test_with_no_user_frame_the_module_alone_is_the_site():
    finder = OriginFinder(annotate=lambda: MODULE)
    found, done = [], threading.Event()
    # A thread the runtime starts has no Python frame below its target (as autograd's own
    # thread on CUDA); the target's frame is torch's, which is never a site.
    torch_file = os.path.join(os.path.dirname(torch.__file__), "autograd", "engine_stub.py")
    scope = {"finder": finder, "found": found, "done": done}
    exec(compile("def target():\n    found.append(finder.find(0))\n    done.set()\n",  # noqa: S102
                 torch_file, "exec"), scope)
    _thread.start_new_thread(scope["target"], ())
    assert done.wait(30)
    assert found[0].callsite == MODULE, found


def _tp_copy_site() -> str:
    lines, first = inspect.getsourcelines(P._CopyToTP.backward)
    line = first + next(i for i, text in enumerate(lines) if "dist.all_reduce" in text)
    return f"tests/{P.__name__.rsplit('.', 1)[-1]}.py:{line} in backward, backward of 1 (TPLinear)"


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_a_collective_in_an_autograd_functions_backward_is_the_ranks(device):
    # on CUDA, autograd runs the backward on a device thread whose context is empty: the
    # process is one rank, so that thread's all-reduce is the rank's, guarded and sited
    legal = launch(P.tp_copy, "gloo", None, device, False)
    assert same(legal, launch(P.tp_copy, "inproc", None, "cpu", False), atol=1e-4)
    err = report_of(P.tp_copy, "gloo", "backward", device, False)
    assert f"rank {P.BUGGY_RANK['backward']}" in str(err), str(err)
    assert {c.callsite for c in err.calls.values()} == {_tp_copy_site()}, str(err)


def test_a_thread_the_program_starts_in_a_process_rank_works_for_that_rank():
    # the same empty context without a GPU: backward() on a thread of the program's own
    legal = launch(P.tp_copy, "gloo", None, "cpu", True)
    assert same(legal, launch(P.tp_copy, "gloo", None, "cpu", False))
    err = report_of(P.tp_copy, "gloo", "backward", "cpu", True)
    names_rank_and_line(err, P.BUGGY_RANK["backward"])
    assert {c.callsite for c in err.calls.values()} == {_tp_copy_site()}, str(err)
