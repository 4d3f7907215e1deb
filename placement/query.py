"""The query-string grammar: ``resources``, ``required``, ``member_of``, uuids.

Each parser turns one parameter's text into plain frozen values and raises
BadRequest (code ``placement.query.bad_value``, ``missing_value`` or
``duplicate_key``). This module is the only place that knows the grammar;
``GET /resource_providers``, ``GET /allocation_candidates``, ``GET /traits``
and ``GET /usages`` all build on it.

What is accepted is what upstream Placement 16.0.0 accepts (the exceptions
are in api-ref/differences.md): a parameter it reads once may be repeated
(the handlers say which value counts, e.g. ``last``), a resource class
repeated in ``resources`` takes the last amount, a trait or aggregate both
required and forbidden is a filter nothing passes (``GET
/allocation_candidates`` refuses the traits: ``contradictions``), and a uuid
is written as upstream takes one.

A refusal says what upstream says, since clients match its sentences: the
first check upstream makes is its JSON Schema of the query string
(``placement.query_schema``: the last value of each parameter, worded as its
validator words it, without the schema dump), then its parsers' own sentences. Where
upstream's sentence does not name the parameter (``required1``), ours adds it.
"""

import urllib.parse
import uuid as uuid_lib
from collections.abc import Iterable
from dataclasses import dataclass, field

from placement import errors

ANY_OF_PREFIX = "in:"
FORBIDDEN_PREFIX = "!"
FORBIDDEN_ANY_OF_PREFIX = FORBIDDEN_PREFIX + ANY_OF_PREFIX
# The positions of the dashes of a uuid written 8-4-4-4-12.
UUID_DASHES = (8, 13, 18, 23)
INVALID_QUERY = "Invalid query string parameters: "
RESOURCES_FORM = (
    "Badly formed resources parameter. Expected resources query string parameter in "
    "form: ?resources=VCPU:2,MEMORY_MB:1024. Got: {}."
)
TRAITS_FORM = "HW_CPU_X86_VMX,CUSTOM_MAGIC"
TRAITS_FORM_WITH_FORBIDDEN = "HW_CPU_X86_VMX,!CUSTOM_MAGIC"


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
        f"Query parameter '{key}' may be specified only once.",
        code=errors.ILLEGAL_DUPLICATE_QUERYPARAM,
    )


def _naming(sentence: str, param: str, upstream_name: str) -> str:
    """Upstream's sentence, which names ``upstream_name`` whatever the parameter was,
    followed by the parameter's own name when it is another (``required1``)."""
    return sentence if param == upstream_name else f"{sentence} (parameter {param})"


def require_utf8(raw_query: bytes) -> None:
    """400 for a query string whose percent-decoded bytes are not UTF-8 (the query
    parser keeps such bytes percent-encoded; upstream refuses them)."""
    if b"%" not in raw_query and raw_query.isascii():
        return
    try:
        urllib.parse.unquote_to_bytes(raw_query).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise bad_value(f"{INVALID_QUERY}not UTF-8: {exc}.") from None


def pairs_in_order(raw_query: bytes) -> list[tuple[str, str]]:
    """Every key and value of a UTF-8 query string (see ``require_utf8``), in the order
    given: ``request.args`` keeps the values of a key together, and upstream reads some
    parameters in the order of the query string."""
    return urllib.parse.parse_qsl(raw_query.decode(), keep_blank_values=True)


def params_of(args: Iterable[tuple[str, list[str]]]) -> dict[str, list[str]]:
    """The query string (``request.args.lists()``) as lists of values, keys in the
    order they first appear. Repeats are kept: see ``last``."""
    return dict(args)


def last(params: dict[str, list[str]], key: str) -> str | None:
    """The value of a parameter read once: the last one given (the others are not
    even validated), None when absent."""
    values = params.get(key)
    return values[-1] if values else None


# The grammar of the values.


def parse_resources(text: str, param: str = "resources") -> dict[str, int]:
    """``VCPU:2,MEMORY_MB:1024`` -> {"VCPU": 2, "MEMORY_MB": 1024}; a class given
    twice takes its last amount. Class names are taken as written (`` VCPU`` or an
    empty name is no class: the lookup refuses it, as upstream's)."""
    if not text.strip():
        raise bad_value(_naming(RESOURCES_FORM.format("empty string"), param, "resources"))
    resources: dict[str, int] = {}
    for item in text.split(","):
        parts = item.split(":")
        if len(parts) != 2:
            raise bad_value(_naming(RESOURCES_FORM.format(item), param, "resources"))
        name, amount_text = parts
        try:
            amount = int(amount_text)
        except ValueError:
            raise bad_value(
                _naming(
                    f"Requested resource {name} expected positive integer amount. "
                    f"Got: {amount_text}.",
                    param,
                    "resources",
                )
            ) from None
        if amount < 1:
            raise bad_value(
                _naming(
                    f"Requested resource {name} requires amount >= 1. Got: {amount}.",
                    param,
                    "resources",
                )
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
        if value.startswith(ANY_OF_PREFIX):
            required.append(_any_of_traits(value, allow_any_of, param))
            continue
        names = [name.strip() for name in value.split(",")]
        bare_forbidden = {n.lstrip(FORBIDDEN_PREFIX) for n in names if n.startswith("!")}
        if not all(names) or not all(bare_forbidden):
            form = TRAITS_FORM_WITH_FORBIDDEN if allow_forbidden else TRAITS_FORM
            raise bad_value(
                _naming(
                    f"{INVALID_QUERY}Expected 'required' parameter value of the form: {form}. "
                    f"Got an empty trait in: {value}",
                    param,
                    "required",
                )
            )
        if bare_forbidden and not allow_forbidden:
            raise bad_value(
                _naming(
                    f"{INVALID_QUERY}Expected 'required' parameter value of the form: "
                    f"{TRAITS_FORM}. Got: {value}",
                    param,
                    "required",
                )
            )
        required.extend(frozenset({n}) for n in names if not n.startswith(FORBIDDEN_PREFIX))
        forbidden |= bare_forbidden
    return TraitFilter(required=tuple(dict.fromkeys(required)), forbidden=frozenset(forbidden))


def _any_of_traits(value: str, allow_any_of: bool, param: str) -> frozenset[str]:
    if not allow_any_of:
        raise bad_value(
            _naming(
                f"{INVALID_QUERY}The format 'in:{TRAITS_FORM}' only supported since "
                f"microversion 1.39. Got: {value}",
                param,
                "required",
            )
        )
    names = frozenset(name.strip() for name in value[len(ANY_OF_PREFIX) :].split(","))
    if not all(names):
        raise bad_value(
            _naming(
                f"{INVALID_QUERY}Expected 'required' parameter value of the form: "
                f"in:{TRAITS_FORM}. Got an empty trait in: {value}",
                param,
                "required",
            )
        )
    if any(name.startswith(FORBIDDEN_PREFIX) for name in names):
        raise bad_value(
            _naming(
                f"{INVALID_QUERY}The format 'in:{TRAITS_FORM}' does not support forbidden "
                f"traits. Got: {value}",
                param,
                "required",
            )
        )
    return names


def contradictions(traits: TraitFilter) -> list[frozenset[str]]:
    """The any-of sets of ``traits`` whose every trait is also forbidden: nothing can
    meet them."""
    return [any_of for any_of in traits.required if any_of <= traits.forbidden]


def parse_member_of(
    values: list[str], allow_repeats: bool, allow_forbidden: bool, param: str = "member_of"
) -> AggregateFilter:
    """One or more ``member_of`` values -> AggregateFilter.

    ``in:A,B`` means in A or B; repeating the parameter (from 1.24) ANDs the
    values; ``!A`` / ``!in:A,B`` forbid (from 1.32). An aggregate both required
    and forbidden is kept as asked (nothing is in it and out of it).
    """
    if len(values) > 1 and not allow_repeats:
        raise errors.BadRequest(
            f"Multiple {param} parameters are not supported",
            code=errors.ILLEGAL_DUPLICATE_QUERYPARAM,
        )
    member_of: list[frozenset[str]] = []
    forbidden: set[str] = set()
    for value in values:
        if "," in value and not value.startswith((ANY_OF_PREFIX, FORBIDDEN_ANY_OF_PREFIX)):
            raise bad_value(
                _naming(
                    "Multiple values for 'member_of' must be prefixed with the 'in:' or '!in:' "
                    f"keyword using the valid microversion. Got: {value}",
                    param,
                    "member_of",
                )
            )
        is_forbidden = value.startswith(FORBIDDEN_PREFIX)
        text = value.removeprefix(FORBIDDEN_PREFIX) if is_forbidden else value
        if text.startswith(ANY_OF_PREFIX):
            text = text[len(ANY_OF_PREFIX) :]
        aggregates = frozenset(_aggregate_uuids(text, param))
        if not is_forbidden:
            member_of.append(aggregates)
        elif not allow_forbidden:
            raise bad_value(
                f"Forbidden {param} parameters are not supported in the specified microversion"
            )
        else:
            forbidden |= aggregates
    return AggregateFilter(member_of=tuple(member_of), forbidden=frozenset(forbidden))


def _aggregate_uuids(text: str, param: str) -> list[str]:
    uuids = []
    for item in text.split(","):
        normalized = parse_uuid(item)
        if normalized is None:
            raise bad_value(
                _naming(
                    f"{INVALID_QUERY}Expected 'member_of' parameter to contain valid UUID(s). "
                    f"Got: {item}",
                    param,
                    "member_of",
                )
            )
        uuids.append(normalized)
    return uuids


def parse_in_tree(text: str, param: str = "in_tree") -> str:
    """``in_tree$S`` of GET /allocation_candidates (blanks around it are dropped)."""
    normalized = parse_uuid(text.strip())
    if normalized is None:
        raise bad_value(
            _naming(
                f"{INVALID_QUERY}Expected 'in_tree' parameter to be a format of uuid. Got: {text}",
                param,
                "in_tree",
            )
        )
    return normalized


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
    if any(text[position : position + 1] != "-" for position in UUID_DASHES):
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
