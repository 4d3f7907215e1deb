"""GET /allocation_candidates (from 1.10): parse, plan, search, answer."""

import flask

from placement import query
from placement.candidates import response, search
from placement.candidates.answers import KeptAnswers
from placement.candidates.plan import SearchPlan, build_plan
from placement.candidates.request import parse_candidate_request
from placement.candidates.unknown_names import refuse_unknown_names
from placement.candidates.world import world_of
from placement.collector import collector_paused
from placement.context import RequestContext
from placement.http import json_response, json_text_response, min_version

MIB = 1024 * 1024
EMPTY: dict[str, list | dict] = {"allocation_requests": [], "provider_summaries": {}}


@min_version(1, 10)
def list_allocation_candidates(ctx: RequestContext) -> flask.Response:
    with collector_paused():
        return _list_allocation_candidates(ctx)


def _list_allocation_candidates(ctx: RequestContext) -> flask.Response:
    query.require_utf8(ctx.request.query_string)
    pairs = query.pairs_in_order(ctx.request.query_string)
    request = parse_candidate_request(pairs, ctx.version)
    world = world_of(ctx.conn)
    with world.lock:  # this worker's copy: brought up to date, then read
        world.refresh(ctx.conn)
        plan = build_plan(ctx.conn, world, request, nested_aware=ctx.at_least(1, 29))
        if plan is None:
            refuse_unknown_names(ctx.conn, world, request)
            return json_response(ctx, EMPTY)
        randomize = ctx.config.randomize_allocation_candidates
        budget = ctx.config.allocation_candidates_cache_mib * MIB
        cap = _cap(ctx, request.limit)
        kept = _kept_answers(ctx, plan)
        # Asked again with nothing written since: the same body (see answers.py).
        body_kept_in = None if randomize else kept
        body_key = (cap, plan.root_filter)
        body = body_kept_in.body_for(body_key) if body_kept_in is not None else None
        if body is None:
            body = _search(ctx, plan, cap, kept, randomize)
            if body_kept_in is not None and body is not None:
                body_kept_in.keep_body(body_key, body, budget)
        world.answers.keep_within(budget)
    if body is None:
        return json_response(ctx, EMPTY)
    return json_text_response(ctx, body)


def _search(
    ctx: RequestContext, plan: SearchPlan, cap: int | None, kept: KeptAnswers | None,
    randomize: bool,
) -> bytes | None:
    """The body of the candidates found (None: none)."""
    renderer = response.AllocationRequests(plan, ctx.version)
    candidates = search.collect(plan, cap, renderer.render, kept, shuffle=randomize)
    if not candidates:
        return None
    return response.body(plan, candidates, ctx.version)  # (text only: no more reads)


def _kept_answers(ctx: RequestContext, plan: SearchPlan) -> KeptAnswers | None:
    """The answers kept for requests like this one (None: not kept, when the answers
    depend on sharing providers, the request looks at one tree only, or the cache is
    off)."""
    if (plan.sharing or plan.in_tree_roots is not None
            or ctx.config.allocation_candidates_cache_mib == 0):
        return None
    return plan.world.answers.kept_for((plan.signature(), ctx.version.major, ctx.version.minor))


def _cap(ctx: RequestContext, limit: int | None) -> int | None:
    """How many candidates to return: ``limit``, bounded by max_allocation_candidates."""
    bound = ctx.config.max_allocation_candidates
    if bound < 0:
        return limit
    return bound if limit is None else min(limit, bound)
