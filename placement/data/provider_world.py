"""The reads behind each worker's copy of the providers (``placement.replica.world``).

A provider's *version* (``provider_versions``: id, generation, revision, parent, root)
changes whenever something a candidate search looks at changes (see
``placement.replica.world``). A copy reads every version once; after that
it reads, on each request, only the versions of the providers logged as
changed since its last read (``changes_since``: the ``provider_changes``
log, written by triggers in the writers' own transactions, migration 0003),
or every version again when the log was pruned past where it stood. Both
are read through the driver's own cursor (binary rows on PostgreSQL):
building ORM rows would cost three times the query on tens of thousands of
providers; an error there is raised as SQLAlchemy raises its own (a lost
connection invalidated with the pool's older ones: ``placement.db.driver_errors``).
``changes_since`` also reads the names of the resource classes,
which a rename (1.2 to 1.6) changes without touching a provider, and on
PostgreSQL sends its two statements together. ``provider_details`` reads
everything else of the providers whose version changed.
"""

from collections.abc import Iterable
from dataclasses import dataclass

import psycopg
from sqlalchemy import Connection

from placement.data.sql import SQLITE_IN_CHUNK
from placement.db.driver_errors import raise_as_sqlalchemy

# id, generation, parent, root; and, on SQLite, the uuid and creation time: SQLite hands
# the id of a deleted last row to the next provider (PostgreSQL's sequences never reuse
# one), even to one re-created with the same uuid, so only they tell it from the one it
# replaces there.
_VERSION_COLUMNS = ("generation", "revision", "parent_provider_id", "root_provider_id")
_SQLITE_VERSION_COLUMNS = ("uuid", "created_at")

# Where a reader stands in the change log (migration 0003): on PostgreSQL the oldest
# transaction still running as its snapshot was taken (entries of that one and later
# ones may become visible yet); on SQLite, whose writers commit in id order, the id
# after the last one written; on MySQL the position after the last one handed out
# (positions commit in their order there, migration 0008).
_POSITION = {
    "postgresql": "pg_snapshot_xmin(pg_current_snapshot())::text::bigint",
    "sqlite": "COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'provider_changes'), 0) + 1",
    "mysql": "(SELECT last_position + 1 FROM provider_changes_state WHERE id = 1)",
}
# And, on PostgreSQL, what the snapshot saw past that position: every transaction below
# its xmax but those still running then (its xip), whose entries may become visible yet,
# and the reader's own, should it have written: it may log more under the same id, and
# end without committing. (Elsewhere nothing past the position was seen.) A transaction
# left open for hours, on any database of the server, holds every snapshot's xmin back,
# not what they saw.
_SEEN = {
    "postgresql": "pg_snapshot_xmax(pg_current_snapshot())::text::bigint,"
    " ARRAY(SELECT xid::text::bigint FROM pg_snapshot_xip(pg_current_snapshot()) AS xid"
    " UNION ALL SELECT pg_current_xact_id_if_assigned()::text::bigint"
    " WHERE pg_current_xact_id_if_assigned() IS NOT NULL)",
    "sqlite": "NULL, NULL",
    "mysql": "NULL, NULL",
}
_CLASS_NAMES = "SELECT id, name FROM resource_classes"
_POSITION_COLUMN = {"postgresql": "transaction_id", "sqlite": "id", "mysql": "transaction_id"}


def provider_versions(conn: Connection) -> list[tuple]:
    """(id, generation, parent id, root id[, uuid, created_at on SQLite]) of every
    provider, by id."""
    columns = ", ".join(_version_columns(conn))
    return _fetch(conn, f"SELECT id, {columns} FROM resource_providers ORDER BY id")


@dataclass(frozen=True)
class LogPosition:
    """Where this snapshot stands in the change log; below which position its entries
    may have been pruned; and which log it is (it changes when the log starts over).
    The last two are None when the log's one state row is missing: it cannot be
    trusted then, and every request reads every version.

    The snapshot saw every entry below ``position`` and none from ``seen_below`` on;
    between the two, every one but those of the transactions ``running`` then, the
    reader's own among them (PostgreSQL; elsewhere ``seen_below`` is ``position``)."""

    position: int
    pruned_below: int | None
    incarnation: str | None
    seen_below: int
    running: tuple[int, ...] = ()

    def unseen(self, column: str) -> str:
        """The condition on an entry's ``column`` (its position) that this snapshot did
        not see it."""
        unseen = f"{column} >= {int(self.seen_below)}"
        if self.running:
            running = ", ".join(str(int(position)) for position in self.running)
            unseen = f"({unseen} OR {column} IN ({running}))"
        return unseen


@dataclass(frozen=True)
class Changes:
    """What a copy reads on every request: the class names, where it stands in the change
    log, and the versions of the providers logged as changed since its last request
    (None when it had no position: it reads every version then)."""

    class_names: dict[int, str]
    log: LogPosition
    changed: dict[int, tuple | None] | None


def changes_since(conn: Connection, since: LogPosition | None) -> Changes:
    """The class names, the log position, and the versions (as ``provider_versions`` gives
    them) of the providers logged as changed in what the snapshot that read ``since``
    did not see, by id, None for those that no longer exist. Two statements: the names,
    then the log's state row with each provider logged since beside it (one row with
    none when none was); on PostgreSQL both sent together (a pipeline): one round trip
    after the BEGIN."""
    dialect = conn.dialect.name
    position, seen = _POSITION[dialect], _SEEN[dialect]
    state = f"SELECT {position}, {_pruned_below(dialect, since)}, incarnation, {seen}"
    if since is None:
        logged = f"{state} FROM provider_changes_state WHERE id = 1"
    else:
        columns = ", ".join(f"rp.{column}" for column in _version_columns(conn))
        logged = (
            f"{state}, c.provider_id, {columns} FROM provider_changes_state"
            " LEFT JOIN (SELECT DISTINCT provider_id FROM provider_changes"
            f" WHERE {since.unseen(_POSITION_COLUMN[dialect])}"
            # (none when the log was pruned past ``since``: every version is read then)
            f" AND {int(since.position)} >= (SELECT pruned_below FROM provider_changes_state))"
            " AS c ON 1 = 1"
            " LEFT JOIN resource_providers rp ON rp.id = c.provider_id"
            " WHERE provider_changes_state.id = 1"
        )
    names, rows = _fetch_all(conn, [_CLASS_NAMES, logged])
    if rows:
        log = _log_position(*rows[0][:5])
    else:  # the state row is missing: the log cannot be trusted
        found = _fetch(conn, f"SELECT COALESCE({position}, 0), NULL, NULL, {seen}")[0]
        log = _log_position(*found)
    changed = None
    if since is not None:
        versions = (row[5:] for row in rows if row[5] is not None)
        changed = {
            version[0]: (version if version[1] is not None else None) for version in versions
        }
    return Changes(dict(names), log, changed)


def _log_position(
    position: int,
    pruned_below: int | None,
    incarnation: str | None,
    seen_below: int | None,
    running: list[int] | None,
) -> LogPosition:
    return LogPosition(
        position,
        pruned_below,
        incarnation,
        position if seen_below is None else seen_below,
        tuple(running or ()),
    )


def _pruned_below(dialect: str, since: LogPosition | None) -> str:
    """Below which position the log's entries may be missing, for a reader at ``since``.

    On MySQL positions are dense (migration 0008): a reader at ``since`` must find
    exactly ``last_position + 1 - since`` entries from there on. Fewer means entries it
    has not read were deleted by someone else (a TRUNCATE or DELETE, which MySQL's
    triggers cannot see): the log then says it was pruned past the reader, who reads
    every version again. (PostgreSQL and SQLite detect such deletes with triggers,
    migration 0005.)"""
    if dialect != "mysql" or since is None:
        return "pruned_below"
    position = int(since.position)
    return (
        "CASE WHEN (SELECT COUNT(*) FROM provider_changes"
        f" WHERE transaction_id >= {position}) = last_position + 1 - {position}"
        " THEN pruned_below ELSE last_position + 2 END"
    )


def class_names(conn: Connection) -> dict[int, str]:
    """Every resource class's name, by id."""
    return dict(_fetch(conn, _CLASS_NAMES))


def _version_columns(conn: Connection) -> tuple[str, ...]:
    if conn.dialect.name == "sqlite":
        return _VERSION_COLUMNS + _SQLITE_VERSION_COLUMNS
    return _VERSION_COLUMNS


def _fetch_all(conn: Connection, statements: list[str]) -> list[list[tuple]]:
    """The rows of each statement, as ``_fetch`` gives them; on PostgreSQL all sent
    together (after the transaction's BEGIN), then read."""
    if conn.dialect.name != "postgresql" or not psycopg.Pipeline.is_supported():
        return [_fetch(conn, statement) for statement in statements]
    dbapi_connection = conn.connection.dbapi_connection
    cursors = [dbapi_connection.cursor(binary=True) for _ in statements]  # type: ignore[union-attr]
    try:
        with dbapi_connection.pipeline():  # type: ignore[union-attr]
            for cursor, statement in zip(cursors, statements, strict=True):
                cursor.execute(statement)
        return [list(cursor.fetchall()) for cursor in cursors]
    except BaseException as error:  # (as SQLAlchemy's own: a lost connection, say)
        raise_as_sqlalchemy(conn, error, "; ".join(statements))
    finally:
        for cursor in cursors:
            cursor.close()


def _fetch(conn: Connection, statement: str) -> list[tuple]:
    """Rows as the driver gives them (binary on PostgreSQL), without building rows."""
    dbapi_connection = conn.connection.dbapi_connection
    if conn.dialect.name == "postgresql":
        cursor = dbapi_connection.cursor(binary=True)  # type: ignore[union-attr]
    else:
        cursor = dbapi_connection.cursor()  # type: ignore[union-attr]
    try:
        cursor.execute(statement)
        return list(cursor.fetchall())
    except BaseException as error:  # (as SQLAlchemy's own: a lost connection, say)
        raise_as_sqlalchemy(conn, error, statement, cursor)
    finally:
        cursor.close()


@dataclass
class ProviderDetails:
    """What a candidate search needs of one provider besides its version."""

    uuid: str
    name: str
    # class id -> (total, reserved, allocation_ratio, min_unit, max_unit, step_size, used)
    inventories: dict[int, tuple]
    traits: dict[int, str]  # trait id -> name
    aggregates: dict[int, str]  # aggregate id -> uuid


def provider_details(
    conn: Connection, provider_ids: Iterable[int] | range | None
) -> dict[int, ProviderDetails]:
    """The details of the given providers (a ``range`` of ids: of those in it; None: of
    every provider), by id; four statements per batch of SQLITE_IN_CHUNK ids, sent
    together on PostgreSQL (one round trip: after a write, a refresh reads a provider
    or two)."""
    found: dict[int, ProviderDetails] = {}
    if provider_ids is None or isinstance(provider_ids, range):
        _read_batch(conn, found, provider_ids)
        return found
    ordered = sorted(set(provider_ids))
    for start in range(0, len(ordered), SQLITE_IN_CHUNK):
        _read_batch(conn, found, ordered[start : start + SQLITE_IN_CHUNK])
    return found


def _read_batch(
    conn: Connection, found: dict[int, ProviderDetails], ids: list[int] | range | None
) -> None:
    def only(column: str) -> str:
        # The ids are the copy's own integers, written into the text as such.
        if ids is None:
            return ""
        if isinstance(ids, range):
            return f" WHERE {column} BETWEEN {int(ids.start)} AND {int(ids.stop) - 1}"
        return f" WHERE {column} IN ({', '.join(map(str, map(int, ids)))})"

    inventory_columns = (
        "SELECT i.resource_provider_id, i.resource_class_id, i.total, i.reserved,"
        " i.allocation_ratio, i.min_unit, i.max_unit, i.step_size,"
    )
    if ids is None or isinstance(ids, range):
        # Many providers (a full read): the usage summed once, joined. Looked up per
        # inventory, a small allocations table is scanned whole for each one.
        inventories = (
            inventory_columns + " COALESCE(u.used, 0) FROM inventories i"
            " LEFT JOIN (SELECT resource_provider_id, resource_class_id, SUM(used) AS used"
            "  FROM allocations"
            + only("resource_provider_id")
            + "  GROUP BY resource_provider_id, resource_class_id) u"
            " ON u.resource_provider_id = i.resource_provider_id"
            " AND u.resource_class_id = i.resource_class_id" + only("i.resource_provider_id")
        )
    else:  # a provider or two (after a write): each inventory's usage by its index
        inventories = (
            inventory_columns + " (SELECT COALESCE(SUM(a.used), 0) FROM allocations a"
            "   WHERE a.resource_provider_id = i.resource_provider_id"
            "     AND a.resource_class_id = i.resource_class_id)"
            " FROM inventories i" + only("i.resource_provider_id")
        )
    providers, inventory_rows, trait_rows, aggregate_rows = _fetch_all(
        conn,
        [
            "SELECT id, uuid, name FROM resource_providers" + only("id"),
            inventories,
            "SELECT rpt.resource_provider_id, t.id, t.name FROM resource_provider_traits rpt"
            " JOIN traits t ON t.id = rpt.trait_id" + only("rpt.resource_provider_id"),
            "SELECT rpa.resource_provider_id, a.id, a.uuid FROM resource_provider_aggregates rpa"
            " JOIN placement_aggregates a ON a.id = rpa.aggregate_id"
            + only("rpa.resource_provider_id"),
        ],
    )
    for provider_id, uuid, name in providers:
        found[provider_id] = ProviderDetails(uuid, name, {}, {}, {})
    for provider_id, class_id, *numbers in inventory_rows:
        if provider_id in found:
            found[provider_id].inventories[class_id] = tuple(numbers)
    for provider_id, trait_id, name in trait_rows:
        if provider_id in found:
            found[provider_id].traits[trait_id] = name
    for provider_id, aggregate_id, uuid in aggregate_rows:
        if provider_id in found:
            found[provider_id].aggregates[aggregate_id] = uuid
