"""The ``likely:`` line of a skip that paired silently names the rank that fell behind: the
one whose count of calls of one purpose is short of the other member's, and where
(``postmortem.skips``). The report itself stays the live guard's, so a replay reproduces it."""

import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import fr_synth
from trtsim.postmortem.analysis import analyze
from trtsim.postmortem.inputs import load_job

pytestmark = pytest.mark.timeout(300)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(iterations=st.integers(2, 6), skipper=st.sampled_from([0, 1]))
def test_the_likely_line_names_who_fell_behind_and_where(tmp_path_factory, iterations,
                                                         skipper):
    folder = tmp_path_factory.mktemp("skip")
    fr_synth.skip_job(folder, iterations, skipper)
    found = analyze(load_job([str(folder)]))
    other = 1 - skipper
    assert found.error.kind == "mismatch"
    assert found.likely.startswith(
        f"rank {skipper} made {iterations - 1} call{'s' if iterations > 2 else ''} from step "
        f"on world [0, 1] (torch:world) where rank {other} made {iterations}: rank {skipper} "
        f"fell behind at #{iterations}, where its call from final")
    assert f"rank {other}'s {iterations}" in found.likely
    assert found.report().endswith(f"  likely: {found.likely}")
    assert "the members run different code paths" in str(found.error)   # the live guard's


def test_a_mismatch_the_counts_cannot_tell_keeps_the_guards_line(tmp_path):
    """Both ranks made one call of each purpose, in opposite orders: nobody fell behind."""
    a, b = fr_synth.frames("load", 3), fr_synth.frames("save", 5)
    fr_synth.write(tmp_path, 0, fr_synth.dump([fr_synth.entry(1, stack=a),
                                               fr_synth.entry(2, stack=b)], 2))
    fr_synth.write(tmp_path, 1, fr_synth.dump([fr_synth.entry(1, stack=b),
                                               fr_synth.entry(2, stack=a)], 2))
    found = analyze(load_job([str(tmp_path)]))
    assert found.error.kind == "mismatch" and found.likely == ""
    assert found.report() == str(found.error)


def test_the_real_skip_names_rank_1_and_the_cli_prints_it(dumps, tmp_path):
    folder = os.path.join(dumps, "skip_pair")
    found = analyze(load_job([folder]))
    assert found.likely.startswith("rank 1 made 2 calls from _step on world [0, 1] "
                                   "(torch:world) where rank 0 made 3: rank 1 fell behind at #4")
    res = subprocess.run([sys.executable, "-m", "trtsim", "analyze", folder, "--replay",
                          tmp_path / "r.yaml"], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 1 and f"  likely: {found.likely}" in res.stdout
    assert "reproduces this report" in res.stdout            # the guard's report, replayed
