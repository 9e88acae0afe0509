"""``trtsim lint``: exit status 0 clean, 1 findings, 2 bad input (one line naming the path and
why, no traceback); --json follows docs/JSON.md; --sarif is SARIF 2.1.0 as a SARIF library
reads it; --explain lists the suppressed gates with their reasons."""

import json
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORPUS = pathlib.Path(__file__).parent / "corpus"
INCIDENT = CORPUS / "incidents" / "dp_zero_token.py"
FIXED = CORPUS / "fixed" / "dp_zero_token.py"


def trtsim(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "trtsim", "lint", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_exit_status_says_whether_anything_was_found():
    found = trtsim(INCIDENT)
    assert found.returncode == 1, found.stderr
    assert "rank-local gate decides all_reduce on the dp group" in found.stdout
    assert "1 finding in 1 files" in found.stdout
    clean = trtsim(FIXED)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "0 findings" in clean.stdout


def _bad(result, *words):
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    for word in words:
        assert word in lines[0]


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    _bad(trtsim(tmp_path / "missing.py"), "missing.py", "no such file")
    (tmp_path / "notes.txt").write_text("hello")
    _bad(trtsim(tmp_path / "notes.txt"), "notes.txt", "not a Python source file")
    (tmp_path / "broken.py").write_text("def f(:\n    pass\n")
    _bad(trtsim(tmp_path / "broken.py"), "broken.py", "does not parse", "line 1")
    (tmp_path / "latin.py").write_bytes(b"x = '\xff'\n")
    _bad(trtsim(tmp_path / "latin.py"), "latin.py", "not UTF-8")
    (tmp_path / "reasonless.py").write_text("if x:  # trtsim: uniform(tp)\n    pass\n")
    _bad(trtsim(tmp_path / "reasonless.py"), "reasonless.py", "line 1", "reason")


def test_a_file_that_does_not_parse_inside_a_folder_is_skipped_and_listed(tmp_path):
    (tmp_path / "good.py").write_text(FIXED.read_text())
    (tmp_path / "template.py").write_text("def {{ name }}():\n")
    result = trtsim(tmp_path)
    assert result.returncode == 0, result.stderr
    assert re.search(r"skipped: .*template\.py: does not parse", result.stdout)


def test_bad_configuration_names_the_file_and_key(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.trtsim.lint]\ncolectives = ['x']\n")
    (tmp_path / "a.py").write_text("x = 1\n")
    _bad(trtsim(tmp_path / "a.py"), "pyproject.toml", "colectives", "unknown key")
    (tmp_path / "pyproject.toml").write_text("[tool.trtsim.lint]\ncollectives = 'sync'\n")
    _bad(trtsim(tmp_path / "a.py"), "collectives", "list of names")


def test_a_collective_named_in_pyproject_is_judged(tmp_path):
    program = ("def step(batch, comm):\n"
               "    if not batch.requests:\n"
               "        return None\n"
               "    return comm.exchange_everything(batch.ids)\n")
    (tmp_path / "a.py").write_text(program)
    assert trtsim(tmp_path / "a.py").returncode == 0         # an unknown name: no collective
    (tmp_path / "pyproject.toml").write_text(
        "[tool.trtsim.lint]\ncollectives = ['exchange_everything']\n")
    result = trtsim(tmp_path / "a.py")
    assert result.returncode == 1 and "exchange_everything" in result.stdout


def test_an_output_that_is_an_input_is_refused(tmp_path):
    target = tmp_path / "prog.py"
    target.write_text(FIXED.read_text())
    _bad(trtsim(target, "--json", target), "--json")


def test_json_document_follows_its_schema(tmp_path):
    out = tmp_path / "lint.json"
    assert trtsim(INCIDENT, "--json", out).returncode == 1
    doc = json.loads(out.read_text())
    assert list(doc)[:3] == ["schema", "schema_version", "trtsim_version"]
    assert doc["schema"] == "trtsim/lint"
    section = (ROOT / "docs" / "JSON.md").read_text().split("## trtsim/lint")[1].split("\n## ")[0]
    listed = set(re.findall(r"^\| `(\w+)` \|", section, re.M))
    assert set(doc) - {"schema", "schema_version", "trtsim_version"} == listed
    (finding,) = doc["findings"]
    assert set(finding) == {"collective", "gate", "group", "origins", "via", "assumption"}
    assert finding["gate"]["site"].endswith("dp_zero_token.py:16")
    assert finding["collective"]["op"] == "all_reduce" and finding["group"] == "dp"


def test_sarif_is_valid_sarif_2_1(tmp_path):
    sarif_pydantic = pytest.importorskip("sarif_pydantic")
    out = tmp_path / "lint.sarif"
    assert trtsim(INCIDENT, "--sarif", out).returncode == 1
    raw = json.loads(out.read_text())
    log = sarif_pydantic.Sarif.model_validate(raw)
    assert log.version == "2.1.0"
    (result,) = log.runs[0].results
    assert result.rule_id == "trtsim-rank-local-gate"
    location = result.locations[0].physical_location
    assert location.region.start_line == 16 and "dp_zero_token.py" in location.artifact_location.uri
    assert result.related_locations[0].physical_location.region.start_line == 27


def test_sarif_validation_can_fail(tmp_path):
    # The check above must be able to fail: a log without runs, or with a line that is not a
    # number, is not SARIF.
    sarif_pydantic = pytest.importorskip("sarif_pydantic")
    from pydantic import ValidationError
    out = tmp_path / "lint.sarif"
    trtsim(INCIDENT, "--sarif", out)
    raw = json.loads(out.read_text())
    raw["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] = \
        "line sixteen"
    with pytest.raises(ValidationError):
        sarif_pydantic.Sarif.model_validate(raw)
    with pytest.raises(ValidationError):
        sarif_pydantic.Sarif.model_validate({"version": "2.1.0"})


def test_explain_lists_suppressions_and_they_silence_the_gate(tmp_path):
    text = INCIDENT.read_text().replace(
        "if num_tokens == 0:  # GATE",
        "if num_tokens == 0:  # trtsim: uniform(dp) -- every DP rank is padded to a step")
    program = tmp_path / "suppressed.py"
    program.write_text(text)
    result = trtsim(program, "--explain")
    assert result.returncode == 0, result.stdout
    assert "uniform on dp -- every DP rank is padded to a step" in result.stdout
    assert "would decide all_reduce on dp" in result.stdout
    # a suppression for another group silences nothing here
    program.write_text(text.replace("uniform(dp)", "uniform(tp)"))
    assert trtsim(program).returncode == 1


def test_a_function_too_deep_to_follow_is_left_out_and_named(tmp_path):
    body = " + ".join(["x"] * 900)
    (tmp_path / "deep.py").write_text(
        "import torch.distributed as dist\n\ndef f(x, batch):\n"
        f"    y = {body}\n    if batch.n == 0:\n        return\n    dist.all_reduce(y)\n")
    result = trtsim(tmp_path / "deep.py")
    assert result.returncode == 0 and "Traceback" not in result.stderr
    assert "deep.py:3: nested too deep to follow; left out" in result.stdout
