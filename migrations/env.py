"""Alembic environment: runs revisions against the configured database.

The URL comes, in order, from a connection handed over by
``placement.db.migrate`` (``config.attributes["connection"]``), the
``sqlalchemy.url`` option, or the placement configuration
(``PLACEMENT_DATABASE_URL`` / the configuration file).
"""

from alembic import context

from placement.config import load_config
from placement.db.engine import is_sqlite, make_engine
from placement.db.tables import metadata

config = context.config


def _run(connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    url = config.get_main_option("sqlalchemy.url") or load_config().database_url
    engine = make_engine(url)
    with engine.connect() as connection:
        if is_sqlite(url):
            connection.commit()
        _run(connection)
    engine.dispose()


def run_migrations_offline() -> None:
    url = config.get_main_option("sqlalchemy.url") or load_config().database_url
    context.configure(url=url, target_metadata=metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
