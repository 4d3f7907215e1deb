"""The searches read one picture of the database per request: a transaction begun on
``reading_one_snapshot(conn)`` sees nothing that commits after its first read, on every
backend (on MySQL the level is set for that transaction only, not left on the
connection)."""

import uuid

import sqlalchemy as sa

from placement.db.snapshots import reading_one_snapshot
from placement.db.tables import resource_providers


def _add_provider(engine, name: str) -> None:
    with engine.begin() as conn:
        conn.execute(
            sa.insert(resource_providers).values(
                uuid=str(uuid.uuid4()), name=name, generation=0, created_at=sa.func.now()
            )
        )


def _count(conn) -> int:
    return conn.execute(sa.select(sa.func.count()).select_from(resource_providers)).scalar()


def test_a_snapshot_transaction_does_not_see_later_commits(engine):
    _add_provider(engine, "before")
    with engine.connect() as conn:
        with reading_one_snapshot(conn).begin():
            assert _count(conn) == 1
            _add_provider(engine, "during")
            assert _count(conn) == 1
        with conn.begin():  # the next transaction on the same connection sees it
            assert _count(conn) == 2


def test_an_ordinary_transaction_sees_each_commit(engine):
    """READ COMMITTED on PostgreSQL and MySQL: a write locks, then reads what committed.
    (A SQLite transaction that has read keeps its picture; its writers queue instead.)"""
    _add_provider(engine, "before")
    with engine.connect() as conn:
        with conn.begin():
            assert _count(conn) == 1
            _add_provider(engine, "during")
            assert _count(conn) == (1 if engine.dialect.name == "sqlite" else 2)
