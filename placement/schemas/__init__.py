"""marshmallow schemas for request bodies, one module per noun.

A microversion that changes a body is a subclass with a comment saying which.
"""

from typing import Any


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
