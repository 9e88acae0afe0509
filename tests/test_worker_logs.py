"""``trtsim launch --log-dir/--redirects/--tee/--local-ranks-filter``: each worker's stdout and
stderr where torchrun puts them -- its log files laid out as torchrun lays them out (the plan
is compared with torchrun's own ``DefaultLogsSpecs``), tee'd lines on the console after
torchrun's prefix -- on inproc (what the rank writes through sys.stdout/sys.stderr) and gloo
(the rank process's descriptors)."""

import os
import re
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given, settings, strategies as st
from torch.distributed.elastic.multiprocessing.api import DefaultLogsSpecs, Std, to_map

from trtsim.jobs.worker_logs import StreamFlags, parse_std, plan

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
pytestmark = pytest.mark.timeout(300)

# Written for torchrun. print, a warning and a write to the descriptor itself, on every rank.
JOB = textwrap.dedent("""
    import os, sys, warnings
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    print("OUT", rank)
    print("ERR", rank, file=sys.stderr)
    warnings.warn(f"warned {rank}")
    t = torch.ones(1)
    dist.all_reduce(t)
    print("SUM", rank, t.item())
    os.write(1, f"FD {rank}\\n".encode())
    if len(sys.argv) > 1 and rank == 1:
        dist.all_reduce(t)                                   # the others never call it
    dist.destroy_process_group()
""")

STD_TEXT = st.one_of(
    st.sampled_from("0123"),
    st.lists(st.tuples(st.integers(0, 9), st.integers(0, 3)), min_size=1, max_size=4).map(
        lambda kv: ",".join(f"{k}:{v}" for k, v in kv)),
    st.text("0123456789:, x-", max_size=8))


@settings(max_examples=200, deadline=None)
@given(STD_TEXT, st.integers(1, 8))
def test_values_mean_what_torchrun_makes_of_them(text, nproc):
    try:
        theirs = [int(v) for v in to_map(Std.from_str(text), nproc).values()]
    except ValueError:
        with pytest.raises(ValueError, match=r"^--tee '.*': 0 \(none\), 1 \(stdout\)"):
            parse_std("--tee", text, nproc)
        return
    assert list(parse_std("--tee", text, nproc)) == theirs


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["0", "1", "2", "3", "0:3,1:1", "1:2", "2:1"]),
       st.sampled_from(["0", "1", "3", "0:2", "1:3,2:1"]), st.sampled_from(["", "0", "1,2"]),
       st.integers(1, 3))
def test_the_files_are_where_torchrun_puts_them(tmp_path_factory, redirects, tee, shown, nproc):
    base = tmp_path_factory.mktemp("theirs")
    theirs = DefaultLogsSpecs(str(base), Std.from_str(redirects), Std.from_str(tee),
                              set(map(int, shown.split(","))) if shown else None)
    dest = theirs.reify({r: {"TORCHELASTIC_RUN_ID": "run"} for r in range(nproc)})
    attempt = os.path.dirname(dest.filtered_stdout)
    ours = plan(StreamFlags(nproc, str(base), redirects, tee, shown), attempt, None)
    for r, streams in enumerate(ours.ranks):
        assert (streams.stdout, streams.stderr) == (dest.stdouts[r], dest.stderrs[r])
        assert streams.tee_stdout == (r in dest.tee_stdouts)
        assert streams.tee_stderr == (r in dest.tee_stderrs)
        assert streams.error_file == dest.error_files[r]
        assert streams.prefix == f"[default{r}]:"          # TailLog's header


def launch(tmp_path, *args, script_args=(), env=None):
    (tmp_path / "job.py").write_text(JOB)
    return subprocess.run([sys.executable, "-m", "trtsim", "launch", "--nproc-per-node", "2",
                           *args, "job.py", *script_args], capture_output=True, text=True,
                          timeout=240, cwd=tmp_path,
                          env=dict(os.environ, PYTHONPATH=ROOT, **(env or {})))


def rank_dir(tmp_path, out, r: int):
    """The local rank's folder, which the launch names on its first line."""
    head = out.stderr.splitlines()[0]
    found = re.fullmatch(r"trtsim launch: the workers' logs: (.*)/<local rank>/", head)
    assert found, out.stderr
    folder = tmp_path / found[1]
    assert re.fullmatch(r"logs/[0-9a-f-]{36}_\w+/attempt_0", found[1]), found[1]
    return folder / str(r)


def lines(path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


@pytest.mark.parametrize("backend", ["inproc", "gloo"])
def test_redirected_streams_go_to_the_files_and_tee_copies_with_the_prefix(tmp_path, backend):
    out = launch(tmp_path, "--backend", backend, "--log-dir", "logs", "-r", "0:2,1:3",
                 "--tee", "0:1")
    assert out.returncode == 0, out.stderr[-3000:]
    zero, one = rank_dir(tmp_path, out, 0), rank_dir(tmp_path, out, 1)
    assert lines(zero / "stdout.log") == ["OUT 0", "SUM 0 2.0"] + (
        ["FD 0"] if backend == "gloo" else [])             # inproc: the descriptor is shared
    assert lines(one / "stdout.log") == ["OUT 1", "SUM 1 2.0"] + (
        ["FD 1"] if backend == "gloo" else [])
    for r, folder in enumerate((zero, one)):
        err = lines(folder / "stderr.log")
        assert err[0] == f"ERR {r}" and sum(f"UserWarning: warned {r}" in e for e in err) == 1
    teed = ["[default0]:OUT 0", "[default0]:SUM 0 2.0"]
    if backend == "gloo":                       # the process's descriptor: its file too
        assert out.stdout.splitlines() == teed + ["[default0]:FD 0"]
    else:                                       # inproc: the descriptor is the process's
        assert sorted(out.stdout.splitlines()) == ["FD 0", "FD 1"] + teed
    others = [e for e in out.stderr.splitlines() if not e.startswith("trtsim launch: ")]
    assert others == [], out.stderr             # the folder, the summary (and inproc's note)
    assert not (zero / "error.json").exists()


@pytest.mark.parametrize("backend", ["inproc", "gloo"])
def test_a_filtered_rank_is_off_the_console_and_the_report_is_on_it(tmp_path, backend):
    out = launch(tmp_path, "--backend", backend, "--log-dir", "logs", "--tee", "1",
                 "--local-ranks-filter", "1", "--timeout", "60", script_args=("skip",))
    assert out.returncode == 1, out.stderr[-3000:]
    assert out.stderr.count("CollectiveDeadlock") == 1 and "Traceback" not in out.stderr
    assert lines(rank_dir(tmp_path, out, 0) / "stdout.log")[:2] == ["OUT 0", "SUM 0 2.0"]
    shown = [s for s in out.stdout.splitlines() if not s.startswith("FD ")]
    assert shown == ["[default1]:OUT 1", "[default1]:SUM 1 2.0"] + (
        ["[default1]:FD 1"] if backend == "gloo" else []), out.stdout
    assert "ERR 1" in out.stderr and "ERR 0" not in out.stderr   # stderr: not redirected


def test_redirects_without_a_log_dir_write_to_a_temporary_folder_with_the_prefix_template(
        tmp_path):
    out = launch(tmp_path, "--tee", "1", "--redirects", "2",
                 env={"TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE": "[${role_name}-${rank}]",
                      "TMPDIR": str(tmp_path)})
    assert out.returncode == 0, out.stderr[-3000:]
    head = out.stderr.splitlines()[0]
    folder = head.removeprefix("trtsim launch: the workers' logs: ").removesuffix(
        "/<local rank>/")
    assert os.path.basename(os.path.dirname(os.path.dirname(folder))).startswith("trtsim_logs_")
    assert os.path.dirname(os.path.dirname(os.path.dirname(folder))) == str(tmp_path)
    assert lines(tmp_path / folder / "1" / "stdout.log")[0] == "OUT 1"
    assert "[default-1]OUT 1" in out.stdout.splitlines()


@pytest.mark.parametrize("args, phrase", [
    (["--redirects", "4"], "--redirects '4': 0 (none), 1 (stdout), 2 (stderr), 3 (both)"),
    (["-t", "0:1,x"], "--tee '0:1,x': 0 (none)"),
    (["--local-ranks-filter", "0,a"], "--local-ranks-filter '0,a': a comma-separated list"),
    (["--log-dir", "job.py"], "--log-dir 'job.py': a file, not a folder"),
])
def test_a_bad_value_is_one_line_and_status_2(tmp_path, args, phrase):
    out = launch(tmp_path, *args)
    assert out.returncode == 2, out.stderr
    got = out.stderr.strip().splitlines()
    assert len(got) == 1 and phrase in got[0] and "Traceback" not in out.stderr, got
