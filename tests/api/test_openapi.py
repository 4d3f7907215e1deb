"""GET /openapi.json (``placement.handlers.openapi``): the committed document, served as the
probes are: no token (also under token auth), no microversion, no database, built once."""

import json
import pathlib
import threading

import pytest
from openapi_schema_validator import OAS31Validator

from placement.app import create_app
from tests.api.test_hardening import UNREACHABLE_URLS, assert_error, unreachable_database

COMMITTED = pathlib.Path(__file__).resolve().parents[2] / "api-ref" / "openapi.json"


def test_the_committed_document_is_served_without_a_token(api):
    response = api.client.get("/openapi.json")
    assert response.status_code == 200
    assert response.mimetype == "application/json"
    assert response.get_data() == COMMITTED.read_bytes()
    assert "OpenStack-API-Version" not in response.headers
    head = api.client.head("/openapi.json")
    assert (head.status_code, head.get_data()) == (200, b"")
    # A microversion a client could not ask the API for changes nothing here.
    odd = api.client.get("/openapi.json", headers={"OpenStack-API-Version": "placement 9.99"})
    assert odd.status_code == 200
    assert_error(api.client.post("/openapi.json"), 405)
    # The API itself still wants a token.
    assert api.client.get("/resource_providers").status_code == 401


def test_it_is_served_without_a_token_under_token_auth(config, engine, tmp_path):
    tokens = tmp_path / "tokens"
    tokens.write_text("admin admin-secret\n", encoding="utf-8")
    app = create_app(config.replace(auth_strategy="token", tokens_file=str(tokens)), engine=engine)
    client = app.test_client()
    assert client.get("/openapi.json").status_code == 200
    assert client.get("/openapi.json", headers={"X-Auth-Token": "wrong"}).status_code == 200
    assert_error(client.get("/resource_providers"), 401)


def test_it_is_served_to_remote_clients_under_noauth2(api):
    remote = {"REMOTE_ADDR": "10.1.2.3"}
    assert api.client.get("/openapi.json", environ_base=remote).status_code == 200
    assert api.client.get("/", environ_base=remote).status_code == 403


def test_it_needs_neither_the_database_nor_the_turn_of_a_request(api, app):
    with unreachable_database(app, UNREACHABLE_URLS[1]):
        assert api.client.get("/openapi.json").status_code == 200
    answered = []
    with api.services.serving_lock:  # as a long search holds this process's turn
        reader = threading.Thread(
            target=lambda: answered.append(api.client.get("/openapi.json").status_code)
        )
        reader.start()
        reader.join(timeout=5)
    assert answered == [200]


def test_it_is_built_once_per_application(api):
    first = api.client.get("/openapi.json").get_data()
    cache = api.client.application.extensions["openapi"]
    assert cache.text() is cache.text()
    assert api.client.get("/openapi.json").get_data() == first


def _validator(spec: dict, schema: dict) -> OAS31Validator:
    return OAS31Validator({**schema, "components": spec["components"]})


@pytest.fixture
def spec(api) -> dict:
    return json.loads(api.client.get("/openapi.json").get_data())


def test_real_bodies_and_errors_match_the_document(api, spec):
    create = spec["paths"]["/resource_providers"]["post"]
    body_schema = create["requestBody"]["content"]["application/json"]["schema"]
    body = {"name": "documented"}
    assert _validator(spec, body_schema).is_valid(body)
    assert api.post("/resource_providers", json=body).status_code == 200
    # What the schema refuses, the view refuses too.
    assert not _validator(spec, body_schema).is_valid({})
    assert_error(api.post("/resource_providers", json={}), 400)
    # A real error (at the latest microversion, with its code) has the documented format.
    show = spec["paths"]["/resource_providers/{uuid}"]["get"]
    error_schema = show["responses"]["404"]["content"]["application/json"]["schema"]
    missing = api.get("/resource_providers/4e8e5957-649f-477b-9e5b-f1f75b21c03c")
    assert missing.status_code == 404
    assert _validator(spec, error_schema).is_valid(missing.json), missing.json
    # And so has a 406 with its extra members.
    refused = api.get("/", version="9.99")
    assert refused.status_code == 406
    assert _validator(spec, error_schema).is_valid(refused.json), refused.json
