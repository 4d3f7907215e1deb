"""The query-string grammar: ``resources``, ``required``, ``member_of``, uuids.

Each parser turns one parameter's text into plain frozen values and raises
BadRequest (code ``placement.query.bad_value``, ``missing_value`` or
``duplicate_key``) with a message naming the parameter. This module is the
only place that knows the grammar; ``GET /resource_providers``,
``GET /allocation_candidates``, ``GET /traits`` and ``GET /usages`` all build
on it.

What is accepted is what upstream Placement 16.0.0 accepts (the exceptions
are in api-ref/differences.md): a parameter it reads once may be repeated
(the handlers say which value counts, e.g. ``last``), a resource class
repeated in ``resources`` takes the last amount, a trait or aggregate both
required and forbidden is a filter nothing passes (``GET
/allocation_candidates`` refuses the traits: ``contradictions``), and a uuid
is written as upstream takes one.
"""

import urllib.parse
import uuid as uuid_lib
from collections.abc import Iterable
from dataclasses import dataclass, field

from placement import errors

ANY_OF_PREFIX = "in:"
FORBIDDEN_PREFIX = "!"
# The positions of the dashes of a uuid written 8-4-4-4-12.
UUID_DASHES = (8, 13, 18, 23)


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


def duplicate_key(key: str) -> errors.BadRequest:
    return errors.BadRequest(
        f"Query parameter '{key}' may be given only once.",
        code=errors.ILLEGAL_DUPLICATE_QUERYPARAM,
    )


def require_utf8(raw_query: bytes) -> None:
    """400 for a query string whose percent-decoded bytes are not UTF-8 (the query
    parser keeps such bytes percent-encoded; upstream refuses them)."""
    if b"%" not in raw_query and raw_query.isascii():
        return
    try:
        urllib.parse.unquote_to_bytes(raw_query).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise bad_value(f"Invalid query string parameters: not UTF-8: {exc}.") from None


def accepted_params(
    args: Iterable[tuple[str, list[str]]], allowed: Iterable[str]
) -> dict[str, list[str]]:
    """The query string (``request.args.lists()``) as lists of values; 400 for a key
    not in ``allowed``. Repeats are kept: see ``last``."""
    allowed = set(allowed)
    params = dict(args)
    unknown = sorted(set(params) - allowed)
    if unknown:
        raise errors.BadRequest(
            f"Invalid query string parameters: '{unknown[0]}' is not an accepted "
            f"parameter. Accepted: {', '.join(sorted(allowed)) or 'none'}."
        )
    return params


def last(params: dict[str, list[str]], key: str) -> str | None:
    """The value of a parameter read once: the last one given (the others are not
    even validated), None when absent."""
    values = params.get(key)
    return values[-1] if values else None


def parse_resources(text: str, param: str = "resources") -> dict[str, int]:
    """``VCPU:2,MEMORY_MB:1024`` -> {"VCPU": 2, "MEMORY_MB": 1024}; a class given
    twice takes its last amount. Class names are taken as written (`` VCPU`` is
    no class)."""
    expected = (
        f"Badly formed {param} parameter. Expected {param} query string parameter in "
        f"form: ?{param}=VCPU:2,MEMORY_MB:1024. Got: {text or 'empty string'}."
    )
    resources: dict[str, int] = {}
    if not text.strip():
        raise bad_value(expected)
    for item in text.split(","):
        name, sep, amount_text = item.partition(":")
        if not sep or not name or ":" in amount_text:
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
        resources[name] = amount
    return resources


def parse_required(
    values: list[str], allow_forbidden: bool, allow_any_of: bool, param: str = "required"
) -> TraitFilter:
    """One or more ``required`` values -> TraitFilter.

    ``A,!B`` requires A and forbids B (forbidden from 1.22; ``!!B`` is ``!B``);
    ``in:A,B`` requires A or B (from 1.39, when the parameter may also repeat:
    before, the caller passes the last value only). A trait both required and
    forbidden is kept as asked: see ``contradictions``.
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
                bare = name.lstrip(FORBIDDEN_PREFIX)
                if not bare:
                    raise bad_value(f"Invalid trait name in {param}: {value}.")
                forbidden.add(bare)
            else:
                required.append(frozenset({name}))
    return TraitFilter(required=tuple(dict.fromkeys(required)), forbidden=frozenset(forbidden))


def contradictions(traits: TraitFilter) -> list[frozenset[str]]:
    """The any-of sets of ``traits`` whose every trait is also forbidden: nothing can
    meet them."""
    return [any_of for any_of in traits.required if any_of <= traits.forbidden]


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
    ``!A`` / ``!in:A,B`` forbid (from 1.32). An aggregate both required and
    forbidden is kept as asked (nothing is in it and out of it).
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
    return AggregateFilter(member_of=tuple(member_of), forbidden=frozenset(forbidden))


def _aggregate_uuids(text: str, param: str, whole: str) -> list[str]:
    uuids = []
    for item in text.split(","):
        normalized = parse_uuid(item)
        if normalized is None:
            raise bad_value(
                f"Invalid query string parameters: Expected '{param}' parameter to "
                f"contain valid UUID(s). Got: {whole or 'empty string'}."
            )
        uuids.append(normalized)
    return uuids


def parse_uuid(text: str) -> str | None:
    """The canonical form of a uuid in a query string, or None if ``text`` is not one.

    Taken as upstream takes a uuid in ``member_of`` and ``in_tree``: hex digits in
    either case, with or without dashes, in braces or after ``urn:uuid:``, and
    nothing else (no blanks, no sign, no ``0x``)."""
    try:
        parsed = uuid_lib.UUID(text)
    except ValueError:
        return None
    bare = text.replace("urn:", "").replace("uuid:", "").strip("{}").replace("-", "")
    return str(parsed) if bare.lower() == parsed.hex else None


def parse_dashed_uuid(text: str) -> str | None:
    """``uuid`` and ``in_tree`` of GET /resource_providers, or None: upstream wants them
    8-4-4-4-12 (in either case). What passes that check without being a uuid
    (``+0000000-...``) is returned as written, to match no provider, as upstream."""
    try:
        uuid_lib.UUID(text)
    except ValueError:
        return None
    if any(text[position:position + 1] != "-" for position in UUID_DASHES):
        return None
    return parse_uuid(text) or text


def normalize_uuid(text: str) -> str | None:
    """The canonical lower-case dashed form of a UUID, or None if ``text`` is not one."""
    if not text or len(text) > 38:
        return None
    try:
        return str(uuid_lib.UUID(text))
    except ValueError:
        return None
