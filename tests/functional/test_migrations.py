"""The Alembic migrations build exactly the schema that placement.db.tables describes."""

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from placement.db import migrate
from placement.db.engine import make_engine
from placement.db.tables import metadata


@pytest.mark.parametrize("target", ["sqlite", "postgresql"])
def test_models_match_migrations(target, empty_database_url):
    engine = make_engine(empty_database_url(target))
    migrate.upgrade(engine)
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        differences = compare_metadata(context, metadata)
    engine.dispose()
    assert differences == []


@pytest.mark.parametrize("target", ["sqlite", "postgresql"])
def test_downgrade_then_upgrade_round_trips(target, empty_database_url):
    engine = make_engine(empty_database_url(target))
    migrate.upgrade(engine)
    assert migrate.current_revision(engine) == migrate.head_revision()
    from alembic import command

    config = migrate.alembic_config()
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, "base")
    assert migrate.current_revision(engine) is None
    migrate.upgrade(engine)
    assert migrate.current_revision(engine) == migrate.head_revision()
    engine.dispose()
