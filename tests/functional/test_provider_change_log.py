"""The provider change log (migration 0003) and how each worker's copy reads it.

Triggers log every insert, update and delete of a provider row in the
writer's own transaction; a warm copy of the providers
(``placement.replica.world``) reads only the providers logged since its
last read, and every provider's version again when the log was pruned past
where it stood. These tests pin the log's contract: what is logged, that a
transaction committing after a later one is not missed (PostgreSQL), that on
MySQL writers take positions in commit order with none skipped (migration
0008), that the log prunes itself and says so, and that a copy behind the
pruning reads all.
"""

import dataclasses
import importlib.util
import pathlib
import uuid as uuid_lib
from datetime import datetime

import pytest
from sqlalchemy import text

from placement.data import names, provider_world
from placement.db import migrate
from placement.db.engine import make_engine
from placement.db.snapshots import reading_one_snapshot
from placement.replica.world import ProviderWorld

MIGRATION = pathlib.Path(migrate.MIGRATIONS_DIR) / "versions" / "0003_provider_changes.py"


def _migration():
    spec = importlib.util.spec_from_file_location("provider_changes_migration", MIGRATION)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def refresh(world: ProviderWorld, engine) -> None:
    """One request's refresh: one transaction, REPEATABLE READ on PostgreSQL and MySQL."""
    with engine.connect() as conn:
        conn = reading_one_snapshot(conn)
        with conn.begin():
            world.refresh(conn)


def add_provider(conn, name: str, vcpu: int) -> int:
    """A root provider with VCPU, as the data layer writes one (the class names first)."""
    names.sync_standard_names(conn)
    provider_id = conn.execute(
        text(
            "INSERT INTO resource_providers (uuid, name, generation, created_at)"
            " VALUES (:uuid, :name, 0, :now) RETURNING id"
        ),
        {"uuid": str(uuid_lib.uuid4()), "name": name, "now": datetime.now()},
    ).scalar_one()
    conn.execute(
        text("UPDATE resource_providers SET root_provider_id = id WHERE id = :id"),
        {"id": provider_id},
    )
    conn.execute(
        text(
            "INSERT INTO inventories (resource_provider_id, resource_class_id, total, reserved,"
            " min_unit, max_unit, step_size, allocation_ratio, created_at)"
            " SELECT :id, id, :total, 0, 1, :total, 1, 1.0, :now FROM resource_classes"
            " WHERE name = 'VCPU'"
        ),
        {"id": provider_id, "total": vcpu, "now": datetime.now()},
    )
    return provider_id


def set_vcpu(conn, provider_id: int, total: int) -> None:
    """An inventory write as the data layer makes it: the row, then the generation."""
    conn.execute(
        text(
            "UPDATE inventories SET total = :total, max_unit = :total"
            " WHERE resource_provider_id = :id"
        ),
        {"id": provider_id, "total": total},
    )
    conn.execute(
        text("UPDATE resource_providers SET generation = generation + 1 WHERE id = :id"),
        {"id": provider_id},
    )


def remove_provider(conn, provider_id: int) -> None:
    """Delete a root provider and its inventories. (InnoDB checks a foreign key against
    the deleted row itself: on MySQL the root stops being its own root first.)"""
    conn.execute(
        text("DELETE FROM inventories WHERE resource_provider_id = :id"), {"id": provider_id}
    )
    if conn.dialect.name == "mysql":
        conn.execute(
            text("UPDATE resource_providers SET root_provider_id = NULL WHERE id = :id"),
            {"id": provider_id},
        )
    conn.execute(text("DELETE FROM resource_providers WHERE id = :id"), {"id": provider_id})


def warm_copy(engine) -> tuple[ProviderWorld, int]:
    """A copy that has read one provider, ``cn`` with 4 VCPU; the provider's id."""
    with engine.begin() as conn:
        provider_id = add_provider(conn, "cn", 4)
    world = ProviderWorld()
    refresh(world, engine)
    return world, provider_id


def vcpu_total(world: ProviderWorld, provider_id: int) -> int:
    return next(iter(world.providers[provider_id].inventories.values())).capacity


def logged(conn) -> list[tuple]:
    return [
        tuple(row)
        for row in conn.execute(
            text("SELECT provider_id, transaction_id FROM provider_changes ORDER BY id")
        )
    ]


class Reads:
    """Counts the full versions reads and records whose details are read."""

    def __init__(self, monkeypatch) -> None:
        self.full_reads = 0
        self.details: list[set[int] | None] = []
        versions, details = provider_world.provider_versions, provider_world.provider_details

        def counted_versions(conn):
            self.full_reads += 1
            return versions(conn)

        def recorded_details(conn, provider_ids):
            self.details.append(None if provider_ids is None else set(provider_ids))
            return details(conn, provider_ids)

        monkeypatch.setattr(provider_world, "provider_versions", counted_versions)
        monkeypatch.setattr(provider_world, "provider_details", recorded_details)


def test_every_insert_update_and_delete_of_a_provider_is_logged(engine):
    with engine.begin() as conn:
        before = len(logged(conn))
        provider_id = add_provider(conn, "logged", 4)  # an insert, then the root's update
        set_vcpu(conn, provider_id, 8)
        remove_provider(conn, provider_id)
        entries = logged(conn)[before:]
        if engine.dialect.name == "postgresql":
            this_transaction = conn.execute(
                text("SELECT pg_current_xact_id()::text::bigint")
            ).scalar_one()
        else:
            this_transaction = None
    # The insert, the root's update, the generation's bump, the delete, and a revision bump
    # for each inventory row written (migration 0009): its insert, update and delete.
    count = 7
    if engine.dialect.name == "mysql":
        # One more update (the root unset before its delete); each entry at the next
        # position (migration 0008).
        first = entries[0][1]
        assert entries == [(provider_id, first + n) for n in range(count + 1)]
    else:
        assert entries == [(provider_id, this_transaction)] * count


def test_a_warm_copy_reads_only_the_providers_logged_since(engine, monkeypatch):
    with engine.begin() as conn:
        first, second, third = (add_provider(conn, f"cn{i}", 4) for i in range(3))
    world = ProviderWorld()
    refresh(world, engine)
    reads = Reads(monkeypatch)
    with engine.begin() as conn:
        set_vcpu(conn, second, 16)
    refresh(world, engine)
    assert reads.full_reads == 0
    assert reads.details == [{second}]
    assert [vcpu_total(world, p) for p in (first, second, third)] == [4, 16, 4]
    # Nothing logged since: nothing read but the log.
    refresh(world, engine)
    assert reads.full_reads == 0 and reads.details == [{second}]
    with engine.begin() as conn:
        remove_provider(conn, third)
        fourth = add_provider(conn, "cn3", 2)
    refresh(world, engine)
    assert reads.full_reads == 0
    assert set(world.providers) == {first, second, fourth}
    assert vcpu_total(world, fourth) == 2


def test_the_roots_in_order_follow_trees_added_and_gone(engine):
    """The copy's roots in order, and those having a class, follow trees as they come and
    go."""
    world, first = warm_copy(engine)
    with engine.begin() as conn:
        second, third = add_provider(conn, "cn2", 2), add_provider(conn, "cn3", 2)
    refresh(world, engine)
    with engine.begin() as conn:
        remove_provider(conn, second)
        fourth = add_provider(conn, "cn4", 2)
    refresh(world, engine)
    assert world.roots_in_order() == sorted([first, third, fourth]) == sorted(world.trees)
    assert world.roots_having(frozenset(world.form_of_tree[first].least_free)) == sorted(
        [first, third, fourth]
    )
    with engine.begin() as conn:
        remove_provider(conn, first)
    refresh(world, engine)
    assert world.roots_in_order() == sorted([third, fourth])


@pytest.fixture
def warm(engine, monkeypatch):
    """A copy holding one provider with 4 VCPU; the reads after it counted."""
    world, provider_id = warm_copy(engine)
    return world, provider_id, Reads(monkeypatch)


@pytest.fixture
def state_row(engine):
    """The log's one ``provider_changes_state`` row, put back as it was afterwards."""
    with engine.connect() as conn:
        below, incarnation, last = conn.execute(
            text("SELECT pruned_below, incarnation, last_position FROM provider_changes_state")
        ).one()
    yield
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM provider_changes_state"))
        conn.execute(
            text(
                "INSERT INTO provider_changes_state (id, pruned_below, incarnation, last_position)"
                " VALUES (1, :below, :incarnation, :last)"
            ),
            {"below": below, "incarnation": incarnation, "last": last},
        )


def test_a_copy_behind_the_pruned_log_reads_every_version(engine, warm, state_row):
    world, provider_id, reads = warm
    with engine.begin() as conn:
        set_vcpu(conn, provider_id, 8)
        # As if the log had been pruned past the copy: its entries are gone (declared
        # pruned first, as the pruning does, so the log does not start over).
        conn.execute(text("UPDATE provider_changes_state SET pruned_below = :far"), {"far": 2**62})
        conn.execute(text("DELETE FROM provider_changes"))
    refresh(world, engine)
    assert reads.full_reads == 1
    assert vcpu_total(world, provider_id) == 8


def test_the_changes_of_a_pruned_log_are_not_read_only_to_be_dropped(engine, state_row):
    with engine.begin() as conn:
        since = provider_world.changes_since(conn, None).log
    with engine.begin() as conn:
        add_provider(conn, "CN", 4)
        add_provider(conn, "CN2", 4)
    with engine.begin() as conn:
        assert len(provider_world.changes_since(conn, since).changed) == 2
        conn.execute(text("UPDATE provider_changes_state SET pruned_below = :far"), {"far": 2**62})
    with engine.begin() as conn:
        changes = provider_world.changes_since(conn, since)
    assert changes.changed == {}
    assert changes.log.pruned_below == 2**62


def test_without_the_state_row_the_log_is_not_trusted(engine, warm, state_row):
    world, provider_id, reads = warm
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM provider_changes_state"))
    refresh(world, engine)
    refresh(world, engine)
    assert reads.full_reads == 2
    assert vcpu_total(world, provider_id) == 4


def incarnation(engine) -> str:
    with engine.connect() as conn:
        return conn.execute(text("SELECT incarnation FROM provider_changes_state")).scalar_one()


def unlogged_vcpu_change(engine, provider_id: int, total: int) -> None:
    """A change the log does not show (made while it was away, or before a restore),
    under the log's own incarnation (which deleting its entries changes: migration 0005)."""
    name = incarnation(engine)
    with engine.begin() as conn:
        set_vcpu(conn, provider_id, total)
        conn.execute(text("DELETE FROM provider_changes"))
        conn.execute(text("UPDATE provider_changes_state SET incarnation = :name"), {"name": name})


# Entries lost (migration 0005): a change the copy has not read yet, then its entry
# deleted in each way a client can (each takes the newest entry the copy read); the
# next refresh reads everything and sees it.


def _truncate(conn, newest_read: int) -> None:
    if conn.dialect.name != "sqlite":  # (on MySQL it commits what came before it)
        conn.execute(text("TRUNCATE provider_changes"))
    else:  # SQLite's TRUNCATE
        conn.execute(text("DELETE FROM provider_changes"))


def _delete_newest(conn, newest_read: int) -> None:
    conn.execute(text("DELETE FROM provider_changes WHERE id > :id"), {"id": newest_read})


def _truncate_restarting_ids(conn, newest_read: int) -> None:
    if conn.dialect.name == "postgresql":
        conn.execute(text("TRUNCATE provider_changes RESTART IDENTITY"))
    elif conn.dialect.name == "mysql":
        conn.execute(text("TRUNCATE provider_changes"))
        conn.execute(text("ALTER TABLE provider_changes AUTO_INCREMENT = 1"))
    else:
        conn.execute(text("DELETE FROM provider_changes"))
        conn.execute(text("DELETE FROM sqlite_sequence WHERE name = 'provider_changes'"))


@pytest.mark.parametrize(
    "lose",
    [_truncate, _delete_newest, _truncate_restarting_ids],
    ids=["truncate", "delete-newest", "truncate-restart-identity"],
)
@pytest.mark.parametrize("when", ["same-transaction", "later-transaction"])
def test_entries_lost_before_they_are_read_start_the_log_over(engine, warm, state_row, lose, when):
    world, provider_id, reads = warm
    with engine.connect() as conn:
        newest_read = conn.execute(text("SELECT max(id) FROM provider_changes")).scalar_one()
    name = incarnation(engine)
    with engine.begin() as conn:
        set_vcpu(conn, provider_id, 8)
        if when == "same-transaction":
            lose(conn, newest_read)
    if when == "later-transaction":
        with engine.begin() as conn:
            lose(conn, newest_read)
    with engine.begin() as conn:  # and a write after it, logged anew
        other = add_provider(conn, "cn2", 2)
    refresh(world, engine)
    if engine.dialect.name == "mysql":
        # The reader counted fewer entries than positions: it reads every version and
        # the details of those that changed. (Positions come from the state row there,
        # never from the ids a TRUNCATE restarts: the log itself needs no new name.)
        assert incarnation(engine) == name
        assert reads.full_reads == 1 and reads.details == [{provider_id, other}]
    else:
        assert incarnation(engine) != name
        assert reads.full_reads == 1 and reads.details == [None]
    assert vcpu_total(world, provider_id) == 8
    assert vcpu_total(world, other) == 2
    refresh(world, engine)  # the new log is followed from there on
    assert reads.full_reads == 1


def test_deleting_entries_below_the_pruned_position_keeps_the_log(engine, warm, state_row):
    world, provider_id, reads = warm
    with engine.begin() as conn:
        set_vcpu(conn, provider_id, 8)
    refresh(world, engine)
    name = incarnation(engine)
    with engine.begin() as conn:
        # Everything below the copy's place declared pruned (it has read it all), then
        # deleted, as the pruner does: nothing any reader needs is lost. (The copy's
        # place, not the newest entry: on PostgreSQL a transaction open elsewhere on the
        # server holds the place back, and entries above it are read again.)
        column = "id" if conn.dialect.name == "sqlite" else "transaction_id"
        below = world._log.position
        conn.execute(
            text("UPDATE provider_changes_state SET pruned_below = :below"), {"below": below}
        )
        conn.execute(
            text(f"DELETE FROM provider_changes WHERE {column} < :below"), {"below": below}
        )
    assert incarnation(engine) == name
    with engine.begin() as conn:
        set_vcpu(conn, provider_id, 6)
    refresh(world, engine)
    assert reads.full_reads == 0
    assert vcpu_total(world, provider_id) == 6


def test_a_log_that_started_over_is_read_from_scratch(engine, warm, state_row):
    """Another log (re-created, or truncated on PostgreSQL): nothing kept is trusted."""
    world, provider_id, reads = warm
    unlogged_vcpu_change(engine, provider_id, 8)
    with engine.begin() as conn:
        conn.execute(text("UPDATE provider_changes_state SET incarnation = 'another log'"))
    refresh(world, engine)
    assert reads.full_reads == 1 and reads.details == [None]
    assert vcpu_total(world, provider_id) == 8


def test_a_log_position_gone_back_is_read_from_scratch(engine, warm):
    """A backup restored: the log stands before where the copy last read it."""
    world, provider_id, reads = warm
    unlogged_vcpu_change(engine, provider_id, 8)
    # as if it had read a log since rolled back
    world._log = dataclasses.replace(world._log, position=world._log.position + 10**9)
    refresh(world, engine)
    assert reads.full_reads == 1 and reads.details == [None]
    assert vcpu_total(world, provider_id) == 8


@pytest.fixture(params=["sqlite", "postgresql", "mysql"])
def own_engine(request, empty_database_url):
    """A migrated database of this test's own (these tests leave the log pruned); on
    PostgreSQL on a server of the module's own, as what the log prunes there depends on
    every transaction running on the server (migration 0015)."""
    if request.param == "postgresql":
        url = request.getfixturevalue("lone_postgres")()
    else:
        url = empty_database_url(request.param)
    engine = make_engine(url)
    migrate.upgrade(engine)
    yield engine
    engine.dispose()


def _fill_the_log(conn, entries: int) -> None:
    """``entries`` more entries in the log (PostgreSQL), under this transaction's id."""
    conn.execute(
        text(
            "INSERT INTO provider_changes (provider_id, transaction_id)"
            " SELECT 0, pg_current_xact_id()::text::bigint FROM generate_series(1, :n)"
        ),
        {"n": entries},
    )


def test_the_log_is_not_pruned_past_a_transaction_still_running(lone_postgres, monkeypatch):
    """PostgreSQL: a transaction left open holds every reader's place in the log (the
    oldest transaction running). The pruning leaves that one's entries and later ones,
    so a copy held back is not sent to read every provider on each request; once the
    transaction has ended, the next pruning takes them."""
    migration = _migration()
    engine = make_engine(lone_postgres())
    migrate.upgrade(engine)
    state = (
        "SELECT (SELECT min(id) FROM provider_changes), pruned_below FROM provider_changes_state"
    )
    try:
        with engine.begin() as conn:
            provider_id = add_provider(conn, "cn", 4)
        world = ProviderWorld()
        with engine.connect() as open_elsewhere:
            held = open_elsewhere.execute(
                text("SELECT pg_current_xact_id()::text::bigint")
            ).scalar_one()
            refresh(world, engine)
            assert world._log.position == held
            with engine.begin() as conn:
                set_vcpu(conn, provider_id, 8)
            with engine.connect() as conn:
                written, before_it = conn.execute(
                    text(
                        "SELECT max(id), count(*) FILTER (WHERE transaction_id < :held)"
                        " FROM provider_changes"
                    ),
                    {"held": held},
                ).one()
            with engine.begin() as conn:  # the pruning runs as the last entry is written
                _fill_the_log(conn, migration.KEEP + migration.PRUNE_EVERY - written)
            with engine.connect() as conn:
                first, below = conn.execute(text(state)).one()
            # only the entries of the transactions before the one held open are gone
            assert first == before_it + 1 and 0 < below <= held
            reads = Reads(monkeypatch)
            refresh(world, engine)
            assert reads.full_reads == 0 and reads.details == [{provider_id}]
            assert vcpu_total(world, provider_id) == 8
        refresh(world, engine)  # the transaction ended: the copy's place moves on
        with engine.begin() as conn:
            _fill_the_log(conn, migration.PRUNE_EVERY)
        with engine.connect() as conn:
            first, below = conn.execute(text(state)).one()
        assert first == 2 * migration.PRUNE_EVERY + 1 and below > held
        refresh(world, engine)
        assert reads.full_reads == 0
    finally:
        engine.dispose()


def test_the_log_prunes_its_oldest_entries_and_says_so(own_engine, monkeypatch):
    migration = _migration()
    engine = own_engine
    postgresql = engine.dialect.name == "postgresql"
    mysql = engine.dialect.name == "mysql"
    world, provider_id = warm_copy(engine)
    with engine.begin() as conn:
        set_vcpu(conn, provider_id, 8)
        logged_so_far = conn.execute(text("SELECT max(id) FROM provider_changes")).scalar_one()
        filler = migration.KEEP + migration.PRUNE_EVERY - logged_so_far
        if postgresql:
            _fill_the_log(conn, filler - 1)
            this_transaction = conn.execute(
                text("SELECT pg_current_xact_id()::text::bigint")
            ).scalar_one()
        elif mysql:
            # Filler entries at the positions after this one's, then one more write,
            # whose trigger hands out the position that prunes (migration 0008).
            conn.execute(text("SET SESSION max_recursive_iterations = 1000000"))
            conn.execute(
                text(
                    "INSERT INTO provider_changes (provider_id, transaction_id)"
                    " WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < :n)"
                    " SELECT 0, :last + i FROM n"
                ),
                {"n": filler - 1, "last": logged_so_far},
            )
            conn.execute(
                text("UPDATE provider_changes_state SET last_position = :last"),
                {"last": logged_so_far + filler - 1},
            )
            conn.execute(
                text(  # one entry, at the position that prunes
                    "UPDATE resource_providers SET generation = generation + 1 WHERE id = :id"
                ),
                {"id": provider_id},
            )
        else:
            conn.execute(
                text(
                    "INSERT INTO provider_changes (provider_id)"
                    " WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < :n)"
                    " SELECT 0 FROM n"
                ),
                {"n": filler},
            )
    if postgresql:
        # The last entry in a transaction of its own: the pruning keeps the entries of
        # every transaction running, its own included (migration 0015).
        with engine.begin() as conn:
            _fill_the_log(conn, 1)
    with engine.connect() as conn:
        first, count = conn.execute(text("SELECT min(id), count(*) FROM provider_changes")).one()
        below = conn.execute(text("SELECT pruned_below FROM provider_changes_state")).scalar_one()
    assert first == migration.PRUNE_EVERY + 1
    assert count == migration.KEEP
    # Past every position deleted: the id after them on SQLite, the transaction after
    # the latest of theirs on PostgreSQL.
    assert below == (this_transaction + 1 if postgresql else migration.PRUNE_EVERY + 1)
    # The copy stood before the pruned entries (its change to 8 among them): it reads
    # every version again, and sees the change.
    reads = Reads(monkeypatch)
    refresh(world, engine)
    assert reads.full_reads == 1
    assert vcpu_total(world, provider_id) == 8
    refresh(world, engine)
    assert reads.full_reads == 1


@pytest.fixture
def postgresql_engine(empty_database_url):
    engine = make_engine(empty_database_url("postgresql"))
    migrate.upgrade(engine)
    yield engine
    engine.dispose()


def test_a_write_committing_after_a_later_one_is_not_missed(postgresql_engine):
    """PostgreSQL: entries commit out of the order they were written in. A copy that
    read a later transaction's entry must still read the earlier one's once it
    commits."""
    engine = postgresql_engine
    with engine.begin() as conn:
        first, second = add_provider(conn, "cn1", 4), add_provider(conn, "cn2", 4)
    world = ProviderWorld()
    refresh(world, engine)
    with engine.connect() as slow, engine.connect() as quick:
        slow_transaction = slow.begin()
        set_vcpu(slow, first, 8)  # logged first, committed last
        with quick.begin():
            set_vcpu(quick, second, 16)
        refresh(world, engine)
        assert (vcpu_total(world, first), vcpu_total(world, second)) == (4, 16)
        slow_transaction.commit()
    refresh(world, engine)
    assert (vcpu_total(world, first), vcpu_total(world, second)) == (8, 16)


def test_a_transaction_open_on_the_server_does_not_make_a_copy_read_again(
    postgresql_engine, empty_database_url, monkeypatch
):
    """PostgreSQL: a transaction left open on the server, on any of its databases, holds
    the copy's place in the log back (the oldest transaction running). What the copy
    saw past it it does not read again: after a write, its provider once, then
    nothing."""
    engine = postgresql_engine
    world, provider_id = warm_copy(engine)
    other_database = make_engine(empty_database_url("postgresql"))
    try:
        with other_database.connect() as open_elsewhere:
            held = open_elsewhere.execute(
                text("SELECT pg_current_xact_id()::text::bigint")
            ).scalar_one()
            reads = Reads(monkeypatch)
            for total in (8, 6):
                with engine.begin() as conn:
                    set_vcpu(conn, provider_id, total)
                refresh(world, engine)
                assert world._log.position <= held
                with engine.connect() as conn:
                    assert provider_world.changes_since(conn, world._log).changed == {}
            assert reads.details == [{provider_id}, {provider_id}]
            assert vcpu_total(world, provider_id) == 6
    finally:
        other_database.dispose()


def test_what_the_reader_writes_after_reading_is_read_again(postgresql_engine):
    """PostgreSQL: a transaction that read the copy then writes logs under its own id,
    which its snapshot saw as done: the copy must read that id's entries again."""
    engine = postgresql_engine
    world, provider_id = warm_copy(engine)
    with engine.begin() as conn:
        set_vcpu(conn, provider_id, 8)
        with engine.begin() as later:  # a later transaction id ends first: the snapshot's
            later.execute(text("SELECT pg_current_xact_id()"))  # xmax passes this one's
        world.refresh(conn)  # (as a claim does: read, choose, write)
        set_vcpu(conn, provider_id, 6)
    refresh(world, engine)
    assert vcpu_total(world, provider_id) == 6


def test_a_write_in_a_savepoint_is_logged_under_its_transaction(postgresql_engine):
    engine = postgresql_engine
    world, provider_id = warm_copy(engine)
    with engine.connect() as slow:
        transaction = slow.begin()
        with slow.begin_nested():
            set_vcpu(slow, provider_id, 8)
        top_level = slow.execute(text("SELECT pg_current_xact_id()::text::bigint")).scalar_one()
        refresh(world, engine)  # while it runs: not seen yet
        assert vcpu_total(world, provider_id) == 4
        transaction.commit()
    with engine.connect() as conn:
        assert logged(conn)[-1] == (provider_id, top_level)
    refresh(world, engine)
    assert vcpu_total(world, provider_id) == 8


def test_truncating_the_providers_starts_the_log_over(postgresql_engine):
    engine = postgresql_engine
    with engine.begin() as conn:
        add_provider(conn, "cn", 4)
    world = ProviderWorld()
    refresh(world, engine)
    with engine.begin() as conn:
        conn.execute(text("TRUNCATE resource_providers CASCADE"))
        fresh = add_provider(conn, "cn", 2)
        conn.execute(text("DELETE FROM provider_changes"))  # (TRUNCATE logged nothing)
    refresh(world, engine)
    assert set(world.providers) == {fresh}
    assert vcpu_total(world, fresh) == 2


def _refresh_while(world: ProviderWorld, engine, monkeypatch, meanwhile) -> list[set[int]]:
    """A write request's refresh: READ COMMITTED on PostgreSQL, each statement seeing what
    committed before it. ``meanwhile(conn)`` commits on another connection between the read
    of the log and the read of the details. The ids whose details were found, per read."""
    details, found = provider_world.provider_details, []

    def details_after_a_commit(conn, provider_ids):
        with engine.begin() as other:
            meanwhile(other)
        read = details(conn, provider_ids)
        found.append(set(read))
        return read

    monkeypatch.setattr(provider_world, "provider_details", details_after_a_commit)
    with engine.connect() as conn, conn.begin():
        world.refresh(conn)
    monkeypatch.setattr(provider_world, "provider_details", details)
    return found


def test_a_provider_deleted_after_the_log_was_read_is_left_out(postgresql_engine, monkeypatch):
    engine = postgresql_engine
    with engine.begin() as conn:
        kept, doomed = add_provider(conn, "cn1", 4), add_provider(conn, "cn2", 4)
    world = ProviderWorld()
    refresh(world, engine)
    with engine.begin() as conn:
        set_vcpu(conn, kept, 8)
        set_vcpu(conn, doomed, 8)  # logged: its details are read next

    def delete_doomed(conn):
        conn.execute(
            text("DELETE FROM inventories WHERE resource_provider_id = :id"), {"id": doomed}
        )
        conn.execute(text("DELETE FROM resource_providers WHERE id = :id"), {"id": doomed})

    assert _refresh_while(world, engine, monkeypatch, delete_doomed) == [{kept}]
    assert set(world.providers) == {kept} and vcpu_total(world, kept) == 8
    refresh(world, engine)
    assert set(world.providers) == {kept} and vcpu_total(world, kept) == 8


def _warm_then_logged(engine) -> tuple[ProviderWorld, int]:
    """A copy holding one provider of 4 VCPU, then a change of it to 8 logged, not read."""
    world, provider_id = warm_copy(engine)
    with engine.begin() as conn:
        set_vcpu(conn, provider_id, 8)
    return world, provider_id


def test_a_change_committed_after_the_log_was_read_is_read_again(postgresql_engine, monkeypatch):
    engine = postgresql_engine
    world, provider_id = _warm_then_logged(engine)
    _refresh_while(world, engine, monkeypatch, lambda conn: set_vcpu(conn, provider_id, 16))
    assert vcpu_total(world, provider_id) == 16  # (the details are the newer ones)
    version = world.providers[provider_id].version
    refresh(world, engine)
    assert vcpu_total(world, provider_id) == 16
    assert world.providers[provider_id].version != version  # read again, now exact


def test_a_class_created_after_the_log_was_read_is_named(postgresql_engine, monkeypatch):
    engine = postgresql_engine
    world, provider_id = _warm_then_logged(engine)

    def add_custom_inventory(conn):
        class_id = conn.execute(
            text(
                "INSERT INTO resource_classes (name, created_at) VALUES ('CUSTOM_LATE', :now)"
                " RETURNING id"
            ),
            {"now": datetime.now()},
        ).scalar_one()
        conn.execute(
            text(
                "INSERT INTO inventories (resource_provider_id, resource_class_id, total, reserved,"
                " min_unit, max_unit, step_size, allocation_ratio, created_at)"
                " VALUES (:id, :class_id, 2, 0, 1, 2, 1, 1.0, :now)"
            ),
            {"id": provider_id, "class_id": class_id, "now": datetime.now()},
        )
        conn.execute(
            text("UPDATE resource_providers SET generation = generation + 1 WHERE id = :id"),
            {"id": provider_id},
        )

    _refresh_while(world, engine, monkeypatch, add_custom_inventory)
    named = {world.class_names[class_id] for class_id in world.providers[provider_id].inventories}
    assert named == {"VCPU", "CUSTOM_LATE"}


# MySQL (migration 0008): positions come from a counter the writers' triggers take in
# turn, so they commit in their own order and none is skipped.


@pytest.fixture
def mysql_engine(empty_database_url):
    engine = make_engine(empty_database_url("mysql"))
    migrate.upgrade(engine)
    yield engine
    engine.dispose()


def test_on_mysql_a_second_writer_waits_for_the_first_to_commit(mysql_engine):
    """The second writer's entry cannot be handed a position, let alone commit, before
    the first writer ends: a copy that read up to the first's position never later
    finds an entry below it. Both writes are seen, in order."""
    import threading

    engine = mysql_engine
    with engine.begin() as conn:
        first, second = add_provider(conn, "cn1", 4), add_provider(conn, "cn2", 4)
    world = ProviderWorld()
    refresh(world, engine)
    with engine.connect() as slow:
        slow_transaction = slow.begin()
        set_vcpu(slow, first, 8)  # holds the counter until it ends
        quick_done = threading.Event()

        def quick_write():
            with engine.begin() as quick:
                set_vcpu(quick, second, 16)
            quick_done.set()

        quick = threading.Thread(target=quick_write)
        quick.start()
        assert not quick_done.wait(0.5)  # waiting for the first writer
        refresh(world, engine)  # neither has committed: nothing to see
        assert [vcpu_total(world, p) for p in (first, second)] == [4, 4]
        slow_transaction.commit()
    quick.join(timeout=30)
    assert quick_done.is_set()
    refresh(world, engine)
    assert [vcpu_total(world, p) for p in (first, second)] == [8, 16]
    with engine.connect() as conn:
        entries = (
            conn.execute(text("SELECT provider_id FROM provider_changes ORDER BY transaction_id"))
            .scalars()
            .all()
        )
    assert list(dict.fromkeys(reversed(entries)))[:2] == [second, first]


def test_on_mysql_a_rolled_back_write_leaves_no_gap(mysql_engine, monkeypatch):
    """The counter's increment rolls back with its writer: the positions stay dense, so
    a copy that counts the entries it reads finds none missing, and reads only what
    changed."""
    engine = mysql_engine
    with engine.begin() as conn:
        provider = add_provider(conn, "cn", 4)
    world = ProviderWorld()
    refresh(world, engine)
    with engine.connect() as conn:
        transaction = conn.begin()
        set_vcpu(conn, provider, 99)
        transaction.rollback()
    with engine.begin() as conn:
        set_vcpu(conn, provider, 8)
        positions = (
            conn.execute(
                text("SELECT transaction_id FROM provider_changes ORDER BY transaction_id")
            )
            .scalars()
            .all()
        )
    assert positions == list(range(1, len(positions) + 1))
    reads = Reads(monkeypatch)
    refresh(world, engine)
    assert reads.full_reads == 0 and reads.details == [{provider}]
    assert vcpu_total(world, provider) == 8


def test_a_log_that_starts_over_after_a_pruning_is_followed_again(empty_database_url, monkeypatch):
    """SQLite, where positions are entry ids: the log was pruned far past ids 1, 2, 3;
    then its entries are deleted and their ids restarted. The copy reads everything
    once, then only what changes: a new log has nothing pruned (migration 0011)."""
    engine = make_engine(empty_database_url("sqlite"))
    migrate.upgrade(engine)
    with engine.begin() as conn:
        provider_id = add_provider(conn, "cn", 4)
        conn.execute(text("UPDATE provider_changes_state SET pruned_below = 60001"))
        conn.execute(text("UPDATE sqlite_sequence SET seq = 60000 WHERE name = 'provider_changes'"))
    world = ProviderWorld()
    refresh(world, engine)
    reads = Reads(monkeypatch)
    with engine.begin() as conn:
        set_vcpu(conn, provider_id, 8)
        _truncate_restarting_ids(conn, 0)
    with engine.begin() as conn:
        add_provider(conn, "cn2", 2)
    refresh(world, engine)
    assert reads.full_reads == 1
    with engine.begin() as conn:
        set_vcpu(conn, provider_id, 6)
    refresh(world, engine)
    refresh(world, engine)
    assert reads.full_reads == 1
    assert vcpu_total(world, provider_id) == 6
    engine.dispose()
