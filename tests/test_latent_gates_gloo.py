"""Latent gates where every rank is a process (gloo): each incident's gate is listed from the
ranks' recorded observations and its flip gives the hang's report; the fixed versions are
silent."""

from __future__ import annotations

import pytest

import trtsim
from tests.test_latent_gates import INCIDENTS, _site
from trtsim import CollectiveDeadlock, CollectiveMismatch


@pytest.mark.parametrize("name", sorted(INCIDENTS))
def test_gloo_flip_proves_the_gate(name):
    prog, _, kw, inputs, values, _ = INCIDENTS[name]
    results = trtsim.launch(prog, args=(inputs,), gates="flip", backend="gloo", **kw)
    assert results.latent and results.absorbed == []
    for gate in results.latent:
        assert gate.site.endswith(_site(name))
        assert isinstance(gate.flip, (CollectiveMismatch, CollectiveDeadlock))
        assert f"flipped on rank {gate.flip_rank}" in gate.flip.explanation
    if values is not None:
        assert results.latent[0].values == values


@pytest.mark.parametrize("name", sorted(INCIDENTS))
def test_gloo_fixed_version_is_silent(name):
    _, fixed, kw, inputs, _, _ = INCIDENTS[name]
    results = trtsim.launch(fixed, args=(inputs,), gates="observe", backend="gloo", **kw)
    assert results.latent == []


def test_gloo_intercepted_torch_gate_is_listed_and_flipped():
    from tests import gate_programs as gp
    results = trtsim.launch(gp.torch_zero_token, tp=2, intercept=("torch",), backend="gloo",
                            args=([[3, 5], [2, 2]],), gates="flip")
    assert [(g.site.endswith(_site("torch_zero_token")), g.values) for g in results.latent] \
        == [(True, {0: "num_tokens=3", 1: "num_tokens=5"})]
    assert isinstance(results.latent[0].flip, (CollectiveMismatch, CollectiveDeadlock))
