"""Counterexample files: the run that broke, written so that one command replays it.

The one writer of them: ``trtsim explore``'s smallest variant and every flipped run of a
latent gate (``gates="flip"``) that gave a report. A file is YAML under a few comment lines
saying what it reproduces and how: a scenario (``trtsim run FILE``) for a scenario's run, or,
for ``launch()`` of a Python program, ``kind: gate_flip`` with the flip (``FlipAim``) that
``launch(..., gates="flip", flip=FILE)`` replays. Written whole and renamed into place
(``safe_write``). Without a folder, flips go to the user's cache folder
(``$XDG_CACHE_HOME/trtsim/flips``), one file per gate and member, so a run that finds the same
gate again replaces its file rather than adding a folder.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

import yaml

from ..calls.errors import CollectiveError
from ..comm.flip_aim import FlipAim
from ..comm.latent_gate import LatentGate
from ..safe_write import OutputIsInput, atomic_writer
from ..user_cache import user_cache

FLIP_KIND = "gate_flip"                 # a launch's flip file: kind: gate_flip
REPORT_LINES = 6                        # of the report, quoted in the header


class NotWritten(ValueError):
    """A counterexample that could not be written: the folder and why, in one line."""


def counterexample_path(folder: str, name: str) -> str:
    """Where ``write_counterexample(folder, name, ...)`` writes (a header names it)."""
    return os.path.join(folder, f"{name}.yaml")


def write_counterexample(folder: str, name: str, header: Sequence[str], body: dict,
                         inputs: Sequence[str] = ()) -> str:
    """Write ``body`` as ``counterexample_path(folder, name)`` under ``header`` (one comment
    line each); the path. ``inputs``: files it must never overwrite (the scenario it was
    made from)."""
    os.makedirs(folder, exist_ok=True)
    path = counterexample_path(folder, name)
    with atomic_writer(path, inputs=inputs) as f:
        f.write("".join(f"# {line}\n" for line in header))
        yaml.safe_dump(body, f, sort_keys=False)
    return path


def report_header(error: CollectiveError | None) -> list[str]:
    """The report's first lines, indented, for a header."""
    if error is None:
        return []
    return [f"  {line}" for line in str(error).splitlines()[:REPORT_LINES]]


def flip_name(prefix: str, aim: FlipAim) -> str:
    """``PREFIX_flip_FILE_LINE_COL_rankR``: one file per gate and member."""
    stem = os.path.splitext(os.path.basename(aim.path))[0]
    return f"{prefix}_flip_{stem}_{aim.line}_{aim.col}_rank{aim.rank}"


def written_flips(kept: list[LatentGate], folder: str | None,
                  write: Callable[[LatentGate, str], str]) -> list[LatentGate]:
    """``kept`` (gates whose flip gave a report), each with the counterexample ``write``
    wrote for it into ``folder`` (default: the user's cache folder, ``trtsim/flips``)."""
    if not kept:
        return kept
    try:
        where = folder if folder is not None else user_cache("flips")
        return [gate.with_counterexample(write(gate, where)) for gate in kept]
    except (OSError, OutputIsInput) as exc:       # OutputIsInput: the scenario it came from
        raise NotWritten(f"{folder or user_cache('flips')}: cannot write the flipped "
                         f"run ({getattr(exc, 'strerror', None) or exc})") from None


def load_flip(path: str) -> FlipAim:
    """The flip a ``kind: gate_flip`` file holds; ValueError naming the file and field."""
    try:
        with open(path, encoding="utf-8") as f:
            raw = yaml.safe_load(f)
    except OSError as exc:
        raise ValueError(f"flip={path!r}: cannot read ({exc.strerror or exc})") from None
    except yaml.YAMLError as exc:
        raise ValueError(f"flip={path!r}: not YAML ({exc})") from None
    if not isinstance(raw, dict) or raw.get("kind") != FLIP_KIND:
        raise ValueError(f"{path}: kind: must be {FLIP_KIND} (a file launch(gates='flip') "
                         "wrote)")
    return FlipAim.from_dict(raw.get("flip"), f"{path}: flip")


def write_launch_flip(gate: LatentGate, folder: str, program: Callable, seed: int,
                      backend: str) -> str:
    """A flip of ``launch()``'s program that gave a report, as ``kind: gate_flip``."""
    from .gate_flip import aim_of
    aim = aim_of(gate)
    target = getattr(program, "program", program)          # WithoutDist's program
    name = f"{getattr(target, '__module__', '?')}:{getattr(target, '__qualname__', '?')}"
    file_name = flip_name("launch", aim)
    path = counterexample_path(folder, file_name)
    header = [f"A latent gate of {name}, flipped: trtsim.launch(gates='flip') found it.",
              f"Replay: trtsim.launch({name}, <the same layout and arguments>,",
              f"                      gates='flip', flip={path!r})",
              "It raises the report:", *report_header(gate.flip)]
    body = {"kind": FLIP_KIND, "program": name, "backend": backend, "seed": seed,
            "flip": aim.to_dict()}
    return write_counterexample(folder, file_name, header, body)
