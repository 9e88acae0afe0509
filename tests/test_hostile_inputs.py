"""The hostile inputs of issue 25, each under 1 KB or so, as regression cases: every one ends
in exit 0, 1 or 2 (one line for 2, no traceback) within the time limit and 1 GiB of address
space of its own (``hostile_runner``), each in a child of one server process. And the runner's time
limit holds where an alarm could not: a call that holds the process in C."""

import json
import os

import pytest

from tests import fr_synth as fr
from tests import hostile_runner
from trtsim.checks import MAX_ERROR_LINE, MAX_LINE

pytestmark = pytest.mark.timeout(400)


def _laughs() -> str:
    lines = ["lol0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"lol{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 10)]
    return "name: laughs\nunknown_key:\n" + "".join(f"  {line}\n" for line in lines)


def _shared(depth: int = 40) -> list:
    value = ["x"]
    for _ in range(depth):
        value = [value, value]
    return value


def _cases(d) -> dict:
    """name -> (argv, expected exit status, text the output must hold)."""
    job = fr.consistent_job
    two = lambda entries0, entries1=None: [fr.write(d / n, r, e) for r, e in  # noqa: E731
                                           enumerate((entries0, entries1 or fr.dump([fr.entry(1)], 2)))]
    cases = {}

    def case(name, argv, rc, text):
        cases[name] = ([str(a) for a in argv], rc, text)

    n = "big_rank_name"
    job(d / n)
    os.rename(d / n / f"{fr.PREFIX}1", d / n / f"{fr.PREFIX}100000000000")
    case(n, ["analyze", d / n], 2, "limit of 16,384 ranks")
    n = "big_world_log"
    fr.write_text(d / n, "trtsim_calls_rank0.json", json.dumps(fr.call_log(0, 10 ** 12)))
    case(n, ["analyze", d / n], 2, "world_size 1000000000000")
    n = "shared_pickle"
    two(fr.dump([fr.entry(1)], 2, version=_shared()))
    case(n, ["analyze", d / n], 2, "format version [[[[")
    n = "shared_pg"
    two(fr.dump([fr.entry(1, process_group=_shared())], 2))
    case(n, ["analyze", d / n], 2, "entry 0: process_group")
    n = "laughs.yaml"
    fr.write_text(d, n, _laughs())
    case(n, ["run", d / n], 2, "expand to more than")
    n = "unhashable_kind.yaml"                  # found by the fuzz: a list where a name goes
    fr.write_text(d, n, "name: x\nworkload: {kind: []}\n")
    case(n, ["run", d / n], 2, "workload.kind")
    n = "deep_yaml.yaml"
    fr.write_text(d, n, "name: x\nseed: " + "[" * 50_000 + "]" * 50_000 + "\n")
    case(n, ["run", d / n], 2, "nested more than 32 deep")
    for n, line, rc, text in (("big_line", 300_000_000, 2, "line 0..10,000,000"),
                              ("last_line", MAX_LINE, 0, "reproduces this report")):
        stack = fr.frames(line=line)
        for r in (0, 1):
            fr.write(d / n, r, fr.dump([fr.entry(s, stack=stack) for s in (1, 2)], 2))
        case(n, ["analyze", d / n, "--replay", d / f"{n}.yaml"], rc, text)
    os.mkfifo(d / f"fifo_rank_{0}")
    case("fifo", ["analyze", d / "fifo_rank_0"], 2, "not a regular file")
    os.symlink("/dev/zero", d / "zero_rank_0")
    case("dev_zero", ["analyze", d / "zero_rank_0"], 2, "not a regular file")
    n = "long_error"
    two(fr.dump([fr.entry(1)], 2, version="2." + "x" * 5_000_000))
    case(n, ["analyze", d / n], 2, "format version '2.xxx")
    for field in ("version", "process_group", "pg_config"):
        n = f"deep_{field}"
        doc = fr.dump([fr.entry(1, **({field: fr.DEEP} if field == "process_group" else {}))],
                      2, **({"version": fr.DEEP} if field == "version" else {}))
        if field == "pg_config":
            doc["pg_config"] = {fr.DEEP: {"ranks": "[0, 1]"}}
        fr.write(d / n, 0, fr.with_deep(doc, 100_000, b"t" if field == "pg_config" else b"l"))
        fr.write(d / n, 1, fr.dump([fr.entry(1)], 2))
        case(n, ["analyze", d / n], 0 if field == "pg_config" else 2, "")
    n = "deep_call_log"
    fr.write_text(d / n, "trtsim_calls_rank0.json", "[" * 100_000 + "]" * 100_000)
    case(n, ["analyze", d / n], 2, "nested more than 32 deep")
    n = "omits_own_rank"
    two(fr.dump([fr.entry(1)], 2),
        fr.dump([fr.entry(1, pg="1", desc="sub")], None, pg_config={"1": {"ranks": "[0]"}}))
    case(n, ["analyze", d / n], 2, "omit rank 1, the rank that made it")
    return cases


@pytest.fixture(scope="module")
def ended(tmp_path_factory):
    d = tmp_path_factory.mktemp("hostile")
    cases = _cases(d)
    results = hostile_runner.run([argv for argv, _, _ in cases.values()])
    return d, {name: (res, rc, text) for (name, (_, rc, text)), res in zip(cases.items(),
                                                                            results)}


CASES = ["big_rank_name", "big_world_log", "shared_pickle", "shared_pg", "laughs.yaml",
         "unhashable_kind.yaml", "deep_yaml.yaml", "big_line", "last_line", "fifo", "dev_zero", "long_error", "deep_version",
         "deep_process_group", "deep_pg_config", "deep_call_log", "omits_own_rank"]


@pytest.mark.parametrize("name", CASES)
def test_a_hostile_input_ends_well_and_fast(ended, name):
    res, rc, text = ended[1][name]
    assert hostile_runner.well_ended(res), res
    assert res["rc"] == rc, res
    assert text in res["stderr"] + res["stdout"], res
    assert res["stderr_chars"] <= MAX_ERROR_LINE + 400


def test_a_recorded_line_number_costs_nothing(ended):
    """A line past the limit is refused; the replay of a call recorded at the last line
    allowed is a small file, and its call sits on that line when replayed."""
    res, _, _ = ended[1]["last_line"]
    path = ended[0] / "last_line.yaml"
    assert res["rc"] == 0 and path.stat().st_size < 10_000
    assert f":{MAX_LINE} in step" in path.read_text()
    assert not os.path.exists(ended[0] / "big_line.yaml")


def test_a_replay_grows_with_calls_not_with_calls_times_ranks(tmp_path):
    """Each group's ranks are written once: 4x the ranks (and so 4x the calls) is about 4x
    the replay, where rows that each list their group's ranks made it 16x."""
    from trtsim.postmortem.analysis import analyze
    from trtsim.postmortem.inputs import load_job
    from trtsim.postmortem.replay import build_replay, replay_text
    sizes = {}
    for n in (100, 400):
        fr.consistent_job(tmp_path / str(n), world=n, calls=2)
        replay = build_replay(analyze(load_job([str(tmp_path / str(n))])))
        assert replay.calls == 2 * n
        sizes[n] = len(replay_text(replay))
    assert sizes[400] < 5 * sizes[100]


def test_the_time_limit_holds_in_c_and_names_the_input(tmp_path):
    """A child held in a C call (an alarm's Python handler would wait for it) is killed at
    the parent's limit, reported as a timeout naming its input, with the stack faulthandler
    dumped before; the next input runs in a fresh server."""
    scenario = os.path.join(hostile_runner.ROOT, "scenarios", "kv_transfer.yaml")
    with hostile_runner.Runner(limit_s=4) as runner:
        res = runner.run(hostile_runner.C_LEVEL_HANG)
        assert res["argv"] == hostile_runner.C_LEVEL_HANG and not hostile_runner.well_ended(res)
        assert res["rc"].startswith("timeout: no result within 4 s"), res
        assert "in run_one" in res["log"] and "Thread" in res["log"], res["log"]
        assert runner.run(["load", scenario])["rc"] == 0
