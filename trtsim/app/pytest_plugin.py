"""pytest integration: topology parametrization, a launch fixture, the gpu and slow markers.

    @pytest.mark.topologies("all")               # or a list of ids, or a filter: "pp>1"
    def test_no_asymmetric_collectives(topology, trtsim_launch):
        dep = trtsim.topology(topology)
        trtsim_launch(prog, tp=dep.gen.tp_size, pp=dep.gen.pp_size)

``trtsim_launch`` runs ``trtsim.launch`` and fails the test with the guard's report (not a
traceback through the launcher) when the run raises a CollectiveError.
"""

from __future__ import annotations

import pytest


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU (skipped cleanly without one)")
    config.addinivalue_line("markers", "slow: long-running test")
    config.addinivalue_line(
        "markers", "topologies(ids): parametrize the `topology` argument over DESIGN 3.2 ids "
        "('all', a list of ids, or a predicate on trtsim.Deployment)")


def _select(arg) -> list[str]:
    from ..layout.topology import topologies, topology

    if arg == "all" or arg is None:
        return topologies()
    if callable(arg):
        return [t for t in topologies() if arg(topology(t))]
    ids = [arg] if isinstance(arg, str) else list(arg)
    for tid in ids:
        topology(tid)  # ValueError listing the known ids
    return ids


def pytest_generate_tests(metafunc) -> None:
    marker = metafunc.definition.get_closest_marker("topologies")
    if marker is None or "topology" not in metafunc.fixturenames:
        return
    ids = _select(marker.args[0] if marker.args else "all")
    metafunc.parametrize("topology", ids, ids=ids)


def _cuda_available() -> bool:
    try:
        import torch
        return torch.cuda.is_available()
    except Exception:  # noqa: BLE001 - a broken CUDA install is "no GPU" for skipping
        return False


def pytest_collection_modifyitems(config, items) -> None:
    if any(item.get_closest_marker("gpu") for item in items) and not _cuda_available():
        skip = pytest.mark.skip(reason="needs a CUDA GPU")
        for item in items:
            if item.get_closest_marker("gpu"):
                item.add_marker(skip)


@pytest.fixture
def trtsim_explore():
    """``trtsim_explore(scenario, vary=..., examples=..., **kw)``: the test fails with the
    shrunk counterexample and its report when exploration finds a violation."""
    from .explore import explore

    def search(scenario, **kwargs):
        result = explore(scenario, **kwargs)
        if result.found:
            pytest.fail(result.summary(), pytrace=False)
        return result

    return search


@pytest.fixture
def trtsim_launch():
    """``trtsim_launch(prog, **launch_kwargs)``: the per-rank results, or the test fails
    with the guard's report."""
    from .. import launch
    from ..comm.errors import CollectiveError

    def run(prog, **kwargs):
        try:
            return launch(prog, **kwargs)
        except CollectiveError as err:
            pytest.fail(str(err), pytrace=False)

    return run
