"""The corpus's two shapes, mutated by hypothesis: renamed variables, aliases of the gated
value, the gate and the collective 1-3 helpers deep, negated early returns, methods split
between a base class and its subclass. The answers stay those of the shape: the incident's
gate is found at its line, the fixed and legal variants give nothing."""

from hypothesis import HealthCheck, given, settings, strategies as st

from tests.lint.programs import FORMS, SHAPES, VARIANTS, Choice, generate, usable
from trtsim.lint import lint

NAMES = st.lists(st.from_regex(r"[a-z][a-z0-9]{2,9}", fullmatch=True).filter(usable),
                 min_size=9, max_size=9, unique=True)
CHOICES = st.builds(Choice, shape=st.sampled_from(SHAPES), variant=st.sampled_from(VARIANTS),
                    names=NAMES.map(tuple), gate_depth=st.integers(0, 3),
                    call_depth=st.integers(1, 3), aliases=st.integers(0, 2),
                    form=st.sampled_from(FORMS), split=st.booleans())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(choice=CHOICES)
def test_mutated_programs_keep_their_answers(choice, tmp_path_factory):
    source, gate_line = generate(choice)
    path = tmp_path_factory.mktemp("mutant") / "program.py"
    path.write_text(source)
    found = sorted({f.gate.line for f in lint([str(path)]).findings})
    assert found == ([gate_line] if gate_line else []), source


def test_the_generator_marks_the_gate_of_an_incident():
    choice = Choice("sticky", "incident", tuple("abcdefghi"[i] * 3 for i in range(9)), 2, 2, 1,
                    "negated_exit", True)
    source, line = generate(choice)
    assert line is not None and source.splitlines()[line - 1].lstrip().startswith("if not (")
    assert "class Base:" in source and "pp_allgather" in source
