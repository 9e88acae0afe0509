"""An unmodified torchrun script as a rank program: every rank runs it as torchrun's worker
would (``trtsim launch``, ``python -m trtsim.torchrun``).

Each rank executes the script's file (or module) with ``__name__ == "__main__"`` in a
namespace of its own, so its module-level code runs once per rank on inproc too, with
``sys.argv`` as ``python script.py args`` gives it and torchrun's variables (``RANK``,
``LOCAL_RANK``, ``WORLD_SIZE``, ``LOCAL_WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``) in the
rank's environment (``rank_environ``). With torch.distributed intercepted, the script's
``init_process_group`` joins the launch's world and its collectives are guarded.

What inproc ranks share, being one process: ``sys.modules`` (a module the script imports is
imported once; ``--rank-local PKG`` gives each rank its own globals of PKG) and
``sys.modules["__main__"]`` (a class defined in the script cannot be pickled by name, as
``all_gather_object`` of such an object needs: put the class in a module the script
imports, or run on gloo, where every rank is a process).
"""

from __future__ import annotations

import builtins
import importlib.util
import os
import runpy
import sys
from dataclasses import dataclass

from .worker_logs import WorkerLogs

# torchrun's per-worker variables, as torch/distributed/elastic/agent/server/api.py sets them
TORCHRUN_VARS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK",
                 "ROLE_RANK", "ROLE_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


class ScriptExit(RuntimeError):
    """The script called ``sys.exit`` with a failing status on a rank."""


@dataclass(frozen=True)
class ScriptTarget:
    """What every rank runs: a script's path or a module's name (``-m``), and its arguments."""

    path: str | None = None
    module: str | None = None
    args: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if (self.path is None) == (self.module is None):
            raise ValueError("give a script or -m MODULE, one of them")
        if not isinstance(self.args, tuple) or not all(isinstance(a, str) for a in self.args):
            raise ValueError(f"args={self.args!r} must be a tuple of strings")
        if self.path is not None:
            if not os.path.isfile(self.path):
                raise ValueError(f"script {self.path!r}: no such file")
            object.__setattr__(self, "path", os.path.abspath(self.path))
        elif self.origin() is None:
            raise ValueError(f"-m {self.module}: no such module")

    def origin(self) -> str | None:
        """The module's file (what ``python -m`` puts in ``sys.argv[0]``), or None."""
        try:
            spec = importlib.util.find_spec(self.module or "")
        except (ImportError, ValueError):
            return None
        if spec is not None and spec.submodule_search_locations is not None:
            try:
                spec = importlib.util.find_spec(f"{self.module}.__main__")
            except ImportError:
                return None
        return spec.origin if spec is not None else None

    @property
    def argv(self) -> list[str]:
        """``sys.argv`` as ``python script.py args`` (``python -m module args``) has it."""
        return [self.path or self.origin() or "", *self.args]

    @property
    def name(self) -> str:
        """How reports and notes name it: the script's path, or ``-m module``."""
        return self.path if self.path is not None else f"-m {self.module}"

    def run(self) -> None:
        """Run it once as ``__main__``, in a namespace of its own (``sys.modules["__main__"]``
        is left as it is: ranks that share the process would race for it)."""
        if self.module is not None:
            runpy.run_module(self.module, run_name="__main__", alter_sys=False)
            return
        with open(self.path, "rb") as f:                      # type: ignore[arg-type]
            code = compile(f.read(), self.path, "exec")       # type: ignore[arg-type]
        exec(code, {"__name__": "__main__", "__file__": self.path, "__doc__": None,  # noqa: S102
                    "__builtins__": builtins, "__spec__": None, "__package__": None,
                    "__loader__": None, "__cached__": None})


@dataclass(frozen=True)
class ScriptEnd:
    """What a rank's run of the script brings back: the backend its ``init_process_group``
    asked for (None: it made no default group)."""

    backend_asked: str | None


@dataclass(frozen=True)
class ScriptProgram:
    """The rank program of a script launch: ``program(dist)`` on every rank (picklable, for
    the process backends). ``world`` ranks in all, ``nproc_per_node`` of them a node (local
    ranks); ``master`` is the ``MASTER_ADDR``/``MASTER_PORT`` pair every rank sees;
    ``logs``: where each local rank's stdout and stderr go (``worker_logs``; None: the
    console)."""

    target: ScriptTarget
    world: int
    nproc_per_node: int
    master: tuple[str, int]
    backend: str = "inproc"
    logs: WorkerLogs | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.nproc_per_node <= self.world:
            raise ValueError(f"nproc_per_node={self.nproc_per_node!r}: 1 to the world's "
                             f"{self.world} ranks")

    def variables(self, rank: int) -> dict[str, str]:
        """torchrun's variables of global rank ``rank``."""
        world, local = self.world, self.nproc_per_node
        own = {} if self.logs is None else {      # where torchrun's @record writes
            "TORCHELASTIC_ERROR_FILE": self.logs.ranks[rank % local].error_file}
        return own | {
            "RANK": str(rank), "LOCAL_RANK": str(rank % local), "WORLD_SIZE": str(world),
            "LOCAL_WORLD_SIZE": str(local), "GROUP_RANK": str(rank // local),
            "ROLE_RANK": str(rank), "ROLE_WORLD_SIZE": str(world),
            "MASTER_ADDR": self.master[0], "MASTER_PORT": str(self.master[1])}

    def __call__(self, dist) -> ScriptEnd:
        from .rank_environ import set_rank_vars
        set_rank_vars(self.variables(dist.global_rank))
        if self.logs is not None:
            self._route(dist.global_rank % self.nproc_per_node)
        first = os.path.dirname(self.target.path) if self.target.path else os.getcwd()
        if first not in sys.path:                # a process rank: as python script.py has it
            sys.path.insert(0, first)
        sys.argv = self.target.argv              # the same on every rank: one list will do
        try:
            try:
                self.target.run()
            finally:
                # a process rank ends with os._exit: what the script printed is written now
                sys.stdout.flush()
                sys.stderr.flush()
        except SystemExit as exc:
            if exc.code not in (None, 0):
                raise ScriptExit(f"{self.target.name} called sys.exit({exc.code!r})") from None
        except Exception as exc:
            # the report's traceback starts in the script: runpy's frames are no news
            raise exc.with_traceback(_from_script(exc.__traceback__, self.target.argv[0]))
        asked = _backend_asked()
        if asked is not None and asked != self.backend:
            dist.note(_backend_note(self.backend, asked))
        return ScriptEnd(asked)

    def _route(self, local_rank: int) -> None:
        """This rank's stdout and stderr to its log files (``worker_streams``)."""
        from .worker_streams import redirect_process, route_inproc
        if self.backend == "inproc":
            route_inproc(local_rank)
        else:
            redirect_process(self.logs.ranks[local_rank])      # type: ignore[union-attr]


def _from_script(tb, script: str):
    """The traceback from the script's own first frame (all of it when none is the script's)."""
    probe = tb
    while probe is not None and probe.tb_frame.f_code.co_filename != script:
        probe = probe.tb_next
    return probe or tb


def _backend_asked() -> str | None:
    """The backend the script's ``init_process_group`` named on this rank, if it called it."""
    import torch.distributed as tdist
    from ..intercept.torch.groups import state
    try:
        asked = state("script launch").backend_asked(tdist.GroupMember.WORLD)
    except RuntimeError:                                   # torch is not intercepted
        return None
    return None if asked is None else str(asked)


def _backend_note(backend: str, asked: str) -> str:
    """What ran in place of the backend the script asked for."""
    if backend == "inproc":
        return (f"the script asked for {asked!r}; inproc ran its collectives in this process "
                "(--backend gloo or nccl: a process per rank)")
    return (f"the script asked for {asked!r}; its collectives ran on {backend} "
            f"(get_backend() answers {asked!r})")
