"""trtsim analyze against PyTorch's Flight Recorder analyzer on the same real dumps.

For each of the test suite's six shapes (``tests/postmortem_shapes.py``: real hung gloo runs,
so this runs from a checkout), the dumps are read by both tools and what each reports is
printed as one markdown row (docs/POSTMORTEM.md). PyTorch's analyzer
(``python -m torch.distributed.flight_recorder.fr_trace DIR``) stops with a ``KeyError`` on
gloo's dumps, whose ``pg_config`` files every group under an empty name; it is run again on
copies whose ``pg_config`` names each group's members (the members trtsim infers). The p2p
shape, which gloo does not record, is also run under trtsim with call logs.

    python benchmarks/bench_postmortem.py --compare [--out DIR]
"""

from __future__ import annotations

import os
import pickle
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def repaired(src: str, dst: str) -> str:
    """Copies of one job's pickles whose pg_config names every group's members."""
    from trtsim.postmortem.dumps import read_dump
    from trtsim.postmortem.fr_records import group_members
    names = sorted(n for n in os.listdir(src) if re.fullmatch(r".*\d+", n))
    dumps = [read_dump(os.path.join(src, n), int(re.search(r"(\d+)$", n)[1])) for n in names]
    members, _ = group_members(tuple(dumps), {})
    os.makedirs(dst, exist_ok=True)
    for n, d in zip(names, dumps):
        with open(os.path.join(src, n), "rb") as f:
            doc = pickle.load(f)
        descs = {e.pg_name: e.pg_desc for e in d.entries}
        doc["pg_config"] = {name: {"name": name, "desc": descs[name], "ranks": str(list(ranks))}
                            for name, ranks in members.items() if d.rank in ranks}
        with open(os.path.join(dst, n), "wb") as f:
            pickle.dump(doc, f, protocol=2)
    return dst


def fr_trace(folder: str) -> tuple[int, str]:
    out = subprocess.run([sys.executable, "-m", "torch.distributed.flight_recorder.fr_trace",
                          folder], capture_output=True, text=True, timeout=300,
                         cwd=tempfile.gettempdir())
    return out.returncode, out.stdout + out.stderr


def fr_findings(text: str) -> str:
    """PyTorch's analyzer's findings, one clause each."""
    found = []
    for block in re.split(r"\n(?=Not all ranks joining|Collective sequence number)", text):
        seq = re.search(r"sequence number:? (\d+)", block)
        group = re.search(r"group info: (\S+)", block)
        where = f"#{seq[1]} of {group[1]}" if seq and group else ""
        if block.startswith("Not all ranks joining"):
            missing = re.search(r"missing ranks: (\{[^}]*\})", block)
            found.append(f"not all ranks joining {where}, missing {missing[1] if missing else '?'}")
        elif block.startswith("Collective sequence number"):
            msg = re.search(r"error msg: (.*)", block)
            found.append(f"errors at {where}: {msg[1] if msg else '?'}")
    crash = re.search(r"^(\w+Error: .*)$", text, re.M)
    if crash and not found:
        return f"crash: `{crash[1][:90]}`"
    return "; ".join(found) or "no finding"


def trtsim_finding(paths: list[str]) -> str:
    from trtsim.postmortem.analysis import analyze
    from trtsim.postmortem.inputs import load_job
    a = analyze(load_job(paths))
    if a.error is None:
        return "consistent (exit 0)"
    return f"{a.error.summary} -- likely: {a.error.explanation} (exit 1)"


def compare(out: str) -> None:
    sys.path.insert(0, ROOT)
    from tests import postmortem_shapes as shapes
    os.makedirs(out, exist_ok=True)
    print("| shape | trtsim analyze | PyTorch fr_trace, raw gloo dumps | PyTorch fr_trace, "
          "pg_config repaired |")
    print("| --- | --- | --- | --- |")
    for shape in shapes.SHAPES:
        folder = os.path.join(out, shape)
        shutil.rmtree(folder, ignore_errors=True)
        shapes.make_dumps(shape, folder)
        pickles = os.path.join(out, f"{shape}.pickles")
        shutil.rmtree(pickles, ignore_errors=True)
        os.makedirs(pickles)
        for n in os.listdir(folder):
            if not n.endswith(".json"):
                shutil.copy(os.path.join(folder, n), pickles)
        raw_rc, raw = fr_trace(pickles)
        fixed_rc, fixed = fr_trace(repaired(pickles, os.path.join(out, f"{shape}.repaired")))
        print(f"| {shape} | {trtsim_finding([pickles])} | {fr_findings(raw)} (exit {raw_rc}) | "
              f"{fr_findings(fixed)} (exit {fixed_rc}) |", flush=True)
    logs = os.path.join(out, "p2p_tag_mismatch.logs")
    shutil.rmtree(logs, ignore_errors=True)
    import trtsim
    try:
        trtsim.launch(shapes.p2p_tag_mismatch, tp=2, backend="gloo", intercept=("torch",),
                      timeout=30, log_dir=logs)
    except trtsim.CollectiveError:
        pass
    print(f"| p2p_tag_mismatch, trtsim call logs | {trtsim_finding([logs])} | (no Flight "
          "Recorder entry to read) | |")
