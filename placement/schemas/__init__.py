"""marshmallow schemas for request bodies, one module per noun.

A microversion that changes a body is a subclass with a comment saying which.
"""

from collections.abc import Iterator
from typing import Any

import marshmallow
from marshmallow.fields import Dict, Field, List, Nested

from placement import errors
from placement.schemas.fields import not_of_type


class ExtensionSchema(marshmallow.Schema):
    """A body of this service's own routes and documents (group resources, devices): a
    refusal names the field's path (``devices.0.minor: ...``) rather than reading as
    upstream's JSON Schema messages."""

    errors_by_path = True


def validate(root: marshmallow.Schema | Field, data: Any) -> Any:
    """``data`` loaded by ``root``, or a 400 saying what does not validate. ``root`` is a
    schema, or a field standing for the whole body (a list, or an object keyed by
    uuid). For request bodies, and for the CLI arguments and annotations checked by
    the same rules."""
    by_path = getattr(root, "errors_by_path", False)
    if isinstance(root, marshmallow.Schema) and not isinstance(data, (dict, list)):
        raise errors.BadRequest(
            f"JSON does not validate: {data!r} is not of type 'object'\n\n"
            "Failed validating 'type' in schema"
        )
    try:
        if isinstance(root, Field):
            return root.deserialize(data)
        if isinstance(data, list) and not by_path:
            raise not_of_type(data, "object")
        return root.load(data)
    except marshmallow.ValidationError as exc:
        if by_path:
            described = describe_errors_by_path(exc.messages)
        else:
            described = describe_errors(exc.messages, root)
        raise errors.BadRequest(f"JSON does not validate: {described}") from exc


# marshmallow's own sentences, and the JSON Schema keyword each stands for.
_MARSHMALLOW_KEYWORDS = {
    "Field may not be null.": "type",
    "Not a valid mapping type.": "type",
    "Not a valid list.": "type",
    "Invalid input type.": "type",
    "Invalid type.": "type",
}
_MISSING = "Missing data for required field."
_UNKNOWN = "Unknown field."


def describe_errors(messages: Any, root: marshmallow.Schema | Field | None = None) -> str:
    """The refusal JSON Schema validators (and so upstream) would report, as one line.

    Of all refusals in marshmallow's nested messages, the one nearest the top of the
    body (the first of those), as jsonschema's ``best_match`` picks it. A field's
    ``Violation`` reads as those validators put it: ``'total' is a required
    property``, then ``Failed validating 'required' in schema['properties']...``,
    the path named through ``root``'s fields. Other sentences (the extensions' own
    rules) read ``where: sentence``.
    """
    refusals = list(_refusals(messages, ()))
    where, key, message = min(refusals, key=_depth)
    sentence, keyword = _as_violation(key, message)
    if keyword is None:
        place = ".".join(where + ((key,) if key and key != "_schema" else ()))
        return f"{place}: {sentence}" if place else sentence
    if message == _UNKNOWN:
        unexpected = sorted(k for w, k, m in refusals if w == where and m == _UNKNOWN)
        verb = "was" if len(unexpected) == 1 else "were"
        sentence = (
            "Additional properties are not allowed "
            f"({', '.join(repr(k) for k in unexpected)} {verb} unexpected)"
        )
    path = where if _names_the_object(key, message) else where + (key,)
    return f"{sentence}\n\nFailed validating {keyword!r} in schema{_schema_path(root, path)}"


def describe_errors_by_path(messages: Any, prefix: str = "") -> str:
    """Every refusal in marshmallow's nested messages, as ``path: sentence``; a dict's
    entries are named by their keys alone."""
    if isinstance(messages, dict):
        parts = []
        for key, value in messages.items():
            if key == "value" and prefix:
                parts.append(describe_errors_by_path(value, prefix))
                continue
            where = (
                f"{prefix}.{key}"
                if prefix and key != "_schema"
                else (prefix if key == "_schema" else str(key))
            )
            parts.append(describe_errors_by_path(value, where))
        return "; ".join(parts)
    if isinstance(messages, list):
        text = " ".join(
            _as_violation(prefix.rpartition(".")[2], m)[0]
            if not isinstance(m, (dict, list))
            else describe_errors_by_path(m)
            for m in messages
        )
        return f"{prefix}: {text}" if prefix else text
    return f"{prefix}: {messages}" if prefix else str(messages)


def _refusals(messages: Any, where: tuple) -> Iterator[tuple[tuple, Any, Any]]:
    """(path of the object, key within it, message) of every leaf refusal, in order.

    A dict's entry errors come as ``{entry: {"key": [...], "value": {...}}}``: the
    entry's name stands in the path, ``key`` and ``value`` do not.
    """
    if isinstance(messages, list):
        for message in messages:
            if isinstance(message, (dict, list)):
                yield from _refusals(message, where)
            else:
                yield where, None, message
        return
    for key, value in messages.items():
        if isinstance(value, dict) and value and set(value) <= {"key", "value"}:
            for part in ("key", "value"):
                if part in value:
                    yield from _refusals(value[part], where + (str(key),))
        elif isinstance(value, list) and not any(isinstance(v, (dict, list)) for v in value):
            for message in value:
                yield where, str(key), message
        else:
            yield from _refusals(value, where + (str(key),))


def _names_the_object(key: str | None, message: Any) -> bool:
    """Whether a refusal is of the object holding ``key`` (a property missing or not
    allowed there) rather than of the value at ``key``."""
    return key in (None, "_schema") or message in (_MISSING, _UNKNOWN)


def _depth(refusal: tuple[tuple, Any, Any]) -> int:
    """How deep in the body the refused value lies (jsonschema's relevance)."""
    where, key, message = refusal
    return len(where) + (0 if _names_the_object(key, message) else 1)


def _schema_path(root: marshmallow.Schema | Field | None, path: tuple) -> str:
    """``['properties']['allocations']['patternProperties'][...]``: where in upstream's
    JSON Schema the rule for the value at ``path`` lives, found through ``root``."""
    parts = []
    node: Any = root
    for element in path:
        if isinstance(node, Nested):
            node = node.schema
        if isinstance(node, List):
            parts.append("['items']")
            node = node.inner
        elif isinstance(node, Dict):
            pattern = getattr(node, "key_pattern", None)
            parts.append(
                f"['patternProperties'][{pattern!r}]" if pattern else "['additionalProperties']"
            )
            node = node.value_field
        else:
            parts.append(f"['properties'][{element!r}]")
            node = node.fields.get(element) if isinstance(node, marshmallow.Schema) else None
    return "".join(parts)


def _as_violation(key: str | None, message: Any) -> tuple[str, str | None]:
    keyword = getattr(message, "keyword", None)
    if keyword is not None:
        return str(message), keyword
    if message == _MISSING:
        return f"{key!r} is a required property", "required"
    if message == _UNKNOWN:
        return f"Additional properties are not allowed ({key!r} was unexpected)", (
            "additionalProperties"
        )
    if isinstance(message, str) and message.startswith("Shorter than minimum length"):
        return f"{key!r} should be non-empty", "minItems"
    if message in _MARSHMALLOW_KEYWORDS:
        return str(message), _MARSHMALLOW_KEYWORDS[message]
    return str(message), None
