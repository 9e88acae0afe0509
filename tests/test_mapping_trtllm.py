"""trtsim.Mapping spells TensorRT-LLM's Mapping: keyword-only factors, methods for the
predicates and neighbours, properties for coordinates and groups, MoE and CP sizes derived."""

import pytest
from hypothesis import given, settings, strategies as st

from trtsim import Mapping
from trtsim.layout import CpType

METHODS = ("has_tp", "has_pp", "has_cp", "has_cp_ulysses", "has_cp_helix", "has_moe_tp",
           "has_moe_ep", "has_moe_cluster", "is_first_pp_rank", "is_last_pp_rank",
           "is_second_last_pp_rank", "prev_pp_rank", "next_pp_rank", "is_first_cp_rank",
           "is_last_cp_rank", "prev_cp_rank", "next_cp_rank", "is_multi_node")
PROPERTIES = ("tp_rank", "pp_rank", "cp_rank", "tp_group", "pp_group", "cp_group", "dp_size",
              "node_rank", "local_rank", "moe_tp_rank", "moe_ep_rank", "moe_cluster_rank",
              "moe_tp_group", "moe_ep_group", "moe_cluster_group", "tp_groups", "pp_groups")


def test_predicates_are_methods_and_coordinates_are_not():
    m = Mapping(world_size=8, rank=5, tp_size=4, pp_size=2)
    for name in METHODS:
        assert callable(getattr(m, name)), name
    for name in PROPERTIES:
        assert not callable(getattr(m, name)), name
    assert m.is_last_pp_rank() and not m.is_first_pp_rank() and m.is_second_last_pp_rank() is False
    assert (m.next_pp_rank(), m.prev_pp_rank()) == (1, 1)
    assert m.has_tp() and m.has_pp() and not m.has_cp()


def test_only_world_rank_and_gpus_per_node_are_positional():
    m = Mapping(8, 3, 4, tp_size=8)
    assert (m.world_size, m.rank, m.gpus_per_node, m.tp_size) == (8, 3, 4, 8)
    assert (m.node_rank, m.local_rank, m.is_multi_node()) == (0, 3, True)
    with pytest.raises(TypeError):
        Mapping(8, 3, 4, 8)


def test_moe_groups_follow_the_tp_ranks():
    m = Mapping(world_size=8, rank=5, tp_size=8, moe_ep_size=4)
    assert (m.moe_tp_size, m.moe_ep_size, m.moe_cluster_size) == (2, 4, 1)
    assert m.moe_tp_group == [1, 5] and m.moe_ep_group == [4, 5, 6, 7]
    assert m.ep_experts(16) == [4, 5, 6, 7]


def test_cp_config_accepts_a_string_in_any_case():
    m = Mapping(world_size=4, rank=1, tp_size=2, cp_size=2, cp_config={"cp_type": "helix"})
    assert m.cp_config["cp_type"] is CpType.HELIX and m.has_cp_helix() and not m.has_cp_ulysses()
    plain = Mapping(world_size=4, rank=1, tp_size=2, cp_size=2)
    assert not plain.has_cp_helix() and not plain.has_cp_ulysses()
    folded = m.repurpose_helix_cp_to_tp()
    assert (folded.tp_size, folded.cp_size, folded.rank) == (4, 1, 1)
    with pytest.raises(ValueError, match="cp_type"):
        Mapping(world_size=2, rank=0, cp_size=2, cp_config={"cp_type": "spiral"})


def test_pp_partition_and_the_layer_inverse():
    m = Mapping(world_size=2, rank=1, pp_size=2, pp_partition=[3, 1])
    assert m.pp_layers(4) == [3] and m.pp_rank_of_layer(3, 4) == 1 and m.pp_rank_of_layer(0, 4) == 0
    with pytest.raises(ValueError, match="sums to 4, not num_layers=5"):
        m.pp_layers(5)


@pytest.mark.parametrize("bad,match", [
    (dict(world_size=8, rank=0, tp_size=3), "tp\\*pp\\*cp=3"),
    (dict(world_size=2, rank=2, tp_size=2), "rank=2 out of range"),
    (dict(world_size=8, rank=0, tp_size=8, moe_ep_size=3), "moe_tp_size"),
    (dict(world_size=2, rank=0, tp_size=2, enable_lm_head_tp_in_adp=True), "enable_attention_dp"),
])
def test_bad_layouts_name_the_factor(bad, match):
    with pytest.raises(ValueError, match=match):
        Mapping(**bad)


@given(tp=st.sampled_from([1, 2, 4, 8]), pp=st.integers(1, 4), cp=st.sampled_from([1, 2]),
       data=st.data())
@settings(max_examples=60, deadline=None)
def test_to_dict_round_trips_and_equal_mappings_hash_equal(tp, pp, cp, data):
    rank = data.draw(st.integers(0, tp * pp * cp - 1))
    m = Mapping(world_size=tp * pp * cp, rank=rank, tp_size=tp, pp_size=pp, cp_size=cp)
    again = Mapping.from_dict(m.to_dict())
    assert again == m and hash(again) == hash(m)
    assert m.with_rank(rank) == m and (rank == 0 or m.with_rank(0) != m)
    assert sorted(r for g in m.tp_groups for r in g) == list(range(m.world_size))
    assert m.tp_group in m.tp_groups and m.pp_group in m.pp_groups
