"""Unmodified torch.distributed and mpi4py code runs guarded (launch(..., intercept=...)): each
program of tests/intercept_programs.py, written three ways, gives the expected verdict on the
inproc and the gloo backend."""

import pytest

import trtsim
from tests import intercept_programs as P

BACKENDS = ["inproc", "gloo"]
ZERO_TOKEN = {  # vLLM #43547, three ways: (program, intercept, iteration marker)
    "dist": (P.zero_token_dist, (), "tests.intercept_programs:DistWorker.execute_model"),
    "torch": (P.zero_token_torch, ("torch",), "tests.intercept_programs:TorchWorker.execute_model"),
    "mpi": (P.zero_token_mpi, ("mpi",), "tests.intercept_programs:MPIWorker.execute_model"),
}
WARMUP = {"dist": (P.warmup_dist, ()), "torch": (P.warmup_torch, ("torch",)),
          "mpi": (P.warmup_mpi, ("mpi",))}
LEGAL = {"dist": (P.legal_dist, ()), "torch": (P.legal_torch, ("torch",)),
         "mpi": (P.legal_mpi, ("mpi",))}


def launch(prog, intercept, backend, **kw):
    return trtsim.launch(prog, tp=2, pp=2 if kw.pop("pp2", False) else 1, attention_dp=True,
                         backend=backend, intercept=intercept, timeout=60, **kw)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("way", sorted(ZERO_TOKEN))
def test_a_zero_token_dp_step_is_reported_at_the_first_divergent_call(way, backend):
    prog, intercept, marker = ZERO_TOKEN[way]
    with pytest.raises(trtsim.CollectiveMismatch) as info:
        launch(prog, intercept, backend, iteration_marker=marker)
    err = info.value
    assert "differs in iteration (rank 0: 2, rank 1: 3)" in err.summary, str(err)
    assert err.group_ranks == (0, 1) and err.ranks == (0, 1)
    assert all("intercept_programs.py" in r.callsite for r in err.calls.values())
    assert "rank 1 skipped a call" in err.explanation


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("way", sorted(WARMUP))
def test_a_skip_across_two_communicators_is_a_deadlock_naming_both(way, backend):
    prog, intercept = WARMUP[way]
    with pytest.raises(trtsim.CollectiveError) as info:
        launch(prog, intercept, backend, pp2=True)
    err = info.value
    # The wait-for graph found it: the launch's 60 s timeout would be a CollectiveTimeout.
    assert type(err) is trtsim.CollectiveDeadlock, str(err)
    assert "cross-group wait cycle" in err.explanation, str(err)
    kinds = {r.group_kind for r in err.calls.values()}
    assert kinds == {"tp", "world"}, str(err)        # the TP communicators and the world's


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("way", sorted(LEGAL))
def test_legal_programs_are_never_reported(way, backend):
    prog, intercept = LEGAL[way]
    results = launch(prog, intercept, backend, pp2=True)
    assert len(results) == 4 and results.divergence == []
    first = results[0]
    assert first[:3] == [3, 4, 5] and first[3] == "cfg-0"


def test_torch_results_are_torchs():
    got = launch(P.legal_torch, ("torch",), "inproc", pp2=True)
    assert got[1][4] == [0.0, 0.0] and got[0][4] == [3.0, 3.0]       # the ring
    assert got[0][5] == [0.0, 2.0] and got[2][5] == [0.0, 2.0]       # the even subgroup


def test_mpi_results_are_mpis():
    got = launch(P.legal_mpi, ("mpi",), "inproc", pp2=True)
    assert got[1][4] == 0 and got[0][4] == 3 and got[0][5] == [0, 2]


def test_unsupported_calls_say_what_they_are():
    def one_sided():
        from mpi4py import MPI
        MPI.Win()

    def split():
        import torch.distributed as tdist
        tdist.init_process_group("gloo")
        tdist.split_group(split_ranks=[[0], [1]])

    def any_source():
        import torch
        import torch.distributed as tdist
        tdist.init_process_group("gloo")
        tdist.recv(torch.zeros(1))

    for prog, intercept, phrase in [(one_sided, ("mpi",), "MPI.Win (one-sided communication)"),
                                    (split, ("torch",), "split_group is not covered"),
                                    (any_source, ("torch",), "from any source")]:
        with pytest.raises(trtsim.RankFailed, match="NotImplementedError") as info:
            launch(prog, intercept, "inproc")
        assert phrase in str(info.value)


def test_bad_intercept_names_fail_up_front():
    with pytest.raises(ValueError, match="'nccl' is not one of torch, mpi"):
        launch(P.legal_mpi, ("nccl",), "inproc")
    with pytest.raises(ValueError, match="must be a tuple"):
        launch(P.legal_mpi, "mpi", "inproc")


def test_the_stand_ins_are_gone_after_the_launch():
    import sys
    import torch.distributed as tdist
    real = tdist.all_reduce
    launch(P.legal_mpi, ("mpi", "torch"), "inproc", pp2=True)
    assert tdist.all_reduce is real and "mpi4py.MPI" not in sys.modules or \
        "trtsim" not in repr(sys.modules.get("mpi4py.MPI"))


def test_the_scenario_key_reaches_the_ranks(monkeypatch):
    from trtsim.jobs import run as run_module
    from trtsim.scenario import ScenarioError, load_scenario
    s = load_scenario("scenarios/kv_transfer.yaml", {"intercept": ["torch", "mpi"]})
    assert s.intercept == ("torch", "mpi")
    for bad in ("torch", ["gloo"]):
        with pytest.raises(ScenarioError, match=r"intercept: .* must be a list of torch, mpi"):
            load_scenario("scenarios/kv_transfer.yaml", {"intercept": bad})
    seen = []

    def spy(instances, program, args, config, **kw):
        seen.append(config.intercept)
        return real(instances, program, args, config, **kw)
    real = run_module.run_ranks
    monkeypatch.setattr(run_module, "run_ranks", spy)
    assert run_module.run(s).verdict == "ok" and seen == [("torch", "mpi")]


def test_the_fixture_takes_intercept(trtsim_launch):
    got = trtsim_launch(P.legal_torch, tp=2, pp=2, attention_dp=True, intercept=("torch",))
    assert got[0][4] == [3.0, 3.0]
    with pytest.raises(pytest.fail.Exception, match="CollectiveDeadlock") as info:
        trtsim_launch(P.warmup_torch, tp=2, pp=2, attention_dp=True, intercept=("torch",))
    assert "torch.barrier on world" in str(info.value)
