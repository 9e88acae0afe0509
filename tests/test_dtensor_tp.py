"""DTensor tensor parallelism (``parallelize_module``, column- then row-parallel) on a 1-D
mesh and a 2-D ``("dp", "tp")`` mesh under the guard: outputs and gradients equal one
process's; a rank that never parallelizes (DTensor's ``scatter``, imported by name), runs an
extra forward or skips the backward is a report naming it, on inproc and on gloo alike; mesh
groups are named by their dimension."""

import pytest

from tests import torchlib_programs as P
from tests.torchlib_checks import WORLD, launch, names_rank_and_line, report_of, same

MESHES = [(4,), (2, 2)]


@pytest.mark.parametrize("mesh", MESHES)
def test_tensor_parallel_mlp_equals_one_process(mesh):
    results = launch(P.dtensor_tp, "inproc", mesh, None)
    for r in range(WORLD):
        want = P.reference_dtensor_tp(r // 2 if len(mesh) == 2 else 0)
        assert same(results[r], want), (r, results[r], want)


@pytest.mark.parametrize("mesh", MESHES)
@pytest.mark.parametrize("bug", ["skip", "extra", "backward"])
def test_a_diverging_tp_rank_is_reported(mesh, bug):
    names_rank_and_line(report_of(P.dtensor_tp, "inproc", mesh, bug), P.BUGGY_RANK[bug])


def test_mesh_groups_are_named_by_their_dimension():
    err = report_of(P.dtensor_tp, "inproc", (2, 2), "backward")
    assert "group: mesh tp group [2, 3]" in str(err), str(err)


@pytest.mark.slow
def test_a_rank_that_never_parallelizes_is_the_same_report_on_gloo():
    inproc = report_of(P.dtensor_tp, "inproc", (2, 2), "skip")
    gloo = report_of(P.dtensor_tp, "gloo", (2, 2), "skip")
    names_rank_and_line(gloo, P.BUGGY_RANK["skip"])
    assert type(gloo) is type(inproc)
    # The gloo monitor declares at the first polls where the blocked set cannot progress, so
    # a rank still on its way into its next collective is counted or not by timing (2 or 3
    # ranks blocked); inproc reports once every other rank has run on. The ranks both name
    # stand at the same calls, numbered alike.
    common = gloo.calls.keys() & inproc.calls.keys()
    assert len(common) >= 2, (gloo.calls, inproc.calls)
    assert {r: (gloo.calls[r].api, gloo.calls[r].seq, gloo.calls[r].callsite) for r in common} \
        == {r: (inproc.calls[r].api, inproc.calls[r].seq, inproc.calls[r].callsite)
            for r in common}
