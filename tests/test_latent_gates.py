"""Latent gates under observe: each incident-shaped program, run where its ranks agree,
lists its gate with the right site; the fixed versions and the legal programs list none."""

from __future__ import annotations

import pytest

import trtsim
from tests import gate_legal_programs as legal
from tests import gate_programs as gp

BALANCED = [[3, 5], [2, 2], [4, 4]]

# name -> (program, launch keywords, inputs on which every rank agrees, the gate's operands)
INCIDENTS = {
    "dp_zero_token": (gp.dp_zero_token, gp.dp_zero_token_fixed, {"tp": 2, "attention_dp": True},
                      BALANCED, {0: "num_tokens=3", 1: "num_tokens=5"}, "allreduce"),
    "drafter_len": (gp.drafter_len, gp.drafter_len_fixed, {"tp": 2}, [[40, 52], [41, 53]],
                    {0: "seq_len=40, num_spec=3, MAX_MODEL_LEN=64",
                     1: "seq_len=52, num_spec=3, MAX_MODEL_LEN=64"}, "tp_allgather"),
    "free_kv_blocks": (gp.free_kv_blocks, gp.free_kv_blocks_fixed, {"tp": 2},
                       [[10, 12], [9, 9]], {0: "pool.free_blocks=10, needed=4",
                                            1: "pool.free_blocks=12, needed=4"}, "tp_allgather"),
    "warmup": (gp.warmup, gp.warmup_fixed, {"tp": 2, "pp": 2}, [[4, 6, 4, 4], [2, 2, 2, 2]],
               None, "tp_allgather"),
    "image_only": (gp.image_only, gp.image_only_fixed, {"tp": 2}, [[1, 2], [1, 1]],
                   {0: "n_images=1", 1: "n_images=2"}, "allreduce"),
}


def _site(name: str) -> str:
    return f"gate_programs.py:{gp.GATE_LINES[name]}"


@pytest.mark.parametrize("name", sorted(INCIDENTS))
def test_incident_gate_is_listed_where_the_ranks_agree(name):
    prog, _, kw, inputs, values, collective = INCIDENTS[name]
    plain = trtsim.launch(prog, args=(inputs,), **kw)        # no report today
    assert plain.latent == []
    results = trtsim.launch(prog, args=(inputs,), gates="observe", **kw)
    assert list(results) == list(plain)
    gates = [g for g in results.latent if g.site.endswith(_site(name))]
    assert gates, results.latent
    gate = gates[0]
    assert gate.collective == collective
    assert gate.iteration == 1
    assert set(gate.outcomes.values()) == {True}
    if values is not None:
        assert gate.values == values
    assert all(g.site.endswith(_site(name)) for g in results.latent), results.latent


def test_warmup_gate_is_listed_on_both_communicators():
    results = trtsim.launch(gp.warmup, tp=2, pp=2, args=([[4, 6, 4, 4]],), gates="observe")
    assert {(g.collective, g.group_ranks) for g in results.latent} == {
        ("tp_allgather", (0, 1)), ("pp_allgather", (1, 3))}


@pytest.mark.parametrize("name", sorted(INCIDENTS))
def test_fixed_version_is_silent(name):
    _, fixed, kw, inputs, _, _ = INCIDENTS[name]
    assert trtsim.launch(fixed, args=(inputs,), gates="observe", **kw).latent == []


@pytest.mark.parametrize("prog", [legal.rank_payloads, legal.rank_zero_prints,
                                  legal.world_size_early_exit, legal.per_rank_logging,
                                  legal.equal_loops, legal.root_broadcast])
def test_legal_program_lists_nothing(prog):
    results = trtsim.launch(prog, tp=2, pp=2, args=(3,), gates="observe")
    assert len(results) == 4
    assert results.latent == []


def test_gate_suppressed_in_the_source_is_silent():
    assert trtsim.launch(legal.suppressed, tp=2, args=(BALANCED,), gates="observe").latent == []


def test_gate_on_the_result_of_a_collective_is_never_latent():
    # the consensus's value is equal on every member, however different the inputs were
    results = trtsim.launch(gp.dp_zero_token_fixed, tp=4, args=([[1, 9, 3, 7]] * 3,),
                            gates="observe")
    assert results.latent == []


@pytest.mark.parametrize("gates", ["observe", "flip"])
def test_torch_distributed_gate_is_listed(gates):
    results = trtsim.launch(gp.torch_zero_token, tp=2, intercept=("torch",),
                            args=(BALANCED,), gates=gates)
    assert [(g.site.endswith(_site("torch_zero_token")), g.values) for g in results.latent] \
        == [(True, {0: "num_tokens=3", 1: "num_tokens=5"})]
    assert all((g.flip is not None) == (gates == "flip") for g in results.latent)


@pytest.mark.parametrize("gates", ["observe", "flip"])
def test_mpi_gate_is_listed(gates):
    pytest.importorskip("mpi4py")
    results = trtsim.launch(gp.mpi_zero_token, tp=2, intercept=("mpi",),
                            args=(BALANCED,), gates=gates)
    assert [g.site.endswith(_site("mpi_zero_token")) for g in results.latent] == [True]
    assert all((g.flip is not None) == (gates == "flip") for g in results.latent)


def test_same_seed_same_gates():
    runs = [trtsim.launch(gp.free_kv_blocks, tp=2, args=([[10, 12], [9, 9]],),
                          gates="observe", seed=3).latent for _ in range(2)]
    assert runs[0] == runs[1] and runs[0]


def test_gates_off_lists_nothing_and_bad_mode_is_refused():
    assert trtsim.launch(gp.dp_zero_token, tp=2, args=(BALANCED,)).latent == []
    with pytest.raises(ValueError, match="gates='sometimes'"):
        trtsim.launch(gp.dp_zero_token, tp=2, args=(BALANCED,), gates="sometimes")
    with pytest.raises(ValueError, match="gates_in"):
        trtsim.launch(gp.dp_zero_token, tp=2, args=(BALANCED,), gates_in="vllm")


def test_outcome_changing_at_different_iterations_is_latent():
    results = trtsim.launch(gp.switch_steps, tp=2, args=(5, [2, 3]), gates="observe")
    assert [(g.site.endswith(_site("switch")), g.iteration, g.outcomes, g.flip_rank)
            for g in results.latent] == [(True, 2, {0: True, 1: False}, 0)]


def test_outcome_changing_at_the_same_iteration_everywhere_is_not():
    assert trtsim.launch(gp.switch_steps, tp=2, args=(5, [2, 2]), gates="observe").latent == []
