"""A wheel of trtsim installs into a clean environment and works there: it ships its
scenarios (run by name from any directory), notebooks, benchmarks and CUDA sources, and its
pytest plugin leaves an unrelated project's ``pytest --strict-markers`` run alone."""

import os
import pathlib
import shutil
import subprocess
import sys
import zipfile

import pytest

from tests import unrelated_project

ROOT = pathlib.Path(__file__).resolve().parents[1]
# The clean environment sees only what it installed: no checkout on PYTHONPATH.
CLEAN = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> pathlib.Path:
    # Built from a copy: a build writes build/ and *.egg-info beside the sources, and two
    # builds of one tree (parallel test workers) would collide there.
    out, src = tmp_path_factory.mktemp("wheel"), tmp_path_factory.mktemp("src") / "trtsim"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(
        ".venv", ".git", "build", "dist", "*.egg-info", "__pycache__", ".hypothesis",
        ".pytest_cache", ".ipynb_checkpoints"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                    "--no-build-isolation", "-w", str(out), str(src)], check=True,
                   capture_output=True, timeout=300)
    (path,) = out.glob("trtsim-*.whl")
    return path


def test_the_wheel_ships_the_data_and_the_entry_points(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    shipped = {n.split("/")[2] for n in names if n.startswith("trtsim/_shipped/")}
    assert shipped == {"scenarios", "notebooks", "benchmarks", "kernels"}
    for folder, pattern in (("scenarios", "*.yaml"), ("notebooks", "*.ipynb"),
                            ("benchmarks", "bench_*.py"), ("kernels", "*.cu")):
        files = sorted(p.name for p in (ROOT / folder).glob(pattern))
        assert files and all(f"trtsim/_shipped/{folder}/{f}" in names for f in files), folder
    assert not [n for n in names if "/.hypothesis/" in n or "__pycache__" in n]
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(entry).decode()
    assert "trtsim = trtsim.app.cli:main" in text and "trtsim = trtsim.app.pytest_plugin" in text


def test_a_clean_venv_from_the_wheel_runs_a_scenario_and_leaves_other_projects_alone(
        wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120, env=CLEAN)
    # no byte-compiling: torch alone is thousands of modules, and nothing here needs them fast
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-compile"]
    subprocess.run(pip + ["-c", str(ROOT / "ci" / "constraints.txt"), str(wheel), "pytest"],
                   check=True, capture_output=True, timeout=600, env=CLEAN)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    run = lambda *args: subprocess.run([str(venv / "bin" / "trtsim"), *args],  # noqa: E731
                                       capture_output=True, text=True, cwd=elsewhere,
                                       timeout=300, env=CLEAN)
    listed = run("scenarios")
    assert listed.returncode == 0 and "kv_transfer" in listed.stdout
    out = run("run", "kv_transfer")
    assert out.returncode == 0 and "verdict: ok, kv verified: True" in out.stdout, out.stderr
    assert run("bench").returncode == 0
    # An unrelated project in the same environment: its own gpu marker, a typo.
    project = tmp_path / "project"
    project.mkdir()
    unrelated_project.write(project)
    pytest_cmd = [str(venv / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider",
                  "--strict-markers"]
    theirs = subprocess.run(pytest_cmd + ["test_theirs.py"], capture_output=True, text=True,
                            cwd=project, timeout=300, env=CLEAN)
    assert theirs.returncode == 0 and "2 passed" in theirs.stdout, theirs.stdout
    typo = subprocess.run(pytest_cmd + ["test_typo.py"], capture_output=True, text=True,
                          cwd=project, timeout=300, env=CLEAN)
    assert typo.returncode != 0 and "'slwo' not found" in typo.stdout
