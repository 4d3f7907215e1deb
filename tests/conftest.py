"""Fixtures: a migrated database on each backend, a fresh app per test, an API client.

Every database test runs three times: on SQLite, on PostgreSQL and on MariaDB
(the MySQL backend). PostgreSQL comes from PLACEMENT_TEST_POSTGRES_URL, or a
throwaway server started from the local binaries; MariaDB from
PLACEMENT_TEST_MYSQL_URL, or a throwaway server started from Debian's
``mariadb-server`` binaries (installed first when absent and the suite runs as
root, as CI does). Without a server the runs on its backend are skipped, except
with CI=true, where that is an error.
"""

import contextlib
import os
import uuid

import pytest
import sqlalchemy as sa

from placement.app import create_app
from placement.config import Config
from placement.db import migrate
from placement.db.engine import make_engine
from placement.db.tables import metadata
from placement.services import Services
from tests import mysqlserver, pgserver

IN_CI = os.environ.get("CI", "").lower() == "true"
BACKENDS = ("sqlite", "postgresql", "mysql")
LATEST = "1.39"


def _server_url(variable: str | None, start, unavailable: type[Exception], label: str):
    """The URL ``variable`` names, else that of a throwaway server ``start()`` gives,
    stopped afterwards; without one, the tests that need it skip (fail with CI=true)."""
    given = os.environ.get(variable) if variable else None
    if given:
        yield given
        return
    try:
        server = start()
    except unavailable as exc:
        if IN_CI:
            pytest.fail(f"CI=true and {label} cannot be started: {exc}")
        pytest.skip(f"{label} unavailable: {exc}")
    yield server.url
    server.stop()


@pytest.fixture(scope="session")
def postgres_server_url():
    """URL of a PostgreSQL server's maintenance database."""
    yield from _server_url(
        "PLACEMENT_TEST_POSTGRES_URL", pgserver.start, pgserver.PostgresUnavailable, "PostgreSQL"
    )


@pytest.fixture(scope="module")
def lone_postgres():
    """A factory of new databases on a PostgreSQL server of the module's own, which no
    other test uses meanwhile: for what depends on every transaction running on the
    server (the change log is not pruned past the oldest one, migration 0015)."""
    servers = _server_url(None, pgserver.start, pgserver.PostgresUnavailable, "PostgreSQL")
    server_url = next(servers)
    yield lambda: _fresh_postgres_database(server_url)
    next(servers, None)


@pytest.fixture(scope="session")
def mysql_server_url():
    """URL of a MariaDB (or MySQL) server, as its root user."""
    yield from _server_url(
        "PLACEMENT_TEST_MYSQL_URL", mysqlserver.start, mysqlserver.MysqlUnavailable, "MariaDB"
    )


def _fresh_mysql_database(server_url: str) -> str:
    """Create an empty database on the server and return its URL."""
    name = f"placement_test_{uuid.uuid4().hex[:12]}"
    admin = make_engine(server_url)
    with admin.connect() as conn:
        conn.exec_driver_sql(f"CREATE DATABASE `{name}`")
    admin.dispose()
    return sa.engine.make_url(server_url).set(database=name).render_as_string(hide_password=False)


def _fresh_postgres_database(server_url: str) -> str:
    """Create an empty database on the server and return its URL."""
    name = f"placement_test_{uuid.uuid4().hex[:12]}"
    admin = make_engine(server_url).execution_options(isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    admin.dispose()
    return sa.engine.make_url(server_url).set(database=name).render_as_string(hide_password=False)


@pytest.fixture(scope="session")
def empty_database_url(request, tmp_path_factory):
    """A factory of URLs of new, empty databases on a backend."""

    def make(backend: str) -> str:
        if backend == "sqlite":
            folder = tmp_path_factory.mktemp("sqlite")
            return f"sqlite:///{folder}/placement.sqlite"
        if backend == "mysql":
            return _fresh_mysql_database(request.getfixturevalue("mysql_server_url"))
        return _fresh_postgres_database(request.getfixturevalue("postgres_server_url"))

    return make


@pytest.fixture(scope="session", params=BACKENDS)
def backend(request) -> str:
    return request.param


@pytest.fixture(scope="session")
def migrated_engines():
    engines: dict[str, sa.Engine] = {}
    yield engines
    for engine in engines.values():
        engine.dispose()


@pytest.fixture
def engine(backend, empty_database_url, migrated_engines):
    """An engine on a migrated database of ``backend``, emptied after each test."""
    if backend not in migrated_engines:
        engine = make_engine(empty_database_url(backend))
        migrate.upgrade(engine)
        migrated_engines[backend] = engine
    engine = migrated_engines[backend]
    pruned_below = _pruned_below(engine)
    yield engine
    _empty(engine, pruned_below)


def _pruned_below(engine: sa.Engine) -> int | None:
    with engine.connect() as conn:
        return _pruned_below_in(conn)


def _pruned_below_in(conn: sa.Connection) -> int | None:
    return conn.execute(
        sa.text("SELECT pruned_below FROM provider_changes_state WHERE id = 1")
    ).scalar_one_or_none()


def _empty(engine: sa.Engine, pruned_below: int | None) -> None:
    """Every row a test wrote deleted; and the change log's pruned position put back
    where the test found it, should the test have declared the log pruned: on
    PostgreSQL positions are transaction ids, and one declared far ahead would leave
    every reader of the tests after it below it, reading every provider again on each
    request. The log then starts over under a new name, as no copy may trust the
    entries it was told about."""
    keep = {"resource_classes", "traits", "alembic_version", "provider_changes_state"}
    with engine.begin() as conn:
        if engine.dialect.name == "mysql":
            # InnoDB checks a foreign key at each row, not at the statement's end: a
            # provider deleted before its children would break theirs.
            rp = metadata.tables["resource_providers"]
            conn.execute(rp.update().values(parent_provider_id=None, root_provider_id=None))
        for table in reversed(metadata.sorted_tables):
            if table.name not in keep:
                conn.execute(table.delete())
        for name in ("resource_classes", "traits"):
            table = metadata.tables[name]
            conn.execute(table.delete().where(table.c.name.like("CUSTOM\\_%", escape="\\")))
        if pruned_below is not None and _pruned_below_in(conn) != pruned_below:
            conn.execute(
                sa.text(
                    "UPDATE provider_changes_state SET pruned_below = :below,"
                    " incarnation = :incarnation WHERE id = 1"
                ),
                {"below": pruned_below, "incarnation": uuid.uuid4().hex},
            )


@pytest.fixture
def config(engine) -> Config:
    return Config(database_url=engine.url.render_as_string(hide_password=False))


@pytest.fixture
def app(config, engine):
    return create_app(config, engine=engine)


class Api:
    """The Flask test client with the admin token and a microversion by default."""

    @property
    def services(self) -> Services:
        """The application's services: its searches' front doors and what they keep."""
        return self.client.application.extensions["placement"]

    def __init__(self, client, version: str = LATEST) -> None:
        self.client = client
        self.version = version

    @contextlib.contextmanager
    def as_a_new_worker(self):
        """Requests answered as by a new worker: services that keep nothing yet (the
        application's own are put back afterwards, with all they keep)."""
        extensions = self.client.application.extensions
        kept = extensions["placement"]
        extensions["placement"] = Services.build(kept.config, kept.engine)
        try:
            yield
        finally:
            extensions["placement"] = kept

    def headers(self, version=None, token="admin", extra=None) -> dict:
        headers = {"OpenStack-API-Version": f"placement {version or self.version}"}
        if token is not None:
            headers["X-Auth-Token"] = token
        headers.update(extra or {})
        return headers

    def request(self, method, path, version=None, token="admin", headers=None, **kwargs):
        return self.client.open(
            path,
            method=method,
            headers=self.headers(version, token, headers),
            **kwargs,
        )

    def get(self, path, **kwargs):
        return self.request("GET", path, **kwargs)

    def post(self, path, **kwargs):
        return self.request("POST", path, **kwargs)

    def put(self, path, **kwargs):
        return self.request("PUT", path, **kwargs)

    def delete(self, path, **kwargs):
        return self.request("DELETE", path, **kwargs)

    # Shortcuts for building fixtures through the API itself.

    def create_provider(self, name, uuid=None, parent=None):
        body = {"name": name}
        if uuid:
            body["uuid"] = uuid
        if parent:
            body["parent_provider_uuid"] = parent
        response = self.post("/resource_providers", json=body)
        assert response.status_code == 200, response.json
        return response.json

    def generation(self, provider_uuid) -> int:
        return self.get(f"/resource_providers/{provider_uuid}").json["generation"]

    def set_inventory(self, provider_uuid, **inventories):
        body = {
            "resource_provider_generation": self.generation(provider_uuid),
            "inventories": {
                name: (value if isinstance(value, dict) else {"total": value})
                for name, value in inventories.items()
            },
        }
        response = self.put(f"/resource_providers/{provider_uuid}/inventories", json=body)
        assert response.status_code == 200, response.json
        return response.json

    def set_traits(self, provider_uuid, *traits):
        for trait in traits:
            if trait.startswith("CUSTOM_"):
                self.put(f"/traits/{trait}")
        body = {"resource_provider_generation": self.generation(provider_uuid), "traits": traits}
        response = self.put(f"/resource_providers/{provider_uuid}/traits", json=body)
        assert response.status_code == 200, response.json
        return response.json

    def allocate(self, consumer, allocations, generation=None, project="p", user="u"):
        """PUT /allocations/{consumer} of ``{provider uuid: {class: amount}}`` (an
        INSTANCE); the response, for the caller to check."""
        body = {
            "allocations": {rp: {"resources": res} for rp, res in allocations.items()},
            "project_id": project,
            "user_id": user,
            "consumer_generation": generation,
            "consumer_type": "INSTANCE",
        }
        return self.put(f"/allocations/{consumer}", json=body)

    def set_aggregates(self, provider_uuid, *aggregates):
        body = {
            "resource_provider_generation": self.generation(provider_uuid),
            "aggregates": list(aggregates),
        }
        response = self.put(f"/resource_providers/{provider_uuid}/aggregates", json=body)
        assert response.status_code == 200, response.json
        return response.json


@pytest.fixture
def api(app) -> Api:
    return Api(app.test_client())


def error_code(response) -> str | None:
    """The ``code`` of the single error in an error response."""
    return response.json["errors"][0].get("code")
