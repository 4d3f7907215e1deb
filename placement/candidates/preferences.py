"""Soft preferences of GET /allocation_candidates (this service's extension), parsed.

``prefer$S=T1,!T2`` names traits request group ``$S`` prefers (``T1``) or avoids
(``!T2``); ``prefer_member_of$S=A1,!A2`` the same of aggregates; ``utilization=pack``
or ``spread`` ranks by how used the chosen providers already are. None of them
filters anything: they rank the candidates (``placement.candidates.scoring`` says
the score, ``placement.candidates.ranked`` finds the best). Repeated parameters add
up. The key ``prefer_member_of...`` is read as that parameter, never as ``prefer``
with a suffix beginning ``_member_of``.
"""

from dataclasses import dataclass
from typing import Generic, TypeVar

from placement import errors, query

PREFER = "prefer"
PREFER_MEMBER_OF = "prefer_member_of"
PARAMETERS = (PREFER_MEMBER_OF, PREFER)  # the longer first: it is matched first
UTILIZATION = "utilization"
UTILIZATION_CHOICES = ("pack", "spread")


T = TypeVar("T", str, int)


@dataclass(frozen=True)
class GroupPreferences(Generic[T]):
    """What one request group prefers and avoids: trait names and aggregate uuids as the
    query string gives them, or their ids as the search scores them
    (``scoring.Liking``)."""

    traits: frozenset[T] = frozenset()
    avoided_traits: frozenset[T] = frozenset()
    aggregates: frozenset[T] = frozenset()
    avoided_aggregates: frozenset[T] = frozenset()

    def __bool__(self) -> bool:
        return bool(
            self.traits or self.avoided_traits or self.aggregates or self.avoided_aggregates
        )

    def trait_names(self) -> set[T]:
        return set(self.traits | self.avoided_traits)

    def terms(self, traits: frozenset[T], aggregates: frozenset[T]) -> int:
        """The trait and aggregate terms of a score (``scoring``) for providers having
        ``traits`` and ``aggregates`` between them."""
        return (
            len(self.traits & traits)
            - len(self.avoided_traits & traits)
            + len(self.aggregates & aggregates)
            - len(self.avoided_aggregates & aggregates)
        )

    def most_terms(self, traits: frozenset[T], aggregates: frozenset[T]) -> int:
        """At most what ``terms`` gives for providers having some of these."""
        return len(self.traits & traits) + len(self.aggregates & aggregates)


NO_PREFERENCES: GroupPreferences[str] = GroupPreferences()


def parameter_of(key: str) -> str | None:
    """Which preference parameter ``key`` gives (None: none)."""
    return next((name for name in PARAMETERS if key.startswith(name)), None)


def parse_group_preferences(
    pairs: list[tuple[str, str]], group_suffixes: set[str]
) -> dict[str, GroupPreferences[str]]:
    """Each group's preferences, by suffix, from every ``prefer$S`` and
    ``prefer_member_of$S`` of the query string; 400 for a group that no other
    parameter makes, a malformed value, or a name both preferred and avoided."""
    wanted: dict[str, dict[str, set[str]]] = {}
    for key, value in pairs:
        name = parameter_of(key)
        if name is None:
            continue
        suffix = key[len(name) :]
        if suffix not in group_suffixes:
            raise query.bad_value(
                f"{key} names no request group: give resources{suffix} (or, from 1.36, "
                "a resourceless group) too."
            )
        kinds = wanted.setdefault(suffix, {})
        preferred, avoided = _names(value, key)
        if name == PREFER_MEMBER_OF:
            preferred = {_aggregate(uuid, key) for uuid in preferred}
            avoided = {_aggregate(uuid, key) for uuid in avoided}
        kinds.setdefault(name, set()).update(preferred)
        kinds.setdefault("!" + name, set()).update(avoided)
    found = {}
    for suffix, kinds in wanted.items():
        for name in PARAMETERS:
            both = kinds.get(name, set()) & kinds.get("!" + name, set())
            if both:
                raise query.bad_value(
                    f"{name}{suffix} both prefers and avoids: {', '.join(sorted(both))}."
                )
        found[suffix] = GroupPreferences[str](
            traits=frozenset(kinds.get(PREFER, ())),
            avoided_traits=frozenset(kinds.get("!" + PREFER, ())),
            aggregates=frozenset(kinds.get(PREFER_MEMBER_OF, ())),
            avoided_aggregates=frozenset(kinds.get("!" + PREFER_MEMBER_OF, ())),
        )
    return found


def parse_utilization(values: list[str] | None) -> str | None:
    """``pack``, ``spread`` (the last value counts), or None when not given."""
    if not values:
        return None
    if values[-1] not in UTILIZATION_CHOICES:
        raise query.bad_value(
            f"{UTILIZATION} must be one of {', '.join(UTILIZATION_CHOICES)}, got {values[-1]!r}."
        )
    return values[-1]


def _names(value: str, key: str) -> tuple[set[str], set[str]]:
    """The names of one value: preferred, and avoided (``!`` first)."""
    preferred: set[str] = set()
    avoided: set[str] = set()
    for part in value.split(","):
        name = part.strip()
        target = preferred
        if name.startswith(query.FORBIDDEN_PREFIX):
            name, target = name[1:].strip(), avoided
        if not name or name.startswith((query.FORBIDDEN_PREFIX, query.ANY_OF_PREFIX)):
            raise query.bad_value(
                f"{query.INVALID_QUERY}{key} takes names separated by commas, each "
                f"preferred or (with a leading !) avoided, got {value!r}."
            )
        target.add(name)
    return preferred, avoided


def _aggregate(text: str, key: str) -> str:
    uuid = query.parse_uuid(text)
    if uuid is None:
        raise errors.BadRequest(
            f"{query.INVALID_QUERY}Expected '{key}' parameter to contain valid UUID(s), "
            f"got {text!r}.",
            code=errors.QUERYPARAM_BAD_VALUE,
        )
    return uuid
