"""Every file trtsim writes for a user goes through one helper (``trtsim.safe_write``): a
fresh temporary (never a planted link), mode 0600 until whole, fsynced, renamed over the
target; nothing left behind on failure; an output that is one of the inputs refused."""

import os
import re
import stat
import subprocess
import sys

import pytest

from tests import fr_synth
from trtsim.safe_write import OutputIsInput, atomic_writer, open_log, write_bytes, write_text
from trtsim.timeline.trace import write_trace

pytestmark = pytest.mark.timeout(120)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def trtsim(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "trtsim", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def planted(tmp_path):
    """A victim's file, and a link to it planted where the old writers put ``OUT.tmp``."""
    victim = tmp_path / "victim_bashrc"
    victim.write_text("the victim's own file\n")
    out = tmp_path / "out" / "result"
    out.parent.mkdir()
    return victim, out


def leftovers(folder) -> list[str]:
    return sorted(n for n in os.listdir(folder) if n.endswith(".tmp"))


@pytest.mark.parametrize("flag", ["--replay", "--json"])
def test_analyze_never_writes_through_a_planted_link(tmp_path, planted, flag):
    victim, out = planted
    fr_synth.skip_job(tmp_path / "dumps")
    os.symlink(victim, f"{out}.tmp")
    res = trtsim("analyze", tmp_path / "dumps", flag, out)
    assert res.returncode == 1, res.stderr
    assert victim.read_text() == "the victim's own file\n"
    assert os.path.islink(f"{out}.tmp") and out.stat().st_size > 0
    assert leftovers(out.parent) == [f"{out.name}.tmp"]          # only the planted link


def test_a_trace_never_writes_through_a_planted_link(planted):
    victim, out = planted
    os.symlink(victim, f"{out}.tmp")
    write_trace(str(out), {"traceEvents": []})
    assert victim.read_text() == "the victim's own file\n"
    assert out.read_text() == '{"traceEvents":[]}'


def test_a_target_that_is_a_link_is_replaced_not_followed(planted):
    victim, out = planted
    os.symlink(victim, out)
    write_text(str(out), "new\n")
    assert victim.read_text() == "the victim's own file\n"
    assert not os.path.islink(out) and out.read_text() == "new\n"


def test_the_temporary_is_private_until_whole_then_takes_the_umask_mode(tmp_path):
    out = tmp_path / "x.json"
    old = os.umask(0o027)
    try:
        with atomic_writer(str(out)) as f:
            assert stat.S_IMODE(os.fstat(f.fileno()).st_mode) == 0o600
            (tmp,) = leftovers(tmp_path)
            assert tmp.startswith(".x.json.") and not os.path.exists(out)
            f.write("{}")
    finally:
        os.umask(old)
    assert stat.S_IMODE(out.stat().st_mode) == 0o640 and out.read_text() == "{}"
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("failure", [KeyboardInterrupt, OSError, ValueError])
def test_nothing_is_left_when_the_write_fails(tmp_path, failure):
    out = tmp_path / "x.yaml"
    out.write_text("before\n")
    with pytest.raises(failure):
        with atomic_writer(str(out)) as f:
            f.write("half of it")
            raise failure("stopped mid-write")
    assert out.read_text() == "before\n" and leftovers(tmp_path) == []


def test_a_folder_target_is_refused_and_leaves_nothing(tmp_path):
    with pytest.raises(IsADirectoryError):
        write_bytes(str(tmp_path), b"x")
    assert leftovers(tmp_path) == [] and leftovers(tmp_path.parent) == []
    res = trtsim("analyze", fr_synth.consistent_job(tmp_path / "d")[0], "--json", tmp_path)
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "is a directory" in res.stderr


def test_an_output_that_is_an_input_is_refused(tmp_path):
    paths = fr_synth.skip_job(tmp_path / "dumps")
    before = open(paths[0], "rb").read()
    os.link(paths[1], tmp_path / "hardlink")
    os.symlink(paths[1], tmp_path / "symlink")
    for out in (paths[0], tmp_path / "hardlink", tmp_path / "symlink"):
        for flag in ("--replay", "--json"):
            res = trtsim("analyze", tmp_path / "dumps", flag, out)
            assert res.returncode == 2, res.stdout + res.stderr
            assert res.stderr.startswith(f"trtsim: {flag} {out}: is one of the inputs")
            assert res.stderr.count("\n") == 1 and res.stdout == ""      # before any run
    assert open(paths[0], "rb").read() == before
    with pytest.raises(OutputIsInput):
        write_text(paths[1], "x", inputs=[str(tmp_path / "symlink")])


def test_every_writer_uses_the_one_helper():
    """No module opens a file for writing but the helper."""
    opener = re.compile(r"""open\([^)]*["'][wax]b?\+?["']|os\.replace\(""")
    found = []
    for folder, _, names in os.walk(os.path.join(ROOT, "trtsim")):
        for name in names:
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, ROOT)
            if name.endswith(".py") and rel != "trtsim/safe_write.py":
                found += [rel for line in open(path) if opener.search(line)]
    assert found == []


def test_run_refuses_to_write_its_json_over_the_scenario_it_reads(tmp_path):
    scenario = tmp_path / "kv.yaml"
    scenario.write_text(open(os.path.join(ROOT, "scenarios", "kv_transfer.yaml")).read())
    before = scenario.read_bytes()
    out = trtsim("run", scenario, "--json", scenario, cwd=tmp_path)
    assert out.returncode == 2 and "is one of the inputs" in out.stderr, out.stderr
    assert scenario.read_bytes() == before


def test_a_log_file_is_appended_never_through_a_link_and_only_a_regular_file(tmp_path):
    log = tmp_path / "stdout.log"
    for text in (b"one\n", b"two\n"):
        fd = open_log(str(log))
        os.write(fd, text)
        os.close(fd)
    assert log.read_bytes() == b"one\ntwo\n"
    os.close(open_log(str(log), truncate=True))
    assert log.read_bytes() == b""
    target = tmp_path / "elsewhere"
    target.write_bytes(b"kept")
    os.symlink(target, tmp_path / "planted.log")
    with pytest.raises(OSError):
        open_log(str(tmp_path / "planted.log"))
    os.mkfifo(tmp_path / "pipe.log")
    with pytest.raises(OSError):
        open_log(str(tmp_path / "pipe.log"))
    assert target.read_bytes() == b"kept"
    os.close(open_log(os.devnull))
