"""Which rank fell behind: the ``likely:`` line of a skip that paired silently, from the counts.

A live guard sees one sequence at a time, so of two members whose calls at one group
sequence come from different code it can only say "the members run different code paths,
or one skipped a call". A post-mortem holds every member's whole history: counting each
member's calls of the group by purpose says who made fewer calls of which purpose, and the
divergent sequence is where that member fell behind (up to it, every sequence agreed, so
the counts were equal). The line names that rank, the purpose, both counts and where.
"""

from __future__ import annotations

from collections import Counter

from ..calls.errors import CollectiveError, rank_name
from ..guard.rules import differences, purpose_text
from ..calls.records import CallRecord
from .align import Alignment, GroupView


def _counts(g: GroupView, rank: int, since: int) -> Counter:
    """Rank ``rank``'s calls of group ``g`` from sequence ``since`` on, by purpose."""
    return Counter(calls[rank].record.purpose for seq, calls in g.at.items()
                   if seq >= since and rank in calls)


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def behind(alignment: Alignment, error: CollectiveError | None) -> str:
    """The ``likely:`` line for a mismatch in purpose alone: the member whose count of calls
    of one purpose fell behind the other's, and where; "" when the counts do not tell (the
    mismatch is of another kind, or both members made as many calls of each purpose)."""
    if error is None or error.kind != "mismatch" or len(error.calls) < 2:
        return ""
    entered = list(error.calls)
    first, other = error.calls[entered[0]], error.calls[entered[-1]]
    if differences(first, other) != ("purpose",):
        return ""
    g = next((g for g in alignment.groups if g.key == first.group_key), None)
    if g is None:
        return ""
    since = max(g.first.get(first.rank, 0), g.first.get(other.rank, 0), 1)
    counts = {r.rank: _counts(g, r.rank, since) for r in (first, other)}
    # (how far behind, the rank behind, the one ahead): in the purpose of each member's
    # divergent call, the other member made fewer calls
    options = [(counts[a.rank][a.purpose] - counts[b.rank][a.purpose], b, a)
               for a, b in ((first, other), (other, first))]
    deficit, low, high = max(options, key=lambda o: o[0])
    if deficit <= 0:
        return ""
    return _line(g, low, high, counts, since)


def _line(g: GroupView, low: CallRecord, high: CallRecord, counts: dict, since: int) -> str:
    what = purpose_text(high, low)
    n_low, n_high = counts[low.rank][high.purpose], counts[high.rank][high.purpose]
    upto = sum(1 for seq, calls in g.at.items() if since <= seq <= high.seq
               and high.rank in calls and calls[high.rank].record.purpose == high.purpose)
    scope = "" if since <= 1 else f" from #{since} on (earlier calls are not in the files)"
    when = f" in iteration {high.iteration}" if high.iteration or low.iteration else ""
    name_low, name_high = rank_name(low), rank_name(high)
    return (f"{name_low} made {n_low} call{'s' if n_low != 1 else ''} from {what} on "
            f"{g.name} where {name_high} made {n_high}{scope}: {name_low} fell behind at "
            f"#{high.seq}{when}, where its call from {purpose_text(low, high)} "
            f"({low.callsite}) paired with {name_high}'s {_ordinal(upto)} from {what} "
            f"({high.callsite}); {name_low} skipped a call from {what} (or {name_high} made "
            "an extra one)")
