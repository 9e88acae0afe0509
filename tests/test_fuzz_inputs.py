"""Fuzzed input, each in a child process under a 1 GiB memory limit and a 10 s hang guard
(``hostile_runner``): hypothesis mutates Flight Recorder dumps, trtsim call logs and scenario
YAML, and every input must end in exit 0, 1 or 2, one line for 2, no traceback. Inputs are
batched, several per child, to keep the suite's time small."""

import json
import pickle

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import fr_synth as fr
from tests import hostile_runner

pytestmark = pytest.mark.timeout(600)
BATCH = 20
SETTINGS = settings(max_examples=2, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow, HealthCheck.data_too_large])

leaves = (st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70) | st.integers(-3, 5)
          | st.floats() | st.text(max_size=12) | st.just("[0, 1]") | st.just("2.10"))


def _shared(depth: int) -> list:
    """A list of 2**depth leaves in ``depth`` small objects (each level refers to the one
    below twice): tiny pickled, vast as a repr."""
    value = ["x"]
    for _ in range(depth):
        value = [value, value]
    return value


# what the inputs had: shared references, rank numbers and line numbers past limits
big = st.just(10 ** 11) | st.just(10 ** 12) | st.just("[0, 100000000000]") | st.just(300_000_000)


def _values(extra):
    return st.recursive(leaves | extra, lambda inner: st.lists(inner, max_size=4)
                        | st.dictionaries(st.text(max_size=8), inner, max_size=4)
                        | st.tuples(inner, inner), max_leaves=12)


values = _values(big)                                        # what JSON can hold
shared_values = _values(big | st.integers(28, 40).map(_shared))  # pickles and YAML (aliases)
ENTRY_KEYS = tuple(fr.entry(1))
DUMP_KEYS = ("version", "pg_config", "pg_status", "entries")


def _mutate(data, doc: dict, keys, entry_keys=ENTRY_KEYS, entries="entries",
            vals=values) -> dict:
    """``doc`` with a few of its fields, or of its entries' fields, replaced or removed."""
    for _ in range(data.draw(st.integers(1, 4))):
        target = doc
        if isinstance(doc.get(entries), list) and doc[entries] and data.draw(st.booleans()):
            target = data.draw(st.sampled_from(doc[entries]))
            key = data.draw(st.sampled_from(entry_keys))
        else:
            key = data.draw(st.sampled_from(keys))
        if not isinstance(target, dict):
            continue
        if data.draw(st.integers(0, 4)) == 0:
            target.pop(key, None)
        else:
            target[key] = data.draw(vals)
    return doc


def _dump_job(data, folder) -> list[str]:
    """A 2-rank job whose dumps are mutated, pickled or as JSON, maybe cut short."""
    entries = [fr.entry(s, retired=data.draw(st.booleans()),
                        stack=fr.frames(data.draw(st.sampled_from(["step", "final"]))))
               for s in range(1, data.draw(st.integers(1, 4)) + 1)]
    for rank in (0, 1):
        doc = fr.dump([dict(e) for e in entries], data.draw(st.sampled_from([None, 2, 3])))
        form = data.draw(st.sampled_from(["pickle", "json", "cut"]))
        if data.draw(st.booleans()):
            doc = _mutate(data, doc, DUMP_KEYS, vals=values if form == "json" else shared_values)
        if form == "json":
            raw = json.dumps(doc, default=str).encode()
            fr.write(folder, rank, raw, f"{fr.PREFIX}{rank}.json")
        else:
            raw = pickle.dumps(doc, protocol=2)
            if form == "cut":
                raw = raw[:data.draw(st.integers(0, len(raw)))]
            fr.write(folder, rank, raw)
    return [str(folder)]


def ends_well(make, base) -> None:
    """``make(base, i)``'s command lines for a batch, each ending well in the runner."""
    for res in hostile_runner.run([make(base, i) for i in range(BATCH)]):
        assert hostile_runner.well_ended(res), res


@SETTINGS
@given(data=st.data())
def test_fuzzed_dumps_end_well(tmp_path_factory, data):
    def make(base, i):
        replay = ["--replay", str(base / f"replay{i}.yaml")] if i % 5 == 0 else []
        return ["analyze", *_dump_job(data, base / f"job{i}"), *replay]
    ends_well(make, tmp_path_factory.mktemp("fuzz_dumps"))


@SETTINGS
@given(data=st.data())
def test_fuzzed_call_logs_end_well(tmp_path_factory, data):
    keys = tuple(fr.call_log(0, 2))

    def make(base, i):
        for rank in (0, 1):
            doc = _mutate(data, fr.call_log(rank, 2), keys, entries="calls")
            fr.write_text(base / f"job{i}", f"trtsim_calls_rank{rank}.json",
                          json.dumps(doc, default=str))
        return ["analyze", str(base / f"job{i}")]
    ends_well(make, tmp_path_factory.mktemp("fuzz_logs"))


SCENARIO_KEYS = ("name", "seed", "guard", "topology", "expect", "backend", "timeout",
                 "transceiver", "transceiver.sticky_skip", "model", "model.window",
                 "model.num_layers", "workload", "workload.requests", "deployment",
                 "deployment.ctx", "deployment.ctx.tp", "unknown_key", "kind")


def _scenario(data) -> str:
    """A shipped scenario with a few keys set to fuzzed values, as YAML (or fuzzed text)."""
    if data.draw(st.integers(0, 5)) == 0:
        return data.draw(st.text(max_size=200))
    name = data.draw(st.sampled_from(["kv_transfer", "executor_mtp", "incident_sticky_skip",
                                      "sticky_skip_pp_deadlock"]))
    with open(f"{hostile_runner.ROOT}/scenarios/{name}.yaml") as f:
        raw = yaml.safe_load(f)
    for _ in range(data.draw(st.integers(1, 3))):
        *path, last = data.draw(st.sampled_from(SCENARIO_KEYS)).split(".")
        node = raw
        for part in path:
            node = node.setdefault(part, {}) if isinstance(node.get(part, {}), dict) else {}
        node[last] = data.draw(shared_values)
    return yaml.safe_dump(raw, sort_keys=False)


@SETTINGS
@given(data=st.data())
def test_fuzzed_scenarios_end_well(tmp_path_factory, data):
    def make(base, i):
        (base / f"s{i}.yaml").write_text(_scenario(data))
        return ["load", str(base / f"s{i}.yaml")]
    ends_well(make, tmp_path_factory.mktemp("fuzz_yaml"))
