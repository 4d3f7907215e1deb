"""GET /allocation_candidates (from 1.10): parse, plan, search, summarize."""

import random

import flask

from placement.candidates import response, search
from placement.candidates.plan import build_plan
from placement.candidates.request import parse_candidate_request
from placement.collector import collector_paused
from placement.context import RequestContext
from placement.data import provider_summaries
from placement.http import json_response, min_version

EMPTY: dict[str, list | dict] = {"allocation_requests": [], "provider_summaries": {}}


@min_version(1, 10)
def list_allocation_candidates(ctx: RequestContext) -> flask.Response:
    with collector_paused():
        return _list_allocation_candidates(ctx)


def _list_allocation_candidates(ctx: RequestContext) -> flask.Response:
    request = parse_candidate_request(ctx.request.args.lists(), ctx.version)
    nested_aware = ctx.at_least(1, 29)
    randomize = ctx.config.randomize_allocation_candidates
    plan = build_plan(
        ctx.conn, request, nested_aware=nested_aware, lazy=request.limit is not None,
        in_order=not randomize,
    )
    if plan is None or plan.candidate_roots == []:
        return json_response(ctx, EMPTY)
    roots = None if plan.candidate_roots is None else list(plan.candidate_roots)
    if randomize and roots is not None:
        random.shuffle(roots)
    candidates = search.collect(plan, roots, _cap(ctx, request.limit))
    if randomize:
        random.shuffle(candidates)
    if not candidates:
        return json_response(ctx, EMPTY)

    requested_classes = {
        class_id for slot in plan.slots for class_id, _ in slot.amounts
    }
    root_ids, provider_ids = response.providers_to_summarize(
        plan, candidates, whole_trees=nested_aware
    )
    summaries = provider_summaries.summaries(
        ctx.conn,
        root_ids=root_ids,
        provider_ids=provider_ids,
        class_ids=None if ctx.at_least(1, 27) else requested_classes,
        with_traits=ctx.at_least(1, 17),
    )
    return json_response(
        ctx, response.body(plan, candidates, summaries, plan.class_names, ctx.version)
    )


def _cap(ctx: RequestContext, limit: int | None) -> int | None:
    """How many candidates to return: ``limit``, bounded by max_allocation_candidates."""
    bound = ctx.config.max_allocation_candidates
    if bound < 0:
        return limit
    return bound if limit is None else min(limit, bound)
