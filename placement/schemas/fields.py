"""Strict field types: JSON types are not coerced (no "1" for 1, no true for 1)."""

import numbers
import re

from marshmallow import ValidationError, fields

from placement.query import normalize_uuid

MAX_INT = 2147483647
MAX_FLOAT = 3.40282e38
CLASS_NAME_PATTERN = re.compile(r"^[A-Z0-9_]+$")
CUSTOM_NAME_PATTERN = re.compile(r"^CUSTOM_[A-Z0-9_]+$")


class StrictInteger(fields.Integer):
    """A JSON integer within ``minimum``..``maximum``; booleans and strings refused."""

    def __init__(self, minimum: int = 0, maximum: int = MAX_INT, **kwargs):
        super().__init__(strict=True, **kwargs)
        self.minimum = minimum
        self.maximum = maximum

    def _deserialize(self, value, attr, data, **kwargs):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValidationError("must be an integer.")
        if not self.minimum <= value <= self.maximum:
            raise ValidationError(f"must be between {self.minimum} and {self.maximum}.")
        return value


class StrictNumber(fields.Field):
    """A JSON number within (``minimum``, ``maximum``]; booleans and strings refused."""

    def __init__(self, minimum: float = 0.0, maximum: float = MAX_FLOAT, **kwargs):
        super().__init__(**kwargs)
        self.minimum = minimum
        self.maximum = maximum

    def _deserialize(self, value, attr, data, **kwargs):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ValidationError("must be a number.")
        if not self.minimum < value <= self.maximum:
            raise ValidationError(
                f"must be greater than {self.minimum:g} and at most {self.maximum:g}."
            )
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
            raise ValidationError("must be a string.")
        if "\x00" in value:
            # PostgreSQL cannot store NUL in text; refuse it on every backend alike.
            raise ValidationError("must not contain NUL characters.")
        if not self.min_length <= len(value) <= self.max_length:
            raise ValidationError(
                f"must be {self.min_length} to {self.max_length} characters long."
            )
        if self.pattern is not None and not self.pattern.fullmatch(value):
            raise ValidationError(f"{value!r} does not match {self.pattern.pattern}.")
        return value


class UuidString(fields.Field):
    """A UUID, returned in canonical lower-case dashed form."""

    def _deserialize(self, value, attr, data, **kwargs):
        normalized = normalize_uuid(value) if isinstance(value, str) else None
        if normalized is None:
            raise ValidationError(f"{value!r} is not a valid UUID.")
        return normalized
