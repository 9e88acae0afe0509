"""pytest integration: topology parametrization, launch and explore fixtures, a GPU marker.

    @pytest.mark.trtsim_topologies("all")        # or a list of ids, a filter ("pp>1"), a predicate
    def test_no_asymmetric_collectives(topology, trtsim_launch):
        dep = trtsim.topology(topology)
        trtsim_launch(prog, tp=dep.gen.tp_size, pp=dep.gen.pp_size)

The plugin loads in every pytest run of an environment that has trtsim installed, so it keeps
to its own names: markers are ``trtsim_topologies`` and ``trtsim_gpu`` (a project's own
``gpu``/``slow`` markers and ``--strict-markers`` are left alone), nothing is skipped unless
trtsim marked it, and nothing heavy (torch) is imported until a trtsim fixture or marker is
used. ``trtsim_launch`` fails the test with the guard's report alone (no traceback through the
launcher); it is session-scoped, so ``@given`` tests may use it.
"""

from __future__ import annotations

import pytest

from .topology_filter import select_topologies


def pytest_configure(config) -> None:
    config.addinivalue_line(
        "markers", "trtsim_topologies(ids): parametrize the `topology` argument over trtsim "
        "topology ids ('all', a list of ids, a filter such as 'pp>1,gen.tp>=4', or a "
        "predicate on trtsim.Deployment)")
    config.addinivalue_line("markers", "trtsim_gpu: needs a CUDA GPU (skipped without one)")


def pytest_generate_tests(metafunc) -> None:
    marker = metafunc.definition.get_closest_marker("trtsim_topologies")
    if marker is None:
        return
    where = metafunc.definition.nodeid
    if "topology" not in metafunc.fixturenames:
        pytest.fail(f"{where}: the trtsim_topologies marker parametrizes a `topology` "
                    "argument, and this test takes none", pytrace=False)
    try:
        ids, problem = select_topologies(marker.args[0] if marker.args else "all"), None
    except ValueError as exc:
        problem = str(exc)
    if problem is not None:                   # failed outside the except: reported once
        pytest.fail(f"{where}: trtsim_topologies: {problem}", pytrace=False)
    metafunc.parametrize("topology", ids, ids=ids)


def _cuda_available() -> bool:
    try:
        import torch
        return torch.cuda.is_available()
    except Exception:  # noqa: BLE001 - a broken CUDA install is "no GPU" for skipping
        return False


def pytest_collection_modifyitems(config, items) -> None:
    marked = [item for item in items if item.get_closest_marker("trtsim_gpu")]
    if marked and not _cuda_available():        # torch is imported only when a test asks
        skip = pytest.mark.skip(reason="trtsim_gpu: needs a CUDA GPU")
        for item in marked:
            item.add_marker(skip)


@pytest.fixture(scope="session")
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


@pytest.fixture(scope="session")
def trtsim_launch():
    """``trtsim_launch(prog, **launch_kwargs)``: the per-rank results, or the test fails
    with the guard's report (``gates="observe"``: ``results.latent`` lists the latent gates). Stateless, hence session-scoped (hypothesis's ``@given`` refuses
    function-scoped fixtures)."""
    from ..calls.errors import CollectiveError
    from ..launching import launch

    def run(prog, **kwargs):
        try:
            return launch(prog, **kwargs)
        except CollectiveError as err:
            report = str(err)
        # Failing outside the except block: the report is shown once, not chained to the
        # launcher's exception ("During handling of the above exception ...").
        pytest.fail(report, pytrace=False)

    return run
