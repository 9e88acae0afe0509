"""Long commands show progress on stderr: a bar with its total on a terminal, plain lines
(with count and total, about once a second) in logs and pipes."""

import io

import pytest

from trtsim.app.explore import explore
from trtsim.app.progress import Progress


def test_plain_lines_carry_count_and_total():
    out = io.StringIO()
    with Progress("explore", total=50, stream=out, tty=False, every_s=0.0) as progress:
        progress.update(10, "2 violating")
        progress("a note")
    lines = out.getvalue().splitlines()
    assert lines[0] == "  ... explore 10/50 (2 violating)"
    assert lines[1] == "  ... explore 10/50 (a note)"


def test_plain_lines_are_rate_limited():
    out = io.StringIO()
    progress = Progress("run", stream=out, tty=False, every_s=3600.0)
    for i in range(100):
        progress(f"iteration {i}")
    assert out.getvalue().count("\n") == 1


def test_a_terminal_gets_a_bar_with_the_total():
    pytest.importorskip("tqdm")
    out = io.StringIO()
    with Progress("explore", total=7, stream=out, tty=True) as progress:
        for i in range(1, 8):
            progress.update(i, "0 violating")
    assert "7/7" in out.getvalue() and "explore" in out.getvalue()


def test_explore_reports_against_its_total():
    seen = []

    class Recorder:
        def update(self, done, note=""):
            seen.append(done)

    result = explore("kv_transfer", examples=5, progress=Recorder())
    assert seen == [1, 2, 3, 4, 5] and result.examples_run == 5 == result.requested
