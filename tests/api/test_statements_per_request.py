"""How many statements a read sends its database once what it answers from is kept.

Each round trip to the database is most of what a small read costs over HTTP, so the
reads below are held to the statements they need, counted where the driver sends
them (``tests.statements``): BEGIN and ROLLBACK included. A change that adds one fails
here; one that removes one updates the number and its reason. No connection is pinged as
it leaves the pool (a connection found lost runs the request again on a new one:
``placement.endpoints``), so a read's first statement is its own.
"""

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
