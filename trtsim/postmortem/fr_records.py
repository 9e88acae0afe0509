"""Flight Recorder entries as the guard's call records.

What maps how (facts of torch 2.13's recorder, /work/research/flight_recorder.md):

- the group is the entry's process group *name* (global: every rank makes every group in one
  order); its local ``pg_id`` differs between ranks. Its members come from ``pg_config`` where
  that names them (NCCL), else from declared groups, else the default group is every rank
  and any other group is the ranks whose dumps use it (gloo's ``pg_config`` files every
  group under an empty name). A group spanning every rank is ``world``, any other ``group``;
  its communicator is named as trtsim's torch interception names it (``torch:world``,
  ``torch:<name>``), so reports read alike;
- the sequence is ``collective_seq_id`` (per group, from 1); the op is the entry's profiled
  collective; the API is the torch.distributed function the program called, the outermost
  torch frame (``all_gather_object`` makes two entries, both ``torch.all_gather_object``);
- call site and purpose come from the recorded frames with the guard's own rule
  (``comm.origin.origin_of_frames``); the JSON form has no frames;
- the payload signature is the first input's dtype and shape, as the guard writes a tensor's;
  object collectives, scatters and all-to-alls carry host objects (``object``); a barrier
  ``none``. The recorder keeps no reduce op and no broadcast root; a gather's root shows in
  its output shapes (only the root receives), a scatter's in its inputs;
- an entry is done when it retired (gloo never sets ``state``); a rank with an entry in
  flight is blocked in its earliest one, a rank without one is taken as done;
- ``record_id`` counts a process's entries from 0, so the first surviving one says how many
  the ring buffer dropped. p2p entries (NCCL only: gloo records none) carry no tag and are
  left out.
"""

from __future__ import annotations

from ..guard.waitfor import BLOCKED, DONE
from ..comm.origin import origin_of_frames
from ..calls.records import CallRecord, kind_made_as
from .dumps import FRDump, FREntry
from .history import Call, RankHistory

WORLD_COMM = "torch:world"
_OPS = {"all_reduce": "allreduce", "allreduce": "allreduce", "allreduce_coalesced": "allreduce",
        "all_gather": "allgather", "allgather": "allgather", "_allgather_base": "allgather",
        "allgather_into_tensor_coalesced": "allgather", "broadcast": "broadcast",
        "gather": "gather", "scatter": "scatter", "reduce": "reduce",
        "reduce_scatter": "reduce_scatter", "_reduce_scatter_base": "reduce_scatter",
        "reduce_scatter_tensor_coalesced": "reduce_scatter", "all_to_all": "alltoall",
        "alltoall": "alltoall", "alltoall_base": "alltoall", "barrier": "barrier"}
_HOST = ("scatter", "alltoall", "reduce_scatter")
_OBJECT_APIS = ("all_gather_object", "broadcast_object_list", "gather_object",
                "scatter_object_list")
_DTYPES = {"Float": "float32", "Double": "float64", "Half": "float16", "BFloat16": "bfloat16",
           "Long": "int64", "Int": "int32", "Short": "int16", "Char": "int8", "Byte": "uint8",
           "Bool": "bool", "ComplexFloat": "complex64", "ComplexDouble": "complex128",
           "Float8_e4m3fn": "float8_e4m3fn", "Float8_e5m2": "float8_e5m2"}


def _api(entry: FREntry) -> str:
    """The torch.distributed function the program called: the outermost torch frame."""
    api = ""
    for filename, _, name in entry.frames:
        if "/torch/distributed/" not in filename.replace("\\", "/"):
            if api:
                break
            continue
        if name != "wrapper" and not name.startswith("_"):
            api = name
    return api or entry.profiling_name.partition(":")[2].split(" ")[0]


def _signature(entry: FREntry, op: str, api: str) -> str:
    if op == "barrier":
        return "none"
    if api in _OBJECT_APIS or op in _HOST or not entry.input_sizes:
        return "object"
    shapes = [f"tensor[{_DTYPES.get(d, d.lower())}, {tuple(s)}]"
              for s, d in zip(entry.input_sizes, entry.input_dtypes)]
    if len(shapes) == 1:
        return shapes[0]
    return f"tensors[{'; '.join(shapes)}]" if shapes else "object"


def _claims_root(entry: FREntry, op: str) -> bool | None:
    if op == "gather":
        return bool(entry.output_sizes)
    if op == "scatter":
        return bool(entry.input_sizes)
    return None


def group_members(dumps: tuple[FRDump, ...], declared: dict[str, tuple[int, ...]]
                  ) -> tuple[dict[str, tuple[int, ...]], tuple[str, ...]]:
    """Every group's members (name -> sorted global ranks) and notes on what was inferred."""
    world = tuple(sorted(d.rank for d in dumps))
    named = {name: ranks for d in dumps for name, ranks in d.pg_ranks}
    users: dict[str, set[int]] = {}
    defaults = set()
    for d in dumps:
        for e in d.entries:
            users.setdefault(e.pg_name, set()).add(d.rank)
            if e.pg_desc == "default_pg":
                defaults.add(e.pg_name)
    members, inferred = {}, []
    for name in sorted(users, key=lambda n: (len(n), n)):
        if name in declared:
            members[name] = tuple(sorted(declared[name]))
        elif name in named:
            members[name] = tuple(sorted(named[name]))
        elif name in defaults:
            members[name] = world
        else:
            members[name] = tuple(sorted(users[name]))
            ranks = members[name]
            inferred.append(f"{name!r} {list(ranks)}" if len(ranks) <= 4 else
                            f"{name!r} ({len(ranks)} ranks)")
    if not inferred:
        return members, ()
    shown = ", ".join(inferred[:6]) + (f" and {len(inferred) - 6} more" if len(inferred) > 6
                                       else "")
    return members, (f"group{'s' if len(inferred) > 1 else ''} {shown}: members taken to be "
                     "the ranks whose dumps use them (gloo's dumps name none; --group "
                     "NAME=RANKS says otherwise)",)


def _template(e: FREntry, members: dict, world: tuple[int, ...]) -> tuple:
    """What an entry's record takes from its group, op, shapes and stack (the same for the
    thousands of entries one call site makes): op, call site, signature, kind, ranks,
    purpose, communicator, API, and whether the shapes say the rank is a root."""
    origin = origin_of_frames(e.frames)
    op_name = e.profiling_name.partition(":")[2]
    op = _OPS.get(op_name.split(" ")[0], op_name or e.profiling_name)
    api = _api(e)
    ranks = members[e.pg_name]
    return (op, origin.callsite, _signature(e, op, api), "world" if ranks == world else
            kind_made_as(e.pg_desc or ""), ranks, origin.purpose,
            WORLD_COMM if e.pg_desc == "default_pg" else f"torch:{e.pg_name}", f"torch.{api}",
            _claims_root(e, op))


def fr_histories(dumps: tuple[FRDump, ...], declared: dict[str, tuple[int, ...]] | None = None
                 ) -> tuple[tuple[RankHistory, ...], tuple[str, ...]]:
    """The rank histories of one job's dumps, and notes on what the dumps cannot say."""
    members, notes = group_members(dumps, declared or {})
    world = tuple(sorted(d.rank for d in dumps))
    templates: dict = {}
    out, p2p = [], 0
    for d in dumps:
        calls = []
        for e in d.entries:
            if e.is_p2p:
                p2p += 1
                continue
            # the entries' shapes and stacks are shared objects (dumps.read_dump): by identity
            key = (e.pg_name, e.pg_desc, e.profiling_name, id(e.input_sizes),
                   id(e.input_dtypes), bool(e.output_sizes), id(e.frames))
            t = templates.get(key)
            if t is None:
                t = templates[key] = _template(e, members, world)
            rec = CallRecord(t[0], e.seq, None, 0, t[1], t[2], d.rank, d.rank, "", t[3], t[4],
                             purpose=t[5], comm=t[6], api=t[7])
            calls.append(Call(rec, e.retired or e.state == "completed", e.time_ns, t[8]))
        blocked = next((c for c in calls if not c.done), None)
        dropped = d.entries[0].record_id if d.entries else 0
        out.append(RankHistory(d.rank, d.path, d.form, d.version, tuple(calls),
                               BLOCKED if blocked else DONE, blocked, dropped,
                               name=f"rank {d.rank}"))
    if p2p:
        notes += (f"{p2p} p2p entries are left out: the Flight Recorder keeps no p2p tag",)
    if any(d.entries and not any(e.frames for e in d.entries) for d in dumps):
        notes += ("dumps without Python frames (the JSON form, or a dump taken without stack "
                  "traces): call sites and purposes are unknown, so a skipped call that "
                  "paired silently cannot be told apart",)
    return tuple(out), notes
