"""The GET /allocation_candidates query string, parsed into frozen values.

``parse_candidate_request`` is the only reader of that query string. It knows
which parameters each microversion accepts (``resources`` from 1.10, ``limit``
1.16, ``required`` 1.17, ``member_of`` 1.21, numbered groups and
``group_policy`` 1.25, ``in_tree`` 1.31, string suffixes 1.33, ``root_required``
1.35, ``same_subtree`` and resourceless groups 1.36, ``in:`` traits 1.39) and
refuses everything else with a 400 naming the parameter. The value grammar of
``resources``, ``required`` and ``member_of`` comes from ``placement.query``.

Which value of a repeated parameter counts is upstream's: the last
``resources$S`` and ``in_tree$S`` (every one is validated), the last
``required$S`` before 1.39 (the others are not read), every ``member_of$S``
from 1.24 and ``required$S`` from 1.39 (ANDed), the first ``limit`` and
``group_policy`` (the last is the one validated), every ``same_subtree``.
``member_of`` before 1.24 and ``root_required`` may not repeat.
"""

import re
from collections.abc import Iterable
from dataclasses import dataclass

from placement import errors, query

UNSUFFIXED = ""
GROUP_POLICIES = ("none", "isolate")
NUMBERED_SUFFIX = r"[1-9][0-9]*"
STRING_SUFFIX = r"[a-zA-Z0-9_-]{1,64}"
GROUP_PARAMETERS = ("resources", "required", "member_of", "in_tree")
LIMIT = re.compile(r"[1-9][0-9]*\n?")  # upstream's pattern lets a final newline by


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

    @property
    def granular(self) -> bool:
        return self.suffix != UNSUFFIXED

    def constraints(self) -> tuple:
        """Everything a provider is matched against, without the suffix: groups
        with equal constraints are interchangeable."""
        return (self.resources, self.traits, self.aggregates, self.in_tree)


@dataclass(frozen=True)
class CandidateRequest:
    groups: tuple[RequestGroup, ...]
    group_policy: str | None
    same_subtree: tuple[tuple[str, ...], ...]
    root_traits: query.TraitFilter
    limit: int | None

    def resource_class_names(self) -> set[str]:
        return {name for group in self.groups for name, _ in group.resources}

    def trait_names(self) -> set[str]:
        names = self.root_traits.names()
        for group in self.groups:
            names |= group.traits.names()
        return names


def parse_candidate_request(args: Iterable[tuple[str, list[str]]], version) -> CandidateRequest:
    """The query string (``request.args.lists()``) at microversion ``version``.

    The checks run in upstream's order where its refusals carry a specific code:
    the request-wide parameters, then the groups."""
    params = _accepted_params(args, version)
    group_policy = _parse_group_policy(params.get("group_policy"))
    limit = _parse_limit(params.get("limit"))
    root_traits = _parse_root_required(params.get("root_required"))
    same_subtree = _parse_same_subtree(params.get("same_subtree", []))
    by_suffix: dict[str, dict[str, list[str]]] = {}
    for key, values in params.items():
        for name in GROUP_PARAMETERS:
            if key.startswith(name):
                by_suffix.setdefault(key[len(name):], {})[name] = values
                break
    groups = tuple(
        _parse_group(suffix, group_params, version)
        for suffix, group_params in sorted(by_suffix.items())
    )
    if not any(group.resources for group in groups):
        raise errors.BadRequest(
            "There must be at least one resources or resources[$S] parameter.",
            code=errors.QUERYPARAM_MISSING_VALUE,
        )
    _refuse_orphans(groups, version)
    _refuse_unknown_suffixes(same_subtree, groups)
    _refuse_resourceless_groups_outside_same_subtree(groups, same_subtree)
    _refuse_contradictions(groups)
    if group_policy is None and sum(1 for group in groups if group.granular) > 1:
        raise errors.BadRequest(
            'The "group_policy" parameter is required when specifying more than one '
            '"resources{N}" parameter.',
            code=errors.QUERYPARAM_MISSING_VALUE,
        )
    return CandidateRequest(
        groups=groups,
        group_policy=group_policy,
        same_subtree=same_subtree,
        root_traits=root_traits,
        limit=limit,
    )


def _accepted_params(args: Iterable[tuple[str, list[str]]], version) -> dict[str, list[str]]:
    pattern, single = _grammar(version)
    params: dict[str, list[str]] = {}
    for key, values in args:
        if not pattern.fullmatch(key):
            raise query.bad_value(
                f"Invalid query string parameters: '{key}' is not an accepted parameter "
                "at this microversion."
            )
        if len(values) > 1 and single.fullmatch(key):
            raise query.duplicate_key(key)
        params[key] = values
    return params


def _grammar(version) -> tuple[re.Pattern, re.Pattern]:
    """The accepted keys, and the keys that may not repeat, at ``version``."""
    group_names = ["resources"]
    plain = []
    if version >= (1, 16):
        plain.append("limit")
    if version >= (1, 17):
        group_names.append("required")
    if version >= (1, 21):
        group_names.append("member_of")
    if version >= (1, 25):
        plain.append("group_policy")
    if version >= (1, 31):
        group_names.append("in_tree")
    if version >= (1, 35):
        plain.append("root_required")
    if version >= (1, 36):
        plain.append("same_subtree")
    if version >= (1, 33):
        suffix = f"(?:{STRING_SUFFIX})?"
    elif version >= (1, 25):
        suffix = f"(?:{NUMBERED_SUFFIX})?"
    else:
        suffix = ""
    accepted = re.compile(
        f"(?:{'|'.join(group_names)}){suffix}" + "".join(f"|{name}" for name in plain)
    )
    single = ["root_required"]
    if version < (1, 24):
        single.append("member_of")
    return accepted, re.compile("|".join(single))


def _parse_group(suffix: str, params: dict[str, list[str]], version) -> RequestGroup:
    resources: tuple[tuple[str, int], ...] = ()
    for text in params.get("resources", ()):  # each is validated, the last counts
        resources = tuple(query.parse_resources(text, param=f"resources{suffix}").items())
    traits = (
        query.parse_required(
            params["required"] if version >= (1, 39) else params["required"][-1:],
            allow_forbidden=version >= (1, 22),
            allow_any_of=version >= (1, 39),
            param=f"required{suffix}",
        )
        if "required" in params
        else query.TraitFilter()
    )
    aggregates = (
        query.parse_member_of(
            params["member_of"], allow_forbidden=version >= (1, 32), param=f"member_of{suffix}"
        )
        if "member_of" in params
        else query.AggregateFilter()
    )
    in_tree = None
    for text in params.get("in_tree", ()):  # each is validated, the last counts
        in_tree = query.parse_uuid(text.strip())
        if in_tree is None:
            raise query.bad_value(
                f"Invalid query string parameters: 'in_tree{suffix}' must be a valid "
                f"UUID, got {text!r}."
            )
    return RequestGroup(suffix, resources, traits, aggregates, in_tree)


def _refuse_orphans(groups: tuple[RequestGroup, ...], version) -> None:
    """Groups without resources: never the unsuffixed one, granular ones from 1.36."""
    for group in groups:
        if group.resources:
            continue
        if not group.granular:
            raise query.bad_value(
                "The unsuffixed request group has no resources: required, member_of "
                "and in_tree must come with a 'resources' parameter."
            )
        if version < (1, 36):
            raise query.bad_value(
                f"All traits parameters must be associated with resources. Found an "
                f"orphaned request group: '{group.suffix}' has no resources{group.suffix}."
            )


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


def _refuse_unknown_suffixes(
    same_subtree: tuple[tuple[str, ...], ...], groups: tuple[RequestGroup, ...]
) -> None:
    known = {group.suffix for group in groups}
    for suffixes in same_subtree:
        unknown = [s for s in suffixes if s not in known]
        if unknown:
            raise query.bad_value(
                f"Real suffixes should be specified in `same_subtree`: "
                f"{', '.join(unknown)} not found among the request groups "
                f"{', '.join(sorted(s for s in known if s)) or '(none)'}."
            )


def _refuse_resourceless_groups_outside_same_subtree(groups, same_subtree) -> None:
    tied = {suffix for suffixes in same_subtree for suffix in suffixes}
    loose = [g.suffix for g in groups if not g.resources and g.suffix not in tied]
    if loose:
        raise query.bad_value(
            f"Resourceless suffixed group request should be specified in `same_subtree` "
            f"query param: bad group(s) - {', '.join(loose)}."
        )


def _refuse_contradictions(groups: tuple[RequestGroup, ...]) -> None:
    """A group whose required traits (or every trait of an any-of set) are forbidden:
    upstream refuses it here (GET /resource_providers answers it, with nothing)."""
    conflicting = [
        f"required{group.suffix}: ({', '.join(sorted(any_of))})"
        for group in groups
        for any_of in query.contradictions(group.traits)
    ]
    if conflicting:
        raise query.bad_value(
            f"Conflicting required and forbidden traits found in the following traits "
            f"keys: {', '.join(sorted(conflicting))}."
        )


def _parse_root_required(values: list[str] | None) -> query.TraitFilter:
    if not values:
        return query.TraitFilter()
    if values[0].startswith(query.ANY_OF_PREFIX):
        raise query.bad_value(
            f"Invalid query string parameters: root_required does not support the in: "
            f"prefix. Got: {values[0]}."
        )
    traits = query.parse_required(
        values, allow_forbidden=True, allow_any_of=False, param="root_required"
    )
    conflicting = [name for any_of in query.contradictions(traits) for name in any_of]
    if conflicting:
        raise query.bad_value(
            f"Conflicting required and forbidden traits found in root_required: "
            f"{', '.join(sorted(conflicting))}."
        )
    return traits


def _parse_group_policy(values: list[str] | None) -> str | None:
    """The first value, after the last passed the check: ``isolate``, ``none`` (any
    other non-empty text), or None (not given, or empty)."""
    if not values:
        return None
    if values[-1] not in GROUP_POLICIES:
        raise query.bad_value(
            f"Invalid query string parameters: group_policy must be one of "
            f"{', '.join(GROUP_POLICIES)}, got {values[-1]!r}."
        )
    if not values[0]:
        return None
    return "isolate" if values[0] == "isolate" else "none"


def _parse_limit(values: list[str] | None) -> int | None:
    """The first value, after the last passed the check; 0 or less is no limit."""
    if not values:
        return None
    if not LIMIT.fullmatch(values[-1]):
        raise query.bad_value(
            f"Invalid query string parameters: limit must be a positive integer, "
            f"got {values[-1]!r}."
        )
    try:
        limit = int(values[0])
    except ValueError:  # upstream: 500
        raise query.bad_value(
            f"Invalid query string parameters: limit must be a positive integer, "
            f"got {values[0]!r}."
        ) from None
    return limit if limit > 0 else None
