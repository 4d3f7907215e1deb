"""Multi-row writes move each provider once (migration 0013), and every worker still sees them.

Whoever writes many allocation rows at once (an operator's SQL, another Placement, this
service's claims), a worker's copy of the providers answers next as a new worker would.
What the log holds for it, by backend:

* an outside statement: on PostgreSQL one entry per provider it touched (its
  statement-level triggers); on MySQL and SQLite one per row, as migration 0009 logs;
* this service's writes: on PostgreSQL and MySQL one entry per provider per transaction
  (the bump that locks it: the rows written after it move no provider again); on
  SQLite also one per row.

Also here: a savepoint rolled back takes its entries with it, so the rows written after
it move their providers again; on MySQL a connection back from the pool, or a second
transaction on it, is never taken for the write transaction before; and the downgrade
puts the triggers back exactly as revision 0012 has them.
"""

import pytest
import sqlalchemy as sa
from alembic import command

from placement.data import allocations as allocation_data
from placement.db import migrate
from placement.db.engine import WRITE_TRANSACTION_OPTION, make_engine
from placement.db.options import DatabaseOptions

PER_STATEMENT = {"postgresql"}  # an outside statement logs each provider once
PER_TRANSACTION = {"postgresql", "mysql"}  # the service's writes log each provider once
CANDIDATES = "/allocation_candidates?resources=VCPU:1,MEMORY_MB:64"
HOLDERS = ("cccccccc-0000-0000-0000-000000000001", "cccccccc-0000-0000-0000-000000000002")


@pytest.fixture
def world(api, engine):
    """Four compute nodes (16 VCPU, 4096 MB each), two consumers holding a VCPU of cn1
    (through the API), and a warm copy. The providers' uuids and ids by name."""
    uuids = {}
    for name in ("cn1", "cn2", "cn3", "cn4"):
        uuids[name] = api.create_provider(name)["uuid"]
        api.set_inventory(
            uuids[name],
            VCPU={"total": 16, "allocation_ratio": 1.0},
            MEMORY_MB={"total": 4096, "allocation_ratio": 1.0},
        )
    for holder in HOLDERS:
        assert api.allocate(holder, {uuids["cn1"]: {"VCPU": 1}}).status_code == 204
    assert api.get(CANDIDATES).status_code == 200
    with engine.connect() as conn:
        ids = dict(conn.execute(sa.text("SELECT name, id FROM resource_providers")).all())
    return uuids, ids


def _last_entry(conn) -> int:
    return conn.execute(sa.text("SELECT COALESCE(MAX(id), 0) FROM provider_changes")).scalar_one()


def _logged_since(conn, after: int) -> list[int]:
    """The providers logged after entry ``after``, in order."""
    return list(
        conn.execute(
            sa.text("SELECT provider_id FROM provider_changes WHERE id > :after ORDER BY id"),
            {"after": after},
        ).scalars()
    )


def _rows(conn) -> list[tuple[int, int]]:
    """(provider id, allocation id) of every allocation."""
    return [
        tuple(row)
        for row in conn.execute(sa.text("SELECT resource_provider_id, id FROM allocations"))
    ]


def _answers_as_a_new_worker(api) -> None:
    kept = api.get(CANDIDATES).json
    with api.as_a_new_worker():
        fresh = api.get(CANDIDATES).json
    assert kept == fresh


def _used(api, provider_uuid: str) -> dict[str, int]:
    return api.get(f"/resource_providers/{provider_uuid}/usages").json["usages"]


def _insert_memory(conn, provider_ids) -> None:
    """Plain SQL: 64 MB of memory for each consumer on each provider, in one statement.
    (Not read from resource_providers in the statement: MySQL refuses a statement whose
    triggers update a table it reads, as 0009's did already.)"""
    consumer_ids = conn.execute(sa.text("SELECT id FROM consumers ORDER BY id")).scalars().all()
    memory = conn.execute(
        sa.text("SELECT id FROM resource_classes WHERE name = 'MEMORY_MB'")
    ).scalar_one()
    values = ", ".join(
        f"({int(p)}, {int(c)}, {int(memory)}, 64, CURRENT_TIMESTAMP)"
        for p in provider_ids
        for c in consumer_ids
    )
    conn.execute(
        sa.text(
            "INSERT INTO allocations (resource_provider_id, consumer_id, resource_class_id,"
            f" used, created_at) VALUES {values}"
        )
    )


# Each statement as an operator would type it, several rows over several providers.
STATEMENTS = [
    ("insert", None),  # _insert_memory on cn1, cn2 and cn3
    ("update", "UPDATE allocations SET used = used + 1"),
    (
        "move",
        "UPDATE allocations SET resource_provider_id = :cn4 WHERE resource_provider_id = :cn2",
    ),
    (
        "delete",
        "DELETE FROM allocations WHERE resource_class_id ="
        " (SELECT id FROM resource_classes WHERE name = 'MEMORY_MB')",
    ),
]


def test_many_rows_written_behind_the_service_reach_its_next_answer(api, engine, world):
    uuids, ids = world
    dialect = engine.dialect.name
    for step, statement in STATEMENTS:
        with engine.begin() as conn:
            before = dict((row_id, provider) for provider, row_id in _rows(conn))
            after_entry = _last_entry(conn)
            if statement is None:
                _insert_memory(conn, [ids["cn1"], ids["cn2"], ids["cn3"]])
            else:
                conn.execute(sa.text(statement), {"cn4": ids["cn4"], "cn2": ids["cn2"]})
            after = dict((row_id, provider) for provider, row_id in _rows(conn))
            logged = _logged_since(conn, after_entry)
        # Each row's providers: where it was, where it is.
        touched = [
            {p for p in (before.get(row_id), after.get(row_id)) if p is not None}
            for row_id in set(before) | set(after)
            if before.get(row_id) != after.get(row_id) or step == "update"
        ]
        assert len(touched) >= 2, step  # several rows, over several providers
        providers = set().union(*touched)
        assert len(providers) >= 2, step
        if dialect in PER_STATEMENT:
            assert sorted(logged) == sorted(providers), step
        else:
            assert sorted(logged) == sorted(p for row in touched for p in row), step
        _answers_as_a_new_worker(api)
    # What the statements left: 2 VCPU of cn1 (each used + 1), no memory anywhere.
    assert _used(api, uuids["cn1"]) == {"VCPU": 4, "MEMORY_MB": 0}
    kept = api.get(CANDIDATES).json["provider_summaries"]
    assert kept[uuids["cn1"]]["resources"]["VCPU"]["used"] == 4
    assert all(kept[uuids[n]]["resources"]["MEMORY_MB"]["used"] == 0 for n in uuids)


def test_a_second_statement_in_one_outside_transaction_moves_its_providers_again(
    api, engine, world
):
    """An outside transaction is not known to move its providers first: each statement
    moves every provider it touches, logged already or not."""
    _uuids, ids = world
    with engine.begin() as conn:
        after_entry = _last_entry(conn)
        conn.execute(sa.text("UPDATE allocations SET used = 2"))
        conn.execute(sa.text("UPDATE allocations SET used = 3"))
        logged = _logged_since(conn, after_entry)
    per_statement = 1 if engine.dialect.name in PER_STATEMENT else len(HOLDERS)
    assert logged == [ids["cn1"]] * per_statement * 2
    _answers_as_a_new_worker(api)


def test_the_services_writes_log_each_provider_once_per_transaction(api, engine, world):
    uuids, ids = world
    two_classes = {"VCPU": 1, "MEMORY_MB": 128}
    writes = [
        # one consumer, two providers, two rows on each
        lambda: api.allocate(
            "cccccccc-0000-0000-0000-000000000003",
            {uuids["cn1"]: two_classes, uuids["cn2"]: two_classes},
        ),
        # two consumers at once, over three providers
        lambda: api.post(
            "/allocations",
            json={
                consumer: {
                    "allocations": {
                        uuids[a]: {"resources": two_classes},
                        uuids[b]: {"resources": two_classes},
                    },
                    "project_id": "p",
                    "user_id": "u",
                    "consumer_generation": None,
                    "consumer_type": "INSTANCE",
                }
                for consumer, (a, b) in (
                    ("cccccccc-0000-0000-0000-000000000004", ("cn1", "cn2")),
                    ("cccccccc-0000-0000-0000-000000000005", ("cn2", "cn3")),
                )
            },
        ),
        # the allocations of one consumer deleted: their providers' revisions move
        lambda: api.delete("/allocations/cccccccc-0000-0000-0000-000000000004"),
    ]
    for write in writes:
        with engine.connect() as conn:
            after_entry = _last_entry(conn)
        with engine.connect() as conn:
            rows_before = _rows(conn)
        assert write().status_code == 204
        with engine.connect() as conn:
            logged = _logged_since(conn, after_entry)
            rows_after = _rows(conn)
        changed = set(rows_before) ^ set(rows_after)  # (provider, row) written or deleted
        providers = {provider for provider, _ in changed}
        if engine.dialect.name in PER_TRANSACTION:
            assert sorted(logged) == sorted(providers)
        else:  # the bump, then one per row
            assert sorted(logged) == sorted([provider for provider, _ in changed] + list(providers))
        assert providers <= set(ids.values())
        _answers_as_a_new_worker(api)


def _write_transaction(engine):
    return engine.connect().execution_options(**{WRITE_TRANSACTION_OPTION: True})


@pytest.mark.parametrize("backend", ["postgresql", "mysql"], indirect=True)
def test_a_bump_in_a_savepoint_rolled_back_no_longer_counts(api, engine, world):
    """A write transaction of this service bumps cn1, and cn2 in a savepoint it rolls
    back; rows then written on both move cn2 again (its entry is gone), not cn1."""
    uuids, ids = world
    with _write_transaction(engine) as conn, conn.begin():
        after_entry = _last_entry(conn)
        allocation_data.lock_providers(conn, [ids["cn1"]])
        savepoint = conn.begin_nested()
        allocation_data.lock_providers(conn, [ids["cn2"]])
        savepoint.rollback()
        _insert_memory(conn, [ids["cn1"], ids["cn2"]])
        logged = _logged_since(conn, after_entry)
    assert logged == [ids["cn1"], ids["cn2"]]
    _answers_as_a_new_worker(api)
    assert _used(api, uuids["cn2"])["MEMORY_MB"] == 64 * len(HOLDERS)


@pytest.mark.parametrize("backend", ["mysql"], indirect=True)
def test_on_mysql_what_a_write_transaction_told_the_triggers_ends_with_it(api, engine, world):
    """The marker of a write transaction (``placement.db.mysql``) never outlives it: not
    into the next transaction on the same connection, nor past the pool. Rows written
    afterwards by plain SQL move their providers, row by row, though the write
    transaction logged them."""
    _uuids, ids = world
    cn1 = ids["cn1"]
    one_connection = make_engine(
        engine.url.render_as_string(hide_password=False),
        DatabaseOptions(max_pool_size=1, max_overflow=0),
    )
    try:
        with _write_transaction(one_connection) as conn:
            with conn.begin():  # this service's write: the rows move cn1 no more
                after_entry = _last_entry(conn)
                allocation_data.lock_providers(conn, [cn1])
                _insert_memory(conn, [cn1])
                assert _logged_since(conn, after_entry) == [cn1]
            with conn.begin():  # the next, on the same connection: told nothing of cn1
                after_entry = _last_entry(conn)
                conn.execute(sa.text("UPDATE allocations SET used = used + 1"))
                # (its first row logs cn1 again; the others find it logged by this one)
                assert _logged_since(conn, after_entry) == [cn1]
        with one_connection.begin() as conn:  # the same connection, back from the pool
            assert conn.execute(sa.text("SELECT @placement_logged_from")).scalar() is None
            after_entry = _last_entry(conn)
            conn.execute(sa.text("UPDATE allocations SET used = used + 1"))
            assert _logged_since(conn, after_entry) == [cn1] * 2 * len(HOLDERS)
    finally:
        one_connection.dispose()
    _answers_as_a_new_worker(api)


def _triggers(conn) -> set[tuple[str, str]]:
    """Every trigger, and what runs it, by name."""
    if conn.dialect.name == "postgresql":
        found = conn.execute(
            sa.text(
                "SELECT t.tgname, pg_get_triggerdef(t.oid) || p.prosrc FROM pg_trigger t"
                " JOIN pg_proc p ON p.oid = t.tgfoid WHERE NOT t.tgisinternal"
            )
        )
    elif conn.dialect.name == "mysql":
        found = conn.execute(
            sa.text(
                "SELECT TRIGGER_NAME, CONCAT(EVENT_OBJECT_TABLE, ACTION_STATEMENT)"
                " FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE()"
            )
        )
    else:
        found = conn.execute(sa.text("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'"))
    return {(name, " ".join(text.split())) for name, text in found}


@pytest.mark.parametrize("target", ["sqlite", "postgresql", "mysql"])
def test_the_downgrade_puts_the_row_by_row_triggers_back(target, empty_database_url):
    at_0012, round_trip = (make_engine(empty_database_url(target)) for _ in range(2))
    migrate.upgrade(at_0012, "0012")
    migrate.upgrade(round_trip)
    with round_trip.connect() as conn:
        head = _triggers(conn)
    config = migrate.alembic_config()
    with round_trip.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, "0012")
    with at_0012.connect() as conn, round_trip.connect() as other:
        expected, found = _triggers(conn), _triggers(other)
        indexes = [
            sa.inspect(c).get_indexes("provider_changes") for c in (conn, other)
        ]  # the index 0013 added is gone
    assert found == expected
    assert indexes[0] == indexes[1]
    if target != "sqlite":
        assert head != expected
        assert any("moves_providers_once" in name for name, _ in head)
    for engine in (at_0012, round_trip):
        engine.dispose()
