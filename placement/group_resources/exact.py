"""Exact gains at float speed: a float while it is exact, a fraction beside it when not.

A placement's gain is a sum of ``amount / capacity`` over what it puts where
(``scoring.Scorer``), the capacity being the float product placement computes
(``placement.capacity.unrounded``) taken at its exact value. Floats are fast
but round: two placements whose exact gains differ by less than the rounding
compare equal, or the wrong way round, and the worse one can win. So a gain
is a float when the float is exactly the sum, and a ``Rounded`` float that
carries the sum as a ``fractions.Fraction`` when it is not.

A float that is exactly its rational is a multiple of ``2**-grid`` for some
``grid``; sums of such floats (of one sign, as every gain of one search is)
stay exact while they are below ``2**(53 - grid)``. Every term is at most 1
(an amount is placed only where it fits, on a capacity at least as large),
so the sums of one request are below its number of amounts. ``ExactSums``
follows the terms of one search as they are divided: while each was exact
and their finest grid leaves room for that many, every sum and comparison of
floats is exact, and nothing else is done (whole cards, memory in powers of
two): the search runs on plain floats, as fast as it always did. After that,
sums whose terms were all exact and stayed below the bound are still plain
floats; others are ``Rounded``, and the assignment (``assignment.comparable``)
compares integers over a common denominator.
"""

import math
import sys
from collections.abc import Sequence
from fractions import Fraction

EPSILON = sys.float_info.epsilon
MANTISSA_BITS = sys.float_info.mant_dig  # 53


class Rounded(float):
    """A gain whose float is rounded: ``exact`` is the sum it stands for."""

    exact: Fraction

    def __new__(cls, exact: Fraction) -> "Rounded":
        gain = super().__new__(cls, exact)
        gain.exact = exact
        return gain


Gain = float  # a sum of amounts over capacities: exact unless it is Rounded


def fraction(gain: Gain) -> Fraction:
    """The exact value of a gain."""
    return gain.exact if type(gain) is Rounded else Fraction(gain)


def is_rounded(gain: Gain) -> bool:
    return type(gain) is Rounded


class ExactSums:
    """The gains of one search: its quotients, their sums, and whether floats are exact."""

    def __init__(self, terms: int) -> None:
        self._terms = max(terms, 1)  # the amounts of the request: the most terms of a sum
        self._finest = 0  # the finest grid of an exact quotient so far
        self._below = math.ldexp(1.0, MANTISSA_BITS)  # where exact float sums end
        self.floats_exact = True  # every quotient so far exact, and their sums too

    def quotient(self, numerator: int, divisor: float) -> Gain:
        """``numerator / divisor`` (0 for a divisor that is not positive)."""
        if not divisor > 0:
            return 0.0
        value = numerator / divisor
        divisor_top, divisor_bottom = divisor.as_integer_ratio()
        top, bottom = value.as_integer_ratio()
        if top * divisor_top != numerator * divisor_bottom * bottom:
            self.floats_exact = False
            return Rounded(Fraction(numerator * divisor_bottom, divisor_top))
        grid = bottom.bit_length() - 1  # bottom is a power of two
        if grid > self._finest:
            self._finest = grid
            self._below = math.ldexp(1.0, MANTISSA_BITS - grid)
            if self._terms >= self._below:
                self.floats_exact = False
        return value

    def total(self, gains: Sequence[Gain]) -> Gain:
        """The sum of same-signed gains."""
        value = 0.0
        for gain in gains:
            value += gain
        if self.floats_exact or (
            not any(type(gain) is Rounded for gain in gains) and abs(value) < self._below
        ):
            return value
        return Rounded(sum((fraction(gain) for gain in gains), Fraction(0)))

    def exact_floats(self, rows: Sequence[Sequence[Gain | None]], count: int) -> bool:
        """Whether sums of ``count`` of these gains are exact as floats."""
        if self.floats_exact:
            return True
        largest = 0.0
        for row in rows:
            for gain in row:
                if gain is not None:
                    if type(gain) is Rounded:
                        return False
                    largest = max(largest, abs(gain))
        return count * largest < self._below


def exact_quotient(numerator: int, divisor: float) -> Fraction:
    """``ExactSums.quotient`` as a fraction, for the few sums computed exactly at once."""
    return Fraction(numerator) / Fraction(divisor) if divisor > 0 else Fraction(0)


def common_numerators(fractions: Sequence[Fraction]) -> tuple[list[int], int]:
    """The fractions as integers over one common denominator, and that denominator."""
    denominator = math.lcm(*(fraction.denominator for fraction in fractions))
    return [f.numerator * (denominator // f.denominator) for f in fractions], denominator


def slack(terms: int, magnitude: float) -> float:
    """How far a float sum of ``terms`` rounded same-signed terms, itself at most
    ``magnitude``, may lie from its exact value (each division and each addition
    rounds by at most half an ``eps``; twice that, and more, for safety)."""
    return 4.0 * (terms + 1) * EPSILON * magnitude
