"""Generated programs: a gate at a random depth of helpers, on an alias of the gating value,
in every gate form; observe lists it exactly when the value is each rank's own, and then
only at the gate's lines, and flip turns it into a report."""

from __future__ import annotations

import importlib.util
import itertools
import sys

from hypothesis import HealthCheck, given, settings

import trtsim
from tests.gate_program_gen import generated_programs

_COUNT = itertools.count()


def _load(tmp_path_factory, source: str):
    name = f"generated_gates_{next(_COUNT)}"
    path = tmp_path_factory.mktemp("gen") / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return name, module


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(drawn=generated_programs())
def test_observe_gives_the_known_answer(tmp_path_factory, drawn):
    name, module = _load(tmp_path_factory, drawn.source)
    try:
        results = trtsim.launch(module.program, tp=drawn.ranks, args=(drawn.values, 2),
                                gates="observe", timeout=60)
        lines = {int(g.site.rsplit(":", 1)[1]) for g in results.latent}
        if drawn.latent:
            assert results.latent, drawn.source
            assert lines <= drawn.gate_lines, (lines, drawn.source)
            assert all(set(g.outcomes.values()) == {True} or g.iteration
                       for g in results.latent)
        else:
            assert results.latent == [], drawn.source
    finally:
        del sys.modules[name]


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(drawn=generated_programs().filter(lambda p: p.latent))
def test_flip_of_a_generated_gate_reports(tmp_path_factory, drawn):
    name, module = _load(tmp_path_factory, drawn.source)
    try:
        results = trtsim.launch(module.program, tp=drawn.ranks, args=(drawn.values, 2),
                                gates="flip", timeout=60)
        assert results.latent, (results.absorbed, drawn.source)
        assert all(g.flip is not None for g in results.latent)
    finally:
        del sys.modules[name]
