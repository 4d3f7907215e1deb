"""A fitted request -> the GET /allocation_candidates query that asks the same.

The dry-run shows it, and tests run it through the generic candidate search
to check that the translator and that search agree:

- the request's base resources form the unsuffixed group, and the tree's
  root must be a group-resource node (``root_required``);
- every request group is a granular group (``_G1``, ``_G2``, ...) required to
  be on a provider of its level (``required$S=CUSTOM_GROUP_LEVEL_<LEVEL>``),
  with ``resources$S`` for its base resources, resourceless otherwise;
- every group with subgroups is tied to everything under it (``same_subtree``);
- ``group_policy=isolate``: distinct request groups, distinct providers; or
  ``group_policy=none`` when they may share (``GroupOptions.sibling_groups``),
  the generic search then checking the summed amounts on each provider.
"""

from dataclasses import dataclass

from placement.group_resources.request_tree import RequestGroup
from placement.nodes.naming import NODE_TRAIT, level_trait

MICROVERSION = "1.36"


@dataclass(frozen=True)
class CandidateQuery:
    params: list[tuple[str, str]]
    groups: dict[str, str]  # suffix -> the request group's path

    def query_string(self) -> str:
        return "&".join(f"{key}={value}" for key, value in self.params)


def candidate_query(
    top: RequestGroup, in_tree: str | None = None, isolate: bool = True
) -> CandidateQuery:
    params: list[tuple[str, str]] = []
    if top.demands:
        params.append(("resources", _resources(top)))
    params.append(("root_required", NODE_TRAIT))
    suffixes: dict[int, str] = {}
    groups: dict[str, str] = {}
    for group in top.walk():
        if group is top:
            continue
        suffix = f"_G{len(suffixes) + 1}"
        suffixes[id(group)] = suffix
        groups[suffix] = "/".join(group.path)
        if group.demands:
            params.append((f"resources{suffix}", _resources(group)))
        assert group.level is not None
        params.append((f"required{suffix}", level_trait(group.level)))
        if in_tree is not None:
            params.append((f"in_tree{suffix}", in_tree))
    for group in top.walk():
        if group is not top and group.children:
            under = [suffixes[id(g)] for g in group.walk()]
            params.append(("same_subtree", ",".join(under)))
    if groups:
        params.append(("group_policy", "isolate" if isolate else "none"))
    if in_tree is not None and top.demands:
        params.append(("in_tree", in_tree))
    return CandidateQuery(params=params, groups=groups)


def _resources(group: RequestGroup) -> str:
    amounts: dict[str, int] = {}
    for demand in group.demands:
        amounts[demand.resource_class] = amounts.get(demand.resource_class, 0) + demand.amount
    return ",".join(f"{c}:{a}" for c, a in sorted(amounts.items()))
