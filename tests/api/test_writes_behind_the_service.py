"""Writes made behind the service's back (an operator's SQL, or another Placement on the
same database) reach every worker's next answer: after each insert, update or delete
of a row a search reads, the copy this application kept answers exactly as a new
worker's (migration 0009). Every backend."""

import pytest
import sqlalchemy as sa

AGGREGATE = "aaaaaaaa-0000-0000-0000-000000000001"
OTHER_AGGREGATE = "aaaaaaaa-0000-0000-0000-000000000002"
CONSUMER = "cccccccc-0000-0000-0000-000000000001"
QUERIES = [
    "resources=VCPU:1",
    "resources=VCPU:1,MEMORY_MB:1024",
    "resources=VCPU:1&required=CUSTOM_FAST",
    "resources=VCPU:1&required=CUSTOM_SLOW",
    f"resources=VCPU:1&member_of={AGGREGATE}",
    f"resources=VCPU:1&member_of={OTHER_AGGREGATE}",
]


def _ids(conn, name: str) -> tuple[int, int, int]:
    """(provider id, VCPU class id, MEMORY_MB class id)."""
    provider = conn.execute(
        sa.text("SELECT id FROM resource_providers WHERE name = :n"), {"n": name}
    ).scalar_one()
    vcpu, memory = (
        conn.execute(
            sa.text("SELECT id FROM resource_classes WHERE name = :n"), {"n": n}
        ).scalar_one()
        for n in ("VCPU", "MEMORY_MB")
    )
    return provider, vcpu, memory


def _now():
    return sa.func.current_timestamp()


# Each write as an operator would type it: (name, SQL, parameters from _ids).
WRITES = {
    "inventory-insert": (
        "INSERT INTO inventories (resource_provider_id, resource_class_id, total, reserved,"
        " min_unit, max_unit, step_size, allocation_ratio, created_at)"
        " VALUES (:cn2, :memory, 4096, 0, 1, 4096, 1, 1.0, CURRENT_TIMESTAMP)"
    ),
    "inventory-update": "UPDATE inventories SET total = 1 WHERE resource_provider_id = :cn1",
    "inventory-delete": "DELETE FROM inventories WHERE resource_provider_id = :cn1"
    " AND resource_class_id = :memory",
    "allocation-insert": (
        "INSERT INTO allocations (resource_provider_id, consumer_id, resource_class_id, used,"
        " created_at) SELECT :cn2, id, :vcpu, 4, CURRENT_TIMESTAMP FROM consumers"
    ),
    "allocation-update": "UPDATE allocations SET used = 4",
    "allocation-delete": "DELETE FROM allocations",
    "trait-insert": (
        "INSERT INTO resource_provider_traits (resource_provider_id, trait_id, created_at)"
        " SELECT :cn2, id, CURRENT_TIMESTAMP FROM traits WHERE name = 'CUSTOM_FAST'"
    ),
    "trait-delete": "DELETE FROM resource_provider_traits WHERE resource_provider_id = :cn1",
    "trait-rename": "UPDATE traits SET name = 'CUSTOM_SLOW' WHERE name = 'CUSTOM_FAST'",
    "aggregate-insert": (
        "INSERT INTO resource_provider_aggregates (resource_provider_id, aggregate_id,"
        " created_at) SELECT :cn2, id, CURRENT_TIMESTAMP FROM placement_aggregates"
    ),
    "aggregate-delete": "DELETE FROM resource_provider_aggregates",
    "aggregate-uuid": f"UPDATE placement_aggregates SET uuid = '{OTHER_AGGREGATE}'",
}


@pytest.fixture
def world(api):
    """Two compute nodes (cn1: 4 VCPU at ratio 1, 2048 MB, CUSTOM_FAST, in AGGREGATE,
    2 VCPU used; cn2: 8 VCPU) and a warm copy: every query asked once."""
    cn1, cn2 = api.create_provider("cn1")["uuid"], api.create_provider("cn2")["uuid"]
    api.set_inventory(cn1, VCPU={"total": 4, "allocation_ratio": 1.0}, MEMORY_MB=2048)
    api.set_inventory(cn2, VCPU={"total": 8, "allocation_ratio": 1.0})
    api.set_traits(cn1, "CUSTOM_FAST")
    api.set_aggregates(cn1, AGGREGATE)
    assert api.allocate(CONSUMER, {cn1: {"VCPU": 2}}).status_code == 204
    for query in QUERIES:
        expected = 400 if "CUSTOM_SLOW" in query else 200  # (no such trait until renamed)
        assert api.get(f"/allocation_candidates?{query}").status_code == expected
    return cn1, cn2


def _answers(api) -> dict[str, dict]:
    answers = {}
    for query in QUERIES:
        body = api.get(f"/allocation_candidates?{query}").json
        for error in body.get("errors", []):
            error.pop("request_id")  # (each request's own)
        answers[query] = body
    return answers


@pytest.mark.parametrize("write", WRITES)
def test_a_write_behind_the_services_back_reaches_its_next_answer(api, engine, world, write):
    before = _answers(api)
    with engine.begin() as conn:
        cn1, vcpu, memory = _ids(conn, "cn1")
        cn2 = _ids(conn, "cn2")[0]
        parameters = {"cn1": cn1, "cn2": cn2, "vcpu": vcpu, "memory": memory}
        statement = WRITES[write]
        changed = conn.execute(
            sa.text(statement), {k: v for k, v in parameters.items() if f":{k}" in statement}
        ).rowcount
    assert changed >= 1  # the write did something
    kept = _answers(api)
    with api.as_a_new_worker():
        fresh = _answers(api)
    assert kept == fresh
    assert kept != before  # and it shows in some answer


def test_a_consumer_deleted_by_another_placement_frees_its_usage(api, engine, world):
    """Upstream's DELETE /allocations/{consumer} moves no generation: as it writes it."""
    cn1, _cn2 = world
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                "DELETE FROM allocations WHERE consumer_id ="
                " (SELECT id FROM consumers WHERE uuid = :c)"
            ),
            {"c": CONSUMER},
        )
    summaries = api.get("/allocation_candidates?resources=VCPU:4").json["provider_summaries"]
    assert summaries[cn1]["resources"]["VCPU"]["used"] == 0
