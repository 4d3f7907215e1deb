"""Candidates and provider summaries as the GET /allocation_candidates body.

Per microversion: allocation requests are a list of {resource_provider,
resources} before 1.12 and a dict keyed by provider uuid from 1.12, with
``mappings`` (request group suffix -> provider uuids) from 1.34. Provider
summaries show the requested classes before 1.27 and every inventory from
1.27, traits from 1.17, and parent and root uuids from 1.29; from 1.29 they
cover every provider of the trees the allocations use (as upstream, a
provider only a resourceless group is mapped to brings no tree), before only
the providers the candidates use. A summary at 1.29 and later is the JSON
the worker keeps per tree (``summaries.TreeSummaries``), written into the body
as it is.
"""

import re

import orjson

from placement.candidates.plan import SearchPlan
from placement.candidates.search import Candidate
from placement.candidates.summaries import TreeSummaries, resources
from placement.candidates.uuids import ProviderUuids

_PLACEHOLDER = re.compile(r"@(\d+)@")


def body(
    plan: SearchPlan,
    candidates: list[Candidate],
    version,
    summaries: TreeSummaries,
    scores: list[float] | None = None,
) -> bytes:
    """The body as JSON text, from candidates whose allocation requests
    ``AllocationRequests`` wrote: the texts are joined as they are, the requests and
    the summaries (the trees' from ``summaries``), then the whole (every further copy
    of a body of hundreds of KiB costs about as much as a join). A ranked request's
    ``scores`` (one per candidate, this service's) follow the allocation requests."""
    return b"".join(
        [
            b'{"allocation_requests":[',
            b",".join([candidate.request for candidate in candidates]),
            b"]",
            b"" if scores is None else b',"scores":' + orjson.dumps(rounded_scores(scores)),
            b',"provider_summaries":{',
            b",".join(_summaries(plan, candidates, version, summaries)),
            b"}}",
        ]
    )


def rounded_scores(scores: list[float]) -> list[float]:
    """Scores as the body shows them: to 6 decimals (as the translator's)."""
    return [round(score, 6) + 0.0 for score in scores]  # + 0.0: no -0.0


def _summaries(
    plan: SearchPlan, candidates: list[Candidate], version, summaries: TreeSummaries
) -> list[bytes | memoryview]:
    """The entries of provider_summaries, ``"uuid":{...}`` each (a tree's at a time from
    1.29)."""
    world = plan.world
    providers = world.providers
    if version >= (1, 29):  # every provider of the trees used, as kept
        # A candidate's providers are in the tree it is anchored in, but sharing ones;
        # as upstream, a provider only a resourceless group is mapped to brings no tree.
        if plan.sharing:
            with_resources = [i for i, slot in enumerate(plan.slots) if slot.amounts]
            roots = {
                providers[candidate.providers[i]].root_id
                for candidate in candidates
                for i in with_resources
            }
        else:
            roots = {candidate.root for candidate in candidates}
        return [summaries.of_tree(world, root) for root in sorted(roots)]
    used = {provider for candidate in candidates for provider in candidate.providers}
    class_ids = None if version >= (1, 27) else set(plan.class_names)
    entries: list[bytes | memoryview] = []
    for provider_id in sorted(used):
        provider = providers[provider_id]
        shown: dict = {"resources": resources(world, provider, class_ids)}
        if version >= (1, 17):
            shown["traits"] = provider.trait_names()
        entries.append(orjson.dumps(provider.uuid) + b":" + orjson.dumps(shown))
    return entries


class AllocationRequests:
    """Writes the allocation requests of one request's candidates as JSON text, from one
    template per way the candidates' slots share providers (which slots are on the same
    provider): the template is the request with a ``%s`` wherever a provider's uuid goes
    (class names and suffixes have no ``@``: the placeholders ``@n@`` cannot clash).
    Placements of one template key (``search.Render``) find theirs without working the
    pattern out."""

    def __init__(self, plan: SearchPlan, version, uuids: ProviderUuids) -> None:
        self.plan = plan
        self.version = version
        self.uuids = uuids
        self.templates: dict[tuple[int, ...], tuple[bytes, tuple[int, ...]]] = {}
        self.by_key: dict[tuple, tuple[bytes, tuple[int, ...]]] = {}

    def render(self, placed: tuple[int, ...], template_key: tuple | None) -> bytes:
        """The allocation request of the placement ``placed`` (a provider per slot), as
        JSON text."""
        template = self.by_key.get(template_key) if template_key else None
        if template is None:
            distinct: dict[int, int] = {}
            pattern = tuple(distinct.setdefault(p, len(distinct)) for p in placed)
            template = self.templates.get(pattern)
            if template is None:
                template = self.templates[pattern] = self._template(pattern)
            if template_key:
                self.by_key[template_key] = template
        text, slots = template
        uuids, world = self.uuids, self.plan.world
        return text % tuple([uuids.uuid_of(world, placed[slot]) for slot in slots])

    def _template(self, pattern: tuple[int, ...]) -> tuple[bytes, tuple[int, ...]]:
        """The request's text with ``%s`` for the uuids, and the slot whose provider
        each ``%s`` stands for."""
        request = _allocation_request(
            self.plan, [f"@{number}@" for number in pattern], self.version
        )
        text = orjson.dumps(request).decode().replace("%", "%%")
        first_slot = {number: pattern.index(number) for number in set(pattern)}
        slots = tuple(first_slot[int(found)] for found in _PLACEHOLDER.findall(text))
        return _PLACEHOLDER.sub("%s", text).encode(), slots


def _allocation_request(plan: SearchPlan, uuids: list[str], version) -> dict:
    """The allocation request placing each slot on the provider ``uuids`` gives it."""
    class_names = plan.class_names
    taken: dict[str, dict[str, int]] = {}
    mappings: dict[str, list[str]] = {}
    for slot, uuid in zip(plan.slots, uuids, strict=True):
        group_providers = mappings.setdefault(slot.group.suffix, [])
        if uuid not in group_providers:
            group_providers.append(uuid)
        if not slot.amounts:
            continue
        resources = taken.setdefault(uuid, {})
        for class_id, amount in slot.amounts:
            name = class_names[class_id]
            resources[name] = resources.get(name, 0) + amount
    if version < (1, 12):
        return {
            "allocations": [
                {"resource_provider": {"uuid": uuid}, "resources": resources}
                for uuid, resources in taken.items()
            ]
        }
    request: dict = {
        "allocations": {uuid: {"resources": resources} for uuid, resources in taken.items()}
    }
    if version >= (1, 34):
        request["mappings"] = mappings
    return request
