"""The time-axis pictures: every bar drawn where its event lies, coloured by kind, one
collection per row, and events after ``until`` left out."""

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402
from hypothesis import given, settings, strategies as st  # noqa: E402

from trtsim.app.viz import _EVENT_COLOURS, draw_server_timeline  # noqa: E402

KINDS = ("prefill", "generation")
events_st = st.lists(st.tuples(st.sampled_from(["ctx0", "gen0", "gen1"]),
                               st.floats(0, 100, allow_nan=False),
                               st.floats(0.01, 5, allow_nan=False),
                               st.sampled_from(KINDS)), min_size=1, max_size=40)


def _bars(fig):
    """(row centre, start, width, colour) of every bar on the figure's axes."""
    ax = fig.axes[0]
    out = []
    for coll in ax.collections:
        colours = coll.get_facecolors()
        for path, colour in zip(coll.get_paths(), colours):
            xs, ys = path.vertices[:, 0], path.vertices[:, 1]
            out.append((round(float(ys.min() + ys.max()) / 2, 6), round(float(xs.min()), 6),
                        round(float(xs.max() - xs.min()), 6), tuple(np.round(colour, 6))))
    return sorted(out)


@settings(max_examples=25, deadline=None)
@given(events_st, st.one_of(st.none(), st.floats(0, 100, allow_nan=False)))
def test_every_server_step_is_one_bar_on_its_row(spans, until):
    import matplotlib.pyplot as plt
    events = [(server, start, start + width, kind) for server, start, width, kind in spans]
    fig = draw_server_timeline(events, until=until)
    try:
        rows = {s: i for i, s in enumerate(sorted({e[0] for e in events}))}
        kept = [e for e in events if until is None or e[1] <= until]
        want = sorted((float(rows[s]), round(a, 6), round(b - a, 6),
                       tuple(np.round(to_rgba(_EVENT_COLOURS[k]), 6))) for s, a, b, k in kept)
        assert _bars(fig) == want
        # one collection per server that has a bar, and the view holds every bar
        assert len(fig.axes[0].collections) == len({e[0] for e in kept})
        if kept:
            lo, hi = fig.axes[0].get_xlim()
            assert lo <= min(e[1] for e in kept) and hi >= max(e[2] for e in kept)
    finally:
        plt.close(fig)
