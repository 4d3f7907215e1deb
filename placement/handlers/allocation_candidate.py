"""GET /allocation_candidates (from 1.10): parse, find (``candidates.service``), answer;
and GET /allocation_candidates/explain (this service's): the same query, explained."""

import functools

import flask

from placement import query
from placement.candidates import explain
from placement.candidates.request import CandidateRequest, parse_candidate_request
from placement.context import RequestContext
from placement.http import json_response, json_text_response, min_version

EMPTY: dict[str, list | dict] = {"allocation_requests": [], "provider_summaries": {}}
# A ranked request's (soft preferences), its fields in the order of any ranked body.
EMPTY_RANKED: dict[str, list | dict] = {
    "allocation_requests": [],
    "scores": [],
    "provider_summaries": {},
}
# On an answer its time budget cut short (``budget_ms``): the trees looked at, of those
# that could answer.
CUT_HEADER = "Placement-Search-Cut"


@min_version(1, 10)
def list_allocation_candidates(ctx: RequestContext) -> flask.Response:
    request = _parsed(ctx)
    found = ctx.services.candidates.find(ctx.conn, request, ctx.version)
    if found.body is None:
        # A ranked request (soft preferences, this service's) also has its scores.
        response = json_response(ctx, EMPTY_RANKED if request.ranked else EMPTY)
    else:
        response = json_text_response(ctx, found.body)
    if found.cut is not None:
        response.headers[CUT_HEADER] = f"trees={found.cut.trees_looked_at}/{found.cut.trees}"
    return response


@min_version(1, 10)
def explain_allocation_candidates(ctx: RequestContext) -> flask.Response:
    explanation = ctx.services.candidates.explain(ctx.conn, _parsed(ctx), ctx.version)
    return json_response(ctx, explain.body(explanation))


def _parsed(ctx: RequestContext) -> CandidateRequest:
    return _parse(ctx.request.query_string, ctx.version)


# A scheduler asks the same few queries again and again: each query string's request is
# parsed once (a CandidateRequest is immutable; a query refused is parsed every time).
@functools.lru_cache(maxsize=512)
def _parse(query_string: bytes, version) -> CandidateRequest:
    query.require_utf8(query_string)
    return parse_candidate_request(query.pairs_in_order(query_string), version)
