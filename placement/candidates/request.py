"""The GET /allocation_candidates query string, parsed into frozen values.

``parse_candidate_request`` is the only reader of that query string. It knows
which parameters each microversion accepts (``resources`` from 1.10, ``limit``
1.16, ``required`` 1.17, ``member_of`` 1.21, numbered groups and
``group_policy`` 1.25, ``in_tree`` 1.31, string suffixes 1.33, ``root_required``
1.35, ``same_subtree`` and resourceless groups 1.36, ``in:`` traits 1.39) and
refuses everything else with a 400; at every one it also takes this service's
``budget_ms`` (a time budget: see ``search``) and soft preferences (``prefer$S``,
``prefer_member_of$S``, ``utilization``: see ``preferences``), which upstream
refuses. The value
grammar of ``resources``, ``required`` and ``member_of`` comes from
``placement.query``.

The checks run in upstream's order, so that the first refusal is the one
upstream gives, in its words: its JSON Schema of the query string, then the
request-wide parameters, then each group parameter in the order the query
string gives them, then the groups as a whole.

Which value of a repeated parameter counts is upstream's: the last
``resources$S`` and ``in_tree$S`` (every one is validated), the last
``required$S`` before 1.39 (the others are not read), every ``member_of$S``
from 1.24 and ``required$S`` from 1.39 (ANDed), the first ``limit`` and
``group_policy`` (the last is the one validated), every ``same_subtree``.
``member_of`` before 1.24 and ``root_required`` may not repeat.
"""

from dataclasses import dataclass, replace

from placement import errors, query, query_schema
from placement.candidates import preferences
from placement.candidates.preferences import NO_PREFERENCES, GroupPreferences

UNSUFFIXED = ""
GROUP_POLICIES = ("none", "isolate")
NUMBERED_SUFFIX = "[1-9][0-9]*"
STRING_SUFFIX = "[a-zA-Z0-9_-]{1,64}"
GROUP_PARAMETERS = ("resources", "required", "member_of", "in_tree")
LIMIT_PATTERN = "^[1-9][0-9]*$"
BUDGET_PATTERN = "^[1-9][0-9]{0,6}$"  # milliseconds, at most 9,999,999


@dataclass(frozen=True)
class RequestGroup:
    """One request group: the unsuffixed one (suffix "") or a granular ``$S`` one.

    The unsuffixed group's resources may come from several providers of one
    tree and from sharing providers; a granular group's all come from one
    provider. A granular group without resources (1.36) only picks a provider
    that ``same_subtree`` ties to the others.
    """

    suffix: str
    resources: tuple[tuple[str, int], ...]
    traits: query.TraitFilter
    aggregates: query.AggregateFilter
    in_tree: str | None
    preferences: GroupPreferences[str] = NO_PREFERENCES  # what it prefers and avoids

    @property
    def granular(self) -> bool:
        return self.suffix != UNSUFFIXED

    def constraints(self) -> tuple:
        """Everything a provider is matched against and ranked by, without the
        suffix: groups with equal constraints are interchangeable."""
        return (self.resources, self.traits, self.aggregates, self.in_tree, self.preferences)


@dataclass(frozen=True)
class CandidateRequest:
    groups: tuple[RequestGroup, ...]  # by suffix
    group_policy: str | None
    same_subtree: tuple[tuple[str, ...], ...]
    root_traits: query.TraitFilter
    limit: int | None
    # The search's time budget in milliseconds (``budget_ms``, this service's), or None.
    budget_ms: int | None = None
    # Rank by how used the providers are (``utilization``, this service's): pack, spread.
    utilization: str | None = None
    # The suffixes in the order the query string first names each group: the order
    # upstream looks at the groups in (placement.candidates.unknown_names).
    query_order: tuple[str, ...] = ()

    def resource_class_names(self) -> set[str]:
        return {name for group in self.groups for name, _ in group.resources}

    def trait_names(self) -> set[str]:
        names = self.root_traits.names()
        for group in self.groups:
            names |= group.traits.names()
        return names

    def preferred_trait_names(self) -> set[str]:
        """The traits the groups prefer or avoid."""
        return set().union(*(group.preferences.trait_names() for group in self.groups))

    @property
    def ranked(self) -> bool:
        """Whether the candidates are ranked by a preference (``preferences``)."""
        return self.utilization is not None or any(g.preferences for g in self.groups)


def parse_candidate_request(pairs: list[tuple[str, str]], version) -> CandidateRequest:
    """The query string (every key and value, in order: ``query.pairs_in_order``) at
    microversion ``version``."""
    params: dict[str, list[str]] = {}
    for key, value in pairs:
        params.setdefault(key, []).append(value)
    query_schema.validate_at(_schema, version, params)
    limit = _parse_limit(params.get("limit"))
    budget_ms = int(params["budget_ms"][-1]) if "budget_ms" in params else None
    group_policy = _parse_group_policy(params.get("group_policy"))
    root_traits = _parse_root_required(params.get("root_required"))
    same_subtree = _parse_same_subtree(params.get("same_subtree", []))
    groups = _parse_groups(pairs, params, version)
    if version >= (1, 36):
        _refuse_resourceless_groups(groups, same_subtree)
    else:
        _refuse_orphans(groups)
    if version >= (1, 22):
        _refuse_contradictions(groups)
    if group_policy is None and sum(1 for suffix in groups if suffix != UNSUFFIXED) > 1:
        raise errors.BadRequest(
            'The "group_policy" parameter is required when specifying more than one '
            '"resources{N}" parameter.',
            code=errors.QUERYPARAM_MISSING_VALUE,
        )
    utilization = preferences.parse_utilization(params.get(preferences.UTILIZATION))
    preferred = preferences.parse_group_preferences(pairs, set(groups))
    for suffix, wanted in preferred.items():
        groups[suffix] = replace(groups[suffix], preferences=wanted)
    return CandidateRequest(
        groups=tuple(groups[suffix] for suffix in sorted(groups)),
        group_policy=group_policy,
        same_subtree=same_subtree,
        root_traits=root_traits,
        limit=limit,
        budget_ms=budget_ms,
        utilization=utilization,
        query_order=tuple(groups),
    )


def _schema(version) -> query_schema.QuerySchema:
    """Upstream's JSON Schema of the query string at ``version``: the group parameters
    are plain properties (``resources`` required) before 1.25, keys with a suffix
    after."""
    group_names = ["resources"]
    checks: dict[str, tuple[query_schema.Check, ...]] = {
        "budget_ms": (query_schema.pattern(BUDGET_PATTERN),),
        preferences.UTILIZATION: (),
    }
    if version >= (1, 16):
        checks["limit"] = (query_schema.pattern(LIMIT_PATTERN),)
    if version >= (1, 17):
        group_names.append("required")
    if version >= (1, 21):
        group_names.append("member_of")
    if version < (1, 25):
        checks.update((name, ()) for name in group_names)
        checks.update((name, ()) for name in preferences.PARAMETERS)
        return query_schema.QuerySchema(
            checks=checks, required=("resources",), unknown_key_code=errors.QUERYPARAM_BAD_VALUE
        )
    checks["group_policy"] = (query_schema.one_of(*GROUP_POLICIES),)
    if version >= (1, 31):
        group_names.append("in_tree")
    if version >= (1, 35):
        checks["root_required"] = ()
    if version >= (1, 36):
        checks["same_subtree"] = ()
    suffix = STRING_SUFFIX if version >= (1, 33) else NUMBERED_SUFFIX
    return query_schema.QuerySchema(
        checks=checks,
        patterns=tuple(f"^{name}({suffix})?$" for name in group_names),
        unknown_key_code=errors.QUERYPARAM_BAD_VALUE,
        extension_patterns=tuple(f"^{name}({suffix})?$" for name in preferences.PARAMETERS),
    )


def _parse_limit(values: list[str] | None) -> int | None:
    """The first value (the schema checked the last); 0 or less is no limit."""
    if not values:
        return None
    try:
        limit = int(values[0])
    except ValueError:  # upstream: 500
        raise query.bad_value(
            f"{query.INVALID_QUERY}limit must be an integer, got {values[0]!r}."
        ) from None
    return limit if limit > 0 else None


def _parse_group_policy(values: list[str] | None) -> str | None:
    """The first value (the schema checked the last): ``isolate``, ``none`` (any other
    non-empty text), or None (not given, or empty)."""
    if not values or not values[0]:
        return None
    return "isolate" if values[0] == "isolate" else "none"


def _parse_root_required(values: list[str] | None) -> query.TraitFilter:
    if not values:
        return query.TraitFilter()
    if len(values) > 1:
        raise query.duplicate_key("root_required")
    if values[0].startswith(query.ANY_OF_PREFIX):
        raise query.bad_value(
            f"{query.INVALID_QUERY}The format 'in:{query.TRAITS_FORM}' only supported "
            f"since microversion 1.39. Got: {values[0]} (root_required does not take "
            "the in: prefix at any microversion)"
        )
    traits = query.parse_required(
        values, allow_forbidden=True, allow_any_of=False, param="root_required"
    )
    conflicting = [name for any_of in query.contradictions(traits) for name in any_of]
    if conflicting:
        raise query.bad_value(
            f"Conflicting required and forbidden traits found in root_required: "
            f"{', '.join(sorted(conflicting))}"
        )
    return traits


def _parse_same_subtree(values: list[str]) -> tuple[tuple[str, ...], ...]:
    parsed = []
    for value in values:
        suffixes = tuple(dict.fromkeys(s.strip() for s in value.split(",")))
        if any(s == UNSUFFIXED for s in suffixes):
            raise query.bad_value(
                "Empty string (unsuffixed group) can not be specified in `same_subtree`."
            )
        parsed.append(suffixes)
    return tuple(parsed)


@dataclass
class _GroupParts:
    resources: tuple[tuple[str, int], ...] = ()
    traits: query.TraitFilter | None = None
    aggregates: query.AggregateFilter | None = None
    in_tree: str | None = None


def _parse_groups(
    pairs: list[tuple[str, str]], params: dict[str, list[str]], version
) -> dict[str, RequestGroup]:
    """The groups, by suffix in query order, each parameter parsed where the query
    string first gives it (``required$S`` and ``member_of$S`` with all their values)."""
    parts: dict[str, _GroupParts] = {}
    for key, value in pairs:
        name = next((n for n in GROUP_PARAMETERS if key.startswith(n)), None)
        if name is None:
            continue
        group = parts.setdefault(key[len(name) :], _GroupParts())
        if name == "resources":
            group.resources = tuple(query.parse_resources(value, param=key).items())
        elif name == "in_tree":
            group.in_tree = query.parse_in_tree(value, param=key)
        elif name == "required" and group.traits is None:
            group.traits = query.parse_required(
                params[key] if version >= (1, 39) else params[key][-1:],
                allow_forbidden=version >= (1, 22),
                allow_any_of=version >= (1, 39),
                param=key,
            )
        elif name == "member_of" and group.aggregates is None:
            group.aggregates = query.parse_member_of(
                params[key],
                allow_repeats=version >= (1, 24),
                allow_forbidden=version >= (1, 32),
                param=key,
            )
    return {
        suffix: RequestGroup(
            suffix,
            group.resources,
            group.traits or query.TraitFilter(),
            group.aggregates or query.AggregateFilter(),
            group.in_tree,
        )
        for suffix, group in parts.items()
    }


def _refuse_orphans(groups: dict[str, RequestGroup]) -> None:
    """Before 1.36 every group has resources (and there is a group)."""
    orphans = [f"required{s}" for s, g in groups.items() if g.traits.required and not g.resources]
    if orphans:
        raise query.bad_value(
            "All traits parameters must be associated with resources.  Found the "
            f"following orphaned traits keys: {', '.join(orphans)}"
        )
    orphans = [f"member_of{s}" for s, g in groups.items() if g.aggregates and not g.resources]
    if orphans:
        raise query.bad_value(
            "All member_of parameters must be associated with resources. Found the "
            f"following orphaned member_of keys: {', '.join(orphans)}"
        )
    if not all(group.resources for group in groups.values()):
        raise query.bad_value("All request groups must specify resources.")
    if not groups:
        raise errors.BadRequest(
            "At least one request group (`resources` or `resources{$S}`) is required.",
            code=errors.QUERYPARAM_MISSING_VALUE,
        )


def _refuse_resourceless_groups(
    groups: dict[str, RequestGroup], same_subtree: tuple[tuple[str, ...], ...]
) -> None:
    """From 1.36 a group without resources is one that ``same_subtree`` ties to others;
    some group has resources; ``same_subtree`` names only groups that exist."""
    resourceless = [suffix for suffix, group in groups.items() if not group.resources]
    if len(resourceless) == len(groups):
        raise errors.BadRequest(
            "There must be at least one resources or resources[$S] parameter.",
            code=errors.QUERYPARAM_MISSING_VALUE,
        )
    tied = {suffix for suffixes in same_subtree for suffix in suffixes}
    loose = [suffix for suffix in resourceless if suffix not in tied]
    if loose:
        raise query.bad_value(
            "Resourceless suffixed group request should be specified in `same_subtree` "
            f"query param: bad group(s) - {loose!r}."
        )
    unknown = sorted(suffix for suffix in tied if suffix not in groups)
    if unknown:
        raise query.bad_value(
            f"Real suffixes should be specified in `same_subtree`: {unknown!r} not found "
            f"in {list(groups)!r}."
        )


def _refuse_contradictions(groups: dict[str, RequestGroup]) -> None:
    """A group whose required traits (or every trait of an any-of set) are forbidden:
    upstream refuses it here (GET /resource_providers answers it, with nothing)."""
    conflicting = [
        f"required{suffix}: ({', '.join(sorted(any_of))})"
        for suffix, group in groups.items()
        for any_of in query.contradictions(group.traits)
    ]
    if conflicting:
        raise query.bad_value(
            f"Conflicting required and forbidden traits found in the following traits "
            f"keys: {', '.join(sorted(conflicting))}"
        )
