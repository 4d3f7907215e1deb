"""How many statements a read sends its database once what it answers from is kept.

Each round trip to the database is most of what a small read costs over HTTP, so the
reads below are held to the statements they need, counted where the driver sends
them (``tests.statements``): BEGIN and ROLLBACK included. A change that adds one fails
here; one that removes one updates the number and its reason. No connection is pinged as
it leaves the pool (a connection found lost runs the request again on a new one:
``placement.endpoints``), so a read's first statement is its own.
"""

import uuid

import pytest

from tests.conftest import Api
from tests.statements import StatementLog

CANDIDATES = "/allocation_candidates?resources=VCPU:1&limit=10"
PROVIDERS = 12


@pytest.fixture
def counted(api: Api, engine):
    for index in range(PROVIDERS):
        uuid = api.create_provider(f"cn{index}")["uuid"]
        api.set_inventory(uuid, VCPU=64, MEMORY_MB=65536)
    log = StatementLog(engine)
    yield log
    log.close()


# A cached candidates answer: the copy of the providers asks what changed since its last
# request, in one snapshot of the database (placement.data.provider_world.changes_since):
# the resource class names (a rename changes no provider), then the copy's place in the
# change log with the providers logged since. Nothing changed: the kept body is the answer.
CACHED_CANDIDATES = {
    # BEGIN; the two reads; ROLLBACK (a read has nothing to commit).
    "sqlite": 4,
    # the two reads, sent together, outside a transaction: the snapshot is opened only
    # when something changed (placement.db.snapshots).
    "postgresql": 2,
    # SET TRANSACTION ISOLATION LEVEL REPEATABLE READ (the session reads at READ
    # COMMITTED, as writes need); the two reads; ROLLBACK, after which the pool has
    # nothing to reset.
    "mysql": 4,
}
CACHED_CANDIDATES_ROUND_TRIPS = {"sqlite": 4, "postgresql": 1, "mysql": 4}

# GET /resource_providers/{uuid}: one SELECT of the provider with its root and parent.
SHOW_PROVIDER = {
    # BEGIN; the SELECT; ROLLBACK.
    "sqlite": 3,
    # the SELECT, outside a transaction (one statement needs none: each sees what
    # committed before it, as it would at READ COMMITTED inside one).
    "postgresql": 1,
    # the SELECT; ROLLBACK.
    "mysql": 2,
}
SHOW_PROVIDER_ROUND_TRIPS = {"sqlite": 3, "postgresql": 1, "mysql": 2}


def test_a_cached_candidates_answer(api, counted, backend):
    first = api.get(CANDIDATES)  # fills the copy and keeps the answer
    assert first.status_code == 200 and len(first.json["allocation_requests"]) == 10
    with counted.counting() as seen:
        again = api.get(CANDIDATES)
    assert again.status_code == 200 and again.json == first.json
    assert len(seen) == CACHED_CANDIDATES[backend], seen
    assert counted.round_trips == CACHED_CANDIDATES_ROUND_TRIPS[backend], seen


def test_a_provider_read(api, counted, backend):
    uuid = api.get("/resource_providers").json["resource_providers"][0]["uuid"]
    api.get(f"/resource_providers/{uuid}")
    with counted.counting() as seen:
        shown = api.get(f"/resource_providers/{uuid}")
    assert shown.status_code == 200 and shown.json["uuid"] == uuid
    assert len(seen) == SHOW_PROVIDER[backend], seen
    assert counted.round_trips == SHOW_PROVIDER_ROUND_TRIPS[backend], seen


def test_the_version_document_sends_nothing(api, counted):
    """GET / reads nothing: not even a connection is taken."""
    with counted.counting() as seen:
        assert api.get("/").status_code == 200
        assert api.request("HEAD", "/").status_code == 200
    assert seen == []


# PUT /allocations/{consumer} of a new consumer (VCPU and MEMORY_MB on one provider),
# its project, user and type known already. The statements of the write
# (placement.data.allocations.write_allocations), each needed:
# - the lookup of every name the write uses, in one SELECT (data.write_lookup): the
#   provider's id, the classes' ids, the consumer (none yet) with the providers it holds,
#   the project's, user's and type's ids;
# - the UPDATE that bumps the provider's generation, which locks its row until COMMIT:
#   writers on one provider run one after the other (no over-commit);
# - the INSERT of the consumer (ON CONFLICT DO NOTHING: a concurrent creator makes it a
#   409);
# - the INSERT of the allocations, and the read of the provider's inventories with their
#   usage (the capacity check, after the lock);
# - COMMIT.
NEW_CONSUMER_PUT = {
    # BEGIN IMMEDIATE (SQLite serializes writers); the statements above, the last two
    # apart; COMMIT. The trace shows what the row triggers run (migrations 0003, 0009)
    # as more lines of the statement that fired them: 3 for the bump (the provider
    # logged as changed), 5 for each allocation row (its provider's revision moved, and
    # logged).
    "sqlite": 1 + 1 + (1 + 3) + 1 + 2 * (1 + 5) + 1 + 1,
    # BEGIN; the five above, the INSERT of the allocations and the capacity read as one
    # statement (WITH written AS (INSERT ... RETURNING) SELECT ...); COMMIT.
    "postgresql": 6,
    # the write's start, which marks the connection for the triggers (SELECT ... INTO
    # @placement_logged_from ... FOR UPDATE, migration 0008); the lookup; the bump; the
    # consumer's INSERT in a SAVEPOINT and its RELEASE (MySQL 8 has no RETURNING: a
    # duplicate is rolled back alone); the allocations' INSERT; the capacity read; the
    # write's end (SET @placement_logged_from = NULL); COMMIT; the pool's ROLLBACK as the
    # connection returns.
    "mysql": 1 + 1 + 1 + 3 + 1 + 1 + 1 + 1 + 1,
}

# POST /allocations of two new consumers, each on a provider of its own: the PUT's
# statements, and on PostgreSQL one more: the two providers are locked in id order
# (SELECT ... ORDER BY id FOR UPDATE) before their bump, so that two writers with
# overlapping providers cannot deadlock. The consumers are one INSERT (their ids
# returned), the allocations one INSERT.
TWO_CONSUMERS_POSTED = {
    # as the PUT, the bump of two providers logging both (3 + 3), four allocation rows
    "sqlite": 1 + 1 + (1 + 6) + 1 + 4 * (1 + 5) + 1 + 1,
    "postgresql": NEW_CONSUMER_PUT["postgresql"] + 1,
    # as the PUT, a SAVEPOINT, INSERT and RELEASE per consumer
    "mysql": NEW_CONSUMER_PUT["mysql"] + 3,
}


def _consumer_body(provider: str, generation=None) -> dict:
    return {
        "allocations": {provider: {"resources": {"VCPU": 1, "MEMORY_MB": 256}}},
        "project_id": "p",
        "user_id": "u",
        "consumer_generation": generation,
        "consumer_type": "INSTANCE",
    }


def _providers(api: Api) -> list[str]:
    return sorted(p["uuid"] for p in api.get("/resource_providers").json["resource_providers"])


def test_a_new_consumers_allocations(api, counted, backend):
    first, second = _providers(api)[:2]
    assert api.put(f"/allocations/{uuid.uuid4()}", json=_consumer_body(first)).status_code == 204
    with counted.counting() as seen:
        written = api.put(f"/allocations/{uuid.uuid4()}", json=_consumer_body(second))
    assert written.status_code == 204, written.json
    assert len(seen) == NEW_CONSUMER_PUT[backend], seen
    assert counted.round_trips == NEW_CONSUMER_PUT[backend], seen


def test_two_new_consumers_posted(api, counted, backend):
    first, second, third = _providers(api)[:3]
    assert api.put(f"/allocations/{uuid.uuid4()}", json=_consumer_body(first)).status_code == 204
    body = {str(uuid.uuid4()): _consumer_body(second), str(uuid.uuid4()): _consumer_body(third)}
    with counted.counting() as seen:
        written = api.post("/allocations", json=body)
    assert written.status_code == 204, written.json
    assert len(seen) == TWO_CONSUMERS_POSTED[backend], seen
    assert counted.round_trips == TWO_CONSUMERS_POSTED[backend], seen
