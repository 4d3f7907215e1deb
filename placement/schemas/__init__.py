"""marshmallow schemas for request bodies, one module per noun.

A microversion that changes a body is a subclass with a comment saying which.
"""

from typing import Any

import marshmallow

from placement import errors


def validate(schema: marshmallow.Schema, data: Any) -> Any:
    """``data`` loaded by ``schema``, or a 400 saying what does not validate. For request
    bodies, and for the CLI arguments and annotations checked by the same rules."""
    if not isinstance(data, (dict, list)):
        raise errors.BadRequest("JSON does not validate: the body must be an object.")
    try:
        return schema.load(data)
    except marshmallow.ValidationError as exc:
        raise errors.BadRequest(f"JSON does not validate: {describe_errors(exc.messages)}") from exc


def describe_errors(messages: Any, prefix: str = "") -> str:
    """marshmallow's nested message dict as one readable line."""
    if isinstance(messages, dict):
        parts = []
        for key, value in messages.items():
            where = f"{prefix}.{key}" if prefix and key != "_schema" else (
                prefix if key == "_schema" else str(key)
            )
            parts.append(describe_errors(value, where))
        return "; ".join(parts)
    if isinstance(messages, list):
        text = " ".join(
            str(m) if not isinstance(m, (dict, list)) else describe_errors(m) for m in messages
        )
        return f"{prefix}: {text}" if prefix else text
    return f"{prefix}: {messages}" if prefix else str(messages)
