"""Where mpi4py is not installed, the stand-in is mpi4py only inside the ranks: a thread of no
rank that imports it meanwhile gets the ImportError it would get without trtsim, and a module
first imported by the ranks that bound its names loses them after the launch (it would not
have imported without it). Run in a process of its own whose import system says mpi4py is
not there, as in an environment without it."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
pytestmark = pytest.mark.timeout(300)

# A process where mpi4py is not installed (its import fails as it would), running an mpi launch:
# a thread of no rank meanwhile, and a module the ranks imported first, after it.
WITHOUT_MPI4PY = textwrap.dedent("""
    import importlib.abc, json, sys, threading

    class NotInstalled(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] == "mpi4py":
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)

    sys.meta_path.insert(0, NotInstalled())
    import trtsim

    started, release, out = threading.Event(), threading.Event(), {}

    def prog(dist):
        from tests.late import binds_mpi
        if dist.global_rank == 0:
            started.set()
            assert release.wait(120)
        return binds_mpi.world_sum(1)

    def run():
        out["results"] = trtsim.launch(prog, tp=2, intercept=("mpi",), timeout=120)

    launch = threading.Thread(target=run)
    launch.start()
    assert started.wait(120)
    try:
        from mpi4py import MPI
        out["outside"] = "imported"
    except ImportError as exc:
        out["outside"] = f"{type(exc).__name__}: {exc}"
    release.set()
    launch.join(120)
    from tests.late import binds_mpi
    out["late"] = sorted(n for n in vars(binds_mpi) if not n.startswith("__"))
    out["left"] = sorted(n for n in sys.modules if n.split(".")[0] == "mpi4py")
    print(json.dumps(out))
""")


def test_without_mpi4py_outside_a_rank_there_is_none_and_a_late_module_loses_its_names():
    env = {**os.environ, "PYTHONPATH": ROOT}                 # this checkout's trtsim, tests
    done = subprocess.run([sys.executable, "-c", WITHOUT_MPI4PY], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out == {"results": [2, 2], "outside": "ModuleNotFoundError: No module named 'mpi4py'",
                   "late": ["world_size", "world_sum"], "left": []}
