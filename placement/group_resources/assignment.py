"""Requested subgroups onto the subgroups of one node group: the best assignment, exactly.

The allocator (``allocator``) places a request group's subgroups of one level
on the node group's subgroups (slots) of that level. Identical requested
subgroups are one *kind*; ``counts[k]`` of kind k are to be placed, and
``pair(k, slot)`` is the gain of one of them on that slot (None: it does not
fit there). The search is a dynamic programme over the slots in order whose
state is how many of each kind are still to place.

Gains are compared exactly (``exact``): as floats when every float of the
search is exact, else as integers over a common denominator. Between
placements of exactly equal gain the one found first is kept: slots earlier
in their order, kinds in their order.
"""

from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import NamedTuple

from placement.group_resources.exact import ZERO, ExactSums, Gain, common_numerators

State = tuple[int, ...]
Number = float | int  # a gain as the search compares it (``comparable``)


class Assigned(NamedTuple):
    gain: Gain
    chosen: list[tuple[int, ...]]  # per kind, the slots its members took (in slot order)


def assign_distinct(
    counts: list[int], slot_count: int, pair: Callable[[int, int], Gain | None], sums: ExactSums
) -> Assigned | None:
    """Give every requested subgroup a slot of its own, maximising the summed gain.

    None if they cannot all be placed.
    """
    kinds = range(len(counts))
    pairs = [[pair(k, slot) if counts[k] else None for k in kinds] for slot in range(slot_count)]
    values, denominator = comparable(pairs, sum(counts), sums)
    frontier: dict[State, Number] = {tuple(counts): 0}
    steps: list[dict[State, tuple[State, int]]] = []
    for slot in range(slot_count):
        left_after = slot_count - slot - 1
        row = values[slot]
        reached: dict[State, Number] = {}
        back: dict[State, tuple[State, int]] = {}
        for state, value in frontier.items():
            for k, gain in enumerate(row):
                if gain is None or state[k] == 0:
                    continue
                taken = state[:k] + (state[k] - 1,) + state[k + 1 :]
                if taken not in reached or value + gain > reached[taken]:
                    reached[taken] = value + gain
                    back[taken] = (state, k)
            if sum(state) <= left_after and (state not in reached or value > reached[state]):
                reached[state] = value
                back[state] = (state, -1)
        steps.append(back)
        frontier = reached
        if not frontier:
            return None
    done = tuple(0 for _ in counts)
    if done not in frontier:
        return None if sum(counts) else Assigned(ZERO, [() for _ in counts])
    chosen: list[list[int]] = [[] for _ in counts]
    state = done
    for slot in range(slot_count - 1, -1, -1):
        state, kind = steps[slot][state]
        if kind >= 0:
            chosen[kind].append(slot)
    return Assigned(
        gain_of(frontier[done], denominator), [tuple(sorted(slots)) for slots in chosen]
    )


def comparable(
    pairs: Sequence[Sequence[Gain | None]], count: int, sums: ExactSums
) -> tuple[list[list[Number | None]], int | None]:
    """The gains as the search adds and compares them: their floats when sums of
    ``count`` of them are exact (``ExactSums``); else their numerators over a common
    denominator, which is given too."""
    if sums.exact_floats(pairs, count):
        floats: list[list[Number | None]] = [
            [None if p is None else p.value for p in row] for row in pairs
        ]
        return floats, None
    present = [p for row in pairs for p in row if p is not None]
    numerators, denominator = common_numerators([p.fraction() for p in present])
    numbered = iter(numerators)
    integers: list[list[Number | None]] = [
        [None if p is None else next(numbered) for p in row] for row in pairs
    ]
    return integers, denominator


def gain_of(value: Number, denominator: int | None) -> Gain:
    """A sum of the numbers ``comparable`` gave, as a ``Gain``."""
    if denominator is None:
        return Gain(float(value))
    exact = Fraction(int(value), denominator)
    return Gain(float(exact), exact)
