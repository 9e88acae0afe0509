"""Mapping against an independent statement of TensorRT-LLM's layout, over many layouts."""

import itertools

import pytest
import torch
from hypothesis import given, strategies as st

from trtsim import Mapping


def coords(rank, tp, pp, cp):
    # Independent formula: rank = (pp_rank * tp + tp_rank) * cp + cp_rank
    return rank // (tp * cp), (rank // cp) % tp, rank % cp


LAYOUTS = [(tp, pp, cp) for tp, pp, cp in itertools.product((1, 2, 3, 4, 8), (1, 2, 3, 4), (1, 2))
           if tp * pp * cp <= 32]


@pytest.mark.parametrize("tp,pp,cp", LAYOUTS)
@pytest.mark.parametrize("adp", [False, True])
def test_groups_match_brute_force(tp, pp, cp, adp):
    world = tp * pp * cp
    all_coords = {r: coords(r, tp, pp, cp) for r in range(world)}
    for rank in range(world):
        m = Mapping(world_size=world, rank=rank, tp_size=tp, pp_size=pp, cp_size=cp,
                    enable_attention_dp=adp)
        p, t, c = all_coords[rank]
        assert (m.pp_rank, m.tp_rank, m.cp_rank) == (p, t, c)
        assert m.tp_group == sorted(r for r, (p2, _, c2) in all_coords.items() if (p2, c2) == (p, c))
        assert m.pp_group == sorted(r for r, (_, t2, c2) in all_coords.items() if (t2, c2) == (t, c))
        assert m.cp_group == sorted(r for r, (p2, t2, _) in all_coords.items() if (p2, t2) == (p, t))
        assert m.tp_cp_group == sorted(r for r, (p2, _, _) in all_coords.items() if p2 == p)
        nxt = [r for r, xyz in all_coords.items() if xyz == ((p + 1) % pp, t, c)][0]
        prv = [r for r, xyz in all_coords.items() if xyz == ((p - 1) % pp, t, c)][0]
        assert (m.next_pp_rank(), m.prev_pp_rank()) == (nxt, prv)
        assert m.is_first_pp_rank() == (p == 0) and m.is_last_pp_rank() == (p == pp - 1)
        assert (m.dp_size, m.dp_rank) == ((tp, t) if adp else (1, 0))


def test_design_example():
    m = Mapping(world_size=8, rank=5, tp_size=4, pp_size=2, cp_size=1, enable_attention_dp=True)
    assert (m.tp_rank, m.pp_rank, m.cp_rank, m.dp_rank, m.dp_size) == (1, 1, 0, 1, 4)
    assert m.tp_group == [4, 5, 6, 7] and m.pp_group == [1, 5]
    assert m.next_pp_rank() == 1 and m.prev_pp_rank() == 1


@given(st.integers(1, 64), st.integers(1, 8))
def test_pp_layers_split_like_tensor_split(num_layers, pp):
    expected = [t.tolist() for t in torch.tensor_split(torch.arange(num_layers), pp)]
    got = [Mapping(world_size=pp, rank=r, pp_size=pp).pp_layers(num_layers) for r in range(pp)]
    assert got == expected


@pytest.mark.parametrize("kwargs,message", [
    (dict(world_size=8, rank=0, tp_size=2, pp_size=3), "tp*pp*cp=6 (tp=2, pp=3, cp=1) but world_size=8"),
    (dict(world_size=4, rank=4, tp_size=4), "rank=4 out of range for world_size=4"),
    (dict(world_size=4, rank=-1, tp_size=4), "rank=-1 out of range"),
    (dict(world_size=0, rank=0), "world_size=0 must be an integer >= 1"),
    (dict(world_size=2, rank=0, tp_size=0, pp_size=2), "tp_size=0 must be an integer >= 1"),
])
def test_invalid_layouts_name_the_factor(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("*", r"\*").replace("(", r"\(").replace(")", r"\)")):
        Mapping(**kwargs)


@given(st.sampled_from([1, 2, 4]), st.sampled_from([1, 2, 3]), st.booleans())
def test_a_layout_builds_each_rank_mapping_once_and_stays_a_value(tp, pp, adp):
    import pickle

    from trtsim.layout.parallel import ParallelLayout
    layout = ParallelLayout(tp_size=tp, pp_size=pp, enable_attention_dp=adp)
    fresh = ParallelLayout(tp_size=tp, pp_size=pp, enable_attention_dp=adp)
    for r in range(tp * pp):
        m = layout.mapping(r)
        assert m is layout.mapping(r)                    # built once
        assert (m.tp_rank, m.pp_rank) == (r % tp, r // tp)
    # The per-rank table is derived state: equality, hashing and pickles ignore it.
    assert layout == fresh and hash(layout) == hash(fresh)
    assert pickle.dumps(layout) == pickle.dumps(fresh)
    with pytest.raises(ValueError):
        layout.mapping(tp * pp)
