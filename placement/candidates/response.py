"""Candidates and provider summaries as the GET /allocation_candidates body.

Per microversion: allocation requests are a list of {resource_provider,
resources} before 1.12 and a dict keyed by provider uuid from 1.12, with
``mappings`` (request group suffix -> provider uuids) from 1.34. Provider
summaries show the requested classes before 1.27 and every inventory from
1.27, traits from 1.17, and parent and root uuids from 1.29; from 1.29 they
cover every provider of the trees in the answer, before only the providers
the candidates use.
"""

from collections.abc import Iterable

from placement.candidates.plan import SearchPlan
from placement.candidates.search import Candidate
from placement.data.provider_summaries import Summary


def providers_to_summarize(
    plan: SearchPlan, candidates: Iterable[Candidate], whole_trees: bool
) -> tuple[set[int], set[int]]:
    """(root ids, provider ids) whose providers the summaries must show."""
    used = {provider for candidate in candidates for provider in candidate.providers}
    if not whole_trees:
        return set(), used
    return {plan.root_of.get(p, p) for p in used}, set()


def body(
    plan: SearchPlan,
    candidates: list[Candidate],
    summaries: dict[int, Summary],
    class_names: dict[int, str],
    version,
) -> dict:
    uuid_of = {provider_id: summary.uuid for provider_id, summary in summaries.items()}
    return {
        "allocation_requests": [
            _allocation_request(plan, candidate, uuid_of, class_names, version)
            for candidate in candidates
        ],
        "provider_summaries": {
            summary.uuid: _summary(summary, version) for summary in summaries.values()
        },
    }


def _allocation_request(
    plan: SearchPlan, candidate: Candidate, uuid_of, class_names, version
) -> dict:
    taken: dict[int, dict[str, int]] = {}
    mappings: dict[str, list[str]] = {}
    for slot, provider in zip(plan.slots, candidate.providers, strict=True):
        uuid = uuid_of[provider]
        group_providers = mappings.setdefault(slot.group.suffix, [])
        if uuid not in group_providers:
            group_providers.append(uuid)
        if not slot.amounts:
            continue
        resources = taken.setdefault(provider, {})
        for class_id, amount in slot.amounts:
            name = class_names[class_id]
            resources[name] = resources.get(name, 0) + amount
    if version < (1, 12):
        return {
            "allocations": [
                {"resource_provider": {"uuid": uuid_of[p]}, "resources": resources}
                for p, resources in taken.items()
            ]
        }
    request: dict = {
        "allocations": {uuid_of[p]: {"resources": resources} for p, resources in taken.items()}
    }
    if version >= (1, 34):
        request["mappings"] = mappings
    return request


def _summary(summary: Summary, version) -> dict:
    shown: dict = {"resources": summary.resources}
    if version >= (1, 17):
        shown["traits"] = sorted(summary.traits)
    if version >= (1, 29):
        shown["parent_provider_uuid"] = summary.parent_uuid
        shown["root_provider_uuid"] = summary.root_uuid
    return shown
