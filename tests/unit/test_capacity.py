"""placement.capacity: the one definition of capacity, free amount and unit rule."""

import ast
import inspect

import pytest

from placement import capacity


@pytest.mark.parametrize(
    ("total", "reserved", "ratio", "expected"),
    [
        (8, 2, 1.0, 6),
        (64, 0, 16.0, 1024),
        (3, 0, 1.5, 4),  # 4.5
        (5, 1, 1.5, 6),  # exactly 6.0
        (7, 0, 1.5, 10),  # 10.5
        (10, 0, 0.1, 1),  # 1.0
        (3, 0, 0.1, 0),  # 0.30000000000000004
        (29, 0, 0.1, 2),  # 2.9000000000000004
        (10, 0, 0.7, 7),  # 7.0
        (3, 0, 0.7, 2),  # 2.0999999999999996
        (100, 0, 1.15, 114),  # 114.99999999999999, not 115: see below
    ],
)
def test_capacity_is_the_product_rounded_down(total, reserved, ratio, expected):
    assert capacity.capacity(total, reserved, ratio) == expected


def test_the_product_is_a_float_product_as_the_database_computes_it():
    # 100 * 0.57 is 56.99999999999999 in binary floating point, in Python and in SQL alike:
    # the capacity is 56, so that a check written against the product (SQL) agrees.
    assert capacity.unrounded(100, 0, 0.57) < 57
    assert capacity.capacity(100, 0, 0.57) == 56


@pytest.mark.parametrize(("total", "reserved", "ratio"), [(8, 8, 1.0), (8, 8, 16.0), (8, 0, 0.0)])
def test_everything_reserved_or_a_zero_ratio_is_capacity_zero(total, reserved, ratio):
    # What the inventory rule accepts from 1.26 on and refuses before.
    assert capacity.capacity(total, reserved, ratio) == 0
    assert capacity.free(total, reserved, ratio, 0) == 0


@pytest.mark.parametrize(
    ("total", "reserved", "ratio", "expected"),
    [
        (4, 5, 1.0, -1),
        (2, 5, 1.5, -4),  # -4.5, toward zero as upstream's int()
        (8, 0, -1.0, -8),
        (1, 2, 0.5, 0),  # -0.5: the inventory rule lets it through from 1.26 as 0
        (8, 0, -0.1, 0),  # -0.8: likewise
    ],
)
def test_a_negative_product_rounds_toward_zero_as_upstream(total, reserved, ratio, expected):
    assert capacity.capacity(total, reserved, ratio) == expected


@pytest.mark.parametrize(
    ("total", "reserved", "ratio"), [(4, 5, 1.0), (2, 5, 1.5), (1, 2, 0.5), (8, 0, -0.1)]
)
def test_a_negative_product_takes_no_amount(total, reserved, ratio):
    for used in (0, 1, 3):
        for amount in range(1, 6):
            assert capacity.free(total, reserved, ratio, used) < amount
            assert used + amount > capacity.unrounded(total, reserved, ratio)


TOTALS = [1, 2, 3, 7, 10, 30, 100, 1023, 4096]
RATIOS = [0.0, 0.1, 0.3, 0.5, 0.57, 0.7, 1.0, 1.1, 1.15, 1.5, 2.0, 16.0]


def test_comparing_with_the_rounding_or_with_the_product_is_the_same():
    for total in TOTALS:
        for reserved in {0, total // 4, total // 2, total}:
            for ratio in RATIOS:
                rounded = capacity.capacity(total, reserved, ratio)
                product = capacity.unrounded(total, reserved, ratio)
                for used in range(0, rounded + 3):
                    assert (used <= rounded) == (used <= product), (total, reserved, ratio, used)


@pytest.mark.parametrize(
    ("total", "reserved", "ratio", "used", "expected"),
    [
        (8, 0, 1.0, 3, 5),
        (3, 0, 1.5, 4, 0),  # 4.5 - 4: nothing more fits
        (3, 0, 1.5, 3, 1),
        (8, 6, 1.0, 4, -2),  # shrunk below its usage: accepted, nothing fits
        (8, 8, 1.0, 0, 0),
    ],
)
def test_free_is_capacity_minus_used(total, reserved, ratio, used, expected):
    assert capacity.free(total, reserved, ratio, used) == expected


@pytest.mark.parametrize(
    ("amount", "allowed"),
    [(0, False), (1, False), (2, True), (3, False), (4, True), (8, True), (9, False), (10, False)],
)
def test_units_allow_from_min_to_max_in_steps(amount, allowed):
    assert capacity.units_allow(amount, min_unit=2, max_unit=8, step_size=2) is allowed


def test_units_allow_the_bounds_themselves():
    assert capacity.units_allow(1, min_unit=1, max_unit=1, step_size=1)
    assert capacity.units_allow(2147483647, min_unit=1, max_unit=2147483647, step_size=1)
    assert not capacity.units_allow(2147483647, min_unit=1, max_unit=2147483646, step_size=1)


def test_step_size_counts_from_zero_not_from_min_unit():
    # As upstream: amount % step_size == 0, so min_unit 3 with step 2 allows 4, 6, ... not 3.
    assert not capacity.units_allow(3, min_unit=3, max_unit=9, step_size=2)
    assert not capacity.units_allow(5, min_unit=3, max_unit=9, step_size=2)
    assert capacity.units_allow(4, min_unit=3, max_unit=9, step_size=2)


def test_min_unit_above_max_unit_allows_nothing():
    assert not any(capacity.units_allow(n, 4, 2, 1) for n in range(0, 8))


@pytest.mark.parametrize(
    ("total", "reserved", "ratio", "shown"),
    [(3, 0, 1.5, "4.5"), (8, 4, 1.0, "4"), (1000000, 0, 1.0, "1e+06"), (1, 2, 0.5, "-0.5")],
)
def test_unrounded_is_what_messages_print(total, reserved, ratio, shown):
    assert f"{capacity.unrounded(total, reserved, ratio):g}" == shown


def test_it_imports_nothing_from_placement():
    tree = ast.parse(inspect.getsource(capacity))
    imported = [
        node.module if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    ]
    assert not [name for name in imported if name and name.split(".")[0] == "placement"]
