"""A script that launches on gloo from its unguarded top level is stopped before any rank
starts, with one line that says where and what to add; a guarded one runs."""

import os
import subprocess
import sys
import textwrap

import pytest

from trtsim.backends.process.main_guard import ADD_GUARD

pytestmark = pytest.mark.timeout(300)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

HEAD = """\
import subprocess, sys
import trtsim

def prog(dist):
    return dist.rank

"""
LAUNCH = "trtsim.launch(prog, tp=2, backend='gloo', timeout=60)"

FORMS = {   # the script's tail -> the line the refusal names (None: it runs)
    "top level": (f"{LAUNCH}\n", 7),
    "a top-level call of a function that launches": (f"def main():\n    {LAUNCH}\n\nmain()\n", 10),
    "inside a top-level for": (f"for _ in range(1):\n    {LAUNCH}\n", 8),
    "guarded": (f"if __name__ == '__main__':\n    print({LAUNCH})\n", None),
    "guarded, after a top-level subprocess.run": (
        f"subprocess.run([sys.executable, '-c', 'pass'])\n"
        f"if __name__ == '__main__':\n    print({LAUNCH})\n", None),
}


@pytest.mark.parametrize("form", sorted(FORMS))
def test_where_the_launch_runs_decides(tmp_path, form):
    tail, line = FORMS[form]
    (tmp_path / "job.py").write_text(HEAD + textwrap.dedent(tail))
    out = subprocess.run([sys.executable, "job.py"], capture_output=True, text=True,
                         timeout=240, cwd=tmp_path)
    if line is None:
        assert out.returncode == 0 and out.stdout.strip() == "[0, 1]", out.stderr[-3000:]
    else:
        assert out.returncode == 1
        assert out.stderr.splitlines() == [f"trtsim: job.py:{line}: {ADD_GUARD}"], out.stderr


def test_a_python_dash_c_launch_is_not_judged():
    # No main script to re-import: nothing to refuse (a notebook or a REPL is the same).
    code = ("import trtsim\nfrom tests import hygiene_programs as hp\n"
            "print(trtsim.launch(hp.rank_of, tp=2, backend='gloo', timeout=60))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=240, cwd=ROOT)
    assert out.returncode == 0 and out.stdout.strip() == "[0, 1]", out.stderr[-3000:]
