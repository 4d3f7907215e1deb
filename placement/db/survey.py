"""What kind of database a URL opens: this service's, upstream's, or one stopped halfway
between the two (MySQL commits each step of a rebuild by itself)."""

from dataclasses import dataclass

from alembic.runtime.migration import MigrationContext
from sqlalchemy import Connection

from placement.db import migrate, rebuild
from placement.db.upstream_schema import UPSTREAM_HEAD, UPSTREAM_REVISIONS, UPSTREAM_TABLES

# The kinds of database, and what each is.
KINDS = {
    "empty": "no table yet",
    "ours": "this service's",
    "upstream": "upstream openstack-placement 16.0.0's",
    "upstream-older": "upstream openstack-placement's, at an older revision",
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
    if revision is None and not (present - {"alembic_version"}):
        return Survey("empty", None)
    return Survey("unknown", revision)
