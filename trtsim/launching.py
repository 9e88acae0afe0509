"""launch(): run one rank program on every rank of a layout, collect results, raise reports.

The public entry point. It composes the backends of ``comm`` with the default price list of
the virtual clock, taken from the performance model's measured host-gather cost.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Callable

from .guard.lockstep import summarize
from .comm.flip_aim import FlipAim
from .comm.latent_gate import LatentGate
from .backends.counterexample import load_flip, write_launch_flip, written_flips
from .backends.gate_flip import explain_flip, flip_all
from .comm.launch_config import LaunchConfig
from .backends.run_ranks import run_ranks
from .backends.external.torchrun import RAISES
from .layout.places import InstanceLayout
from .layout.topology import Deployment, InstanceSpec, topology
from .perf.comm_cost import HOST_GATHER_MEASURED
from .timeline.clock import ClockModel

NODE_CORES = 64      # host cores of a serving node: its ranks' gathers are not oversubscribed


def default_clock_model() -> ClockModel:
    """What calls cost in virtual time unless a caller says otherwise."""
    return ClockModel(host_gather=replace(HOST_GATHER_MEASURED, cores=NODE_CORES))


class LaunchResults(list):
    """``results[r]`` is global rank r's return value. ``divergence`` lists the legal
    cross-group divergence strict mode saw (what a lockstep assumption would trip over), as
    ``RunResult.divergence`` does; ``notes`` what the backend chose and why; ``latent`` the
    latent gates (``gates="observe"``; with ``"flip"``, those whose flip gave a report) and
    ``absorbed`` the gates whose flip gave none."""

    def __init__(self, results, divergence: list[dict], notes: list[str],
                 latent: list | None = None, absorbed: list | None = None):
        super().__init__(results)
        self.divergence = divergence
        self.notes = notes
        self._latent = list(latent or [])
        self._absorbed = list(absorbed or [])

    @property
    def latent(self) -> list:
        """The latent gates (``trtsim.LatentGate``): empty with ``gates="off"``."""
        return self._latent

    @property
    def absorbed(self) -> list:
        """With ``gates="flip"``: the latent gates whose flip gave no report."""
        return self._absorbed


class WithoutDist:
    """A program that takes no ``dist`` (it finds its rank through the intercepted APIs)."""

    def __init__(self, program: Callable):
        self.program = program

    def __call__(self, dist, *args):
        return self.program(*args)


def _takes_no_dist(prog: Callable, args: tuple) -> bool:
    import inspect
    try:
        params = inspect.signature(prog).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    varargs = any(p.kind == p.VAR_POSITIONAL for p in params)
    return not varargs and len(positional) == len(args)


def check_call(prog, args, attention_dp) -> None:
    """What only ``launch`` takes, checked before anything is built: ``prog`` a callable,
    ``args`` a tuple (a string or a list would be spread into arguments), flags bools."""
    if not callable(prog):
        raise ValueError(f"prog={prog!r} must be callable: the rank program, prog(dist, *args)")
    if not isinstance(args, tuple):
        raise ValueError(f"args={args!r} must be a tuple of the program's arguments "
                         f"(one argument x: args=(x,))")
    if not isinstance(attention_dp, bool):
        raise ValueError(f"attention_dp={attention_dp!r} must be a bool")


def instances_of(deployment: "str | Deployment | None", tp: int, pp: int, cp: int,
                 attention_dp: bool) -> list[InstanceLayout]:
    """The instances a launch runs: the deployment's ctx then gen, or one unnamed instance."""
    if deployment is None:
        spec = InstanceSpec(tp_size=tp, pp_size=pp, cp_size=cp, enable_attention_dp=attention_dp,
                            num_layers=max(pp, 1))
        return [InstanceLayout("", "", spec)]
    if (tp, pp, cp, attention_dp) != (1, 1, 1, False):
        raise ValueError("launch: give tp/pp/cp/attention_dp or a deployment, not both")
    dep = topology(deployment) if isinstance(deployment, str) else deployment
    if not isinstance(dep, Deployment):
        raise ValueError(f"deployment={deployment!r} must be a topology id or a Deployment")
    return [InstanceLayout("ctx", "ctx", dep.ctx), InstanceLayout("gen", "gen", dep.gen)]


def _aim_of(flip, gates: str) -> FlipAim | None:
    """``launch``'s ``flip``: a flip file's aim, an aim as is, or None."""
    if flip is None:
        return None
    if gates != "flip":
        raise ValueError(f"flip={flip!r} replays one flip: give gates='flip' with it")
    if isinstance(flip, FlipAim):
        return flip
    if not isinstance(flip, (str, os.PathLike)):
        raise ValueError(f"flip={flip!r} must be a file launch(gates='flip') wrote, or a "
                         "FlipAim")
    return load_flip(os.fspath(flip))


def launch(prog: Callable, tp: int = 1, pp: int = 1, cp: int = 1, attention_dp: bool = False,
           backend: str = "inproc", args: tuple = (), timeout: float = 60.0,
           guard: str = "strict", seed: int = 0, *, deployment: "str | Deployment | None" = None,
           iteration_marker: str | None = None, wrappers: tuple[str, ...] = (),
           intercept: tuple[str, ...] = (), log_dir: str | None = None,
           rank_local: tuple[str, ...] = (), gates: str = "off",
           gates_in: tuple[str, ...] = (), flip: "str | FlipAim | None" = None,
           out_dir: str | None = None) -> LaunchResults:
    """Run ``prog(dist, *args)`` on every rank of a tp x pp x cp instance, or of both
    instances of a ``deployment`` (a topology id or a Deployment: ctx ranks first, then gen;
    ``dist.role`` says which, ``trtsim.Peer`` reaches the other instance).

    ``iteration_marker="pkg.module:Class.method"``: each entry of that function on a rank
    starts the rank's next iteration (for code that never calls ``set_iteration``).
    ``wrappers``: modules whose functions only forward to collectives (their frames are no
    part of a call's purpose); ``@trtsim.collective_wrapper`` declares one function.
    ``intercept=("torch", "mpi")``: unmodified code in the ranks that calls torch.distributed
    or mpi4py's MPI is guarded like Distributed calls; a ``prog`` that takes no argument is
    then called as ``prog(*args)``, as a torchrun script's main would be.
    ``log_dir``: on the process backends and under torchrun every rank writes its call log
    there (on exit, on timeout, on SIGTERM) for ``trtsim analyze`` after a hang.
    ``rank_local=("vllm",)``: on inproc, where every rank shares this process, those
    modules' globals are each rank's own (frameworks keep their process groups there); the
    process backends give every rank its own process anyway.
    ``gates="observe"``: list in ``results.latent`` each condition that decided whether a
    group's members entered a collective and whose operands differ between them while its
    outcome agrees (the gate one input away from a hang); ``gates="flip"``: then replay the
    launch once per gate with its outcome flipped on one member, keeping in ``latent`` the
    gates whose flip gave a report (``LatentGate.flip``) and in ``absorbed`` the rest.
    ``gates_in=("vllm",)``: packages whose gates a flip controls, besides the program's module.
    Each flip that gave a report is written as a counterexample file into ``out_dir`` (default:
    the user's cache folder, ``~/.cache/trtsim/flips``), named by ``LatentGate.counterexample``;
    ``flip=FILE`` (with ``gates="flip"`` and the launch's program, layout and arguments) replays
    that one flip and raises its report.

    Returns ``results`` with ``results[r]`` global rank r's return value, or raises the report:
    CollectiveMismatch, CollectiveDeadlock, RankFailed or CollectiveTimeout. Under torchrun
    (``backend="torchrun"``, or torchrun detected) every process is one rank and raises the
    report (a rank whose program raised: ``RankFailed``), so a caller can catch it; where
    it is not caught, the job ends with it printed once, with no traceback: rank 0 prints it
    and ends with status 1 after every other rank has ended with status 0, printing nothing
    (``backends.external.job_ending``), so torchrun's summary names one failed rank.
    """
    check_call(prog, args, attention_dp)
    aim = _aim_of(flip, gates)
    config = LaunchConfig(backend, guard, seed, timeout, clock_model=default_clock_model(),
                          iteration_marker=iteration_marker, wrappers=wrappers,
                          intercept=intercept, log_dir=log_dir, rank_local=rank_local,
                          gates=gates, gates_in=gates_in, flip=aim)
    if config.intercept and _takes_no_dist(prog, args):
        prog = WithoutDist(prog)
    instances = instances_of(deployment, tp, pp, cp, attention_dp)
    outcome = run_ranks(instances, prog, args, config, one_report=RAISES)
    if aim is not None:
        explain_flip(outcome.error, aim)
    if outcome.error is not None:
        raise outcome.error
    latent, absorbed = outcome.latent, list[LatentGate]()
    if config.gates == "flip" and latent:
        latent, absorbed = flip_all(instances, prog, args, config, latent)
        latent = written_flips(latent, out_dir, lambda gate, folder: write_launch_flip(
            gate, folder, prog, seed, backend))
    return LaunchResults(outcome.results, summarize(outcome.divergences), outcome.notes,
                         latent, absorbed)
