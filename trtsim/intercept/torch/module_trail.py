"""Which module's forward made a backward collective: the site of a collective that autograd
runs names the module (``tests/train.py:42 in main, backward of layers.1.mlp (MLP)``).

A backward collective runs inside an autograd node (a functional collective's registered
formula, DTensor's redistribution, FSDP2's post-backward function, a hook on a module's
output), and that node was made during some module's forward: the module whose forward made
the matching forward collective, or whose forward made the node that communicates only in
backward (DTensor's column-parallel input: nothing in forward, an all-reduce in backward).
torch numbers the nodes a thread makes (its autograd sequence number, increasing), so a
module's forward covers the numbers ``[start, end)`` read as it enters and leaves. While a
launch intercepts torch, global forward hooks keep each rank's stack of modules in forward
and the spans of those that made nodes (``ModuleTrail``); a collective that runs inside an
autograd node is named by the innermost span holding that node's number. The global hooks
run before a module's own (``parallelize_module``'s, FSDP2's), so nodes made by a module's
own pre-hooks count as its own, those made by its own post-hooks as its parent's. The
numbers are per thread and only the rank's own spans are searched: a node of this rank lies
in one of its spans exactly when this rank made it inside that module, whatever other ranks
of the thread (inproc greenlets) made meanwhile.

On CPU a backward collective runs on the thread that called ``backward()``, so the site is
that line and the module is added; on CUDA autograd runs it on a thread of its own with no
user frame, and the module alone names the site (``comm.origin.OriginFinder.annotate``).
"""

from __future__ import annotations

import bisect
from typing import Callable

import torch
import torch.nn as nn

from ...comm.current import current
from ..rank_api import RankAPI

KEPT = 16384          # spans kept per rank (the oldest half goes when full)


class ModuleTrail:
    """One rank's modules in forward and the spans of the forwards that made nodes."""

    def __init__(self):
        self._stack: list[tuple[nn.Module, int]] = []    # (module, start), outermost first
        self._ends: list[int] = []       # kept spans, by end (a child ends before its parent)
        # (start, the outermost module in forward then, the module), in the order of _ends:
        # named only when a backward collective asks (most spans are never asked about)
        self._spans: list[tuple[int, nn.Module, nn.Module]] = []
        self._names: dict[int, tuple[nn.Module, dict[int, str]]] = {}   # id(root) -> names

    def enter(self, module: nn.Module) -> None:
        self._stack.append((module, torch._C._autograd._get_sequence_nr()))

    def leave(self, module: nn.Module) -> None:
        stack = self._stack
        depth = len(stack)
        while depth and stack[depth - 1][0] is not module:
            depth -= 1
        if not depth:
            return                     # a forward entered before the launch's hooks
        start = stack[depth - 1][1]
        del stack[depth - 1:]          # and any inner one whose leaving was never seen
        end = torch._C._autograd._get_sequence_nr()
        if end > start:                # it made autograd nodes: a backward can run in one
            if len(self._ends) >= KEPT:
                del self._ends[:KEPT // 2], self._spans[:KEPT // 2]
            self._ends.append(end)
            self._spans.append((start, stack[0][0] if stack else module, module))

    def note(self) -> str | None:
        """What a collective's site adds: inside an autograd node, ``backward of NAME
        (Class)`` of the module whose forward made that node; elsewhere nothing."""
        node = torch._C._current_autograd_node()
        if node is None:
            return None
        seq = node._sequence_nr()
        spans = self._spans
        # spans ending after the node, in order: the first that began at or before it is the
        # innermost holding it (an inner span ends before its outer one)
        for i in range(bisect.bisect_right(self._ends, seq), len(spans)):
            start, root, module = spans[i]
            if start <= seq:
                return f"backward of {self._name(root, module)}"
        return None

    def _name(self, root: nn.Module, module: nn.Module) -> str:
        """``layers.1.mlp (MLP)``: the module's name in the outermost module in forward, or
        its class alone when it is that module (or not found in it)."""
        cls = type(module).__name__
        if module is root:
            return cls
        known = self._names.get(id(root))
        if known is None or known[0] is not root or id(module) not in known[1]:
            known = self._names[id(root)] = (root, {id(m): n for n, m in root.named_modules()})
        name = known[1].get(id(module))
        return f"{name} ({cls})" if name else cls


def _trail() -> ModuleTrail | None:
    if torch.compiler.is_compiling():      # dynamo traces the hook: a no-op in the graph
        return None
    dist = current()
    return None if dist is None else RankAPI.of(dist).extension(ModuleTrail)


def _enter(module, _args) -> None:
    trail = _trail()
    if trail is not None:
        trail.enter(module)


def _leave(module, _args, _output) -> None:
    trail = _trail()
    if trail is not None:
        trail.leave(module)


def attach(api: RankAPI) -> ModuleTrail:
    """Give a rank its trail: its calls' sites ask it (``OriginFinder.annotate``)."""
    trail = ModuleTrail()
    api.attach(trail)
    api.dist.origins.annotate = trail.note
    return trail


def install() -> list[Callable[[], None]]:
    """The global forward hooks, for the length of the install; what removes them."""
    pre = nn.modules.module.register_module_forward_pre_hook(_enter)
    post = nn.modules.module.register_module_forward_hook(_leave, always_call=True)
    return [pre.remove, post.remove]
