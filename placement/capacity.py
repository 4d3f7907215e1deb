"""The capacity of an inventory, what is free of it, and the amounts its units allow.

The one definition every path uses: the Placement API's inventory rule and
allocation writes, the candidate search, the group-resource translator and the
device search. It imports nothing from placement, so any layer may call it.

**Capacity** is ``(total - reserved) * allocation_ratio`` rounded down to an
integer. The product is computed as a Python float, as the float column
``allocation_ratio`` makes it (the SQL form, ``placement.data.sql.capacity_column``,
is the same product computed by the database), and rounded with ``int()``.
Amounts and usage are integers, and an integer is at most a number exactly
when it is at most that number's floor: so comparing an integer usage or
amount with the float product or with its rounding gives the same answer, and
checks written either way agree. ``int()`` is the floor of every product >= 0.
A negative product (``reserved`` above ``total``, or a negative ratio) leaves
no room: ``int()`` rounds it toward zero, as upstream does (the inventory rule
lets ``(1 - 2) * 0.5`` through from 1.26 as capacity 0; a provider summary
shows it as 0), and against it, as against the product, every amount of at
least 1 is refused; every allocated and every requested amount is at least 1.

**Free** is ``capacity - used``. It may be negative: the Placement API accepts
an inventory shrunk below its usage (operators drain a node by reserving
everything); nothing fits until usage falls below capacity.

An amount is **allowed by an inventory's units** when
``min_unit <= amount <= max_unit`` and ``amount % step_size == 0``. A
``min_unit`` above ``max_unit`` is stored as given, and then allows nothing.
"""


def capacity(total: int, reserved: int, allocation_ratio: float) -> int:
    """The most that may be allocated of the inventory, all consumers together."""
    # int() is floor for every product >= 0; toward zero for a negative one (see above).
    return int(unrounded(total, reserved, allocation_ratio))


def free(total: int, reserved: int, allocation_ratio: float, used: int) -> int:
    """What may still be allocated; negative when usage exceeds the capacity."""
    return capacity(total, reserved, allocation_ratio) - used


def units_allow(amount: int, min_unit: int, max_unit: int, step_size: int) -> bool:
    """Whether one allocation of ``amount`` respects the inventory's units."""
    return min_unit <= amount <= max_unit and amount % step_size == 0


def unrounded(total: int, reserved: int, allocation_ratio: float) -> float:
    """The product before rounding. Never compare an amount with it (use ``capacity``).

    Two things use it as it is: error and log texts that have always printed it
    (``:g``: ``12.5``, not ``12``), and the group-resource scorer, whose
    documented divisor it is (api-ref/group_resources.md, Scoring).
    """
    return (total - reserved) * allocation_ratio
