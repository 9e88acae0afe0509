"""The reads that start a rank-local value, and the reads that are uniform by kind.

Rank identities are names (``rank``, ``tp_rank``, ``local_rank``, ``rank_in_group``,
``is_first_rank``; ``get_rank()`` and ``get_*_rank()``; ``LOCAL_RANK``/``RANK`` from the
environment). Everything else rank-local is recognised by the kind of read: a clock, a random
generator, the file system, the device's memory. Uniform by kind: constants, group sizes
(``world_size``, ``*_size``, ``get_world_size()``), and configuration (a chain through
``config``, ``mapping``, ``args``, ``envs``, or a parameter annotated with such a type) -
every rank of a deployment is started with the same configuration.
"""

from __future__ import annotations

import ast
import functools
import re

from .origins import EMPTY, EVERY, Origin, Taint, origin

_RANK = re.compile(r"^(rank|global_rank|local_rank|rank_in_group|my_rank|node_rank|"
                   r"is_first_rank|is_last_rank|is_driver_worker|"
                   r"(tp|pp|dp|cp|ep|attn_tp|attention_tp|moe_tp|moe_ep|pcp|dcp|"
                   r"tensor_model_parallel|pipeline_model_parallel|data_parallel)_rank"
                   r"(_in_group)?|(get_)?[a-z_]*_rank|get_rank)$")
_NOT_RANK = re.compile(r"(first|last|root|src|dst|next|prev|peer|target|world|source|"
                       r"leader|driver|master|owner)_rank$")
_RANK_ENV = re.compile(r"^(LOCAL_RANK|RANK|.*_RANK)$")
_SIZE = re.compile(r"^(world_size|group_size|num_ranks|size|world|"
                   r"get_[a-z_]*world_size|[a-z_]*parallel_size|"
                   r"(tp|pp|dp|cp|ep|pcp|dcp|moe_tp|moe_ep|attn_tp|attention_tp|attn_dp|"
                   r"tensor_model_parallel|pipeline_model_parallel|data_parallel)_size)$")
_CONFIG = re.compile(r"(^|_)(config|cfg|mapping|args|envs|settings|options|spec)$", re.I)
_CONFIG_TYPE = re.compile(r"(Config|Mapping|Args|Settings|Spec)\b")
_CLOCK = re.compile(r"^(time\.(time|perf_counter|monotonic|process_time|thread_time)(_ns)?|"
                    r"datetime(\.datetime)?\.(now|utcnow|today)|time\.time_ns)$")
_RANDOM = re.compile(r"^((np|numpy|torch\.cuda|torch)\.random\.|random\.|secrets\.|uuid\.uuid|"
                     r"torch\.(rand|randn|randint|randperm|multinomial|bernoulli|normal)\b|"
                     r"os\.urandom)")
_FILE = re.compile(r"^(open|os\.path\.(exists|isfile|isdir|getsize|getmtime)|os\.(listdir|"
                   r"stat|scandir|access)|glob\.glob|shutil\.disk_usage|socket\.gethostname|"
                   r"os\.getpid|platform\.node)$|\.(exists|is_file|is_dir|read_text|read_bytes)$")
_MEMORY = re.compile(r"(mem_get_info|memory_allocated|memory_reserved|max_memory_allocated|"
                     r"virtual_memory|memory_stats|get_free_memory|free_memory)$")
_ENVIRON = re.compile(r"^os\.(environ(\.get)?|getenv)$")


# A rank identity of one parallel dimension differs only on the groups that span that
# dimension: every TP rank of one pipeline stage has the same ``pp_rank``.
_DIMENSIONS = (
    (re.compile(r"(^|_)(pp|pipeline_model_parallel|first_pp|last_pp)_rank|is_(first|last)"
                r"_pp_rank"), frozenset({"pp", "world", "other"})),
    (re.compile(r"(^|_)(dcp|pcp|cp|context_parallel)_rank"),
     frozenset({"cp", "tp", "world", "other"})),
    (re.compile(r"(^|_)(attn_tp|attention_tp)_rank"),
     frozenset({"attn_tp", "tp", "world", "ep", "other"})),
    (re.compile(r"(^|_)(tp|tensor_model_parallel|moe_tp)_rank"),
     frozenset({"tp", "attn_tp", "world", "ep", "other"})),
    (re.compile(r"(^|_)(dp|data_parallel|attn_dp|attention_dp)_rank"),
     frozenset({"dp", "tp", "world", "ep", "other"})),
    (re.compile(r"(^|_)(ep|moe_ep|expert_parallel)_rank"),
     frozenset({"ep", "tp", "dp", "world", "other"})))


@functools.lru_cache(maxsize=4096)
def rank_groups(name: str) -> frozenset:
    """The groups on which a rank identity differs (every group for a rank of no named
    dimension: ``rank``, ``local_rank``, ``rank_in_group``)."""
    for pattern, groups in _DIMENSIONS:
        if pattern.search(name):
            return groups
    return EVERY


def rank_origin(name: str, what: str, site: str) -> Taint:
    """The taint of reading a rank identity."""
    return frozenset({Origin("rank", what, site, rank_groups(name))})


@functools.lru_cache(maxsize=65536)
def rank_name(name: str) -> bool:
    """Whether an identifier names the rank itself (never a peer's or a group's)."""
    return bool(_RANK.match(name)) and (name.startswith("is_") or not _NOT_RANK.search(name))


_OPTION = re.compile(r"^(max|min)_[a-z0-9_]+$|(^|_)(group|groups|ranks|backend|timeout|device|"
                     r"dtype|comm|communicator|coordinator|pg|store|src|dst|root|op|"
                     r"name|prefix|mode|layout)$")


def option_name(name: str) -> bool:
    """A parameter that names a setting the deployment passes every rank alike: a limit
    (``max_model_len``), a group or communicator handle (the same object on its members),
    the ranks that define a group, a backend, a root, an op, a mode."""
    return bool(_OPTION.search(name)) or uniform_name(name)


@functools.lru_cache(maxsize=65536)
def uniform_name(name: str) -> bool:
    """Sizes and configuration holders: uniform by kind."""
    return bool(_SIZE.match(name) or _CONFIG.search(name) or name.isupper())


def config_annotation(annotation: ast.expr | None, text) -> bool:
    """Whether a parameter's annotation names a configuration type."""
    return annotation is not None and bool(_CONFIG_TYPE.search(text(annotation)))


def call_origin(func_text: str, name: str, call: ast.Call, site: str, text) -> Taint | None:
    """The taint a call's result starts with by its kind (rank identity, clock, random, file,
    memory); ``EMPTY`` for a size; None when the kind says nothing."""
    kind = _call_kind(func_text, name, bool(call.args))
    if kind is None or kind == "size":
        return None if kind is None else EMPTY
    if kind == "rank":
        return rank_origin(name, f"{func_text}()", site)
    if kind == "environ":
        return environ_origin(call.args[0], func_text, site, text)
    return origin(kind, f"{func_text}()", site)


@functools.lru_cache(maxsize=65536)
def _call_kind(func_text: str, name: str, has_args: bool) -> str | None:
    """What ``call_origin`` makes of a callee, by its text alone (the first rule that holds)."""
    if _SIZE.match(name) or name in ("get_world_size", "device_count"):
        return "size"
    if rank_name(name):
        return "rank"
    for kind, pattern in (("clock", _CLOCK.match), ("random", _RANDOM.match),
                          ("file", _FILE.search)):
        if pattern(func_text):
            return kind
    if _MEMORY.search(name):
        return "memory"
    if _ENVIRON.match(func_text) and has_args:
        return "environ"
    return None


def environ_origin(key: ast.expr, func_text: str, site: str, text) -> Taint:
    """A read of the environment: the rank's identity for ``*RANK``, else configuration."""
    if isinstance(key, ast.Constant) and isinstance(key.value, str) and \
            _RANK_ENV.match(key.value):
        return origin("rank", f"{func_text}[{key.value!r}]", site)
    return EMPTY


_ONE = re.compile(r"(first|last|driver|leader|master)")


def selects_one(test: ast.expr, outcome: bool | None = None, group: str | None = None) -> bool:
    """Whether a test splits one member from the others (``rank == src``, ``is_last_rank``,
    their negations): with ``outcome``, whether that outcome holds on one member of ``group``
    only; without, whether either outcome does."""
    if outcome is None:
        return selects_one(test, True, group) or selects_one(test, False, group)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return selects_one(test.operand, not outcome, group)
    if isinstance(test, ast.BoolOp):
        return isinstance(test.op, ast.And) == outcome and \
            any(selects_one(v, outcome, group) for v in test.values)
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and \
            isinstance(test.ops[0], (ast.Eq, ast.NotEq)):
        wanted = isinstance(test.ops[0], ast.Eq)
        return outcome == wanted and any(_identity_on(s, group)
                                         for s in (test.left, test.comparators[0]))
    return outcome and bool(_ONE.search(_last_name(test))) and _identity_on(test, group)


def _last_name(node: ast.expr) -> str:
    while isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _identity_on(node: ast.expr, group: str | None) -> bool:
    name = _last_name(node)
    return bool(name) and rank_name(name) and \
        (group is None or group in rank_groups(name) | {"world"})
