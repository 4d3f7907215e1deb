"""Strict field types: JSON types are not coerced (no "1" for 1, no true for 1).

Each refusal is a ``Violation``: the sentence JSON Schema validators use for the
same rule (``-1 is less than the minimum of 1``), with the rule's keyword
(``minimum``), so that error details read as upstream's do; clients and
operators' scripts match those phrases.
"""

import numbers
import re

from marshmallow import ValidationError, fields

from placement.query import normalize_uuid

MAX_INT = 2147483647
MAX_FLOAT = 3.40282e38
CLASS_NAME_PATTERN = re.compile(r"^[A-Z0-9_]+$")
CUSTOM_NAME_PATTERN = re.compile(r"^CUSTOM_[A-Z0-9_]+$")


class Violation(str):
    """A refusal's sentence, with the JSON Schema keyword of the rule it breaks."""

    keyword: str

    def __new__(cls, sentence: str, keyword: str) -> "Violation":
        violation = super().__new__(cls, sentence)
        violation.keyword = keyword
        return violation


def violation(sentence: str, keyword: str) -> ValidationError:
    return ValidationError(Violation(sentence, keyword))


def not_of_type(value, type_name: str) -> ValidationError:
    return violation(f"{value!r} is not of type {type_name!r}", "type")


def check_bounds(value, minimum, maximum) -> None:
    if minimum is not None and value < minimum:
        raise violation(f"{value!r} is less than the minimum of {minimum!r}", "minimum")
    if maximum is not None and value > maximum:
        raise violation(f"{value!r} is greater than the maximum of {maximum!r}", "maximum")


class StrictInteger(fields.Integer):
    """A JSON integer within ``minimum``..``maximum`` (None: unbounded); booleans and
    strings refused."""

    def __init__(self, minimum: int | None = 0, maximum: int | None = MAX_INT, **kwargs):
        super().__init__(strict=True, **kwargs)
        self.minimum = minimum
        self.maximum = maximum

    def _deserialize(self, value, attr, data, **kwargs):
        if isinstance(value, bool) or not isinstance(value, int):
            raise not_of_type(value, "integer")
        check_bounds(value, self.minimum, self.maximum)
        return value


class StrictNumber(fields.Field):
    """A JSON number, above ``minimum`` (exclusive; None: unbounded) and at most
    ``maximum``; booleans and strings refused."""

    def __init__(self, minimum: float | None = 0.0, maximum: float = MAX_FLOAT, **kwargs):
        super().__init__(**kwargs)
        self.minimum = minimum
        self.maximum = maximum

    def _deserialize(self, value, attr, data, **kwargs):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise not_of_type(value, "number")
        if self.minimum is not None and value <= self.minimum:
            raise violation(
                f"{value!r} is less than or equal to the minimum of {self.minimum!r}",
                "exclusiveMinimum",
            )
        check_bounds(value, None, self.maximum)
        return float(value)


class StrictString(fields.String):
    """A JSON string of ``min_length``..``max_length`` characters, optionally matching."""

    def __init__(self, min_length: int = 1, max_length: int = 255, pattern=None, **kwargs):
        super().__init__(**kwargs)
        self.min_length = min_length
        self.max_length = max_length
        self.pattern = pattern

    def _deserialize(self, value, attr, data, **kwargs):
        if not isinstance(value, str):
            raise not_of_type(value, "string")
        if "\x00" in value:
            # PostgreSQL cannot store NUL in text; refuse it on every backend alike.
            raise violation(f"{value!r} must not contain NUL characters", "pattern")
        if len(value) < self.min_length:
            sentence = "should be non-empty" if self.min_length == 1 else "is too short"
            raise violation(f"{value!r} {sentence}", "minLength")
        if len(value) > self.max_length:
            raise violation(f"{value!r} is too long", "maxLength")
        if self.pattern is not None and not self.pattern.fullmatch(value):
            raise violation(f"{value!r} does not match {self.pattern.pattern!r}", "pattern")
        return value


class UuidString(fields.Field):
    """A UUID, returned in canonical lower-case dashed form."""

    def _deserialize(self, value, attr, data, **kwargs):
        normalized = normalize_uuid(value) if isinstance(value, str) else None
        if normalized is None:
            raise violation(f"{value!r} is not a 'uuid'", "format")
        return normalized
