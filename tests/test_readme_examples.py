"""The README's tour is run, not copied: each example is a file under docs/examples/, shown in
the README as it is, and each ``$ command`` of the README is run from the repository root and
prints what the README shows after it, line for line (so a call site's line number cannot
drift from the file again).

The README's form: a fenced code block (the file), then a plain fenced block whose lines
starting with ``$ `` are commands and whose other lines are what the command before them
prints (stdout and stderr together). The first command names the file. In the expected text a
line ``...`` stands for any lines (a traceback's frames, which name install paths) and ``...``
inside a line for any text on it (a time); ``/tmp/tour`` is a fresh folder of the test's.
The docs also cite files by repository path only, and every one they cite exists.
"""

import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
EXAMPLES = ROOT / "docs" / "examples"
TOUR_DIR = "/tmp/tour"
# A code block, then the block of its commands and what they print.
BLOCKS = re.findall(r"```(?:python|sh)\n(.*?)```\n```\n(\$ .*?)```\n", README, re.S)


def sessions() -> list[tuple[str, str, list[tuple[str, list[str]]]]]:
    """(example file, its code as the README shows it, [(command, expected lines)])."""
    out = []
    for code, shown in BLOCKS:
        steps: list[tuple[str, list[str]]] = []
        for line in shown.splitlines():
            if line.startswith("$ "):
                steps.append((line[2:], []))
            else:
                steps[-1][1].append(line)
        name = re.search(r"docs/examples/([\w.]+)", steps[0][0])
        assert name, f"the first command does not name its example: {steps[0][0]!r}"
        out.append((name[1], code, steps))
    return out


SESSIONS = sessions()


def test_every_example_is_in_the_readme_as_it_is():
    files = {p.name for p in EXAMPLES.iterdir() if p.suffix in (".py", ".sh")}
    shown = {name: code for name, code, _ in SESSIONS}
    assert set(shown) == files, set(shown) ^ files
    for name, code in shown.items():
        assert code == (EXAMPLES / name).read_text(), f"README's {name} differs from the file"


def expected_pattern(lines: list[str]) -> re.Pattern:
    """The expected lines as a regex: ``...`` alone is any lines, inside a line any text."""
    parts = []
    for line in lines:
        if line.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(".*?".join(map(re.escape, line.split("..."))) + r"\n")
    return re.compile("".join(parts))


@pytest.mark.timeout(400)
@pytest.mark.parametrize("name,code,steps", SESSIONS, ids=[s[0] for s in SESSIONS])
def test_an_example_prints_what_the_readme_shows(tmp_path, name, code, steps):
    env = dict(os.environ, COLUMNS="80", PYTEST_ADDOPTS="-p no:cacheprovider",
               HYPOTHESIS_STORAGE_DIRECTORY=str(tmp_path / "hypothesis"),
               PATH=os.pathsep.join([os.path.dirname(sys.executable), os.environ["PATH"]]))
    env.pop("PYTEST_XDIST_WORKER", None)
    tour = tmp_path / "tour"
    tour.mkdir()
    for command, lines in steps:
        out = subprocess.run(["bash", "-c", command.replace(TOUR_DIR, str(tour))], cwd=ROOT,
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, timeout=300)
        printed = out.stdout.replace(str(tour), TOUR_DIR)
        assert expected_pattern(lines).fullmatch(printed), (
            f"$ {command}\nREADME shows:\n" + "\n".join(lines) + f"\nprinted:\n{printed}")


# Paths the docs cite: a repository path (trtsim/..., tests/..., docs/...), never one
# relative to the package (perf/iteration.py) or a bare file name of the project.
_CITED = re.compile(r"`((?:[\w.-]+/)*[\w.-]+\.(?:py|yaml|md|ipynb|cu|json))(?::\d+)?`")
_TOP = ("trtsim/", "tests/", "docs/", "benchmarks/", "scenarios/", "notebooks/", "kernels/",
        "ci/")


_REPO_PATH = re.compile(r"(?<![\w/.])((?:trtsim|tests|docs|benchmarks|scenarios|notebooks)/"
                        r"[\w./-]*\w\.(?:py|yaml|md|ipynb|png))")


def cited_paths(pattern=_CITED):
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for path in pattern.findall(doc.read_text()):
            yield doc.name, path


def test_the_docs_cite_files_by_repository_path():
    ours = {p.name for p in (ROOT / "trtsim").rglob("*.py")} - {"__init__.py"}
    wrong = [(doc, path) for doc, path in cited_paths()
             if not path.startswith(_TOP) and (path.split("/")[-1] in ours or "/" in path)
             and not path.startswith(("tensorrt_llm/", "torch/"))]
    assert not wrong, wrong
    missing = [(doc, path) for doc, path in cited_paths(_REPO_PATH)
               if not (ROOT / path).exists()]
    assert not missing, missing


def test_the_pictures_the_docs_show_exist_and_are_small():
    shown = [(doc, doc.parent / path) for doc in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]
             for path in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", doc.read_text())]
    assert len(shown) >= 3
    for doc, path in shown:
        assert path.is_file() and path.stat().st_size < 64 * 1024, (doc.name, str(path))


def test_call_sites_are_absolute_from_outside_the_working_directory(tmp_path):
    """The README's rule for call sites: relative below the working directory (the tour's
    ``docs/examples/prog.py:7``), absolute elsewhere."""
    out = subprocess.run([sys.executable, str(EXAMPLES / "prog.py")], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert f"at {EXAMPLES / 'prog.py'}:7 in prog" in out.stderr, out.stderr[-2000:]
