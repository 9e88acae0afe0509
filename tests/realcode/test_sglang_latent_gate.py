"""SGLang's DP-attention gather (SGLang #25404's shape): with an idle rank's skip in the code
but no idle step in the schedule, observe lists the gate for the gather in SGLang's
parallel_state.py and flip gives the report; the legal loop, an idle step included, lists
nothing (its test, ``mine or not idle_skips``, is decided by ``not idle_skips`` alone)."""

import trtsim
from tests.realcode import sglang_programs

LEGAL = [[1, 2], [3, 1], [0, 2]]
BUSY = [[1, 2], [3, 1]]


def _launch(schedule, idle_skips, gates):
    return trtsim.launch(sglang_programs.coordinator_loop, tp=2, pp=2,
                         args=(schedule, idle_skips), intercept=("torch",),
                         rank_local=("sglang",), gates=gates, gates_in=("sglang",))


def test_legal_loop_lists_nothing():
    assert _launch(LEGAL, False, "observe").latent == []


def test_idle_skip_gate_is_listed_and_its_flip_reported():
    results = _launch(BUSY, True, "flip")
    assert {g.condition for g in results.latent} == {"mine or not idle_skips"}
    for gate in results.latent:
        assert isinstance(gate.flip, trtsim.CollectiveMismatch)
        assert all("parallel_state.py" in c.callsite for c in gate.flip.calls.values())
