"""Strict field types: JSON types are not coerced (no "1" for 1, no true for 1).

Each refusal is a ``Violation``: the sentence JSON Schema validators use for the
same rule (``-1 is less than the minimum of 1``), with the rule's keyword
(``minimum``), so that error details read as upstream's do; clients and
operators' scripts match those phrases.
"""

import numbers
import re

from marshmallow import ValidationError, fields

from placement.db.tables import MAX_INT
from placement.query import normalize_uuid

MAX_FLOAT = 3.40282e38
CLASS_NAME_PATTERN = re.compile(r"^[A-Z0-9_]+$")
CUSTOM_NAME_PATTERN = re.compile(r"^CUSTOM_[A-Z0-9_]+$")
# Upstream's patterns for the keys of objects keyed by uuid and by request group, as
# its error messages quote them.
UUID_KEY_PATTERN = "^[0-9a-fA-F-]{36}$"
GROUP_KEY_PATTERN = "[a-zA-Z0-9_-]{1,64}"


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


class JsonTyped(fields.Field):
    """A field of one JSON type (``json_type``): a null where none is allowed is refused
    in JSON Schema's words (``None is not of type 'integer'``)."""

    json_type = "object"

    def deserialize(self, value, attr=None, data=None, **kwargs):
        if value is None and not self.allow_none:
            raise not_of_type(None, self.json_type)
        return super().deserialize(value, attr, data, **kwargs)


class StrictInteger(JsonTyped, fields.Integer):
    """A JSON integer within ``minimum``..``maximum`` (None: unbounded); booleans and
    strings refused."""

    json_type = "integer"

    def __init__(self, minimum: int | None = 0, maximum: int | None = MAX_INT, **kwargs):
        super().__init__(strict=True, **kwargs)
        self.minimum = minimum
        self.maximum = maximum

    def _deserialize(self, value, attr, data, **kwargs):
        if isinstance(value, bool) or not isinstance(value, int):
            raise not_of_type(value, "integer")
        check_bounds(value, self.minimum, self.maximum)
        return value


class StrictBoolean(JsonTyped, fields.Boolean):
    """A JSON boolean: ``true`` or ``false``, not ``1`` or ``"yes"``."""

    json_type = "boolean"

    def _deserialize(self, value, attr, data, **kwargs):
        if not isinstance(value, bool):
            raise not_of_type(value, "boolean")
        return value


class StrictNumber(JsonTyped):
    """A JSON number, above ``minimum`` (exclusive; None: unbounded) and at most
    ``maximum``; booleans and strings refused."""

    json_type = "number"

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


class StrictString(JsonTyped, fields.String):
    """A JSON string of ``min_length``..``max_length`` characters, optionally matching."""

    json_type = "string"

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


class UuidString(JsonTyped):
    """A UUID, returned in canonical lower-case dashed form."""

    json_type = "string"

    def _deserialize(self, value, attr, data, **kwargs):
        normalized = normalize_uuid(value) if isinstance(value, str) else None
        if normalized is None:
            raise violation(f"{value!r} is not a 'uuid'", "format")
        return normalized


class StrictList(JsonTyped, fields.List):
    """A JSON array of ``items``: at least ``min_items`` of them, and with ``unique`` no
    two equal once loaded (so no two spellings of one uuid)."""

    json_type = "array"

    def __init__(self, items: fields.Field, min_items: int = 0, unique: bool = False, **kwargs):
        super().__init__(items, **kwargs)
        self.min_items = min_items
        self.unique = unique

    def _deserialize(self, value, attr, data, **kwargs):
        if not isinstance(value, list):
            raise not_of_type(value, "array")
        if len(value) < self.min_items:
            sentence = "should be non-empty" if self.min_items == 1 else "is too short"
            raise violation(f"{value!r} {sentence}", "minItems")
        loaded = super()._deserialize(value, attr, data, **kwargs)
        if self.unique and len(set(loaded)) != len(loaded):
            raise violation(f"{value!r} has non-unique elements", "uniqueItems")
        return loaded


class StrictNested(JsonTyped, fields.Nested):
    """A JSON object loaded by a nested schema."""

    json_type = "object"

    def _deserialize(self, value, attr, data, partial=None, **kwargs):
        if not isinstance(value, dict):
            raise not_of_type(value, "object")
        return super()._deserialize(value, attr, data, partial=partial, **kwargs)


class StrictDict(JsonTyped, fields.Dict):
    """A JSON object whose keys match ``key_pattern`` (searched, as JSON Schema's
    ``patternProperties``) and whose values load with ``values``.

    A key that matches is also loaded by ``keys`` when given (a uuid to its canonical
    form). A key that does not is, by ``other_keys``: ``"refuse"``d, naming the
    pattern (``'x' does not match any of the regexes``); ``"load"``ed as it is, its
    value loaded all the same; or ``"keep"``, its value unchecked, as upstream's schemas
    take it. Without ``key_pattern`` every key is taken as it is.
    """

    json_type = "object"

    def __init__(
        self,
        values: fields.Field | None = None,
        keys: fields.Field | None = None,
        key_pattern: str | None = None,
        other_keys: str = "refuse",
        min_properties: int = 0,
        **kwargs,
    ):
        super().__init__(keys=keys, values=values, **kwargs)
        assert other_keys in ("refuse", "load", "keep")
        self.key_pattern = key_pattern
        self.other_keys = other_keys
        self.min_properties = min_properties

    def _load_key(self, key: str) -> str | None:
        """The key as loaded, or None when it matches no pattern."""
        if self.key_pattern is None:
            return key
        if not re.search(self.key_pattern, key):
            return None
        if self.key_field is None:
            return key
        try:
            return self.key_field.deserialize(key)
        except ValidationError:
            return None

    def _deserialize(self, value, attr, data, **kwargs):
        if not isinstance(value, dict):
            raise not_of_type(value, "object")
        if len(value) < self.min_properties:
            sentence = (
                "should be non-empty"
                if self.min_properties == 1
                else "does not have enough properties"
            )
            raise violation(f"{value!r} {sentence}", "minProperties")
        loaded = {}
        unmatched = []
        refusals = {}
        for key, item in value.items():
            name = self._load_key(key)
            if name is None and self.other_keys == "refuse":
                unmatched.append(key)
                continue
            if name is None and self.other_keys == "keep":
                loaded[key] = item
                continue
            name = key if name is None else name
            try:
                loaded[name] = (
                    item if self.value_field is None else self.value_field.deserialize(item)
                )
            except ValidationError as error:
                refusals[key] = {"value": error.messages}
        if unmatched:
            verb = "does" if len(unmatched) == 1 else "do"
            joined = ", ".join(repr(key) for key in sorted(unmatched))
            raise violation(
                f"{joined} {verb} not match any of the regexes: {self.key_pattern!r}",
                "additionalProperties",
            )
        if refusals:
            raise ValidationError(refusals)
        return loaded
