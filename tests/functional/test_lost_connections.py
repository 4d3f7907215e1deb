"""Connections lost under a running service, on PostgreSQL and MariaDB.

No connection is pinged as it leaves the pool (``placement.db.engine``). A lost one is
found by the first statement sent on it, which reports it as SQLAlchemy does (even when
it goes through the driver's own cursor: ``placement.db.driver_errors``), and a request
that met one runs again on a new connection (``placement.endpoints``). Here: the copy's
reads through the driver report a lost connection as SQLAlchemy would, and the database
restarted under a running application is never seen by a client.
"""

import os

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import DBAPIError

from placement.app import create_app
from placement.cli.common import command_engine
from placement.config import Config
from placement.data import provider_world
from placement.db import migrate
from placement.db.engine import make_engine
from tests import mysqlserver, pgserver
from tests.conftest import Api
from tests.lost_connections import POOLED, kill_connections, pool_several_connections

LOST_CONNECTION_BACKENDS = ["postgresql", "mysql"]
# The copy's reads through the driver's cursor: one statement, and (PostgreSQL) two sent
# together.
DRIVER_READS = {
    "one statement": provider_world.class_names,
    "two together": lambda conn: provider_world.changes_since(conn, None),
}


@pytest.mark.parametrize("read", DRIVER_READS.values(), ids=DRIVER_READS.keys())
@pytest.mark.parametrize("backend", LOST_CONNECTION_BACKENDS)
def test_a_lost_connection_met_by_the_copys_reads_is_reported_as_sqlalchemy_would(
    engine, backend, read
):
    """This fails should SQLAlchemy change what ``driver_errors`` calls of it (private):
    the driver's error wrapped and marked, the connection invalidated, and the pool's
    older connections replaced at their next checkout."""
    pool_several_connections(engine)
    with engine.connect() as conn:
        conn.exec_driver_sql("SELECT 1")
        kill_connections(engine)
        with pytest.raises(DBAPIError) as raised:
            read(conn)
        assert raised.value.connection_invalidated
        assert isinstance(raised.value.orig, engine.dialect.loaded_dbapi.Error)
        assert conn.invalidated
    held = [engine.connect() for _ in range(POOLED)]
    try:
        for conn in held:
            assert conn.exec_driver_sql("SELECT 1").scalar() == 1
    finally:
        for conn in held:
            conn.close()


def test_a_statement_refused_on_the_drivers_cursor_leaves_the_connection_be(engine):
    """Any other error of the driver's: wrapped as SQLAlchemy wraps it, the connection kept."""
    with engine.connect() as conn:
        with pytest.raises(DBAPIError) as raised:
            provider_world._fetch(conn, "SELECT nothing FROM nowhere")
        assert not raised.value.connection_invalidated
        assert not conn.invalidated


@pytest.mark.parametrize("backend", LOST_CONNECTION_BACKENDS)
def test_a_commands_engine_opens_a_new_connection_for_each_use(engine, backend):
    """The commands keep no connection between two uses (``cli.common.command_engine``):
    none can be lost meanwhile."""
    url = engine.url.render_as_string(hide_password=False)
    command = command_engine(url, Config(database_url=url))
    server_id = "SELECT pg_backend_pid()" if backend == "postgresql" else "SELECT CONNECTION_ID()"
    try:
        ids = set()
        for _ in range(2):
            with command.connect() as conn:
                ids.add(conn.exec_driver_sql(server_id).scalar())
        assert len(ids) == 2
    finally:
        command.dispose()


# A server of the test's own, restarted (its connections dropped) before each request.
@pytest.mark.slow
@pytest.mark.parametrize("backend", LOST_CONNECTION_BACKENDS)
def test_a_database_restarted_under_a_running_service(backend):
    server, url = _start(backend)
    engine = make_engine(url)
    try:
        migrate.upgrade(engine)
        api = Api(create_app(Config(database_url=url), engine=engine).test_client())
        provider = api.create_provider("cn1")["uuid"]
        api.set_inventory(provider, VCPU=8)
        candidates = "/allocation_candidates?resources=VCPU:1&limit=10"
        assert api.get(candidates).status_code == 200
        requests = {
            "a cached read of the copy": lambda: api.get(candidates),
            "a plain read": lambda: api.get("/resource_providers"),
            "a write": lambda: api.post("/resource_providers", json={"name": "after"}),
            "the readiness probe": lambda: api.get("/healthcheck/ready"),
        }
        for name, request in requests.items():
            pool_several_connections(api.services.engine)
            server = _restart(backend, server)
            response = request()
            assert response.status_code == 200, (name, response.json)
        listed = api.get("/resource_providers").json["resource_providers"]
        assert sorted(p["name"] for p in listed) == ["after", "cn1"]
    finally:
        engine.dispose()
        server.stop()


def _start(backend: str):
    if backend == "postgresql":
        server = pgserver.start()
        return server, server.url
    try:
        server = mysqlserver.start()
    except mysqlserver.MysqlUnavailable as exc:
        pytest.skip(f"MariaDB unavailable: {exc}")
    admin = make_engine(server.url)
    with admin.connect() as conn:
        conn.exec_driver_sql("CREATE DATABASE placement")
    admin.dispose()
    url = sa.engine.make_url(server.url).set(database="placement")
    return server, url.render_as_string(hide_password=False)


def _restart(backend: str, server):
    if backend == "postgresql":
        server.restart()
        return server
    server.stop(remove=False)
    datadir = os.path.join(server.base, "data")
    return mysqlserver.launch(server.base, datadir, server.port, server.extra_options)
