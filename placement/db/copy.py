"""Copying a whole placement database into an empty one, on any backend, and proving it.

How an operator moves from MySQL to PostgreSQL, or the other way: ``placement db copy
--from URL --to URL``. The target must hold no table of the schema: it is migrated
here, then every table's rows are copied with their ids, in an order the foreign keys
accept. What the migrations write on their own (the change log, its state, the
standard classes and traits) is replaced by the source's rows. A source of upstream
openstack-placement's schema is copied into that schema, checked, and the copy is then
adopted (``placement.db.adopt``): the source is left as it was.

The copy is then checked table by table: the rows counted and a checksum of their
values (sorted by primary key, each value in one spelling on every backend) computed
on both sides. Timestamps are compared to the second: MySQL's DATETIME keeps no
fraction (the copy drops it, rather than let MySQL round it), and nothing the API
shows keeps one.

The triggers of the target stay on: every provider copied is logged in the target's
change log, and the rows that concern a provider bump its revision (migration
0009), so the revisions are put back as the source has them last.
"""

import hashlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, Engine, Table, bindparam, delete, inspect, select, update

from placement.db import adopt, migrate, rebuild
from placement.db.survey import survey
from placement.db.tables import metadata
from placement.db.upstream_schema import UPSTREAM_HEAD, upstream_metadata

# The change log and its state: the target's own, which its triggers write as it is
# filled (a worker reading the target reads every provider once anyway).
NOT_COPIED = frozenset({"provider_changes", "provider_changes_state"})
BATCH = 5000


class CopyRefused(RuntimeError):
    """The copy cannot start (target not empty, source not at this schema's head)."""


@dataclass(frozen=True)
class TableCheck:
    name: str
    source_rows: int
    target_rows: int
    source_checksum: str
    target_checksum: str

    @property
    def same(self) -> bool:
        return (self.source_rows, self.source_checksum) == (self.target_rows, self.target_checksum)


def copy_database(
    source: Engine, target: Engine, say: Callable[[str], None] = lambda _: None
) -> list[TableCheck]:
    """Copy ``source`` into the empty ``target``; the check of every table. A source of
    upstream's schema is copied as it is, checked, then the copy is adopted."""
    with source.connect() as conn:
        found = survey(conn)
    from_upstream = found.kind == "upstream"
    head = migrate.head_revision()
    if not from_upstream and (found.kind, found.revision) != ("ours", head):
        raise CopyRefused(
            f"the source database is {found.described}, not this service's at revision "
            f"{head} nor upstream's: run 'placement db upgrade' on it first"
        )
    present = set(inspect(target).get_table_names()) & set(metadata.tables)
    if present:
        raise CopyRefused(
            f"the target database is not empty (it has {', '.join(sorted(present))}): "
            "give an empty database"
        )
    if from_upstream:
        tables = upstream_metadata().sorted_tables
        say(f"creating upstream's schema (revision {UPSTREAM_HEAD}) in the target")
        with target.begin() as conn:
            upstream_metadata().create_all(conn)
            migrate.write_revision(conn, UPSTREAM_HEAD)
    else:
        tables = _copied_tables()
        say(f"migrating the target to revision {head}")
        migrate.upgrade(target)
    drop_fraction = target.dialect.name == "mysql"
    with source.connect() as reading, target.begin() as writing, rebuild.keeping_zero_ids(writing):
        for table in reversed(tables):  # what the migrations wrote
            writing.execute(delete(table))
        for table in tables:
            copied = _copy_table(reading, writing, table, drop_fraction)
            say(f"copied {table.name}: {copied} rows")
        providers = next(table for table in tables if table.name == "resource_providers")
        _put_back_provider_links(reading, writing, providers)
        rebuild.advance_sequences(writing, tables)
    checks = check(source, target, tables)
    if from_upstream and all(check.same for check in checks):
        say("adopting the copy")
        adopt.adopt(target, say)
        migrate.upgrade(target)
    return checks


def _copied_tables() -> list[Table]:
    return [table for table in metadata.sorted_tables if table.name not in NOT_COPIED]


def _copy_table(reading: Connection, writing: Connection, table: Table, drop_fraction) -> int:
    """Insert every row of ``table`` (providers without their links: a parent may come
    after its child in id order; ``_put_back_provider_links`` sets them)."""
    unlinked = {"parent_provider_id": None, "root_provider_id": None}
    count = 0
    for rows in _batches(reading, table):
        values = [_stored(row._asdict(), drop_fraction) for row in rows]
        if table.name == "resource_providers":
            values = [{**row, **unlinked} for row in values]
        writing.execute(table.insert(), values)
        count += len(values)
    return count


def _put_back_provider_links(reading: Connection, writing: Connection, providers: Table) -> None:
    """Parents, roots, and the revisions the source has (the triggers moved them), a batch
    of providers per statement sent."""
    this_one = providers.c.id == bindparam("provider")
    links = (
        update(providers)
        .where(this_one)
        .values(parent_provider_id=bindparam("parent"), root_provider_id=bindparam("root"))
    )
    rows = reading.execute(
        select(
            providers.c.id, providers.c.parent_provider_id, providers.c.root_provider_id
        ).order_by(providers.c.id)
    ).all()
    for start in range(0, len(rows), BATCH):
        writing.execute(
            links,
            [
                {"provider": p, "parent": parent, "root": root}
                for p, parent, root in rows[start : start + BATCH]
            ],
        )
    if "revision" not in providers.c:
        return
    revisions = update(providers).where(this_one).values(revision=bindparam("revision_of"))
    kept = reading.execute(select(providers.c.id, providers.c.revision)).all()
    for start in range(0, len(kept), BATCH):
        # Last, alone: nothing after it bumps the revisions again.
        writing.execute(
            revisions,
            [
                {"provider": p, "revision_of": revision}
                for p, revision in kept[start : start + BATCH]
            ],
        )


def _batches(conn: Connection, table: Table) -> Iterator[Sequence]:
    result = conn.execution_options(yield_per=BATCH).execute(
        select(table).order_by(*table.primary_key.columns)
    )
    yield from result.partitions(BATCH)


def _stored(row: dict, drop_fraction: bool) -> dict:
    if not drop_fraction:
        return row
    return {
        key: value.replace(microsecond=0) if isinstance(value, datetime) else value
        for key, value in row.items()
    }


def check(source: Engine, target: Engine, tables: list[Table] | None = None) -> list[TableCheck]:
    """Rows and checksum of every table copied, on both sides."""
    checks = []
    with source.connect() as a, target.connect() as b:
        for table in tables if tables is not None else _copied_tables():
            source_rows, source_sum = _checksum(a, table)
            target_rows, target_sum = _checksum(b, table)
            checks.append(TableCheck(table.name, source_rows, target_rows, source_sum, target_sum))
    return checks


def _checksum(conn: Connection, table: Table) -> tuple[int, str]:
    digest = hashlib.sha256()
    count = 0
    for rows in _batches(conn, table):
        for row in rows:
            digest.update(("\x1f".join(_spelled(v) for v in row) + "\x1e").encode())
            count += 1
    return count, digest.hexdigest()[:16]


def _spelled(value) -> str:
    """One spelling of a value on every backend."""
    if value is None:
        return "\x00"
    if isinstance(value, datetime):
        return value.replace(microsecond=0, tzinfo=None).isoformat()
    if isinstance(value, float):
        return repr(value)
    return str(value)
