"""The query-string grammar: ``resources``, ``required`` and ``member_of``.

Each parser turns one parameter's text into plain frozen values and raises
BadRequest (code ``placement.query.bad_value`` or ``missing_value``) with a
message naming the parameter. This module is the only place that knows the
grammar; ``GET /resource_providers`` and ``GET /allocation_candidates`` both
build on it.
"""

import uuid as uuid_lib
from dataclasses import dataclass, field

from placement import errors

ANY_OF_PREFIX = "in:"
FORBIDDEN_PREFIX = "!"


@dataclass(frozen=True)
class TraitFilter:
    """Traits a provider must have (each any-of set at least one) and must not have."""

    required: tuple[frozenset[str], ...] = ()
    forbidden: frozenset[str] = field(default_factory=frozenset)

    def names(self) -> set[str]:
        every = set(self.forbidden)
        for any_of in self.required:
            every |= any_of
        return every

    def __bool__(self) -> bool:
        return bool(self.required or self.forbidden)


@dataclass(frozen=True)
class AggregateFilter:
    """Aggregates a provider must be in (each any-of set) and must not be in."""

    member_of: tuple[frozenset[str], ...] = ()
    forbidden: frozenset[str] = field(default_factory=frozenset)

    def __bool__(self) -> bool:
        return bool(self.member_of or self.forbidden)


def bad_value(detail: str) -> errors.BadRequest:
    return errors.BadRequest(detail, code=errors.QUERYPARAM_BAD_VALUE)


def parse_resources(text: str, param: str = "resources") -> dict[str, int]:
    """``VCPU:2,MEMORY_MB:1024`` -> {"VCPU": 2, "MEMORY_MB": 1024}."""
    expected = (
        f"Badly formed {param} parameter. Expected {param} query string parameter in "
        f"form: ?{param}=VCPU:2,MEMORY_MB:1024. Got: {text or 'empty string'}."
    )
    resources: dict[str, int] = {}
    if not text:
        raise bad_value(expected)
    for item in text.split(","):
        name, sep, amount_text = item.partition(":")
        name = name.strip()
        if not sep or not name:
            raise bad_value(expected)
        try:
            amount = int(amount_text)
        except ValueError:
            raise bad_value(expected) from None
        if amount < 1:
            raise bad_value(
                f"Requested resource values in {param} must be positive integers, "
                f"got {name}:{amount_text}."
            )
        if name in resources:
            raise bad_value(
                f"The resource class {name} is requested more than once in {param}."
            )
        resources[name] = amount
    return resources


def parse_required(
    values: list[str], allow_forbidden: bool, allow_any_of: bool, param: str = "required"
) -> TraitFilter:
    """One or more ``required`` values -> TraitFilter.

    ``A,!B`` requires A and forbids B (forbidden from 1.22); ``in:A,B``
    requires A or B (from 1.39, when the parameter may also repeat).
    """
    required: list[frozenset[str]] = []
    forbidden: set[str] = set()
    for value in values:
        if allow_any_of and value.startswith(ANY_OF_PREFIX):
            names = _split_names(value[len(ANY_OF_PREFIX):], param, value)
            if any(n.startswith(FORBIDDEN_PREFIX) for n in names):
                raise bad_value(
                    f"Invalid query string parameters: '{param}' cannot mix forbidden "
                    f"traits with the in: prefix, got {value}."
                )
            required.append(frozenset(names))
            continue
        for name in _split_names(value, param, value):
            if name.startswith(FORBIDDEN_PREFIX) and allow_forbidden:
                bare = name[len(FORBIDDEN_PREFIX):]
                if not bare:
                    raise bad_value(f"Invalid trait name in {param}: {value}.")
                forbidden.add(bare)
            else:
                required.append(frozenset({name}))
    required_singles = {next(iter(s)) for s in required if len(s) == 1}
    conflicting = required_singles & forbidden
    if conflicting:
        raise bad_value(
            f"Conflicting required and forbidden traits found in the following traits "
            f"keys: {param}: ({', '.join(sorted(conflicting))})."
        )
    return TraitFilter(required=tuple(dict.fromkeys(required)), forbidden=frozenset(forbidden))


def _split_names(text: str, param: str, whole: str) -> list[str]:
    names = [n.strip() for n in text.split(",")]
    if not text or any(not n for n in names):
        raise bad_value(
            f"Invalid query string parameters: Expected '{param}' parameter value of the "
            f"form: HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: {whole or 'empty string'}."
        )
    return names


def parse_member_of(
    values: list[str], allow_forbidden: bool, param: str = "member_of"
) -> AggregateFilter:
    """One or more ``member_of`` values -> AggregateFilter.

    ``in:A,B`` means in A or B; repeating the parameter ANDs the values;
    ``!A`` / ``!in:A,B`` forbid (from 1.32).
    """
    member_of: list[frozenset[str]] = []
    forbidden: set[str] = set()
    for value in values:
        is_forbidden = allow_forbidden and value.startswith(FORBIDDEN_PREFIX)
        text = value[len(FORBIDDEN_PREFIX):] if is_forbidden else value
        if text.startswith(ANY_OF_PREFIX):
            text = text[len(ANY_OF_PREFIX):]
        elif "," in text:
            raise bad_value(
                f"Invalid query string parameters: '{param}' with several aggregates "
                f"needs the in: prefix, got {value}."
            )
        aggregates = frozenset(_aggregate_uuids(text, param, value))
        if is_forbidden:
            forbidden |= aggregates
        else:
            member_of.append(aggregates)
    for any_of in member_of:
        if len(any_of) == 1 and any_of <= forbidden:
            raise bad_value(
                f"Conflicting member_of and forbidden member_of found in {param}: "
                f"{', '.join(sorted(any_of))}."
            )
    return AggregateFilter(member_of=tuple(member_of), forbidden=frozenset(forbidden))


def _aggregate_uuids(text: str, param: str, whole: str) -> list[str]:
    uuids = []
    for item in text.split(","):
        normalized = normalize_uuid(item.strip())
        if normalized is None:
            raise bad_value(
                f"Invalid query string parameters: Expected '{param}' parameter to "
                f"contain valid UUID(s). Got: {whole or 'empty string'}."
            )
        uuids.append(normalized)
    return uuids


def normalize_uuid(text: str) -> str | None:
    """The canonical lower-case dashed form of a UUID, or None if ``text`` is not one."""
    if not text or len(text) > 38:
        return None
    try:
        return str(uuid_lib.UUID(text))
    except ValueError:
        return None
