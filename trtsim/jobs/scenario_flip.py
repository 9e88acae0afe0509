"""A scenario's flipped run as a counterexample: the scenario as it ran, with ``gates: flip``
and the one ``flip`` that gave the report, so that ``trtsim run FILE`` replays just that
flip and prints the same report (the same seed: on inproc, the same schedule)."""

from __future__ import annotations

import copy

from ..backends.counterexample import (counterexample_path, flip_name, report_header,
                                      write_counterexample)
from ..backends.gate_flip import aim_of
from ..comm.latent_gate import LatentGate
from ..scenario.functional import Scenario


def write_scenario_flip(gate: LatentGate, folder: str, scenario: Scenario) -> str:
    """Write ``gate``'s flipped run of ``scenario`` into ``folder``; the file's path."""
    aim = aim_of(gate)
    raw = copy.deepcopy(scenario.raw)
    name = flip_name(str(raw.get("name") or scenario.name).removesuffix(".yaml"), aim)
    raw.update(name=name, gates="flip", flip=aim.to_dict())
    header = [f"Found by trtsim run {scenario.source} --gates flip: the gate at {aim.site} "
              f"`{aim.condition}`,", f"flipped on rank {aim.rank} at its evaluation "
              f"{aim.evaluation}, gives the report below.", f"Replay: trtsim run "
              f"{counterexample_path(folder, name)}", *report_header(gate.flip)]
    inputs = (scenario.source,) if scenario.source != "<dict>" else ()
    return write_counterexample(folder, name, header, raw, inputs=inputs)
