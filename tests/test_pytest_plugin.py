"""The pytest plugin: its markers and fixtures work, and it leaves other projects alone
(every pytest run of an environment with trtsim installed loads it)."""

import textwrap

import trtsim

from tests import unrelated_project

PROG_SKIP = """
def skipper(dist):
    for it in range(2):
        dist.set_iteration(it)
        if not (dist.rank == 1 and it == 0):
            dist.allgather(dist.rank, label="consensus")
"""


def test_an_unrelated_project_is_unaffected(pytester):
    # A project of its own, with its own gpu marker, a typo'd marker and a slow test nobody
    # registered: --strict-markers must still catch the typo, nothing may be skipped, and
    # loading the plugin must not import torch.
    unrelated_project.write(pytester.path)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--strict-markers",
                                           "test_theirs.py")
    result.assert_outcomes(passed=2)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--strict-markers",
                                           "test_typo.py")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*'slwo' not found in `markers` configuration option*"])
    slow = pytester.makepyfile(test_slow="""
        import pytest

        @pytest.mark.slow
        def test_slow():
            pass
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--strict-markers", slow)
    assert result.ret != 0                    # trtsim registers no generic `slow` marker


def test_topologies_marker_ids_and_filters(pytester):
    pytester.makepyfile("""
        import pytest, trtsim

        @pytest.mark.trtsim_topologies(["tp1_pp1", "tp2_dp_both"])
        def test_layouts(topology, trtsim_launch):
            dep = trtsim.topology(topology)
            assert trtsim_launch(lambda d: d.rank, tp=dep.ctx.tp_size) == list(range(dep.ctx.tp_size))

        @pytest.mark.trtsim_topologies("pp>1,world<=4")
        def test_filtered(topology):
            dep = trtsim.topology(topology)
            assert max(dep.ctx.pp_size, dep.gen.pp_size) > 1 and dep.world_size <= 4
    """)
    deps = [trtsim.topology(t) for t in trtsim.topologies()]
    filtered = sum(max(d.ctx.pp_size, d.gen.pp_size) > 1 and d.world_size <= 4 for d in deps)
    assert 0 < filtered < len(deps)
    result = pytester.runpytest("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2 + filtered)


def test_bad_markers_are_one_line_collection_errors(pytester):
    pytester.makepyfile(test_malformed="""
        import pytest

        @pytest.mark.trtsim_topologies("pp>>1")
        def test_malformed(topology):
            pass
    """, test_no_argument="""
        import pytest

        @pytest.mark.trtsim_topologies("all")
        def test_no_argument():
            pass
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret != 0
    out = result.stdout.str()
    assert "trtsim_topologies: 'pp>>1' is neither a topology id nor a filter condition" in out
    assert "test_no_argument: the trtsim_topologies marker parametrizes a `topology`" in out
    assert "Traceback" not in out and "topology_filter.py" not in out
    assert "During handling of the above exception" not in out


def test_a_guard_report_fails_the_test_once(pytester):
    pytester.makepyfile(textwrap.dedent(PROG_SKIP) + textwrap.dedent("""
        def test_skip(trtsim_launch):
            trtsim_launch(skipper, tp=2)
    """))
    # -rN: no short summary, which repeats the message in full where CI=true is set.
    result = pytester.runpytest("-p", "no:cacheprovider", "-rN")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert out.count("CollectiveMismatch: world group [0, 1]: call #1 differs") == 1, out
    assert "CollectiveMismatch: CollectiveMismatch" not in out
    assert "During handling of the above exception" not in out
    assert "launcher.py" not in out           # the report, not a traceback through trtsim


def test_launch_fixture_inside_given(pytester):
    pytester.makepyfile("""
        from hypothesis import given, settings, strategies as st

        @settings(max_examples=3, deadline=None)
        @given(st.integers(1, 3))
        def test_any_tp(trtsim_launch, tp):
            assert trtsim_launch(lambda d: d.rank, tp=tp) == list(range(tp))
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
