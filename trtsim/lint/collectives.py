"""Which calls are collectives, and on which group.

Names, not types: the lint reads source it does not import. A call is a collective when its
name is one of the collective names of TensorRT-LLM's ``Distributed``, ``torch.distributed``
and its functional collectives, mpi4py's communicators, or vLLM's and SGLang's
``GroupCoordinator`` (and their module-level helpers), or one a project adds under
``[tool.trtsim.lint] collectives`` in its pyproject.toml. The short names that other libraries
use too (``broadcast``, ``gather``, ``scatter``, ``reduce``) count only on a receiver that reads
as a communicator (``dist``, a group, a comm, a process group). Point-to-point calls are not
collectives: their asymmetry is by design.

The group comes from the op's prefix (``tp_allgather``), the receiver (``get_dp_group()``,
``self.tp_group``), or the ``group=`` argument; a variable there is judged for every group its
assignments name; nothing known: the world.
"""

from __future__ import annotations

import ast
import re

NAMES = frozenset("""
all_reduce all_gather all_gather_into_tensor all_gather_object all_gather_coalesced
all_reduce_coalesced all_to_all all_to_all_single reduce_scatter reduce_scatter_tensor
reduce_scatterv all_gatherv broadcast_object broadcast_object_list broadcast_tensor_dict
gather_object scatter_object_list monitored_barrier barrier new_group cpu_all_reduce_
all_gather_tensor all_gather_tensor_autograd all_reduce_inplace reduce_scatter_tensor_autograd
allgather allreduce tp_allgather pp_allgather cp_allgather tp_cp_allgather tp_broadcast
pp_broadcast cp_broadcast tp_gather pp_gather tp_allgather_int64 tp_allreduce
tensor_model_parallel_all_reduce tensor_model_parallel_all_gather
tensor_model_parallel_reduce_scatter tensor_model_parallel_gather
Allreduce Allgather Allgatherv Alltoall Alltoallv Bcast Barrier Reduce Reduce_scatter
Reduce_scatter_block Gather Gatherv Scatter Scatterv Scan Exscan Split Iallreduce Iallgather
Ibcast Ibarrier bcast alltoall allgatherv
""".split())
AMBIGUOUS = frozenset({"broadcast", "gather", "scatter", "reduce"})
_COMM_WORDS = re.compile(r"(dist|group|comm|pg|coordinator|mpi|\bc10d|_tp\b|_pp\b|_dp\b)",
                         re.IGNORECASE)
# Group words, checked in this order (attention TP before TP).
_GROUP_WORDS = (("attn_tp", re.compile(r"(attn|attention)_?tp", re.I)),
                ("tp", re.compile(r"(^|[^a-z])(tp|tensor_model_parallel|tensor)([^a-z]|$)", re.I)),
                ("pp", re.compile(r"(^|[^a-z])(pp|pipeline)([^a-z]|$)", re.I)),
                ("dp", re.compile(r"(^|[^a-z])(dp|data_parallel)([^a-z]|$)", re.I)),
                ("ep", re.compile(r"(^|[^a-z])(ep|expert|moe)([^a-z]|$)", re.I)),
                ("cp", re.compile(r"(^|[^a-z])(cp|context_parallel|pcp|dcp)([^a-z]|$)", re.I)),
                ("world", re.compile(r"world", re.I)))
_PREFIX = re.compile(r"^(tp|pp|cp|dp|ep)_")
GROUP_KEYWORDS = ("group", "process_group", "pg", "comm")


def call_name(call: ast.Call) -> str | None:
    """The called name: ``f`` of ``f(...)`` or of ``x.y.f(...)``."""
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def receiver(call: ast.Call) -> ast.expr | None:
    """``x.y`` of ``x.y.f(...)``; None for a bare name."""
    return call.func.value if isinstance(call.func, ast.Attribute) else None


def is_collective(call: ast.Call, extra: frozenset, text) -> str | None:
    """The op name when ``call`` is a collective (``text`` renders a node), else None."""
    name = call_name(call)
    if name is None:
        return None
    if name in NAMES or name in extra:
        return name
    base = receiver(call)
    if base is not None and text(base) + "." + name in extra:
        return name
    if name in AMBIGUOUS and base is not None and _COMM_WORDS.search(text(base)):
        return name
    return None


def group_of_text(text: str) -> str | None:
    """The group a piece of source names (``get_tp_group()`` -> tp), or None."""
    for group, pattern in _GROUP_WORDS:
        if pattern.search(text):
            return group
    return None


def groups_of(call: ast.Call, op: str, text, alternatives) -> tuple[tuple[str, ...], str]:
    """(the groups the collective may run on, how that was decided). ``alternatives(name)``
    gives the source texts a local variable was assigned, for ``group=g``."""
    prefix = _PREFIX.match(op)
    if prefix:
        return (prefix.group(1),), f"the op's prefix {prefix.group(0)!r}"
    if op.startswith("tensor_model_parallel_"):
        return ("tp",), "the op's name"
    for kw in call.keywords:
        if kw.arg in GROUP_KEYWORDS:
            return _judge(kw.value, text, alternatives, f"{kw.arg}=")
    if op in ("all_reduce", "broadcast", "all_gather", "reduce", "barrier") and \
            len(call.args) >= 3 and receiver(call) is not None and \
            _COMM_WORDS.search(text(receiver(call))) and not _is_self_group(call, text):
        return _judge(call.args[2 if op != "barrier" else 0], text, alternatives, "argument ")
    base = receiver(call)
    if base is not None:
        found = group_of_text(text(base))
        if found:
            return (found,), f"the receiver {text(base)!r}"
    name = re.sub(r"^_+", "", op)
    found = group_of_text(name) if name not in NAMES else None
    if found:
        return (found,), "the op's name"
    return ("world",), "no group named: the world"


def _is_self_group(call: ast.Call, text) -> bool:
    base = receiver(call)
    return base is not None and text(base) == "self"


def _judge(node: ast.expr, text, alternatives, how: str) -> tuple[tuple[str, ...], str]:
    source = text(node)
    texts = alternatives(node.id) if isinstance(node, ast.Name) else \
        alternatives(source) if isinstance(node, ast.Attribute) else ()
    found = {g for g in (group_of_text(t) for t in (source, *texts)) if g}
    if found:
        return tuple(sorted(found)), f"{how}{source}"
    return ("world",), f"{how}{source} (not known: the world)"
