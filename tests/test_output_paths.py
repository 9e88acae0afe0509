"""One rule for every output path of every subcommand (``trtsim.app.output_paths``), checked
before anything runs: an output that is one of the command's inputs (the same file, by device
and inode: a hard link or a symlink to it counts) is refused, and so are two outputs of one
command that name the same file. Refused is exit 2 and one line naming the option and the
path, with the input left as it was."""

import os
import shutil
import subprocess
import sys
from types import SimpleNamespace

import pytest

from tests import fr_synth
from trtsim.app.cli import main
from trtsim.app.output import BadInput
from trtsim.app.output_paths import Output, check_outputs

pytestmark = pytest.mark.timeout(300)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHIPPED_KV = os.path.join(ROOT, "scenarios", "kv_transfer.yaml")


@pytest.fixture
def trtsim(tmp_path, monkeypatch, capsys):
    """``trtsim ARGS`` in ``tmp_path``: in this process (a refusal comes before anything
    runs), or a child process for ``explore`` (hypothesis's settings are per process)."""
    monkeypatch.chdir(tmp_path)

    def command(*args):
        args = list(map(str, args))
        if args[0] == "explore":
            return subprocess.run([sys.executable, "-m", "trtsim", *args], cwd=tmp_path,
                                  capture_output=True, text=True, timeout=240)
        code = main(args)
        out = capsys.readouterr()
        return SimpleNamespace(returncode=code, stdout=out.out, stderr=out.err)
    return command


def refused(res, flag, path, why):
    """Exit 2, one line ``trtsim: FLAG PATH: WHY...``, nothing run."""
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    assert res.stderr.startswith(f"trtsim: {flag} {path}: {why}"), res.stderr
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr, res.stderr
    assert res.stdout == "", res.stdout


@pytest.fixture
def scenario(tmp_path):
    """A small functional scenario of the user's own (a copy of kv_transfer on 2 ranks),
    and links to it."""
    path = tmp_path / "a.yaml"
    path.write_text(open(SHIPPED_KV).read().replace("tp4_pp2_dp_both", "tp1_pp1"))
    os.symlink(path, tmp_path / "link.yaml")
    os.link(path, tmp_path / "hard.yaml")
    return path


def test_compare_refuses_to_write_over_either_scenario(tmp_path, scenario, trtsim):
    before = scenario.read_bytes()
    other = tmp_path / "b.yaml"
    shutil.copy(scenario, other)
    for args, out in ((["--set-b", "seed=1"], scenario), ([other], other),
                      (["--set-b", "seed=1"], "link.yaml"), (["--set-b", "seed=1"], "hard.yaml")):
        refused(trtsim("compare", "a.yaml", *args, "--json", out), "--json", out,
                "is one of the inputs")
    assert scenario.read_bytes() == before and other.read_bytes() == before


def test_explore_refuses_to_write_over_its_scenario(scenario, trtsim):
    before = scenario.read_bytes()
    for out in ("a.yaml", "link.yaml"):
        refused(trtsim("explore", "a.yaml", "--examples", "1", "--json", out),
                "--json", out, "is one of the inputs")
    assert scenario.read_bytes() == before
    refused(trtsim("explore", "a.yaml", "--json", "x", "--out", "x"),
            "--out", "x", "is also the --json output")


def test_a_shipped_scenario_given_by_name_is_an_input_too(tmp_path, trtsim):
    """``run kv_transfer`` reads the shipped file: a link to it is an input (the writer
    would only replace the link, but the rule does not depend on that)."""
    os.symlink(SHIPPED_KV, tmp_path / "out.json")
    refused(trtsim("run", "kv_transfer", "--trace", "out.json"), "--trace",
            "out.json", "is one of the inputs")
    assert os.path.islink(tmp_path / "out.json")


def test_two_outputs_of_one_command_never_name_one_file(tmp_path, scenario, trtsim):
    os.symlink(tmp_path / "t.json", tmp_path / "to_t.json")
    for second in ("t.json", "./t.json", "to_t.json"):
        refused(trtsim("run", "a.yaml", "--json", "t.json", "--trace", second),
                "--trace", second, "is also the --json output")
    fr_synth.skip_job(tmp_path / "dumps")
    refused(trtsim("analyze", "dumps", "--json", "r.yaml", "--replay", "r.yaml"), "--replay",
            "r.yaml", "is also the --json output")
    assert sorted(os.listdir(tmp_path)) == ["a.yaml", "dumps", "hard.yaml", "link.yaml",
                                            "to_t.json"]


def test_the_rule(tmp_path):
    """``check_outputs`` alone: what it refuses and what it lets through."""
    (tmp_path / "in").write_text("x")
    os.symlink(tmp_path / "in", tmp_path / "soft")
    os.link(tmp_path / "in", tmp_path / "hard")
    inputs = [str(tmp_path / "in")]
    for path in ("in", "soft", "hard"):
        with pytest.raises(BadInput, match=f"^--json {tmp_path / path}: is one of the inputs"):
            check_outputs([Output("--json", str(tmp_path / path))], inputs)
    with pytest.raises(BadInput, match="^--trace .*/new: is also the --json output"):
        check_outputs([Output("--json", str(tmp_path / "new")),
                       Output("--trace", str(tmp_path / "sub" / ".." / "new"))])
    with pytest.raises(BadInput, match="^--trace .*/hard: is also the --json output"):
        check_outputs([Output("--json", str(tmp_path / "in")),
                       Output("--trace", str(tmp_path / "hard"))])
    check_outputs([Output("--json", str(tmp_path / "a")), Output("--trace", None),
                   Output("--replay", str(tmp_path / "b")), Output("--out", str(tmp_path / "d"),
                                                                folder=True)], inputs)
    assert sorted(os.listdir(tmp_path)) == ["hard", "in", "soft"]   # nothing written
