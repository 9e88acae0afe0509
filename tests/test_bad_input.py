"""Bad input is refused before anything runs: the command exits 2 with one line naming the
file, the field and the value; ``launch`` raises ValueError naming its argument. Each case
of the audit, then each family as a property (hypothesis draws its members)."""

import math

import pytest
from hypothesis import given, settings, strategies as st

import trtsim
from tests.test_cli import bad_input, cli
from trtsim.checks import MAX_KV_POOL_BYTES, MAX_RANKS, MAX_REQUESTS, MAX_TIMEOUT_S
from trtsim.scenario.registry import load_any
from trtsim.scenario.schema import ScenarioError

KV = "scenarios/kv_transfer.yaml"
SERVING = "scenarios/executor_mtp.yaml"
PERF = "scenarios/incident_sticky_skip.yaml"


@pytest.fixture
def files(tmp_path):
    (tmp_path / "binary.yaml").write_bytes(b"name: x\n\xd0\x00\xff garbage")
    (tmp_path / "dup.yaml").write_text("seed: 1\nseed: 2\n")
    (tmp_path / "tp3.yaml").write_text("deployment:\n  ctx: {tp: 3}\n  gen: {tp: 1}\n")
    return tmp_path


CASES = [
    (["run", "{dir}"], ["{dir}", "is a directory"]),
    (["run", "{dir}/binary.yaml"], ["binary.yaml", "not a text file", "byte 8"]),
    (["run", KV, "--set", "model.window=[1,"], ["--set model.window", "'[1,'", "not valid YAML"]),
    (["run", "{dir}/dup.yaml"], ["dup.yaml", "line 2", "duplicate key 'seed'"]),
    (["run", "{dir}/tp3.yaml"], ["tp3.yaml", "model.num_kv_heads", "4", "tp=3"]),
    (["run", KV, "--set", "workload.requests=[1000000000000]"],
     ["kv_transfer.yaml", "workload.requests", "1000000000000", "max_seq_len=256"]),
    (["run", KV, "--set", "model.head_dim=1000000000000"],
     ["kv_transfer.yaml", "model.head_dim", "1000000000000", f"{MAX_KV_POOL_BYTES:,}"]),
    (["run", KV, "--set", "workload.requests=[30, 300]"],
     ["kv_transfer.yaml", "workload.requests", "300", "max_seq_len=256"]),
    (["run", SERVING, "--set", "workload.num_requests=1000000000000"],
     ["executor_mtp.yaml", "workload.num_requests", "1000000000000", f"{MAX_REQUESTS:,}"]),
    (["run", KV, "--set", "timeout=.inf"], ["kv_transfer.yaml", "timeout", "inf"]),
    (["run", KV, "--set", "timeout=1.0e+12"], ["kv_transfer.yaml", "timeout", "1000000000000", "2,592,000 seconds"]),
    (["explore", PERF], ["incident_sticky_skip.yaml", "perf scenario", "explore"]),
    (["run", PERF, "--set", "benchmark.num_prompts=1000000000000"],
     ["incident_sticky_skip.yaml", "benchmark.num_prompts", "1000000000000"]),
    (["run", PERF, "--set", "gen.tp=1000000"], ["incident_sticky_skip.yaml", "gen.tp", "1000000",
                                                f"{MAX_RANKS:,}"]),
]


@pytest.mark.parametrize("args,words", CASES, ids=[" ".join(a[1:])[-40:] for a, _ in CASES])
def test_each_bad_input_exits_2_with_one_line(files, args, words):
    fill = lambda s: s.replace("{dir}", str(files))  # noqa: E731
    bad_input(cli(*map(fill, args)), *map(fill, words))


def one_line(exc: BaseException, *words) -> None:
    text = str(exc)
    assert "\n" not in text and all(w in text for w in words), text


# -- families ----------------------------------------------------------------------------------
not_finite = st.sampled_from([math.inf, -math.inf, math.nan])
huge = st.integers(10 ** 7, 10 ** 15)


@settings(max_examples=40, deadline=None)
@given(key=st.sampled_from(["timeout", "executor.forward_ms"]), value=not_finite)
def test_numbers_that_are_not_finite_are_refused(key, value):
    with pytest.raises(ScenarioError) as info:
        load_any(SERVING, {key: value})
    one_line(info.value, "executor_mtp.yaml", key, repr(value))


@settings(max_examples=30, deadline=None)
@given(ms=st.one_of(not_finite, st.floats(max_value=-1e-9, allow_nan=False),
                    st.floats(min_value=MAX_TIMEOUT_S * 1000 + 1, allow_infinity=False)))
def test_delays_must_be_milliseconds_within_the_timeout_limit(ms):
    with pytest.raises(ScenarioError) as info:
        load_any(KV, {"delays": {0: ms}})
    one_line(info.value, "kv_transfer.yaml", "delays.0", repr(ms))


@settings(max_examples=40, deadline=None)
@given(key=st.sampled_from(["model.head_dim", "model.tokens_per_block", "executor.kv_blocks",
                            "model.num_kv_heads"]), value=huge)
def test_sizes_past_the_memory_limit_are_refused_before_any_rank(key, value):
    if key == "model.num_kv_heads":
        value -= value % 8                  # heads that split over the scenario's TP ranks
    with pytest.raises(ScenarioError) as info:
        load_any(SERVING, {key: value})
    one_line(info.value, "executor_mtp.yaml", key, str(value))


@settings(max_examples=40, deadline=None)
@given(length=st.integers(257, 10 ** 15), at=st.integers(0, 2))
def test_requests_longer_than_max_seq_len_are_refused(length, at):
    requests = [30, 60, 80]
    requests[at] = length
    with pytest.raises(ScenarioError) as info:
        load_any(KV, {"workload.requests": requests})
    one_line(info.value, "kv_transfer.yaml", "workload.requests", str(length), "max_seq_len")


@settings(max_examples=30, deadline=None)
@given(requests=st.integers(MAX_REQUESTS + 1, 10 ** 15))
def test_more_requests_than_the_limit_are_refused(requests):
    with pytest.raises(ScenarioError) as info:
        load_any(SERVING, {"workload.num_requests": requests})
    one_line(info.value, "workload.num_requests", str(requests), f"{MAX_REQUESTS:,}")


@settings(max_examples=30, deadline=None)
@given(tp=st.integers(1, 64), heads=st.integers(1, 64))
def test_kv_heads_that_do_not_split_over_tp_are_refused(tp, heads):
    splits = heads % tp == 0 or tp % heads == 0
    raw = {"deployment": {"ctx": {"tp": tp}, "gen": {"tp": 1}}, "model": {"num_kv_heads": heads},
           "workload": {"requests": [8]}}
    if splits:
        load_any(raw)
        return
    with pytest.raises(ScenarioError) as info:
        load_any(raw)
    one_line(info.value, "model.num_kv_heads", str(heads), f"tp={tp}")


@settings(max_examples=40, deadline=None)
@given(text=st.text(alphabet="[]{},:'\"&*!|>%@` ", min_size=1, max_size=6))
def test_set_values_that_are_not_yaml_are_one_line(text):
    from trtsim.app.commands import parse_sets
    from trtsim.app.output import BadInput
    try:
        parse_sets([f"model.window={text}"])
    except BadInput as exc:
        one_line(exc, "--set model.window", repr(text), "not valid YAML")


@settings(max_examples=30, deadline=None)
@given(data=st.binary(min_size=1, max_size=64).filter(lambda b: not _is_utf8(b)))
def test_binary_files_name_the_file(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("bin") / "scenario.yaml"
    path.write_bytes(data)
    with pytest.raises(ScenarioError) as info:
        load_any(str(path))
    one_line(info.value, str(path), "not a text file")


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


@settings(max_examples=30, deadline=None)
@given(key=st.sampled_from(["seed", "guard", "name", "model"]))
def test_duplicate_keys_are_refused_at_any_depth(tmp_path_factory, key):
    path = tmp_path_factory.mktemp("dup") / "dup.yaml"
    body = "{num_kv_heads: 4, num_kv_heads: 8}" if key == "model" else "x"
    path.write_text(f"{key}: {body}\n" if key == "model" else f"{key}: a\n{key}: b\n")
    with pytest.raises(ScenarioError) as info:
        load_any(str(path))
    one_line(info.value, "dup.yaml", "duplicate key")


# -- launch() ----------------------------------------------------------------------------------
def _prog(dist, *args):
    return args


@settings(max_examples=40, deadline=None)
@given(args=st.one_of(st.text(), st.integers(), st.lists(st.integers()), st.none(),
                      st.dictionaries(st.text(), st.integers())))
def test_launch_args_must_be_a_tuple(args):
    with pytest.raises(ValueError, match=r"^args=.* must be a tuple"):
        trtsim.launch(_prog, args=args)


@settings(max_examples=40, deadline=None)
@given(timeout=st.one_of(not_finite, st.floats(max_value=0), st.just(MAX_TIMEOUT_S * 2),
                         st.just(1e12), st.text(), st.booleans()))
def test_launch_timeout_must_be_finite_and_positive(timeout):
    with pytest.raises(ValueError, match=r"^timeout="):
        trtsim.launch(_prog, timeout=timeout)


@pytest.mark.parametrize("kwargs,match", [
    ({"prog": None}, r"^prog=None must be callable"),
    ({"prog": 5}, r"^prog=5 must be callable"),
    ({"attention_dp": "yes"}, r"^attention_dp='yes' must be a bool"),
    ({"args": "ab"}, r"^args='ab' must be a tuple"),
    ({"args": 5}, r"^args=5 must be a tuple"),
])
def test_launch_refuses_its_bad_arguments(kwargs, match):
    prog = kwargs.pop("prog", _prog)
    with pytest.raises(ValueError, match=match):
        trtsim.launch(prog, **kwargs)


@pytest.mark.timeout(60)                 # a hang guard: the refusal comes before any rank
def test_a_launch_past_the_rank_limit_is_refused_at_once():
    with pytest.raises(ValueError, match=f"tp_size=1000000: .* limit of {MAX_RANKS:,} ranks"):
        trtsim.launch(_prog, tp=10 ** 6)


@pytest.mark.timeout(120)                # a hang guard; what bounds the work is the sharing
def test_layout_tables_share_each_group():
    from trtsim.layout.places import InstanceLayout, rank_places
    spec = trtsim.InstanceSpec(tp_size=MAX_RANKS // 4, pp_size=4)
    places = rank_places([InstanceLayout("", "", spec)])
    assert len(places) == MAX_RANKS
    world = {id(p.groups()["world"]) for p in places}
    tp = {id(p.groups()["tp"]) for p in places}
    assert len(world) == 1 and len(tp) == 4       # one tuple per group, shared by its members
