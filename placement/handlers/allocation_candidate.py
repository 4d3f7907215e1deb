"""GET /allocation_candidates (from 1.10): parse, find (``candidates.service``), answer."""

import flask

from placement import query
from placement.candidates.request import parse_candidate_request
from placement.context import RequestContext
from placement.http import json_response, json_text_response, min_version

EMPTY: dict[str, list | dict] = {"allocation_requests": [], "provider_summaries": {}}


@min_version(1, 10)
def list_allocation_candidates(ctx: RequestContext) -> flask.Response:
    query.require_utf8(ctx.request.query_string)
    pairs = query.pairs_in_order(ctx.request.query_string)
    request = parse_candidate_request(pairs, ctx.version)
    body = ctx.services.candidates.find(ctx.conn, request, ctx.version)
    if body is None:
        return json_response(ctx, EMPTY)
    return json_text_response(ctx, body)
