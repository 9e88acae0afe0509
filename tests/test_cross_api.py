"""Ranks in two APIs at once: no real collective runs before the guard has confirmed that
every member entered it, so a torch all-reduce on some ranks against an MPI barrier on the
others is a deadlock report naming both communicators, on every backend -- not two real
collectives pairing on one transport (gloo aborts the process on the size mismatch).

A report in one run of a race-prone case says little: on gloo it runs
``TRTSIM_CROSS_API_RUNS`` times (default 3; issue 22's bar is 20 reports in 20 runs)."""

import os

import pytest

import trtsim
from tests import intercept_programs as P

GLOO_RUNS = int(os.environ.get("TRTSIM_CROSS_API_RUNS", "3"))


@pytest.mark.parametrize("backend,runs", [
    ("inproc", 1),
    pytest.param("gloo", GLOO_RUNS, marks=pytest.mark.timeout(90 * GLOO_RUNS))])
def test_torch_against_mpi_is_a_deadlock_naming_both_communicators(backend, runs):
    for _ in range(runs):
        with pytest.raises(trtsim.CollectiveDeadlock) as info:
            trtsim.launch(P.torch_against_mpi, tp=4, backend=backend,
                          intercept=("torch", "mpi"), timeout=60)
        err = info.value
        assert err.ranks == (0, 1, 2, 3)
        assert {c.comm for c in err.calls.values()} == {"torch:world", "mpi:world"}
        assert {c.api for c in err.calls.values()} == {"torch.all_reduce", "MPI.Barrier"}
