"""The gang searches' answers to validated bodies (``schemas.gangs``): the one door the
HTTP views (``handlers.gangs``) and the CLI (``cli.gangs``) both go through, so that a
body asks the same over HTTP and from a file. Each takes the search, an open
connection in a transaction, the body, the naming and the time budget; the caller adds
the budget's cut to the answer as its medium says it."""

from collections.abc import Mapping

from sqlalchemy import Connection

from placement.claiming import NewConsumer
from placement.gangs import bodies
from placement.gangs.request import request_from_body
from placement.gangs.service import GangSearch
from placement.nodes.naming import Naming
from placement.nodes.search_budget import SearchBudget


def candidates(
    search: GangSearch, conn: Connection, data: Mapping, naming: Naming, budget: SearchBudget
) -> dict:
    """POST /group_resources/gang_candidates."""
    answer = search.find(
        conn, request_from_body(data, naming), naming, data.get("scorer", "pack"), budget
    )
    return bodies.candidates_body(answer, data.get("limit"), data.get("device_allocated", False))


def explain(
    search: GangSearch, conn: Connection, data: Mapping, naming: Naming, budget: SearchBudget
) -> dict:
    """POST /group_resources/gang_candidates/explain: the candidates body explained
    (``limit``, ``scorer`` and ``device_allocated`` change nothing)."""
    answer = search.find(conn, request_from_body(data, naming), naming, budget=budget)
    return bodies.explain_body(answer)


def claim(
    search: GangSearch, conn: Connection, data: Mapping, naming: Naming, budget: SearchBudget
) -> dict:
    """POST /group_resources/gang_claims: the claimed gang, each member with its consumer."""
    request = request_from_body(data, naming)
    consumers = [
        NewConsumer(uuid, data["project_id"], data["user_id"], data.get("consumer_type"))
        for uuid in data["consumer_uuids"]
    ]
    gang = search.claim(
        conn, request, naming, data["gang_uuid"], consumers, data.get("scorer", "pack"), budget
    )
    return bodies.claim_body(
        request,
        gang,
        data["gang_uuid"],
        data["consumer_uuids"],
        data.get("device_allocated", False),
    )
