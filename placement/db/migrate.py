"""Applying and checking Alembic migrations from code (the CLI and the tests use this)."""

import os

from alembic import command
from alembic.config import Config as AlembicConfig
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Column, Connection, Engine, MetaData, String, Table, inspect

from placement.db.upstream_schema import UPSTREAM_REVISIONS

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MIGRATIONS_DIR = os.path.join(REPO_ROOT, "migrations")


class SchemaOutOfDate(RuntimeError):
    """The database is not at the latest migration."""


def alembic_config() -> AlembicConfig:
    config = AlembicConfig()
    config.set_main_option("script_location", MIGRATIONS_DIR)
    return config


def head_revision() -> str | None:
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def known_revision(revision: str) -> bool:
    return ScriptDirectory.from_config(alembic_config()).get_revision(revision) is not None


def upgrade(engine: Engine, revision: str = "head") -> None:
    with engine.begin() as conn:
        upgrade_on(conn, revision)


def upgrade_on(conn: Connection, revision: str = "head") -> None:
    """Apply the migrations up to ``revision`` on ``conn``, in its transaction."""
    current = MigrationContext.configure(conn).get_current_revision()
    if current is not None and not _ours(current):
        raise SchemaOutOfDate(_foreign(current))
    config = alembic_config()
    config.attributes["connection"] = conn
    command.upgrade(config, revision)


def _ours(revision: str) -> bool:
    try:
        return known_revision(revision)
    except Exception:  # Alembic's lookup raises on an id it cannot resolve
        return False


def _foreign(revision: str) -> str:
    if revision in UPSTREAM_REVISIONS:
        return (
            f"The database is upstream openstack-placement's (revision {revision}): "
            "run 'placement db upgrade' to take it over."
        )
    return f"The database is at revision {revision}, which this service does not know."


def require_current(engine: Engine) -> None:
    current, head = current_revision(engine), head_revision()
    if current is not None and not _ours(current):
        raise SchemaOutOfDate(_foreign(current))
    if current != head:
        raise SchemaOutOfDate(
            f"The database schema is at revision {current or 'none'}, not {head}: "
            "run 'placement db upgrade'."
        )


def write_revision(conn: Connection, revision: str | None) -> None:
    """Set the revision Alembic reads (``None``: no revision, as a new database), any
    revision, even one of upstream's that this service's migrations do not know."""
    versions = Table("alembic_version", MetaData(), Column("version_num", String(32)))
    if not inspect(conn).has_table("alembic_version"):
        versions.create(conn)
    conn.execute(versions.delete())
    if revision is not None:
        conn.execute(versions.insert().values(version_num=revision))
