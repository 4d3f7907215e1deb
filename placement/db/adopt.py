"""Taking over a database that upstream openstack-placement made and filled.

``placement db upgrade`` on such a database (``survey`` tells which kind it is)
brings it to this service's schema in place, keeping every row as upstream stored
it: ids (a custom class keeps its id from 10000 up, VCPU its 0), uuids, names,
generations of providers and consumers (Nova's cached ones stay valid), consumer
types and timestamps. The steps (``placement.db.rebuild``): upstream's tables move
aside as ``upstream_*``; this service's first revisions create its tables; each is
filled from upstream's with one ``INSERT ... SELECT``, an allocation's consumer uuid
becoming the consumer's id; the remaining revisions run on the filled tables as on
any database of ours; upstream's tables are dropped.

Upstream's schema allows what ours does not, and each case is settled before anything
is written:
- what upstream's own migrations refuse (an allocation whose consumer does not
  exist, a provider without a root), and rows that name a provider, class,
  aggregate, project, user or consumer type that does not exist: refused, with
  the count and upstream's remedy;
- a provider without a name takes its uuid as name (upstream's API has required a
  name since its first version: such rows predate it), a generation of NULL
  becomes 0, a missing ``created_at`` becomes ``updated_at``, or the time of
  adoption: counted in the plan.

A database at an older upstream revision is refused: upstream's ``placement-manage
db sync`` brings it to 16.0.0's schema first, with the checks it makes.
"""

from collections.abc import Callable

from sqlalchemy import (
    ColumnElement,
    Connection,
    Engine,
    MetaData,
    Table,
    and_,
    exists,
    func,
    literal,
    literal_column,
    null,
    select,
)

from placement.clock import utcnow
from placement.db import migrate, rebuild
from placement.db.survey import survey
from placement.db.upstream_schema import (
    UPSTREAM_HEAD,
    UPSTREAM_TABLES,
    upstream_metadata,
)

ASIDE = rebuild.UPSTREAM_ASIDE
# The revision whose tables are filled: the later ones change filled databases.
FILLED_AT = "0002"
THEIRS = upstream_metadata()
MOVED = upstream_metadata(ASIDE)


class AdoptionRefused(RuntimeError):
    """The database cannot be taken over as it is; the message says why and what to do."""


def adopt(
    engine: Engine, say: Callable[[str], None] = lambda _: None, dry_run: bool = False
) -> None:
    """Bring the upstream database ``engine`` opens to this service's head revision
    (``dry_run``: only check it and say what would be done)."""
    with engine.connect() as conn, conn.begin():
        found = survey(conn)
        if found.kind == "adopted":
            say("an adoption had finished but for dropping upstream's old tables: dropping them")
            rebuild.drop_aside(conn, UPSTREAM_TABLES, ASIDE)
            return
        if found.kind == "adopting":
            say("an adoption was stopped halfway: upstream's tables are put back first")
            rebuild.put_back(conn, UPSTREAM_TABLES, ASIDE)
            rebuild.drop_tables(conn, rebuild.OURS_ONLY)
            migrate.write_revision(conn, UPSTREAM_HEAD)
        elif found.kind == "upstream-older":
            raise AdoptionRefused(
                f"the database is at upstream revision {found.revision}, older than "
                f"{UPSTREAM_HEAD} (openstack-placement 16.0.0): run upstream's "
                "'placement-manage db sync' first, then this command again"
            )
        elif found.kind == "upstream-unversioned":
            raise AdoptionRefused(
                "the database holds upstream's tables but no Alembic revision: stamp it "
                "with upstream's 'placement-manage db stamp b4ed3a175331' and run its "
                "'placement-manage db sync', then this command again"
            )
        elif found.kind != "upstream":
            raise AdoptionRefused(f"the database is not upstream's: it is {found.described}")
        problems = refusals(conn)
        if problems:
            raise AdoptionRefused(
                "the database holds rows this service's schema cannot take; nothing was "
                "changed:\n" + "\n".join(f"- {problem}" for problem in problems)
            )
        for line in plan(conn):
            say(line)
        if dry_run:
            return
        rebuild.move_aside(conn, UPSTREAM_TABLES, ASIDE)
        migrate.write_revision(conn, None)  # our revisions start from none
        migrate.upgrade_on(conn, FILLED_AT)
        with rebuild.keeping_zero_ids(conn):
            filled = _fill(conn)
        rebuild.advance_sequences(conn, filled)
        say(f"filled this service's tables; applying revisions {FILLED_AT} to head")
        migrate.upgrade_on(conn, "head")
        rebuild.drop_aside(conn, UPSTREAM_TABLES, ASIDE)
        say(f"adopted: the database is at revision {migrate.head_revision()}")


# Rows of upstream's schema that ours refuses, each with what to do about it.
def refusals(conn: Connection) -> list[str]:
    t = THEIRS.tables
    rps, consumers, allocations = (t["resource_providers"], t["consumers"], t["allocations"])
    named = rps.alias("named")
    online = "upstream's 'placement-manage db online_data_migrations' fixes them"

    def none_in(table: Table, column: str, target: Table, target_column: str = "id"):
        return ~exists().where(target.c[target_column] == table.c[column])

    checks = [
        (
            allocations,
            none_in(allocations, "consumer_id", consumers, "uuid"),
            f"allocations whose consumer does not exist ({online})",
        ),
        (
            rps,
            rps.c.root_provider_id.is_(None),
            f"resource providers without a root provider ({online})",
        ),
        (
            t["placement_aggregates"],
            t["placement_aggregates"].c.uuid.is_(None),
            "aggregates without a uuid (no request can name them: delete them)",
        ),
        (
            rps,
            and_(rps.c.name.is_(None), exists().where(named.c.name == rps.c.uuid)),
            "providers without a name whose uuid is the name of another provider (name them)",
        ),
    ]
    for table, column, target in (
        (t["inventories"], "resource_provider_id", rps),
        (t["inventories"], "resource_class_id", t["resource_classes"]),
        (allocations, "resource_provider_id", rps),
        (allocations, "resource_class_id", t["resource_classes"]),
        (t["resource_provider_aggregates"], "resource_provider_id", rps),
        (t["resource_provider_aggregates"], "aggregate_id", t["placement_aggregates"]),
        (consumers, "project_id", t["projects"]),
        (consumers, "user_id", t["users"]),
    ):
        checks.append(
            (
                table,
                none_in(table, column, target),
                f"{table.name} rows whose {column} names no row of {target.name} "
                "(left behind by a write outside the API: delete them)",
            )
        )
    typed = consumers.c.consumer_type_id
    checks.append(
        (
            consumers,
            and_(typed.is_not(None), none_in(consumers, "consumer_type_id", t["consumer_types"])),
            "consumers whose consumer type does not exist (set consumer_type_id to NULL)",
        )
    )
    problems = []
    for table, condition, what in checks:
        count = conn.execute(select(func.count()).select_from(table).where(condition)).scalar()
        if count:
            problems.append(f"{count} {what}")
    return problems


def plan(conn: Connection) -> list[str]:
    """What ``adopt`` will do to this database, in words, with counts."""
    t = THEIRS.tables

    def count(table: str, condition=None) -> int:
        query = select(func.count()).select_from(t[table])
        return conn.execute(query if condition is None else query.where(condition)).scalar_one()

    rps = t["resource_providers"]
    lines = [
        f"this is upstream openstack-placement's database (revision {UPSTREAM_HEAD}): "
        f"{count('resource_providers')} providers, {count('consumers')} consumers, "
        f"{count('allocations')} allocations, "
        f"{count('resource_classes', t['resource_classes'].c.id >= 10000)} custom resource "
        f"classes, {count('traits', t['traits'].c.name.startswith('CUSTOM_'))} custom traits",
        "it becomes this service's schema in place, every id, uuid, name, generation and "
        "timestamp kept; an allocation names its consumer by id instead of uuid",
    ]
    unnamed = count("resource_providers", rps.c.name.is_(None))
    if unnamed:
        lines.append(f"{unnamed} providers without a name take their uuid as name")
    ungenerated = count("resource_providers", rps.c.generation.is_(None))
    if ungenerated:
        lines.append(f"{ungenerated} providers with no generation get generation 0")
    undated = sum(count(name, t[name].c.created_at.is_(None)) for name in UPSTREAM_TABLES)
    if undated:
        lines.append(
            f"{undated} rows without a creation time take their update time, "
            "else the time of adoption"
        )
    if conn.dialect.name == "mysql":
        lines.append(
            "MySQL commits each step by itself: if this stops halfway, run it "
            "again (upstream's tables are kept as upstream_* until the end)"
        )
    return lines


def _fill(conn: Connection) -> list[Table]:
    """Fill this service's tables (as revision ``FILLED_AT`` made them) from upstream's,
    moved aside; the tables filled."""
    ours = MetaData()
    ours.reflect(conn, only=list(UPSTREAM_TABLES))
    now = utcnow()
    for name in UPSTREAM_TABLES:
        table, theirs = ours.tables[name], MOVED.tables[ASIDE + name]
        values: dict[str, ColumnElement] = {
            "created_at": func.coalesce(
                theirs.c.created_at, theirs.c.updated_at, literal(now, table.c.created_at.type)
            )
        }
        joined = None
        if name == "resource_providers":
            values["name"] = func.coalesce(theirs.c.name, theirs.c.uuid)
            values["generation"] = func.coalesce(theirs.c.generation, 0)
            values["root_provider_id"] = values["parent_provider_id"] = null()
        if name == "inventories" and conn.dialect.name == "mysql":
            values["allocation_ratio"] = _as_shown(theirs.c.allocation_ratio)
        if name == "allocations":
            consumers = ours.tables["consumers"]
            values["consumer_id"] = consumers.c.id
            joined = theirs.join(consumers, consumers.c.uuid == theirs.c.consumer_id)
        rebuild.fill(conn, table, theirs, values, joined)
    rebuild.link_providers(
        conn, ours.tables["resource_providers"], MOVED.tables[ASIDE + "resource_providers"]
    )
    return [ours.tables[name] for name in UPSTREAM_TABLES]


def _as_shown(ratio: ColumnElement) -> ColumnElement:
    """MySQL: an allocation ratio as upstream showed it. Upstream's column there is a
    4-byte FLOAT, which MySQL sends as text of 6 digits (1.1 reads back as 1.1); widened
    to a DOUBLE as it is stored, it would read 1.100000023841858."""
    return literal_column(f"CAST(CAST({ratio.table.name}.{ratio.name} AS CHAR) AS DOUBLE)")
