"""The topology table of DESIGN 3.2."""

import pytest

import trtsim
from trtsim.layout.topology import format_table

FIRST = ["tp1_pp1", "tp2_pp1", "tp1_pp2", "tp2_pp2", "tp4_pp1", "tp1_pp4", "tp4_pp2", "tp2_pp4"]


def test_ids_in_table_order():
    ids = trtsim.topologies()
    assert ids[:8] == FIRST
    assert len(ids) == len(set(ids)) == 47
    assert ids[-1] == "7L_mla_tp1_pp3"


@pytest.mark.parametrize("tid", trtsim.topologies())
def test_every_id_builds_a_consistent_deployment(tid):
    dep = trtsim.topology(tid)
    assert dep.id == tid
    for spec in (dep.ctx, dep.gen):
        assert spec.world_size == spec.tp_size * spec.pp_size
        assert spec.num_layers >= spec.pp_size
        assert spec.is_mla == tid.startswith(("mla", "5L_mla", "7L_mla"))
    layers = int(tid[0]) if tid[0].isdigit() else 4
    assert dep.ctx.num_layers == dep.gen.num_layers == layers


@pytest.mark.parametrize("tid,ctx,gen", [
    ("tp4_pp2_dp_both", (4, 2, True), (4, 2, True)),
    ("ctx_dp_gen_pp2", (2, 1, True), (1, 2, False)),
    ("mla_ctx_dp4_gen_tp8", (4, 1, True), (8, 1, False)),
    ("7L_tp2pp2_to_pp4", (2, 2, False), (1, 4, False)),
])
def test_selected_rows(tid, ctx, gen):
    dep = trtsim.topology(tid)
    assert (dep.ctx.tp_size, dep.ctx.pp_size, dep.ctx.enable_attention_dp) == ctx
    assert (dep.gen.tp_size, dep.gen.pp_size, dep.gen.enable_attention_dp) == gen


def test_unknown_id_lists_known_ones():
    with pytest.raises(ValueError) as info:
        trtsim.topology("tp3_pp3")
    assert "tp3_pp3" in str(info.value) and "tp4_pp2_dp_both" in str(info.value)


def test_invalid_spec_names_the_field():
    with pytest.raises(ValueError, match="num_layers=2 < pp_size=4"):
        trtsim.InstanceSpec(tp_size=1, pp_size=4, num_layers=2)


def test_table_lists_every_id():
    table = format_table()
    assert all(tid in table for tid in trtsim.topologies())
