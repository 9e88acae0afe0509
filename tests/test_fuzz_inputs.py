"""Fuzzed input: hypothesis makes Flight Recorder dumps, trtsim call logs and scenario YAML
(``fuzz_strategies``: valid inputs mutated), and every one, run by the command in a child
process with 1 GiB of address space of its own and a time limit (``hostile_runner``), must
end in exit 0, 1 or 2, one line for 2, no traceback. A scenario that loads is run (``trtsim
run``: the inproc backend, or the perf simulation), not only read; an analysis writes its
``--replay`` (which runs the replay) and ``--json`` some of the time.

The draws differ from run to run, so a run can find new inputs; a failure prints its
falsifying example and the ``@reproduce_failure`` blob that replays it, and pytest's
``--hypothesis-seed=N`` repeats a run's draws. ``TRTSIM_FUZZ_EXAMPLES=N`` tries N examples
per test instead of the suite's few (a longer hunt, outside the suite). One server per test
module imports trtsim once; each input runs in a child forked from it."""

import os

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests import fuzz_strategies as fs
from tests import hostile_runner

pytestmark = pytest.mark.timeout(600)


def examples(suite: int) -> int:
    """The examples a test tries: ``suite`` in the suite, ``TRTSIM_FUZZ_EXAMPLES`` if set."""
    return int(os.environ.get("TRTSIM_FUZZ_EXAMPLES") or suite)


def fuzz(suite: int):
    """The settings of a fuzz test: fresh draws each run, no deadline (the runner's time
    limit is the bound), the blob that replays a failure."""
    return settings(max_examples=examples(suite), deadline=None, derandomize=False,
                    print_blob=True, suppress_health_check=[HealthCheck.too_slow,
                                                            HealthCheck.data_too_large])


@pytest.fixture(scope="module")
def runner():
    with hostile_runner.Runner() as r:
        yield r


def ends_well(runner, argv: list, shown: str = "") -> None:
    """``trtsim ARGV`` in the runner ends well; a failure names the input (and shows it)."""
    res = runner.run(argv)
    assert hostile_runner.well_ended(res), f"{argv}\n{shown[:2000]}\n{res}"
    # what the inputs came to, for pytest --hypothesis-show-statistics
    event(f"{argv[0]}: exit {res['rc']}" + (f" ({_gist(res['stderr'])})" if res["rc"] == 2
                                            else ""))


def _gist(err: str) -> str:
    """A refusal's kind: the first words of its reason, without values."""
    reason = err.split(": ")[2] if err.count(": ") >= 2 else ""
    return " ".join(w for w in reason.split()[:4] if not any(c in w for c in "0123456789'\"[/"))


@fuzz(100)
@given(data=st.data())
def test_fuzzed_dumps_end_well(runner, tmp_path_factory, data):
    base = tmp_path_factory.mktemp("fuzz_dumps")
    fs.dump_job(data, base / "job")
    ends_well(runner, ["analyze", base / "job", *fs.outputs(data, base)])


@fuzz(100)
@given(data=st.data())
def test_fuzzed_call_logs_end_well(runner, tmp_path_factory, data):
    base = tmp_path_factory.mktemp("fuzz_logs")
    fs.call_logs(data, base / "logs")
    ends_well(runner, ["analyze", base / "logs", *fs.outputs(data, base)])


@fuzz(100)
@given(data=st.data())
def test_fuzzed_scenarios_end_well(runner, tmp_path_factory, data):
    text, runs = fs.scenario(data)
    path = tmp_path_factory.mktemp("fuzz_yaml") / "s.yaml"
    path.write_text(text)
    ends_well(runner, ["run", path] if runs else ["load", path], text)
