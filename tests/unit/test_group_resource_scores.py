"""The translator's scores are exact: the float fast path, the assignment, node keys."""

from fractions import Fraction

import pytest

from placement.group_resources.assignment import assign_distinct
from placement.group_resources.exact import ExactSums, Rounded, fraction, is_rounded
from placement.group_resources.levels import Levels
from placement.group_resources.scoring import SCORERS
from placement.group_resources.snapshot import Location, Node, Room


@pytest.mark.parametrize(
    ("numerator", "divisor", "exact"),
    [
        (1, 1.0, True),
        (1024, 2048.0, True),
        (3, 8.0, True),
        (-1, 4.0, True),
        (1, 3.0, False),
        (1024, 3072.0, False),
        (3, 1.5, True),
        (1, 2147483647.0, False),
    ],
)
def test_a_quotient_is_its_float_when_that_is_exact(numerator, divisor, exact):
    sums = ExactSums(terms=4)
    gain = sums.quotient(numerator, divisor)
    assert gain == numerator / divisor
    assert fraction(gain) == Fraction(numerator) / Fraction(divisor)
    assert (not is_rounded(gain)) == exact == sums.floats_exact


def test_sums_stay_floats_while_no_bit_can_be_lost():
    sums = ExactSums(terms=3)
    half, quarter = sums.quotient(1, 2.0), sums.quotient(1, 4.0)
    assert sums.total([half, quarter]) == 0.75
    assert sums.floats_exact
    sums.quotient(1, 2.0**51)  # 3 terms in steps of 2**-51 stay below 2**(53 - 51)
    assert sums.floats_exact
    sums.quotient(1, 2.0**52)  # but not below 2**(53 - 52)
    assert not sums.floats_exact
    total = sums.total([half, quarter])  # this one is below: still exact
    assert (total, is_rounded(total)) == (0.75, False)
    third = sums.quotient(1, 3.0)
    total = sums.total([third, third, third])
    assert (total, fraction(total), is_rounded(total)) == (1.0, 1, True)


def _pairs(table):
    """assign_distinct's pair() from a table of exact gains [slot][kind]."""
    return lambda k, s: None if table[s][k] is None else Rounded(table[s][k])


def _rounded() -> ExactSums:
    sums = ExactSums(terms=2)
    sums.quotient(1, 3.0)  # something was rounded
    return sums


def test_the_assignment_sees_differences_below_float_rounding():
    # The example: a (2**30) and b (2**30 + 1) on units of 2**31 - 2 and 2**31 - 1.
    a, b = 1073741824, 1073741825
    d1, d2 = 2147483646, 2147483647
    table = [[Fraction(a, d1), Fraction(b, d1)], [Fraction(a, d2), Fraction(b, d2)]]
    assert float(table[0][0] + table[1][1]) == float(table[1][0] + table[0][1])
    assigned = assign_distinct([1, 1], 2, _pairs(table), _rounded())
    assert assigned is not None
    gain, chosen = assigned
    assert chosen == [(1,), (0,)]  # a on d2, b on d1: the exact optimum
    assert fraction(gain) == table[1][0] + table[0][1]


def test_exact_ties_keep_the_first_placement_found():
    third = Fraction(1, 3)
    assigned = assign_distinct([2], 3, _pairs([[third], [third], [third]]), _rounded())
    assert assigned is not None and assigned[1] == [(0, 1)]


def test_exact_floats_are_compared_as_they_are():
    assigned = assign_distinct([2], 4, lambda k, s: 1.0, ExactSums(terms=2))
    assert assigned is not None
    gain, chosen = assigned
    assert (gain, is_rounded(gain), chosen) == (2.0, False, [(0, 1)])


def _node(used: int, capacity: int, name: str = "n") -> Node:
    room = Room(float(capacity), used, capacity - used, 1, capacity, 1)
    root = Location(uuid=name, path=(), level=None, rooms={"CUSTOM_UNITS": room})
    return Node(
        name=name,
        root=root,
        levels=Levels({}),
        by_level={},
        utilisation=used / capacity,
        inventory_count=1,
        rooms=(room,),
    )


def test_a_node_key_is_its_exact_score_at_nine_decimals():
    # (1720635158 + 1) / (2**31 - 1) = 0.80123318349...: floats round it to ...184.
    scorer = SCORERS["pack"]
    node = _node(1720635158, 2147483647)
    gain = scorer.gain(ExactSums(1), 1, node.root.rooms["CUSTOM_UNITS"])
    score, key = scorer.node_score(node, gain, 1)
    assert round(score * 10**9) == 801233184
    assert key == 801233183


def test_a_node_key_far_from_a_half_is_the_float_key():
    scorer = SCORERS["spread"]
    node = _node(3, 8)
    gain = scorer.gain(ExactSums(1), 1, node.root.rooms["CUSTOM_UNITS"])
    assert scorer.node_score(node, gain, 1) == (0.5, 500000000)
