"""A group numbers its collectives from 1, each once: a dump with a sequence id of 0, or one
met twice in a group, is bad input naming the file and the entry (it would align calls that
never paired: ``analyze`` said "consistent" where its own replay said mismatch)."""

import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import fr_synth as fr
from trtsim.postmortem.history import BadDump
from trtsim.postmortem.inputs import load_job

pytestmark = pytest.mark.timeout(300)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def analyze_cli(folder):
    return subprocess.run([sys.executable, "-m", "trtsim", "analyze", str(folder)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("seqs, why", [
    ((1, 1), "entry 1: collective_seq_id 1 of group '0' again (entry 0 has it): a group "
             "numbers each collective once"),
    ((0, 0), "entry 0: collective_seq_id 0 (group '0'): the recorder numbers a group's "
             "collectives from 1"),
    ((1, 2, 3, 2), "entry 3: collective_seq_id 2 of group '0' again (entry 1 has it): a "
                   "group numbers each collective once"),
])
def test_a_repeated_or_zero_sequence_id_is_bad_input(tmp_path, seqs, why):
    bad = fr.write(tmp_path, 0, fr.dump([fr.entry(s) for s in seqs], 2))
    fr.write(tmp_path, 1, fr.dump([fr.entry(s) for s in sorted(set(seqs))], 2))
    res = analyze_cli(tmp_path)
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr == f"trtsim: {bad}: {why}\n"


def test_the_same_number_in_two_groups_and_p2p_zeros_are_fine(tmp_path):
    entries = [fr.entry(1), fr.entry(1, pg="1", desc="sub"), fr.entry(0, is_p2p=True),
               fr.entry(0, is_p2p=True), fr.entry(2)]
    for r in (0, 1):
        fr.write(tmp_path, r, fr.dump(entries, 2, pg_config={"1": {"ranks": "[0, 1]"}}))
    assert len(load_job([str(tmp_path)]).histories) == 2


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seqs=st.lists(st.integers(0, 6), min_size=1, max_size=8))
def test_any_dump_with_a_zero_or_a_repeat_is_refused_at_its_first(tmp_path_factory, seqs):
    folder = tmp_path_factory.mktemp("seq")
    path = fr.write(folder, 0, fr.dump([fr.entry(s) for s in seqs], 1))
    first_bad = next((i for i, s in enumerate(seqs) if s == 0 or s in seqs[:i]), None)
    if first_bad is None:
        assert [c.record.seq for c in load_job([path]).histories[0].calls] == seqs
    else:
        with pytest.raises(BadDump, match=rf"^{path}: entry {first_bad}: collective_seq_id "):
            load_job([path])
