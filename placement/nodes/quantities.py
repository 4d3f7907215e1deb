"""Amounts: JSON integers or Kubernetes-style quantity strings, exactly.

``"2Gi"``, ``"1GiB"``, ``"512Mi"``, ``"1G"``, ``"1.5Gi"``, ``"500m"`` and plain
integers are read as exact fractions; an amount is then expressed in the unit
of its resource class (a count, KiB, MiB or GiB) and must come out a whole,
positive number that placement can store, or the key is refused with a 400
that names it.
"""

import re
from fractions import Fraction

from placement import errors
from placement.db.tables import MAX_INT

BINARY_SUFFIXES: dict[str, int] = {
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
}
DECIMAL_SUFFIXES: dict[str, int | Fraction] = {
    "m": Fraction(1, 1000),
    "": 1,
    "k": 10**3,
    "K": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "E": 10**18,
}
# At most 30 digits each side of the point: anything longer is out of range anyway.
QUANTITY = re.compile(
    r"\s*(?P<number>[0-9]{1,30}(?:\.[0-9]{1,30})?)\s*(?P<suffix>[A-Za-z]{0,3})\s*"
)

# Units an amount is expressed in: the number of plain units in one of them.
UNIT_SIZES = {"count": 1, "KB": 2**10, "MB": 2**20, "GB": 2**30}


def parse_quantity(value: object, key: str) -> Fraction:
    """The exact amount ``value`` stands for, in plain units (bytes for memory)."""
    if isinstance(value, bool):
        raise errors.BadRequest(f"{key}: {value!r} is not an amount.")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float) and value.is_integer():
        return Fraction(int(value))
    if not isinstance(value, str):
        raise errors.BadRequest(f"{key}: {value!r} is not an amount.")
    match = QUANTITY.fullmatch(value)
    if match is None:
        raise errors.BadRequest(
            f"{key}: {value!r} is not an amount (an integer or a quantity such as '2Gi', "
            "'512Mi', '1GiB', '1G')."
        )
    number = Fraction(match["number"])
    suffix = match["suffix"]
    if suffix.endswith("B") and suffix[:-1] in BINARY_SUFFIXES:
        suffix = suffix[:-1]  # 1GiB, as the group allocator's examples write it, is 1Gi
    elif suffix in ("KB", "MB", "GB", "TB", "PB", "EB"):
        suffix = suffix[0]
    if suffix in BINARY_SUFFIXES:
        return number * BINARY_SUFFIXES[suffix]
    if suffix in DECIMAL_SUFFIXES:
        return number * DECIMAL_SUFFIXES[suffix]
    raise errors.BadRequest(f"{key}: unknown unit {match['suffix']!r} in {value!r}.")


def amount_in_unit(value: object, unit: str, key: str, resource_class: str) -> int:
    """``value`` as a whole number of ``unit`` (count, KB, MB or GB) for ``resource_class``."""
    amount = parse_quantity(value, key) / UNIT_SIZES[unit]
    described = "" if unit == "count" else f" {unit}"
    if amount < 0 or amount > MAX_INT:
        raise errors.BadRequest(
            f"{key}: {value!r} is out of range for {resource_class} (0 to {MAX_INT}{described})."
        )
    if amount.denominator != 1:
        raise errors.BadRequest(
            f"{key}: {value!r} is not a whole number{described} of {resource_class} "
            f"({float(amount):g}{described})."
        )
    return int(amount)
