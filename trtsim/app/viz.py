"""Pictures for notebooks and reports (matplotlib, imported on use).

- ``draw_rank_grid``: each instance of a deployment as a grid, PP stages as rows and TP ranks
  as columns, each cell labelled with its rank; attention-DP ranks coloured by DP rank, TP
  groups boxed, PP groups as the columns' spines.
- ``draw_timeline``: every rank's calls in the order the scheduler ran them, coloured by
  group kind, with the calls of a report marked.
- ``draw_acceptance``: measured acceptance length against (1 - a^(K+1)) / (1 - a).
- ``draw_clock_timeline`` and ``draw_server_timeline``: virtual time per rank, and the serving
  simulation's steps per server, as bars coloured by kind (one collection per row).
"""

from __future__ import annotations

KIND_COLOURS = {"tp": "tab:blue", "pp": "tab:orange", "cp": "tab:purple", "tp_cp": "tab:cyan",
                "world": "tab:green", "p2p": "tab:gray"}


def _plt():
    import matplotlib.pyplot as plt  # the caller's backend (inline in notebooks, Agg headless)
    return plt


def draw_rank_grid(deployment, axes=None):
    """The ctx and gen instances side by side; returns the figure."""
    plt = _plt()
    from matplotlib.patches import FancyBboxPatch, Rectangle

    specs = [("context", deployment.ctx), ("generation", deployment.gen)]
    if axes is None:
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    fig = axes[0].figure
    cmap = plt.get_cmap("tab10")
    offset = 0
    for ax, (title, spec) in zip(axes, specs):
        tp, pp = spec.tp_size, spec.pp_size
        for rank in range(spec.world_size):
            m = spec.mapping(rank)
            x, y = m.tp_rank, pp - 1 - m.pp_rank
            colour = cmap(m.dp_rank % 10) if spec.enable_attention_dp else "white"
            ax.add_patch(Rectangle((x + 0.08, y + 0.12), 0.84, 0.76, facecolor=colour,
                                   alpha=0.35 if spec.enable_attention_dp else 1.0,
                                   edgecolor="black", linewidth=1.2))
            ax.text(x + 0.5, y + 0.58, f"rank {rank}", ha="center", va="center", fontsize=11,
                    fontweight="bold")
            ax.text(x + 0.5, y + 0.3, f"global {offset + rank}", ha="center", va="center",
                    fontsize=8, color="dimgray")
        for stage in range(pp):                      # TP groups: one box per stage
            ax.add_patch(FancyBboxPatch((0.02, pp - 1 - stage + 0.04), tp - 0.04, 0.92,
                                        boxstyle="round,pad=0.01", fill=False,
                                        edgecolor=KIND_COLOURS["tp"], linewidth=2))
        for t in range(tp):                          # PP groups: one spine per column
            ax.plot([t + 0.5, t + 0.5], [0.12, pp - 0.12], color=KIND_COLOURS["pp"],
                    linewidth=3, alpha=0.5, zorder=0)
        ax.set_xlim(-0.1, tp + 0.1)
        ax.set_ylim(-0.1, pp + 0.1)
        ax.set_xticks([t + 0.5 for t in range(tp)], [f"tp {t}" for t in range(tp)])
        ax.set_yticks([pp - 1 - s + 0.5 for s in range(pp)], [f"pp {s}" for s in range(pp)])
        ax.set_xlabel("TP rank" + (" (= DP rank, colour)" if spec.enable_attention_dp else ""))
        ax.set_ylabel("PP stage")
        ax.set_title(f"{title}: {spec.describe()} ({spec.world_size} ranks)")
        ax.set_aspect("equal")
        offset += spec.world_size
    fig.suptitle(f"{deployment.id}: TP groups boxed (blue), PP groups as spines (orange)")
    fig.tight_layout()
    return fig


def draw_timeline(result, ax=None, max_steps: int | None = None, ranks=None):
    """Every rank's calls (from ``run(..., trace=True)``) against the scheduler step; the
    calls named in ``result.error`` are marked with a red ring and their label."""
    plt = _plt()
    trace = result.trace if max_steps is None else [t for t in result.trace if t[0] <= max_steps]
    if ax is None:
        _, ax = plt.subplots(figsize=(12, 5))
    ranks = sorted({rec.rank for _, rec in trace}) if ranks is None else list(ranks)
    row = {r: i for i, r in enumerate(ranks)}
    names = {rec.rank: (f"{rec.instance} {rec.local_rank}" if rec.instance else f"rank {rec.rank}")
             for _, rec in trace}
    for kind, colour in KIND_COLOURS.items():
        pts = [(step, row[rec.rank]) for step, rec in trace if rec.group_kind == kind
               and rec.rank in row]
        if pts:
            xs, ys = zip(*pts)
            ax.scatter(xs, ys, s=14, color=colour, label=kind)
    err = getattr(result, "error", None)
    if err is not None:
        last = {}
        for step, rec in trace:
            last[rec.rank] = (step, rec)
        for rank, rec in err.calls.items():
            if rank in row and rank in last:
                step = last[rank][0]
                ax.scatter([step], [row[rank]], s=160, facecolors="none", edgecolors="red",
                           linewidths=2)
                ax.annotate(rec.short(), (step, row[rank]), xytext=(6, 6),
                            textcoords="offset points", fontsize=7, color="red")
        for rank in err.ranks:                   # ranks named by the report without a call:
            if rank in row and rank in last and rank not in err.calls:   # they skipped it
                step = last[rank][0]
                ax.scatter([step], [row[rank]], s=120, marker="x", color="red", linewidths=2)
                ax.annotate("did not enter", (step, row[rank]), xytext=(6, -10),
                            textcoords="offset points", fontsize=7, color="red")
    ax.set_yticks(range(len(ranks)), [names.get(r, str(r)) for r in ranks])
    ax.set_xlabel("scheduler step (inproc backend)")
    ax.set_ylabel("rank")
    ax.set_title(f"{result.scenario.name}: collectives per rank, verdict {result.verdict}")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), fontsize=8, ncol=6,
              title="group kind", frameon=False)
    ax.figure.tight_layout()
    ax.grid(axis="x", alpha=0.3)
    return ax.figure


def draw_acceptance(rows, ax=None):
    """``rows``: (K, alpha, measured AL). One line per K of the formula, measured as dots."""
    plt = _plt()
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4.5))
    ks = sorted({k for k, _, _ in rows})
    for k in ks:
        pts = sorted((a, al) for kk, a, al in rows if kk == k)
        alphas = [i / 100 for i in range(0, 96)]
        ax.plot(alphas, [(1 - a ** (k + 1)) / (1 - a) for a in alphas], label=f"formula K={k}")
        ax.scatter(*zip(*pts), s=30, label=f"measured K={k}")
    ax.set_xlabel("per-draft acceptance alpha")
    ax.set_ylabel("acceptance length (tokens per step)")
    ax.set_title("MTP acceptance length: measured vs (1 - alpha^(K+1)) / (1 - alpha)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return ax.figure


_EVENT_COLOURS = {"compute": "tab:blue", "collective": "tab:green", "wait": "tab:red",
                  "p2p": "tab:purple", "prefill": "tab:orange", "generation": "tab:blue"}


def _draw_rows(ax, rows: dict[int, list[tuple[float, float, str]]]) -> None:
    """Bars of (start, width, kind), one collection per row: a ``barh`` per bar costs a
    patch and a limits update each, over a minute for a serving run's thousands of steps."""
    for y, bars in rows.items():
        if bars:
            ax.broken_barh([(start, width) for start, width, _ in bars], (y - 0.35, 0.7),
                           facecolors=[_EVENT_COLOURS.get(kind, "gray") for _, _, kind in bars])
    ax.autoscale_view()


def draw_clock_timeline(result, ax=None, until: float | None = None, ranks=None):
    """Every rank's virtual time (``RunResult.timeline``): compute, collectives, waits (red,
    the rank waited for another), transfers; seconds on the x axis."""
    plt = _plt()
    if ax is None:
        _, ax = plt.subplots(figsize=(12, 5))
    timeline = result.timeline
    ranks = list(range(len(timeline))) if ranks is None else list(ranks)
    roles = {}
    if hasattr(result, "scenario"):
        n_ctx = result.scenario.deployment.ctx.world_size
        roles = {r: (f"ctx {r}" if r < n_ctx else f"gen {r - n_ctx}") for r in ranks}
    rows: dict[int, list[tuple[float, float, str]]] = {}
    for row, rank in enumerate(ranks):
        bars = rows[row] = []
        for start, end, kind, label, peer in timeline[rank]:
            if until is not None and start > until:
                break
            if end > start:
                bars.append((start, (min(end, until) if until else end) - start, kind))
    _draw_rows(ax, rows)
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for k, c in _EVENT_COLOURS.items()
               if k in ("compute", "collective", "wait", "p2p")]
    ax.legend(handles, ["compute", "collective", "wait", "transfer"], loc="upper center",
              bbox_to_anchor=(0.5, -0.12), ncol=4, frameon=False, fontsize=8)
    ax.set_yticks(range(len(ranks)), [roles.get(r, f"rank {r}") for r in ranks])
    ax.set_xlabel("virtual time (s)")
    ax.set_ylabel("rank")
    ax.set_title("virtual time per rank")
    ax.figure.tight_layout()
    return ax.figure


def draw_server_timeline(events, ax=None, until: float | None = None):
    """Steps of the serving simulation per server (``SimResult.events``)."""
    plt = _plt()
    if ax is None:
        _, ax = plt.subplots(figsize=(12, 3.5))
    servers = sorted({e[0] for e in events})
    row = {s: i for i, s in enumerate(servers)}
    rows: dict[int, list[tuple[float, float, str]]] = {i: [] for i in row.values()}
    for server, start, end, kind in events:
        if until is None or start <= until:
            rows[row[server]].append((start, end - start, kind))
    _draw_rows(ax, rows)
    ax.set_yticks(range(len(servers)), servers)
    ax.set_xlabel("simulated time (s)")
    ax.set_title("serving simulation: prefill (orange) and generation steps (blue) per server")
    ax.figure.tight_layout()
    return ax.figure
