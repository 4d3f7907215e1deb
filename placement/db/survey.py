"""What kind of database a URL opens: this service's, upstream's, or one stopped halfway
between the two (MySQL commits each step of a rebuild by itself)."""

from dataclasses import dataclass

from alembic.runtime.migration import MigrationContext
from sqlalchemy import Connection, String, inspect

from placement.db import migrate, rebuild
from placement.db.tables import metadata
from placement.db.upstream_schema import UPSTREAM_HEAD, UPSTREAM_REVISIONS, UPSTREAM_TABLES

# The kinds of database, and what each is.
KINDS = {
    "empty": "no table yet",
    "ours": "this service's",
    "upstream": "upstream openstack-placement 16.0.0's",
    "upstream-older": "upstream openstack-placement's, at an older revision",
    "upstream-unversioned": "upstream openstack-placement's tables without Alembic's "
    "revision (copied out of nova_api?)",
    "adopting": "upstream's, its adoption stopped halfway",
    "adopted": "this service's, upstream's old tables not all dropped yet",
    "giving-back": "this service's, its return to upstream stopped halfway",
    "given-back": "upstream's, this service's old tables not all dropped yet",
    "unknown": "neither this service's nor upstream's",
}


@dataclass(frozen=True)
class Survey:
    kind: str  # one of KINDS
    revision: str | None

    @property
    def described(self) -> str:
        return f"{KINDS[self.kind]} (revision {self.revision or 'none'})"


def survey(conn: Connection) -> Survey:
    present = rebuild.present_tables(conn)
    revision = MigrationContext.configure(conn).get_current_revision()

    def moved_aside(prefix: str) -> bool:
        return any(prefix + name in present for name in UPSTREAM_TABLES)

    if moved_aside(rebuild.UPSTREAM_ASIDE):
        return Survey("adopted" if revision == migrate.head_revision() else "adopting", revision)
    if moved_aside(rebuild.OURS_ASIDE):
        return Survey("given-back" if revision == UPSTREAM_HEAD else "giving-back", revision)
    if revision == UPSTREAM_HEAD:
        return Survey("upstream", revision)
    if revision in UPSTREAM_REVISIONS:
        return Survey("upstream-older", revision)
    if revision is not None and migrate.known_revision(revision):
        return Survey("ours", revision)
    if revision is None:
        tables = present - {"alembic_version"}
        if not tables:
            return Survey("empty", None)
        if "allocations" in tables and _consumers_named_by_uuid(conn):
            return Survey("upstream-unversioned", None)
        if tables <= set(metadata.tables):
            # On MySQL, this service's first revision stopped halfway (each DDL statement
            # commits): running it again finishes it.
            return Survey("ours", None)
    return Survey("unknown", revision)


def _consumers_named_by_uuid(conn: Connection) -> bool:
    """Whether allocations name their consumer by uuid (a string), as upstream's do."""
    column = next(c for c in inspect(conn).get_columns("allocations") if c["name"] == "consumer_id")
    return isinstance(column["type"], String)
