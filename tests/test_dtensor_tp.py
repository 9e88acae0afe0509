"""DTensor tensor parallelism (``parallelize_module``, column- then row-parallel) on a 1-D
mesh and a 2-D ``("dp", "tp")`` mesh under the guard: outputs and gradients equal one
process's; a rank that never parallelizes (DTensor's ``scatter``, imported by name), runs an
extra forward or skips the backward is a report naming it, on inproc and on gloo alike; mesh
groups are named by their dimension."""

import pytest

from tests import torchlib_programs as P
from tests.torchlib_checks import BACKENDS, WORLD, launch, report_of, reported_alike, same

MESHES = [(4,), (2, 2)]


@pytest.mark.parametrize("mesh", MESHES)
def test_tensor_parallel_mlp_equals_one_process(mesh):
    results = launch(P.dtensor_tp, "inproc", mesh, None)
    for r in range(WORLD):
        want = P.reference_dtensor_tp(r // 2 if len(mesh) == 2 else 0)
        assert same(results[r], want), (r, results[r], want)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mesh", MESHES)
@pytest.mark.parametrize("bug", ["skip", "extra", "backward"])
def test_a_diverging_tp_rank_is_reported_alike_on_both_backends(mesh, bug, backend):
    # a rank that never parallelizes skips DTensor's ``scatter``, imported by name
    reported_alike(P.dtensor_tp, backend, P.BUGGY_RANK[bug], mesh, bug)


def test_mesh_groups_are_named_by_their_dimension():
    err = report_of(P.dtensor_tp, "inproc", (2, 2), "backward")
    assert "group: mesh tp group [2, 3]" in str(err), str(err)
