"""marshmallow schemas for request bodies, one module per noun.

A microversion that changes a body is a subclass with a comment saying which.
"""

from typing import Any

import marshmallow

from placement import errors


class ExtensionSchema(marshmallow.Schema):
    """A body of this service's own routes and documents (group resources, devices): a
    refusal names the field's path (``devices.0.minor: ...``) rather than reading as
    upstream's JSON Schema messages."""

    errors_by_path = True


def validate(schema: marshmallow.Schema, data: Any) -> Any:
    """``data`` loaded by ``schema``, or a 400 saying what does not validate. For request
    bodies, and for the CLI arguments and annotations checked by the same rules."""
    if not isinstance(data, (dict, list)):
        raise errors.BadRequest(
            f"JSON does not validate: {data!r} is not of type 'object'\n\n"
            "Failed validating 'type' in schema"
        )
    try:
        return schema.load(data)
    except marshmallow.ValidationError as exc:
        if getattr(schema, "errors_by_path", False):
            described = describe_errors_by_path(exc.messages)
        else:
            described = describe_errors(exc.messages)
        raise errors.BadRequest(f"JSON does not validate: {described}") from exc


# marshmallow's own sentences, and the JSON Schema keyword each stands for.
_MARSHMALLOW_KEYWORDS = {
    "Field may not be null.": "type",
    "Not a valid mapping type.": "type",
    "Not a valid list.": "type",
    "Invalid input type.": "type",
    "Invalid type.": "type",
}


def describe_errors(messages: Any) -> str:
    """The first refusal in marshmallow's nested messages, as one line.

    A field's ``Violation`` reads as JSON Schema validators (and so upstream) put
    it: ``'total' is a required property``, then ``Failed validating 'required' in
    schema['properties']...``. Other sentences (the extensions' own rules) read
    ``where: sentence``.
    """
    where, key, message = _first_refusal(messages, ())
    sentence, keyword = _as_violation(key, message)
    if keyword is None:
        place = ".".join(where + ((key,) if key and key != "_schema" else ()))
        return f"{place}: {sentence}" if place else sentence
    if keyword in ("required", "additionalProperties") or key in (None, "_schema"):
        path = where
    else:
        path = where + (key,)
    schema_path = "".join(f"['properties'][{part!r}]" for part in path)
    return f"{sentence}\n\nFailed validating {keyword!r} in schema{schema_path}"


def describe_errors_by_path(messages: Any, prefix: str = "") -> str:
    """Every refusal in marshmallow's nested messages, as ``path: sentence``; a dict's
    entries are named by their keys alone."""
    if isinstance(messages, dict):
        parts = []
        for key, value in messages.items():
            if key == "value" and prefix:
                parts.append(describe_errors_by_path(value, prefix))
                continue
            where = f"{prefix}.{key}" if prefix and key != "_schema" else (
                prefix if key == "_schema" else str(key)
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


def _first_refusal(messages: Any, where: tuple) -> tuple[tuple, Any, Any]:
    """(path of the object, key within it, message) of the first leaf refusal.

    A dict's entry errors come as ``{entry: {"key": [...], "value": {...}}}``: the
    entry's name stands in the path, ``value`` does not.
    """
    if isinstance(messages, list):
        first = messages[0]
        if isinstance(first, (dict, list)):
            return _first_refusal(first, where)
        return where, None, first
    key, value = next(iter(messages.items()))
    if isinstance(value, dict):
        if set(value) <= {"key", "value"}:
            entry = value.get("key") or value.get("value")
            return _first_refusal(entry, where + (str(key),))
        return _first_refusal(value, where + (str(key),))
    if isinstance(value, list) and value and not isinstance(value[0], (dict, list)):
        return where, str(key), value[0]
    return _first_refusal(value, where + (str(key),))


def _as_violation(key: str | None, message: Any) -> tuple[str, str | None]:
    keyword = getattr(message, "keyword", None)
    if keyword is not None:
        return str(message), keyword
    if message == "Missing data for required field.":
        return f"{key!r} is a required property", "required"
    if message == "Unknown field.":
        return f"Additional properties are not allowed ({key!r} was unexpected)", (
            "additionalProperties"
        )
    if isinstance(message, str) and message.startswith("Shorter than minimum length"):
        return f"{key!r} should be non-empty", "minItems"
    if message in _MARSHMALLOW_KEYWORDS:
        return str(message), _MARSHMALLOW_KEYWORDS[message]
    return str(message), None
