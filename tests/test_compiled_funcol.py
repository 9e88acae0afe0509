"""A ``torch.compile``d function (``backend="aot_eager"``, CPU) whose graph holds a functional
collective: guarded on inproc and gloo as the eager call is, equal to one process's result,
and a skip or an extra call is a report naming the rank and the compiled function's line."""

import pytest
import torch

from tests import torchlib_programs as P
from tests.torchlib_checks import BACKENDS, WORLD, launch, reported_alike, same


def test_a_compiled_collective_computes_what_one_process_computes():
    results = launch(P.with_census, "inproc", "compiled_funcol", None)
    total = sum(2.0 * r for r in range(WORLD)) + 1
    for r in range(WORLD):
        assert same(results[r]["result"], torch.full((3,), total)), results[r]
        labels = {label for (_, _, label) in results[r]["census"]}
        assert "funcol.all_reduce" in labels, labels          # a guarded call


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("bug", ["skip", "extra"])
def test_a_diverging_compiled_collective_is_reported_alike_on_both_backends(bug, backend):
    err = reported_alike(P.compiled_funcol, backend, P.BUGGY_RANK[bug], bug)
    assert {c.api for c in err.calls.values()} == {"funcol.all_reduce"}
