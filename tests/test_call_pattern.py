"""TensorRT-LLM's per-iteration call pattern, reproduced by the executor and transceiver versions
(executor.version, transceiver.version): which gathers a rank enters in a steady iteration.

Versions followed (docs/PERF_MODEL.md, "The call pattern"): executor ``classic`` = the
pre-coordinator PyExecutor, ``coordinator`` = the DisaggTransferCoordinator one; transceiver
A (27,231 characters, no skip, three outcome gathers), B (35,456: markers, skip only without
sync, three outcome gathers), C (commit 00620eb: send-side skip, one packed outcome gather,
no prepare gather while nothing waits), E (68,088: as C).
"""

from collections import Counter

import pytest

from trtsim.executor.call_pattern import PATTERNS
from trtsim.executor.config import ExecutorConfig
from trtsim.jobs.control_plane import INIT_LABELS
from trtsim.jobs.run import run

GEN_TP8 = "scenarios/executor_ctx_adp4_gen_tp8.yaml"    # ctx DEP4 beside gen TP8, as in 5.3
DECODE = {"workload.num_requests": 3, "workload.arrival_interval": 1,
          "workload.input_len": 32, "workload.output_len": 24, "executor.max_batch_size": 1}


def steady(res, role: str, rank: int) -> dict:
    """The most common per-iteration (kind, label) -> calls of one rank: its steady state."""
    per_iter: dict[int, Counter] = {}
    for row in res.census.select(role=role, rank=rank):
        if row.kind != "p2p":
            per_iter.setdefault(row.iteration, Counter())[(row.kind, row.label)] += row.count
    signatures = Counter(tuple(sorted(c.items())) for c in per_iter.values())
    return dict(signatures.most_common(1)[0][0])


def decode_iteration(executor: str, transceiver: str, sticky: str, loop: str) -> dict:
    res = run(GEN_TP8, overrides={**DECODE, "executor.version": executor, "executor.loop": loop,
                                  "transceiver.version": transceiver,
                                  "transceiver.sticky_skip": sticky})
    assert res.verdict == "ok" and res.metrics["completed"] == 3, res.summary()
    return steady(res, "gen", rank=4)


def gathers(send=(0, 0), recv=(0, 0)) -> dict:
    """A decode iteration's calls: (consensus, outcome) gathers of the send checks over TP 8
    and of the receive checks over the instance, and the request broadcast."""
    out = {("tp", "ctx_consensus"): send[0], ("tp", "ctx_outcome"): send[1],
           ("world", "gen_consensus"): recv[0], ("world", "gen_outcome"): recv[1],
           ("world", "fetch_requests"): 1}
    return {k: v for k, v in out.items() if v}


CASES = [
    # CLASSIC overlap loop, version C (incident 5.3 before): one check_context_transfer_status(0)
    # per decode iteration (_send_kv_async of the previous batch): its consensus gather and its
    # packed outcome gather over TP 8; no receive check (nothing in transfer).
    (("classic", "C", "off", "overlap"), gathers(send=(1, 1))),
    (("classic", "C", "unguarded", "overlap"), gathers()),      # C's own skip
    (("classic", "C", "guarded", "overlap"), gathers()),        # trtsim's pp == 1 guard
    # A and B gather the outcome three times (cancelled, failed, completed)
    (("classic", "B", "off", "overlap"), gathers(send=(1, 3))),
    (("classic", "A", "off", "overlap"), gathers(send=(1, 3))),
    # B's skip needs "no sync": a TP8 generation worker needs TP sync, so it never skips
    (("classic", "B", "conservative", "overlap"), gathers(send=(1, 3))),
    # the coordinator's overlap loop: poll_progress_when_idle and _send_kv_async(previous)
    # each check the send side; poll_gen_transfers checks the receive side every iteration
    (("coordinator", "E", "off", "overlap"), gathers(send=(2, 2), recv=(1, 1))),
    # its plain loop adds reap_context_sends after _handle_responses
    (("coordinator", "E", "off", "plain"), gathers(send=(3, 3), recv=(1, 1))),
    (("coordinator", "E", "unguarded", "overlap"), gathers(recv=(1, 1))),
    # version A: prepare_context_requests([]) gathers too, every iteration, on every role
    (("coordinator", "A", "off", "overlap"), gathers(send=(3, 6), recv=(1, 3))),
    # trtsim's own loop: both sides polled every iteration, the send side before and after
    (("trtsim", "trtsim", "off", "plain"), gathers(send=(2, 2), recv=(1, 1))),
]


@pytest.mark.parametrize("versions,expected", CASES, ids=["-".join(c[0]) for c in CASES])
def test_generation_worker_decode_iteration(versions, expected):
    assert decode_iteration(*versions) == expected


def test_receive_side_follows_the_version_not_the_sticky_variant():
    """B, C, E skip check_gen_transfer_status only where no sync is needed: a context worker
    of PP2 (world 2, no ADP) gathers for the receive side it never uses; trtsim's unguarded
    variant skips it."""
    over = {"workload.num_requests": 4, "workload.output_len": 4,
            "transceiver.sticky_skip": "unguarded"}
    scen = {"name": "t", "topology": "pp2_to_pp1", "workload": {"kind": "serving"}}
    versioned = run(scen, overrides={**over, "transceiver.version": "E",
                                     "executor.version": "coordinator"})
    own = run(scen, overrides=over)
    assert versioned.verdict == own.verdict == "ok"
    assert versioned.census.count(role="ctx", label="gen_consensus") > 0
    assert own.census.count(role="ctx", label="gen_consensus") == 0


@pytest.mark.parametrize("executor,labels", [
    ("trtsim", {"rank_states", "adp_balance", "can_queue", "timeouts", "fetch_requests",
                "responses"}),
    ("classic", {"rank_states", "can_queue", "fetch_requests", "first_token", "responses"}),
    ("coordinator", {"error_sync", "rank_states", "can_queue", "timeouts", "fetch_requests",
                     "first_token", "transfer_responses", "responses"}),
])
def test_attention_dp_gathers_of_each_executor(executor, labels):
    """A context rank of DEP4: the ADP collectives each loop enters while prefilling."""
    res = run(GEN_TP8, overrides={"workload.num_requests": 8, "workload.arrival_interval": 0,
                                  "executor.version": executor, "executor.loop": "plain"})
    assert res.verdict == "ok" and res.metrics["completed"] == 8
    seen = {r.label for r in res.census.select(role="ctx", rank=0, iteration=0)
            if r.kind != "p2p"} - INIT_LABELS       # iteration 0 prefills all eight
    assert seen == labels


def test_patterns_differ_where_the_loops_do():
    assert PATTERNS["classic"].sends_after_update(queued=True, overlap=False) == 1
    assert PATTERNS["coordinator"].sends_after_update(queued=True, overlap=False) == 2
    assert PATTERNS["trtsim"].sends_after_update(queued=False, overlap=False) == 1
    assert all(p.sends_after_update(True, overlap=True) == 1 for p in PATTERNS.values())
    assert all(p.sends_after_update(False, overlap=True) == 0 for p in PATTERNS.values())


def test_pp_runs_the_pp_loop_whatever_the_overlap_setting():
    assert ExecutorConfig(loop="overlap").loop_for(4) == "pp"
    assert ExecutorConfig(loop="plain").loop_for(1) == "plain"
    with pytest.raises(ValueError, match="loop='pp' needs pp > 1"):
        ExecutorConfig(loop="pp").loop_for(1)
    with pytest.raises(ValueError, match="version='new'"):
        ExecutorConfig(version="new")
