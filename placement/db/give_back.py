"""Giving a database back to upstream openstack-placement 16.0.0.

``placement db return-to-upstream``: the way back for an operator who took a cloud
over (``placement.db.adopt``), or who wants to leave. The database is rebuilt in
place at upstream's last revision (``placement.db.rebuild``), with everything this
service holds: providers and their trees, inventories, traits, aggregates,
consumers with their generations and types, allocations (naming their consumer by
uuid again), classes and timestamps. Afterwards upstream reads and writes it as one
its own migrations made.

Two things change on the way:
- resource class ids follow upstream's rule, which upstream relies on (an id below
  10000 is a standard class, which it refuses to update or delete): a standard class
  takes its index in ``os-resource-classes``, a custom class keeps an id from 10000
  up or gets the next one. Ids never appear in the API.
- what upstream has no place for is dropped: the change log of the workers' copies,
  and what this service's own features keep (device topologies, the network's levels
  and domains, gang memberships). A database that holds any of those is refused unless
  the operator says they may go (the nodes and consumers stay, as plain providers and
  consumers).
"""

from collections.abc import Callable

import os_resource_classes
from sqlalchemy import (
    ColumnElement,
    Connection,
    Engine,
    MetaData,
    case,
    func,
    null,
    select,
)

from placement.db import migrate, rebuild
from placement.db.survey import survey
from placement.db.tables import metadata as ours
from placement.db.upstream_schema import UPSTREAM_HEAD, UPSTREAM_TABLES, upstream_metadata

ASIDE = rebuild.OURS_ASIDE
FIRST_CUSTOM_CLASS_ID = 10000


class GiveBackRefused(RuntimeError):
    """The database cannot be given back as it is; the message says why."""


def give_back(
    engine: Engine,
    say: Callable[[str], None] = lambda _: None,
    discard_extensions: bool = False,
) -> None:
    """Bring the database ``engine`` opens to upstream's schema, at ``UPSTREAM_HEAD``."""
    with engine.connect() as conn, conn.begin():
        found = survey(conn)
        if found.kind == "given-back":
            say(
                "the database had been given back but for dropping this service's old "
                "tables: dropping them"
            )
            _drop_ours(conn)
            return
        if found.kind == "giving-back":
            say(
                "a return to upstream was stopped halfway: this service's tables are put back first"
            )
            rebuild.put_back(conn, UPSTREAM_TABLES, ASIDE)
        elif found.kind != "ours" or found.revision != migrate.head_revision():
            raise GiveBackRefused(
                f"the database is not this service's at its latest revision ({found.kind}, "
                f"revision {found.revision or 'none'}): run 'placement db upgrade' first"
            )
        held = _extensions_held(conn)
        if held and not discard_extensions:
            raise GiveBackRefused(
                f"the database holds {', '.join(held)}, which upstream has no place for (the "
                "nodes and consumers stay, as plain providers and consumers): pass "
                "--discard-extensions to give it back without them"
            )
        for line in plan(conn, held):
            say(line)
        rebuild.move_aside(conn, UPSTREAM_TABLES, ASIDE)
        theirs = upstream_metadata()
        theirs.create_all(conn)
        with rebuild.keeping_zero_ids(conn):
            _fill(conn, theirs)
        rebuild.advance_sequences(conn, list(theirs.tables.values()))
        migrate.write_revision(conn, UPSTREAM_HEAD)
        _drop_ours(conn)
        say(f"given back: the database is upstream's, at revision {UPSTREAM_HEAD}")


# What this service's own features hold that upstream's schema has no place for.
# (table, what its rows are counted as, the column counted: distinct values of it, or rows)
EXTENSIONS = (
    ("device_topologies", "device topologies", None),
    ("network_levels", "network levels", None),
    ("network_domains", "nodes placed in the network", "node_name"),
    ("gang_members", "gang members", None),
)


def _extensions_held(conn: Connection) -> list[str]:
    """What each extension holds, counted ("3 device topologies"), where any."""
    held = []
    for name, what, column in EXTENSIONS:
        table = ours.tables[name]
        counted = func.count() if column is None else func.count(table.c[column].distinct())
        count = conn.execute(select(counted).select_from(table)).scalar_one()
        if count:
            held.append(f"{count} {what}")
    return held


def plan(conn: Connection, held: list[str]) -> list[str]:
    lines = [
        f"the database is rebuilt at upstream openstack-placement's revision {UPSTREAM_HEAD} "
        "(16.0.0), every provider, inventory, trait, aggregate, consumer and allocation kept",
        "resource class ids follow upstream's rule: standard classes by their index, "
        "custom ones from 10000",
        "the workers' change log is dropped" + "".join(f", and {what}" for what in held),
    ]
    if conn.dialect.name == "mysql":
        lines.append(
            "MySQL commits each step by itself: if this stops halfway, run it again "
            "(this service's tables are kept as placement_* until the end)"
        )
    return lines


def _fill(conn: Connection, theirs: MetaData) -> None:
    moved = MetaData()
    for table in ours.sorted_tables:
        if table.name in UPSTREAM_TABLES:
            table.to_metadata(moved, name=ASIDE + table.name)
    renumbered = _upstream_class_ids(conn, moved)

    def class_id(column) -> ColumnElement:
        changed = {old: new for old, new in renumbered.items() if old != new}
        return case(changed, value=column, else_=column) if changed else column

    for name in UPSTREAM_TABLES:
        source = moved.tables[ASIDE + name]
        values: dict[str, ColumnElement] = {}
        joined = None
        if name == "resource_classes":
            values["id"] = class_id(source.c.id)
        if "resource_class_id" in source.c:
            values["resource_class_id"] = class_id(source.c.resource_class_id)
        if name == "resource_providers":
            values["root_provider_id"] = values["parent_provider_id"] = null()
        if name == "allocations":
            consumers = moved.tables[ASIDE + "consumers"]
            values["consumer_id"] = consumers.c.uuid
            joined = source.join(consumers, consumers.c.id == source.c.consumer_id)
        rebuild.fill(conn, theirs.tables[name], source, values, joined)
    rebuild.link_providers(
        conn, theirs.tables["resource_providers"], moved.tables[ASIDE + "resource_providers"]
    )


def _upstream_class_ids(conn: Connection, moved: MetaData) -> dict[int, int]:
    """Each class's id under upstream's rule, by its id here."""
    classes = moved.tables[ASIDE + "resource_classes"]
    rows = conn.execute(select(classes.c.id, classes.c.name).order_by(classes.c.id)).all()
    standard = {name: index for index, name in enumerate(os_resource_classes.STANDARDS)}
    customs = [id_ for id_, name in rows if name not in standard]
    next_id = (
        max(
            [id_ for id_ in customs if id_ >= FIRST_CUSTOM_CLASS_ID],
            default=FIRST_CUSTOM_CLASS_ID - 1,
        )
        + 1
    )
    ids = {}
    for id_, name in rows:
        if name in standard:
            ids[id_] = standard[name]
        elif id_ >= FIRST_CUSTOM_CLASS_ID:
            ids[id_] = id_
        else:
            ids[id_], next_id = next_id, next_id + 1
    return ids


def _drop_ours(conn: Connection) -> None:
    """This service's tables, moved aside or of its own, and its trigger functions."""
    functions = _trigger_functions(conn)
    rebuild.drop_aside(conn, UPSTREAM_TABLES, ASIDE)
    rebuild.drop_tables(conn, rebuild.OURS_ONLY)
    for function in functions:
        conn.exec_driver_sql(f"DROP FUNCTION IF EXISTS {function}() CASCADE")


def _trigger_functions(conn: Connection) -> list[str]:
    """PostgreSQL: the functions this service's triggers call (upstream has no trigger)."""
    if conn.dialect.name != "postgresql":
        return []
    return list(
        conn.exec_driver_sql(
            "SELECT DISTINCT p.proname FROM pg_trigger t"
            " JOIN pg_proc p ON p.oid = t.tgfoid WHERE NOT t.tgisinternal"
        ).scalars()
    )
