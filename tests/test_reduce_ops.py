"""Every reduce op torch has, guarded: ``AVG`` on inproc equals gloo's (and an integer
tensor is refused alike); ``PREMUL_SUM`` with a scalar or a tensor factor, each member's own,
equals one process's result on inproc, and on gloo gloo's own refusal surfaces, never a
trtsim ValueError. The op is part of what members must agree on."""

import pytest
import torch
from hypothesis import given, settings, strategies as st

import trtsim
from trtsim.calls import semantics
from trtsim.calls.reduce_op import op_name, premultiplied
from tests import reduce_op_programs as P
from tests.torchlib_checks import WORLD, launch, same

FLOATS = st.lists(st.integers(-1000, 1000), min_size=1, max_size=6)


@pytest.fixture(scope="module")
def inproc():
    return launch(P.reductions, "inproc")


def test_avg_and_premul_sum_equal_one_process_on_inproc(inproc):
    want = P.reference_reductions()
    for r in range(WORLD):
        got = {k: v for k, v in inproc[r].items() if k != "avg_int"}
        assert same(got, want[r]), (r, got, want[r])


@pytest.mark.slow
def test_avg_equals_gloo_and_premul_sum_is_gloos_own_refusal(inproc):
    gloo = launch(P.reductions, "gloo")
    for r in range(WORLD):
        for key in ("avg", "avg_c10d", "avg_reduce_scatter", "avg_funcol"):
            assert same(inproc[r][key], gloo[r][key]), (r, key, inproc[r][key], gloo[r][key])
        assert gloo[r]["avg_int"] == inproc[r]["avg_int"]
        assert gloo[r]["avg_int"].startswith("raised RuntimeError"), gloo[r]["avg_int"]
        for key in ("premul_scalar", "premul_tensor"):
            assert gloo[r][key] == ("raised RuntimeError: Cannot use ReduceOp.PREMUL_SUM "
                                    "with Gloo"), gloo[r][key]


def test_a_premul_sum_needs_its_factor():
    assert op_name(torch.distributed.ReduceOp.PREMUL_SUM(2.0)) == "premul_sum"
    assert op_name(torch.distributed.ReduceOp.AVG) == "avg"
    with pytest.raises(ValueError, match="needs its factor"):
        op_name("premul_sum")


@settings(max_examples=50, deadline=None)
@given(st.lists(FLOATS.map(lambda v: torch.tensor(v, dtype=torch.float64)), min_size=1,
                max_size=5).filter(lambda ts: len({t.numel() for t in ts}) == 1),
       st.lists(st.integers(1, 8), min_size=5, max_size=5))
def test_avg_is_the_mean_and_premul_sum_weighs_each_member(payloads, factors):
    mean = torch.stack(payloads).mean(0)
    for got in semantics.allreduce(payloads, "avg"):
        assert torch.allclose(got, mean)
    ops = [torch.distributed.ReduceOp.PREMUL_SUM(f / 4) for f in factors[:len(payloads)]]
    mine = [premultiplied(p, op) for p, op in zip(payloads, ops)]
    want = sum(p * (f / 4) for p, f in zip(payloads, factors))
    for got in semantics.allreduce(mine, "premul_sum"):
        assert torch.allclose(got, want)


def test_members_that_disagree_on_the_op_are_a_mismatch():
    with pytest.raises(trtsim.CollectiveMismatch) as info:
        launch(P.op_disagreement, "inproc")
    assert "reduce_op" in str(info.value), str(info.value)
