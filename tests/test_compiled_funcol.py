"""A ``torch.compile``d function (``backend="aot_eager"``, CPU) whose graph holds a functional
collective: guarded on inproc and gloo as the eager call is, equal to one process's result,
and a skip, an extra call or a skipped backward pass (the compiled backward graph's
reduce-scatter) is a report naming the rank and the user's line, on inproc and gloo alike."""

import pytest
import torch

from tests import torchlib_programs as P
from tests.torchlib_checks import BACKENDS, WORLD, launch, reported_alike, same


def test_a_compiled_collective_computes_what_one_process_computes():
    results = launch(P.with_census, "inproc", "compiled_funcol", None)
    total = sum(2.0 * r for r in range(WORLD)) + 1
    for r in range(WORLD):
        # every rank's loss sums the squares of every doubled x: the gradient of its own x
        # is 8x from each of the WORLD losses
        want = {"sum": torch.full((3,), total), "grad": torch.full((3,), 8.0 * WORLD * r)}
        assert same(results[r]["result"], want), results[r]
        labels = {label for (_, _, label) in results[r]["census"]}
        assert {"funcol.all_reduce", "funcol.all_gather_into_tensor",
                "funcol.reduce_scatter_tensor"} <= labels, labels     # guarded calls


# the call each bug's diverging rank or its peers stand at
AT = {"skip": "funcol.all_reduce", "extra": "funcol.all_reduce",
      "backward": "funcol.reduce_scatter_tensor"}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("bug", ["skip", "extra", "backward"])
def test_a_diverging_compiled_collective_is_reported_alike_on_both_backends(bug, backend):
    err = reported_alike(P.compiled_funcol, backend, P.BUGGY_RANK[bug], bug)
    assert AT[bug] in {c.api for c in err.calls.values()}, str(err)
