"""The proof of a latent gate: the launch replayed with the gate's outcome flipped on one
member, at the first evaluation it showed (``comm.gate_control``).

Each replay runs with the observe run's seed and inputs. Its report -- the
``CollectiveMismatch``/``CollectiveDeadlock`` that follows, or ``RankFailed`` when the flip
crashes the program -- is the gate's ``flip``, its ``likely:`` line naming the gate's site and
the flipped member; a replay with no report leaves the gate ``absorbed``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ..calls.errors import CollectiveError
from ..comm.flip_aim import FlipAim
from ..comm.latent_gate import LatentGate
from ..comm.launch_config import LaunchConfig
from .run_ranks import run_ranks


def aim_of(gate: LatentGate) -> FlipAim:
    """The evaluation a replay flips for ``gate``."""
    return FlipAim(gate.path, int(gate.site.rsplit(":", 1)[1]), gate.flip_rank,
                   max(1, gate.evaluation), gate.col, gate.site, gate.condition)


def explain_flip(error: CollectiveError | None, aim: FlipAim) -> CollectiveError | None:
    """The replay's report, its ``likely:`` line naming the flipped gate and member: the
    same text for the replay made after an observe run and for one read from its file."""
    if error is not None:
        why = f"the gate at {aim.site} `{aim.condition}` flipped on rank {aim.rank}"
        error.explanation = f"{why} ({error.explanation})" if error.explanation else why
    return error


def flip_one(instances: list, program: Callable, args: tuple, config: LaunchConfig,
             gate: LatentGate) -> LatentGate:
    """``gate`` with the report its flip gave (``flip`` None: absorbed)."""
    aim = aim_of(gate)
    outcome = run_ranks(instances, program, args, replace(config, gates="flip", flip=aim))
    return gate.with_flip(explain_flip(outcome.error, aim))


def flip_all(instances: list, program: Callable, args: tuple, config: LaunchConfig,
             latent: list[LatentGate]) -> tuple[list[LatentGate], list[LatentGate]]:
    """(the gates whose flip gave a report, the gates whose flip was absorbed)."""
    kept: list[LatentGate] = []
    absorbed: list[LatentGate] = []
    for gate in latent:
        flipped = flip_one(instances, program, args, config, gate)
        (kept if flipped.flip is not None else absorbed).append(flipped)
    return kept, absorbed
