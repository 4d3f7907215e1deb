"""Hostile input and a hostile network: each answered in the API's error format, never 500.

Deeply nested JSON and lone surrogates (400), noauth2 from a remote client (403,
on every entry point), bodies over ``max_request_body_mib`` (413), a database
that cannot be reached (503 with Retry-After, then recovery without a restart),
connections the server dropped (replaced, unseen by the client) and a COMMIT whose
answer was lost (503, never run again).
"""

import contextlib
import dataclasses
import importlib
import io
import sys
import uuid

import psycopg
import pymysql
import pytest
import sqlalchemy as sa

from placement.app import create_app
from placement.data import consumers as consumer_data
from placement.db.engine import make_engine
from tests import frozen
from tests.conftest import Api
from tests.lost_connections import kill_connections, pool_several_connections

PROVIDER = "7c6a1e5e-1b8d-4a49-9d2c-0d8c2b1b6a11"
CONSUMER = "3f0c9a4e-5d2b-4c1e-8a7f-6b9e2d1c0a55"

# Every route that reads a JSON body (the provider exists; the rest need not).
BODY_ROUTES = [
    ("POST", "/resource_providers"),
    ("PUT", f"/resource_providers/{PROVIDER}"),
    ("PUT", f"/resource_providers/{PROVIDER}/inventories"),
    ("POST", f"/resource_providers/{PROVIDER}/inventories"),
    ("PUT", f"/resource_providers/{PROVIDER}/inventories/VCPU"),
    ("PUT", f"/resource_providers/{PROVIDER}/aggregates"),
    ("PUT", f"/resource_providers/{PROVIDER}/traits"),
    ("POST", "/resource_classes"),
    ("PUT", f"/allocations/{CONSUMER}"),
    ("POST", "/allocations"),
    ("POST", "/reshaper"),
    ("PUT", "/group_resources/nodes/node-1"),
    ("POST", "/group_resources/queries"),
    ("POST", "/group_resources/candidates"),
    ("POST", "/group_resources/claims"),
    ("PUT", "/group_resources/device_nodes/node-1"),
    ("POST", "/group_resources/device_candidates"),
    ("POST", "/group_resources/device_claims"),
]


def assert_error(response, status: int) -> dict:
    assert response.status_code == status, response.get_data(as_text=True)
    [error] = response.json["errors"]
    assert error["status"] == status
    assert error["request_id"].startswith("req-")
    return error


@pytest.fixture
def provider(api):
    return api.create_provider("hardening", uuid=PROVIDER)


# 2. Deeply nested JSON.


@pytest.mark.parametrize(("method", "path"), BODY_ROUTES)
def test_deeply_nested_json_is_400(api, provider, method, path):
    body = "[" * 1000 + "]" * 1000
    response = api.request(method, path, data=body, content_type="application/json")
    error = assert_error(response, 400)
    assert "nested too deeply" in error["detail"]


def test_nesting_a_client_might_send_is_still_read(api):
    body = {"name": "nested", "uuid": str(uuid.uuid4())}
    response = api.post("/resource_providers", json=body)
    assert response.status_code == 200


# 3. Lone surrogates, escaped in JSON or as raw (invalid UTF-8) bytes.

ESCAPED = b"\\ud800"
RAW = b"\xed\xa0\x80"


def _body(template: str, surrogate: bytes) -> bytes:
    return template.encode().replace(b"@", surrogate)


@pytest.mark.parametrize("surrogate", [ESCAPED, RAW], ids=["escaped", "raw"])
@pytest.mark.parametrize(
    ("method", "path", "template"),
    [
        ("POST", "/resource_providers", '{"name": "@"}'),
        ("PUT", f"/resource_providers/{PROVIDER}", '{"name": "@"}'),
        ("POST", "/resource_classes", '{"name": "CUSTOM_@"}'),
        (
            "PUT",
            f"/allocations/{CONSUMER}",
            '{"allocations": {}, "project_id": "@", "user_id": "u", '
            '"consumer_generation": null, "consumer_type": "INSTANCE"}',
        ),
        (
            "PUT",
            f"/allocations/{CONSUMER}",
            '{"allocations": {}, "project_id": "p", "user_id": "@", '
            '"consumer_generation": null, "consumer_type": "INSTANCE"}',
        ),
        ("PUT", f"/resource_providers/{PROVIDER}/aggregates", '{"@": 1}'),
        ("PUT", "/group_resources/nodes/node-1", '{"nodes": ["@"]}'),
    ],
)
def test_a_lone_surrogate_in_a_body_is_400(api, provider, method, path, template, surrogate):
    response = api.request(
        method, path, data=_body(template, surrogate), content_type="application/json"
    )
    error = assert_error(response, 400)
    assert "surrogate" in error["detail"]


def test_a_surrogate_pair_is_a_character(api):
    response = api.post(
        "/resource_providers",
        data=b'{"name": "emoji \\ud83d\\ude00"}',
        content_type="application/json",
    )
    assert response.status_code == 200, response.json
    assert response.json["name"] == "emoji \U0001f600"


def test_a_utf16_body_with_a_lone_surrogate_is_400(api):
    body = '{"name": "x"}'.encode("utf-16-le").replace(b"x\x00", b"\x00\xd8")
    response = api.post("/resource_providers", data=body, content_type="application/json")
    assert_error(response, 400)


@pytest.mark.parametrize(
    "url",
    [
        "/resource_providers?name=%ED%A0%80",
        "/resource_providers?member_of=%ED%A0%80",
        "/resource_providers?required=%ED%A0%80",
        "/resource_providers?resources=%ED%A0%80:1",
        "/resource_providers/%ED%A0%80",
        "/resource_providers/%ED%A0%80/inventories/%ED%A0%80",
        "/resource_classes/CUSTOM_%ED%A0%80",
        "/traits/CUSTOM_%ED%A0%80",
        "/traits?name=in:%ED%A0%80",
        "/usages?project_id=%ED%A0%80",
        "/usages?project_id=p&user_id=%ED%A0%80",
        "/allocations/%ED%A0%80",
        "/allocation_candidates?resources=VCPU:1&required=%ED%A0%80",
        "/allocation_candidates?resources%ED%A0%80=VCPU:1",
        "/group_resources/nodes/%ED%A0%80",
        "/group_resources/device_nodes/%ED%A0%80",
    ],
)
def test_a_lone_surrogate_in_a_url_is_not_a_server_error(api, url):
    # Werkzeug decodes URLs replacing invalid UTF-8, and a URL cannot escape a
    # surrogate as JSON does: these are names like any other (found, absent or
    # refused by the grammar).
    for path in (url, url.replace("%ED%A0%80", "%5Cud800")):
        response = api.get(path)
        assert response.status_code < 500, (path, response.json)


# 4. noauth2 answers loopback clients only, whatever serves the application.


def remote(address: str) -> dict:
    return {"environ_base": {"REMOTE_ADDR": address}}


@pytest.mark.parametrize(
    "address", ["203.0.113.5", "10.0.0.7", "2001:db8::1", "::ffff:203.0.113.5"]
)
def test_noauth2_refuses_a_remote_client(api, address):
    for path in ("/", "/resource_providers"):
        error = assert_error(api.get(path, **remote(address)), 403)
        assert "loopback" in error["detail"]


@pytest.mark.parametrize("address", ["127.0.0.1", "127.8.0.1", "::1", "::ffff:127.0.0.1", ""])
def test_noauth2_serves_loopback_and_unix_socket_clients(api, address):
    assert api.get("/resource_providers", **remote(address)).status_code == 200


def test_noauth2_serves_a_remote_client_when_allowed(config, engine):
    app = create_app(config.replace(allow_noauth_on_public_address=True), engine=engine)
    response = Api(app.test_client()).get("/resource_providers", **remote("203.0.113.5"))
    assert response.status_code == 200


def test_token_auth_serves_a_remote_client(config, engine, tmp_path):
    tokens = tmp_path / "tokens"
    tokens.write_text("admin secret\n", encoding="utf-8")
    token_config = config.replace(auth_strategy="token", tokens_file=str(tokens))
    client = Api(create_app(token_config, engine=engine).test_client())
    response = client.get("/resource_providers", token="secret", **remote("203.0.113.5"))
    assert response.status_code == 200
    assert_error(client.get("/resource_providers", token="nope", **remote("203.0.113.5")), 401)


def test_the_wsgi_entry_point_is_guarded(config, monkeypatch):
    monkeypatch.setenv("PLACEMENT_DATABASE_URL", config.database_url)
    monkeypatch.setenv("PLACEMENT_AUTH_STRATEGY", "noauth2")
    monkeypatch.delenv("PLACEMENT_ALLOW_NOAUTH_ON_PUBLIC_ADDRESS", raising=False)
    monkeypatch.delenv("PLACEMENT_CONFIG_FILE", raising=False)
    monkeypatch.delitem(sys.modules, "placement.wsgi", raising=False)
    try:
        wsgi = importlib.import_module("placement.wsgi")
    finally:
        frozen.unfreeze()
    try:
        client = Api(wsgi.application.test_client())
        assert_error(client.get("/resource_providers", **remote("203.0.113.5")), 403)
        assert client.get("/resource_providers").status_code == 200
    finally:
        wsgi.application.extensions["placement"].engine.dispose()


# 5. Bodies over max_request_body_mib.


@pytest.fixture
def small_api(config, engine):
    return Api(create_app(config.replace(max_request_body_mib=1), engine=engine).test_client())


def test_a_body_over_the_limit_is_413(small_api):
    body = b'{"name": "' + b"x" * (1024 * 1024) + b'"}'
    error = assert_error(
        small_api.post("/resource_providers", data=body, content_type="application/json"), 413
    )
    assert error["detail"] == "The request body is larger than 1 MiB."


def test_a_streamed_body_over_the_limit_is_413(small_api):
    body = b'{"name": "' + b"x" * (1024 * 1024) + b'"}'
    response = small_api.post(
        "/resource_providers",
        input_stream=io.BytesIO(body),
        content_type="application/json",
        environ_overrides={"wsgi.input_terminated": True},
    )
    assert_error(response, 413)


def test_a_body_within_the_limit_is_read(small_api):
    response = small_api.post("/resource_providers", json={"name": "x" * 200})
    assert response.status_code == 200, response.json


# 6. The database cannot be reached.

# Port 1 on loopback: nothing listens, so connecting is refused at once.
UNREACHABLE_URLS = [
    "postgresql+psycopg://placement@127.0.0.1:1/placement",
    "sqlite:////proc/no-such-folder/placement.sqlite",
]


@contextlib.contextmanager
def unreachable_database(app, url: str):
    """The application's services on a database at ``url`` that cannot be reached, then
    its own again."""
    services = app.extensions["placement"]
    dead = make_engine(url) if url.startswith("postgresql") else sa.create_engine(url)
    app.extensions["placement"] = dataclasses.replace(services, engine=dead)
    try:
        yield
    finally:
        app.extensions["placement"] = services
        dead.dispose()


@pytest.mark.parametrize("url", UNREACHABLE_URLS, ids=["postgresql", "sqlite"])
def test_an_unreachable_database_is_503_then_recovers(api, app, url):
    with unreachable_database(app, url):
        response = api.get("/resource_providers")
        error = assert_error(response, 503)
        assert response.headers["Retry-After"] == "5"
        assert "database" in error["detail"]
        assert_error(api.post("/resource_providers", json={"name": "down"}), 503)
    # The same application answers again once the database is back.
    assert api.post("/resource_providers", json={"name": "up"}).status_code == 200


# PostgreSQL and MariaDB: SQLite has no server to drop connections. No connection is
# pinged as it leaves the pool: the first statement on one the server dropped finds it
# lost, SQLAlchemy drops it with the pool's older ones, and the request runs again on a
# new connection (``placement.endpoints``). The pool holds several dropped connections
# each time, so a request that met one, then another, would fail.
LOST_CONNECTION_BACKENDS = ["postgresql", "mysql"]


@pytest.mark.parametrize("backend", LOST_CONNECTION_BACKENDS)
def test_connections_killed_by_the_server_are_replaced(api, engine, backend):
    provider = api.create_provider("cn1")["uuid"]
    api.set_inventory(provider, VCPU=8)
    candidates = "/allocation_candidates?resources=VCPU:1&limit=10"
    first = api.get(candidates)
    assert first.status_code == 200
    requests = {
        # the copy's check (through the driver's cursor), then its kept answer
        "a cached read of the copy": lambda: api.get(candidates),
        # a provider written meanwhile: the copy reads what changed, then answers
        "a read of the copy after a write": lambda: api.get(candidates),
        "a plain read": lambda: api.get("/resource_providers"),
        "a write": lambda: api.post("/resource_providers", json={"name": "after"}),
        "the readiness probe": lambda: api.get("/healthcheck/ready"),
    }
    for name, request in requests.items():
        if name == "a read of the copy after a write":
            api.set_inventory(provider, VCPU=16)
        pool_several_connections(api.services.engine)
        kill_connections(engine)
        response = request()
        assert response.status_code == 200, (name, response.json)
        if "copy" in name:
            assert response.json["allocation_requests"], name
    names = sorted(p["name"] for p in api.get("/resource_providers").json["resource_providers"])
    assert names == ["after", "cn1"]


@pytest.mark.parametrize("backend", LOST_CONNECTION_BACKENDS)
def test_a_connection_lost_in_the_middle_of_a_write_runs_it_again(
    api, engine, backend, monkeypatch
):
    """The server drops the connection after the write's first statements (as a Galera node
    that dies under it): nothing was committed, so the write runs again on a new
    connection, and what runs as its transaction ends (MySQL's marker) does not trip on the
    lost one."""
    provider = api.create_provider("cn1")["uuid"]
    api.set_inventory(provider, VCPU=8)
    create_consumers = consumer_data.create_consumers
    killed: list[int] = []

    def killing_first(conn, *args, **kwargs):
        if not killed:
            if conn.dialect.name == "postgresql":
                (server_id,) = conn.exec_driver_sql("SELECT pg_backend_pid()").one()
            else:
                (server_id,) = conn.exec_driver_sql("SELECT CONNECTION_ID()").one()
            killed.append(server_id)
            kill_connections(engine, only=server_id)
        return create_consumers(conn, *args, **kwargs)

    monkeypatch.setattr(consumer_data, "create_consumers", killing_first)
    consumer = "3b8f6a9e-6b51-4d5e-9a31-4f8e2f7c1d20"
    body = {
        "allocations": {provider: {"resources": {"VCPU": 2}}},
        "project_id": "7e67cbf7-7c38-4a32-b85b-0739c690991a",
        "user_id": "067f691e-725a-451a-83e2-5c3d13e1dffc",
        "consumer_generation": None,
    }
    written = api.put(f"/allocations/{consumer}", json=body, version="1.28")
    assert written.status_code == 204, written.json
    assert len(killed) == 1
    usages = api.get(f"/resource_providers/{provider}/usages").json["usages"]
    assert usages["VCPU"] == 2


@pytest.fixture
def commit_answer_lost(monkeypatch, engine):
    """Once armed, the driver's next COMMIT is applied by the server, whose answer is then
    lost: the connection is killed and the error it gives is the COMMIT's."""
    state = {"armed": False, "commits": 0}
    if engine.dialect.name == "postgresql":
        driver, backend_id = psycopg.Connection, (lambda conn: conn.info.backend_pid)
    else:
        driver, backend_id = pymysql.connections.Connection, (lambda conn: conn.thread_id())
    commit = driver.commit

    def commit_and_lose_the_answer(conn):
        commit(conn)
        if not state["armed"]:
            return
        state["armed"] = False
        state["commits"] += 1
        kill_connections(engine, only=backend_id(conn))
        cursor = conn.cursor()
        cursor.execute("SELECT 1")  # raises the error of the lost connection
        raise AssertionError("the killed connection answered")

    monkeypatch.setattr(driver, "commit", commit_and_lose_the_answer)
    return state


@pytest.mark.parametrize("backend", LOST_CONNECTION_BACKENDS)
def test_a_commit_whose_answer_was_lost_is_503_and_not_run_again(api, backend, commit_answer_lost):
    """The write may have been applied (here it was): running it again could apply it
    twice. It is answered as an unreachable database is, and applied once (run again,
    it would have found its own provider and answered 409)."""
    commit_answer_lost["armed"] = True
    response = api.post("/resource_providers", json={"name": "once"})
    error = assert_error(response, 503)
    assert response.headers["Retry-After"] == "5"
    assert "database" in error["detail"]
    assert commit_answer_lost["commits"] == 1
    listed = api.get("/resource_providers?name=once")
    assert listed.status_code == 200
    assert [p["name"] for p in listed.json["resource_providers"]] == ["once"]


def test_a_deeply_nested_device_annotation_is_400(api):
    deep = "[" * 100_000 + "]" * 100_000
    body = {
        "resources": {"nvidia.com/gpu": 1},
        "annotations": {"scheduling.koordinator.sh/device-joint-allocate": deep},
    }
    response = api.post("/group_resources/device_candidates", json=body)
    assert response.status_code == 400, response.json
