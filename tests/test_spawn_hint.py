"""A script that launches on a process backend without an ``if __name__ == "__main__":``
guard gets a report that says why its ranks died, not only that they did."""

import subprocess
import sys
import textwrap

from trtsim.calls.errors import launches_at_top_level
from trtsim.backends.process.main_guard import ADD_GUARD

PROG = """
import trtsim

def prog(dist):
    return dist.rank

{call}
"""


def test_the_check_tells_guarded_from_unguarded_scripts():
    assert launches_at_top_level(PROG.format(call="trtsim.launch(prog, tp=2, backend='gloo')"))
    assert launches_at_top_level(PROG.format(call="res = trtsim.run('kv_transfer')"))
    guarded = PROG.format(call="if __name__ == '__main__':\n    trtsim.launch(prog, tp=2)")
    assert not launches_at_top_level(guarded)
    assert not launches_at_top_level("def main():\n    trtsim.launch(prog)\n")
    assert not launches_at_top_level("this is not python(")


def test_an_unguarded_gloo_script_is_told_why(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(PROG.format(call="trtsim.launch(prog, tp=2, backend='gloo')")))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    assert out.returncode != 0                  # refused before any rank starts (main_guard)
    assert out.stderr.splitlines() == [f"trtsim: job.py:7: {ADD_GUARD}"], out.stderr
