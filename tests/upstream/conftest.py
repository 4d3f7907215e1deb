"""Fixtures for running upstream's gabbi files: this service on a fresh database per file."""

import pytest
import sqlalchemy as sa

from placement.app import create_app
from placement.config import Config
from placement.db import migrate
from placement.db.engine import make_engine


@pytest.fixture
def fresh_service(request, empty_database_url):
    """A maker of this service (a Flask app, given the configuration's settings) on a new,
    migrated database of the backend in ``request.param``.

    A gabbi file expects an empty service, so each file gets its own database (and
    its own application, so nothing kept by an earlier file's is seen).
    """
    backend = request.param
    url = empty_database_url(backend)
    server_fixture = {"postgresql": "postgres_server_url", "mysql": "mysql_server_url"}
    server_url = request.getfixturevalue(server_fixture[backend]) if backend != "sqlite" else None
    engine = make_engine(url)
    migrate.upgrade(engine)
    try:
        yield lambda **settings: create_app(Config(database_url=url, **settings), engine=engine)
    finally:
        engine.dispose()
        if server_url is not None:
            _drop_database(server_url, url)


def _drop_database(server_url: str, url: str) -> None:
    """Drop a database made by ``empty_database_url`` so runs leave nothing behind on a
    server given by PLACEMENT_TEST_POSTGRES_URL or PLACEMENT_TEST_MYSQL_URL."""
    name = sa.engine.make_url(url).database
    admin = make_engine(server_url).execution_options(isolation_level="AUTOCOMMIT")
    quote = "`" if admin.dialect.name == "mysql" else '"'
    try:
        with admin.connect() as conn:
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {quote}{name}{quote}")
    finally:
        admin.dispose()
