"""Requested subgroups onto the subgroups of one node group: the best assignment, exactly.

The allocator (``allocator``) places a request group's subgroups of one level
on the node group's subgroups (slots) of that level. Identical requested
subgroups are one *kind*; ``counts[k]`` of kind k are to be placed, and
``pair(k, slot)`` is the gain of one of them on that slot (None: it does not
fit there). The search is a dynamic programme over the slots in order whose
state is how many of each kind are still to place.

With shared groups (``assign_shared``) a slot may take several requested
subgroups at once, of any kinds, when it holds them all together: ``pair``
then scores a vector of how many of each kind.

Gains are compared exactly (``exact``): as floats when every float of the
search is exact, else as integers over a common denominator. Between
placements of exactly equal gain the one found first is kept: slots earlier
in their order, kinds in their order (with shared groups, the most taken at
once first). Both orders are the node's and the request's own (slots by
content then index, ``snapshot._order``; kinds by shape, ``allocator``), so
every worker and every search breaks a tie alike.
"""

from collections.abc import Callable, Sequence
from fractions import Fraction
from itertools import product
from typing import NamedTuple

from placement.group_resources.exact import (
    ExactSums,
    Gain,
    Rounded,
    common_numerators,
    fraction,
)

State = tuple[int, ...]
Number = float | int  # a gain as the search compares it (``comparable``)


# The gain of an assignment and, per kind, the slots its members took (in slot order).
Assigned = tuple[Gain, list[tuple[int, ...]]]


def assign_distinct(
    counts: list[int], slot_count: int, pair: Callable[[int, int], Gain | None], sums: ExactSums
) -> Assigned | None:
    """Give every requested subgroup a slot of its own, maximising the summed gain.

    None if they cannot all be placed. While the search's floats are exact the
    gains are asked slot by slot, as the search goes (it may stop early); if one
    of them was not, the search runs again on all of them, compared exactly.
    """
    if sums.floats_exact:
        assigned = _distinct(counts, slot_count, pair, None, None)
        if assigned is None or sums.floats_exact:
            return assigned
    kinds = range(len(counts))
    rows = [[pair(k, slot) if counts[k] else None for k in kinds] for slot in range(slot_count)]
    values, denominator = comparable(rows, sum(counts), sums)
    return _distinct(counts, slot_count, pair, values, denominator)


def _distinct(
    counts: list[int],
    slot_count: int,
    pair: Callable[[int, int], Gain | None],
    values: Sequence[Sequence[Number | None]] | None,
    denominator: int | None,
) -> Assigned | None:
    """``assign_distinct`` on the gains ``pair`` gives (``values``: those gains as
    ``comparable`` gave them, numerators over ``denominator`` or floats)."""
    kinds = range(len(counts))
    frontier: dict[State, Number] = {tuple(counts): 0}
    steps: list[dict[State, tuple[State, int]]] = []
    for slot in range(slot_count):
        left_after = slot_count - slot - 1
        if values is None:
            row: Sequence[Number | None] = [pair(k, slot) if counts[k] else None for k in kinds]
        else:
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
        return None if sum(counts) else (0.0, [() for _ in counts])
    chosen: list[list[int]] = [[] for _ in counts]
    state = done
    for slot in range(slot_count - 1, -1, -1):
        state, kind = steps[slot][state]
        if kind >= 0:
            chosen[kind].append(slot)
    return gain_of(frontier[done], denominator), [tuple(sorted(slots)) for slots in chosen]


def comparable(
    pairs: Sequence[Sequence[Gain | None]], count: int, sums: ExactSums
) -> tuple[Sequence[Sequence[Number | None]], int | None]:
    """The gains as the search adds and compares them: themselves, floats, when sums of
    ``count`` of them are exact (``ExactSums``); else their numerators over a common
    denominator, which is given too."""
    if sums.exact_floats(pairs, count):
        return pairs, None
    present = [p for row in pairs for p in row if p is not None]
    numerators, denominator = common_numerators([fraction(p) for p in present])
    numbered = iter(numerators)
    integers: list[list[Number | None]] = [
        [None if p is None else next(numbered) for p in row] for row in pairs
    ]
    return integers, denominator


def gain_of(value: Number, denominator: int | None) -> Gain:
    """A sum of the numbers ``comparable`` gave, as a gain."""
    if denominator is None:
        return float(value)
    return Rounded(Fraction(int(value), denominator))


class Shared(NamedTuple):
    gain: Gain
    moves: tuple[tuple[int, tuple[int, ...]], ...]  # (slot, how many of each kind), by slot


def assign_shared(
    counts: list[int],
    slot_count: int,
    pair: Callable[[tuple[int, ...], int], Gain | None],
    sums: ExactSums,
) -> Shared | None:
    """Give every requested subgroup a slot, several to one slot when it holds them all,
    maximising the summed gain.

    ``pair(v, slot)`` is the gain of ``v[k]`` subgroups of each kind k together on
    the slot (None: they do not fit there together). None if the subgroups cannot
    all be placed.
    """
    if sums.floats_exact:
        shared = _shared(counts, slot_count, pair, None, None)
        if shared is None or sums.floats_exact:
            return shared
    vectors = _takings(counts)
    rows = [[pair(vector, slot) for vector in vectors] for slot in range(slot_count)]
    values, denominator = comparable(rows, sum(counts), sums)
    return _shared(counts, slot_count, pair, values, denominator)


def _takings(counts: list[int]) -> list[tuple[int, ...]]:
    """Every way to take some of ``counts``, the most first, without taking none."""
    return list(product(*(range(count, -1, -1) for count in counts)))[:-1]


def _shared(
    counts: list[int],
    slot_count: int,
    pair: Callable[[tuple[int, ...], int], Gain | None],
    values: Sequence[Sequence[Number | None]] | None,
    denominator: int | None,
) -> Shared | None:
    """``assign_shared`` on the gains ``pair`` gives (``values``: as ``comparable`` gave
    them, in the order of ``_takings``)."""
    vectors = _takings(counts)
    index = {vector: position for position, vector in enumerate(vectors)}
    # state -> (position of what a slot takes, or -1 for nothing; the state after it)
    moves_of: dict[State, list[tuple[int, State]]] = {}
    for state in [*vectors, tuple(0 for _ in counts)]:
        moves_of[state] = [
            (index.get(taking, -1), tuple(a - b for a, b in zip(state, taking, strict=True)))
            for taking in product(*(range(left, -1, -1) for left in state))
        ]
    frontier: dict[State, Number] = {tuple(counts): 0}
    steps: list[dict[State, tuple[State, int]]] = []
    for slot in range(slot_count):
        row = values[slot] if values is not None else [pair(v, slot) for v in vectors]
        reached: dict[State, Number] = {}
        back: dict[State, tuple[State, int]] = {}
        for state, value in frontier.items():
            for position, taken in moves_of[state]:
                gain = row[position] if position >= 0 else 0
                if gain is None:
                    continue
                if taken not in reached or value + gain > reached[taken]:
                    reached[taken] = value + gain
                    back[taken] = (state, position)
        steps.append(back)
        frontier = reached
    done = tuple(0 for _ in counts)
    if done not in frontier:
        return None
    moves = []
    state = done
    for slot in range(slot_count - 1, -1, -1):
        state, position = steps[slot][state]
        if position >= 0:
            moves.append((slot, vectors[position]))
    return Shared(gain_of(frontier[done], denominator), tuple(reversed(moves)))
