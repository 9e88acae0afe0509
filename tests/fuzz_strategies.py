"""Hypothesis strategies of hostile input for ``test_fuzz_inputs``: a job of Flight Recorder
dumps, a folder of trtsim call logs, a scenario file. Each starts from a valid input and
mutates it: fields replaced by hostile values (shared references, huge or negative numbers,
strings where numbers go) or removed, bytes cut short or changed."""

from __future__ import annotations

import json
import os
import pickle

import yaml
from hypothesis import strategies as st

from tests import fr_synth as fr
from trtsim.calls.call_log_format import encode_call, log_name
from trtsim.calls.records import CallRecord

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
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
big = st.sampled_from([10 ** 11, 10 ** 12, "[0, 100000000000]", 300_000_000, 2 ** 63, -1])


def _values(extra):
    return st.recursive(leaves | extra, lambda inner: st.lists(inner, max_size=4)
                        | st.dictionaries(st.text(max_size=8), inner, max_size=4)
                        | st.tuples(inner, inner), max_leaves=12)


values = _values(big)                                        # what JSON can hold
shared_values = _values(big | st.integers(28, 40).map(_shared))  # pickles and YAML (aliases)
ENTRY_KEYS = tuple(fr.entry(1))
# the fields a mutation picks, the format's own name last (picked first, every input would be
# only "not a dump")
DUMP_KEYS = ("entries", "pg_config", "pg_status", "version")


def mutate(data, doc: dict, keys, entry_keys=ENTRY_KEYS, entries="entries",
           vals=values) -> dict:
    """``doc`` with a few of its fields, or of its entries' fields (a dict's by key, a row's
    by position), replaced or removed."""
    for _ in range(data.draw(st.integers(1, 4))):
        target, key = doc, None
        if isinstance(doc.get(entries), list) and doc[entries] and data.draw(st.booleans()):
            target = data.draw(st.sampled_from(doc[entries]))
            if isinstance(target, list) and target:
                target[data.draw(st.integers(0, len(target) - 1))] = data.draw(vals)
                continue
            key = data.draw(st.sampled_from(entry_keys))
        if not isinstance(target, dict):
            continue
        key = key if key is not None else data.draw(st.sampled_from(keys))
        if data.draw(st.integers(0, 4)) == 0:
            target.pop(key, None)
        else:
            target[key] = data.draw(vals)
    return doc


def damaged(data, raw: bytes) -> bytes:
    """``raw`` as written, cut short, or with a few bytes changed."""
    how = data.draw(st.sampled_from(["whole"] * 6 + ["cut", "flip"]))
    if how == "cut":
        return raw[:data.draw(st.integers(0, len(raw)))]
    if how == "flip" and raw:
        out = bytearray(raw)
        for _ in range(data.draw(st.integers(1, 4))):
            out[data.draw(st.integers(0, len(out) - 1))] = data.draw(st.integers(0, 255))
        return bytes(out)
    return raw


def dump_job(data, folder) -> None:
    """A job of 1 to 3 ranks (one may skip a call) whose dumps are mutated, pickled or as
    JSON, under one of a few prefixes, maybe damaged."""
    step, final = (fr.frames(f, data.draw(st.sampled_from([7, 9, 10 ** 7])))
                   for f in ("step", "final"))
    ops = st.sampled_from(["all_reduce", "allgather", "broadcast", "reduce_scatter"])
    calls = [(data.draw(ops), data.draw(st.sampled_from([step, final])))
             for _ in range(data.draw(st.integers(1, 4)))]
    world = data.draw(st.integers(1, 3))
    prefix = data.draw(st.sampled_from([fr.PREFIX, "rank_", "nccl_trace_"]))
    for rank in range(world):
        skip = data.draw(st.integers(-1, len(calls) - 1))
        kept = [c for i, c in enumerate(calls) if i != skip]
        entries = [fr.entry(s, op, stack=stack, retired=data.draw(st.booleans()))
                   for s, (op, stack) in enumerate(kept, start=1)]
        doc = fr.dump(entries, data.draw(st.sampled_from([None, world, world + 1])))
        as_json = data.draw(st.booleans())
        if data.draw(st.integers(0, 2)) == 0:
            doc = mutate(data, doc, DUMP_KEYS, vals=values if as_json else shared_values)
        raw = json.dumps(doc, default=str).encode() if as_json else pickle.dumps(doc, 2)
        ext = ".json" if as_json else data.draw(st.sampled_from(["", ".pkl"]))
        fr.write(folder, rank, damaged(data, raw), f"{prefix}{rank}{ext}")


def _call_row(data, rank: int, world: int, seq: int) -> list:
    """A row of a call log: one of ``world`` ranks' collectives on the world group."""
    op = data.draw(st.sampled_from(["allgather", "allreduce", "broadcast", "barrier"]))
    rec = CallRecord(op, seq, data.draw(st.sampled_from(["x", None])),
                     data.draw(st.integers(0, 2)), "job.py:3 in prog", "object", rank, rank, "",
                     "world", tuple(range(world)),
                     purpose=data.draw(st.sampled_from(["", "step", "final"])))
    return encode_call(rec, data.draw(st.booleans()), 1_000 + seq)


def call_logs(data, folder) -> None:
    """The call logs of one or two launches of 1 to 3 ranks, mutated, maybe damaged."""
    world = data.draw(st.integers(1, 3))
    for launch in data.draw(st.lists(st.sampled_from(["a1", "b2"]), min_size=1, max_size=2,
                                     unique=True)):
        for rank in range(world):
            calls = [_call_row(data, rank, world, s)
                     for s in range(1, data.draw(st.integers(1, 5)))]
            doc = fr.call_log(rank, world, launch=launch, calls=calls,
                              status=data.draw(st.sampled_from(["done", "blocked", "failed"])))
            if data.draw(st.integers(0, 2)) == 0:
                keys = tuple(reversed(doc))         # "format" last, as for dumps
                doc = mutate(data, doc, keys, entry_keys=keys, entries="calls")
            raw = damaged(data, json.dumps(doc, default=str).encode())
            fr.write(folder, rank, raw, log_name(rank, launch))


def outputs(data, folder) -> list[str]:
    """A ``--json`` and a ``--replay`` some of the time (a replay is run to be checked)."""
    out = []
    if data.draw(st.integers(0, 3)) == 0:
        out += ["--replay", str(folder / "replay.yaml")]
    if data.draw(st.booleans()):
        out += ["--json", str(folder / "analysis.json")]
    return out


# Scenarios: shipped ones that run in well under a second on inproc (the perf one with a
# small benchmark), and the keys a mutation sets. A mutation is tame (a value of the key's
# own sort, small) or wild (any value: shared references, huge numbers); a scenario runs when
# it loads, unless a wild value went into a key that scales the work (that one is only
# loaded: a valid but vast workload is the user's to ask for, not a failure).
FUNCTIONAL = ("kv_transfer", "sticky_skip_pp_deadlock", "executor_pp_on_arrival_unguarded",
              "benchmark_fill_failfast")
PERF = "incident_sticky_skip"
SMALL_BENCHMARK = {"concurrency": 2, "num_prompts": 4, "input_length": 256, "output_length": 8}
ints = st.integers
COMMON = {
    "name": st.text(max_size=8), "seed": ints(-2, 5), "unknown_key": ints(0, 1),
    "kind": st.sampled_from(["perf", "functional", 3]),
    "transceiver.sticky_skip": st.sampled_from(["off", "guarded", "unguarded", "conservative"]),
    "transceiver.outcome": st.sampled_from(["packed", "separate"]),
    "transceiver.version": st.sampled_from(["trtsim", "A", "C", "Z"]),
    "transceiver.timeout_iters": st.sampled_from([None, 0, 2]),
    "transceiver.async_consensus": st.booleans(),
}
FUNCTIONAL_KEYS = {
    "topology": st.sampled_from(["tp1_pp1", "tp2_pp2", "tp4_pp2_dp_both", "mla_tp2_ctx_dp",
                                 "tp4_to_pp4", "no_such_topology"]),
    "guard": st.sampled_from(["strict", "lockstep", "off", "loose"]),
    "expect": st.sampled_from(["ok", "mismatch", "deadlock", "x"]),
    "timeout": st.sampled_from([0, 30, -1, float("nan")]),
    "model.window": st.sampled_from([None, 8, 24, [256, 8], 0, [], "x"]),
    "model.num_kv_heads": ints(-1, 4), "model.tokens_per_block": ints(-1, 16),
    "model.max_seq_len": ints(-1, 128), "model.dtype": st.sampled_from(["bfloat16", "int3"]),
    "workload.requests": st.lists(ints(-1, 96), max_size=4),
    "workload.kind": st.sampled_from(["transfer", "serving", "other"]),
    "workload.num_requests": ints(-1, 6), "workload.output_len": ints(-1, 6),
    "workload.input_len": st.sampled_from([8, [4, 16], [16, 4], 0]),
    "workload.arrival_interval": ints(-1, 2), "workload.dp_offset": ints(-2, 5),
    "deployment.ctx.tp": ints(0, 4), "deployment.gen.pp": ints(0, 3),
    "deployment.ctx.attention_dp": st.booleans(), "deployment.num_layers": ints(0, 6),
    "deployment.mla": st.booleans(),
    "executor.max_iterations": ints(-1, 40), "executor.kv_blocks": ints(-1, 64),
    "executor.loop": st.sampled_from(["auto", "plain", "overlap", "pp", "x"]),
    "executor.benchmark_fill": st.sampled_from(["off", "fail_fast", "watchdog"]),
    "executor.pp_handling": st.sampled_from(["ring_count", "on_arrival"]),
    "executor.version": st.sampled_from(["trtsim", "classic", "coordinator"]),
    "executor.enable_inflight_cancel": st.booleans(),
    "faults": st.dictionaries(ints(-1, 3), st.sampled_from(
        ["ctx_fail", "gen_cancel", "timeout", "error", "send_retry@x", "bogus"]), max_size=2),
    "delays": st.lists(ints(0, 2), max_size=3),
    "speculative.max_draft_len": ints(-1, 3), "speculative.acceptance": st.floats(-1, 2),
    "speculative.decoding_type": st.sampled_from(["MTP", "MTPEagle", "DynamicTree", "x"]),
    "speculative.vocab_size": ints(0, 64), "speculative.hidden_size": ints(0, 32),
    "iteration_marker": st.sampled_from([None, "x", "trtsim.no_such:A.b", "json:JSONDecoder.x"]),
    "wrappers": st.lists(st.sampled_from(["trtsim.no_such", "json", ""]), max_size=2),
    "intercept": st.lists(st.sampled_from(["torch", "mpi", "nccl"]), max_size=2),
}
PERF_KEYS = {
    "benchmark.num_prompts": ints(-1, 6), "benchmark.concurrency": ints(-1, 4),
    "benchmark.input_length": ints(-1, 300), "benchmark.output_length": ints(-1, 8),
    "benchmark.stream_interval": ints(-1, 4), "benchmark.streaming": st.booleans(),
    "gen.tp": st.sampled_from([1, 2, 3, 8, 0]), "gen.ep": st.sampled_from([1, 2, 8]),
    "gen.servers": ints(0, 2), "gen.attention_dp": st.booleans(), "ctx.pp": ints(0, 2),
    "gen.max_batch_size": ints(0, 4), "gen.host_work_ms": st.floats(-1, 20),
    "hardware": st.sampled_from(["GB300", "H200_SXM", "x"]),
    "model": st.sampled_from(["V4-Pro", "DeepSeek-R1-FP4", "x"]),
    "speculative.max_draft_len": ints(-1, 3), "speculative.acceptance_length": st.floats(-1, 5),
    "host_backend": st.sampled_from(["mpi", "gloo", "x"]),
    "executor.version": st.sampled_from(["trtsim", "classic", "coordinator"]),
    "measured": st.dictionaries(st.sampled_from(["duration", "x"]), st.floats(), max_size=2),
}
SCALES = ("topology", "timeout", "model.", "workload.", "deployment.", "executor.", "delays",
          "speculative.", "benchmark.", "ctx.", "gen.")


def scenario(data) -> tuple[str, bool]:
    """A shipped scenario with a few keys set, as YAML (or fuzzed text); and whether it may
    be run (no wild value scales its work)."""
    if data.draw(st.integers(0, 7)) == 0:
        return data.draw(st.text(max_size=200)), True
    name = data.draw(st.sampled_from([*FUNCTIONAL, PERF]))
    with open(os.path.join(ROOT, "scenarios", f"{name}.yaml")) as f:
        raw = yaml.safe_load(f)
    own = PERF_KEYS if name == PERF else FUNCTIONAL_KEYS
    if name == PERF:
        raw["benchmark"] = dict(raw["benchmark"], **SMALL_BENCHMARK)
    keys = {**COMMON, **own} if data.draw(st.integers(0, 7)) else \
        {**COMMON, **FUNCTIONAL_KEYS, **PERF_KEYS}
    runs = True
    for _ in range(data.draw(st.integers(1, 3))):
        key = data.draw(st.sampled_from(sorted(keys)))
        wild = data.draw(st.integers(0, 3)) == 0
        *path, last = key.split(".")
        node = raw
        for part in path:
            node = node.setdefault(part, {}) if isinstance(node.get(part, {}), dict) else {}
        node[last] = data.draw(shared_values if wild else keys[key])
        runs = runs and not (wild and key.startswith(SCALES))
    return yaml.safe_dump(raw, sort_keys=False), runs
