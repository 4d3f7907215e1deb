"""The Alembic migrations build exactly the schema that placement.db.tables describes."""

import uuid

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


@pytest.mark.parametrize("target", ["sqlite", "postgresql"])
def test_device_nodes_imported_before_0006_get_the_device_node_trait(target, empty_database_url):
    """A device node's root is told by its trait from 0006 on; the device nodes already
    imported get it on upgrade (and a new revision, so running copies re-read them)."""
    from datetime import datetime

    from sqlalchemy import text

    engine = make_engine(empty_database_url(target))
    migrate.upgrade(engine, "0005")
    with engine.begin() as conn:
        for name in ("device-node", "plain-node"):
            conn.execute(text(
                "INSERT INTO resource_providers (uuid, name, generation, created_at)"
                " VALUES (:uuid, :name, 3, :now)"
            ), {"uuid": str(uuid.uuid4()), "name": name, "now": datetime.now()})
        conn.execute(text("UPDATE resource_providers SET root_provider_id = id"))
        conn.execute(text(
            "INSERT INTO device_topologies (node_name, document, created_at)"
            " VALUES ('device-node', '{}', :now)"
        ), {"now": datetime.now()})
    migrate.upgrade(engine)
    query = text(
        "SELECT rp.name, rp.generation, rp.revision FROM resource_providers rp"
        " JOIN resource_provider_traits rpt ON rpt.resource_provider_id = rp.id"
        " JOIN traits t ON t.id = rpt.trait_id"
        " WHERE t.name = 'CUSTOM_GROUP_RESOURCES_DEVICE_NODE'"
    )
    with engine.connect() as conn:
        assert [tuple(row) for row in conn.execute(query)] == [("device-node", 3, 1)]
    from alembic import command

    config = migrate.alembic_config()
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, "0005")
    with engine.connect() as conn:
        assert conn.execute(query).all() == []
    engine.dispose()
