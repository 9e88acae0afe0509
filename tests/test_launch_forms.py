"""The public launch forms: a whole deployment by topology id, results by global rank with
their divergence notes, iterations from a marker function, and argument errors up front."""

import pytest

import trtsim


def who(dist):
    peer = trtsim.Peer("gen" if dist.role == "ctx" else "ctx", dist.rank)
    if dist.role == "ctx":
        dist.send_object(dist.global_rank, peer, tag=1)
        got = None
    else:
        got = dist.recv_object(peer, tag=1)
    return dist.role, dist.instance, dist.rank, dist.global_rank, got


@pytest.mark.parametrize("deployment", ["tp2_dp_both", trtsim.topology("tp2_dp_both")])
def test_a_deployment_launches_both_instances_by_global_rank(deployment):
    res = trtsim.launch(who, deployment=deployment)
    assert isinstance(res, trtsim.LaunchResults) and res.divergence == []
    assert res == [("ctx", "ctx", 0, 0, None), ("ctx", "ctx", 1, 1, None),
                   ("gen", "gen", 0, 2, 0), ("gen", "gen", 1, 3, 1)]


def pp_group_skip(dist):
    for it in range(2):
        dist.set_iteration(it)
        if dist.dp_rank != 0:
            dist.pp_allgather(dist.rank, label="gen_consensus")


def test_results_carry_the_divergence_notes():
    res = trtsim.launch(pp_group_skip, tp=2, pp=2, attention_dp=True)
    assert [(d["kind"], d["other_ranks"], d["label"], d["iterations"]) for d in res.divergence] \
        == [("pp", [0, 2], "gen_consensus", 2)]


@pytest.mark.parametrize("kwargs,match", [
    ({"deployment": "tp3"}, "unknown topology 'tp3'"),
    ({"deployment": "tp2_dp_both", "tp": 2}, "not both"),
    ({"iteration_marker": "nomodule_xyz:f"}, "cannot import 'nomodule_xyz'"),
    ({"iteration_marker": "tests.idioms:Loop.nope"}, "has no attribute 'nope'"),
    ({"iteration_marker": "tests.idioms"}, "must read 'pkg.module:function'"),
    ({"wrappers": "tests.idiom_helpers"}, "tuple of module names"),
])
def test_bad_launch_arguments_fail_before_any_rank_starts(kwargs, match):
    with pytest.raises(ValueError, match=match):
        trtsim.launch(who, **kwargs)


class Stepper:
    def step(self):
        return self.dist.iteration

    @staticmethod
    def static_step(dist):
        return dist.iteration

    @classmethod
    def class_step(cls, dist):
        return dist.iteration


def module_step(dist):
    return dist.iteration


@pytest.mark.parametrize("marker,call", [
    ("tests.test_launch_forms:Stepper.step", lambda s, d: s.step()),
    ("tests.test_launch_forms:Stepper.static_step", lambda s, d: Stepper.static_step(d)),
    ("tests.test_launch_forms:Stepper.class_step", lambda s, d: Stepper.class_step(d)),
])
def test_each_marker_entry_starts_the_next_iteration(marker, call):
    def prog(dist):
        s = Stepper()
        s.dist = dist
        seen = [dist.iteration]
        for _ in range(3):
            seen.append(call(s, dist))
            dist.tp_allgather(dist.iteration)
        return seen

    assert trtsim.launch(prog, tp=2, iteration_marker=marker) == [[0, 1, 2, 3]] * 2
    assert Stepper.__dict__["step"].__name__ == "step" and not hasattr(Stepper.step, "__wrapped__")


def test_a_module_function_marker_is_looked_up_through_its_module():
    import tests.test_launch_forms as mod

    def prog(dist):
        return [mod.module_step(dist) for _ in range(2)]

    assert trtsim.launch(prog, tp=2, iteration_marker="tests.test_launch_forms:module_step") \
        == [[1, 2]] * 2
    assert mod.module_step.__name__ == "module_step" and not hasattr(mod.module_step, "__wrapped__")


def test_the_scenario_keys_and_the_fixture_take_a_marker(trtsim_launch):
    from trtsim.scenario import ScenarioError, load_scenario
    s = load_scenario("scenarios/kv_transfer.yaml", {
        "iteration_marker": "tests.test_launch_forms:module_step",
        "wrappers": ["tests.idiom_helpers"]})
    assert s.iteration_marker.endswith(":module_step") and s.wrappers == ("tests.idiom_helpers",)
    with pytest.raises(ScenarioError, match="iteration_marker: .*has no attribute 'nope'"):
        load_scenario("scenarios/kv_transfer.yaml", {"iteration_marker": "tests.idioms:nope"})
    with pytest.raises(ScenarioError, match="wrappers: 'x' must be a list"):
        load_scenario("scenarios/kv_transfer.yaml", {"wrappers": "x"})
    import tests.test_launch_forms as mod
    got = trtsim_launch(lambda d: [mod.module_step(d)], tp=2,
                        iteration_marker="tests.test_launch_forms:module_step")
    assert got == [[1], [1]]


SCRIPT = '''
import trtsim

class Executor:
    def __init__(self, dist):
        self.dist, self.ever_sent = dist, False

    def step(self, it):
        if self.dist.dp_rank == 0 and it == 1 + self.dist.pp_rank:
            self.ever_sent = True
        if self.ever_sent:
            self.dist.pp_allgather([])

def rank(dist):
    ex = Executor(dist)
    for it in range(3):
        ex.step(it)

if __name__ == "__main__":
    try:
        trtsim.launch(rank, tp=2, pp=2, attention_dp=True, backend=BACKEND,
                      iteration_marker="my_job:Executor.step")
    except trtsim.CollectiveMismatch as err:
        print(err.summary)
'''


# The same job with the marker on a module function: a spawned rank runs the script through
# runpy, so the function's globals are not the module's dict (both must see the marker).
FUNCTION_SCRIPT = SCRIPT[:SCRIPT.index("class Executor")] + '''
def step(dist, it, sent):
    if dist.dp_rank == 0 and it == 1 + dist.pp_rank:
        sent.append(it)
    if sent:
        dist.pp_allgather([])

def rank(dist):
    sent = []
    for it in range(3):
        step(dist, it, sent)
''' + SCRIPT[SCRIPT.index("if __name__"):].replace("my_job:Executor.step", "my_job:step")


@pytest.mark.parametrize("script", [SCRIPT, FUNCTION_SCRIPT], ids=["method", "function"])
@pytest.mark.parametrize("backend", ["inproc", "gloo"])
def test_a_marker_in_the_running_script_is_the_scripts_own(tmp_path, backend, script):
    import subprocess
    import sys
    (tmp_path / "my_job.py").write_text(script.replace("BACKEND", repr(backend)))
    out = subprocess.run([sys.executable, "my_job.py"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120)
    assert "call #1 differs in iteration (rank 0: 2, rank 2: 3)" in out.stdout, out.stderr
