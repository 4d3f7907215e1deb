"""auth_strategy = token: bearer tokens from a file, each with a role."""

import pytest

from placement.app import create_app
from placement.auth import TokenAuth
from placement.config import Config, ConfigError
from tests.conftest import Api

TOKENS = {"admin": "admin-secret", "service": "service-secret", "reader": "reader-secret"}


@pytest.fixture
def tokens_file(tmp_path):
    path = tmp_path / "tokens"
    lines = ["# role token", ""] + [f"{role} {token}" for role, token in TOKENS.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def token_api(config, engine, tokens_file) -> Api:
    app = create_app(
        config.replace(auth_strategy="token", tokens_file=str(tokens_file)), engine=engine
    )
    return Api(app.test_client())


def _as(role):
    return {"token": TOKENS[role]}


def test_admin_token_may_do_everything(token_api):
    created = token_api.post("/resource_providers", json={"name": "cn1"}, **_as("admin"))
    assert created.status_code == 200
    uuid = created.json["uuid"]
    assert token_api.put("/traits/CUSTOM_X", **_as("admin")).status_code == 201
    assert token_api.get(f"/resource_providers/{uuid}", **_as("admin")).status_code == 200
    assert token_api.delete(f"/resource_providers/{uuid}", **_as("admin")).status_code == 204


def test_service_token_may_write(token_api):
    created = token_api.post("/resource_providers", json={"name": "cn1"}, **_as("service"))
    assert created.status_code == 200
    uuid = created.json["uuid"]
    body = {"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 4}}}
    replaced = token_api.put(f"/resource_providers/{uuid}/inventories", json=body, **_as("service"))
    assert replaced.status_code == 200
    assert token_api.delete(f"/resource_providers/{uuid}", **_as("service")).status_code == 204


def test_reader_token_may_read_but_not_write(token_api):
    uuid = token_api.post("/resource_providers", json={"name": "cn1"}, **_as("admin")).json["uuid"]
    assert token_api.get("/resource_providers", **_as("reader")).status_code == 200
    assert token_api.get(f"/resource_providers/{uuid}", **_as("reader")).status_code == 200
    assert token_api.get("/traits", **_as("reader")).status_code == 200
    for response in (
        token_api.post("/resource_providers", json={"name": "cn2"}, **_as("reader")),
        token_api.put(f"/resource_providers/{uuid}", json={"name": "x"}, **_as("reader")),
        token_api.put("/traits/CUSTOM_X", **_as("reader")),
        token_api.delete(f"/resource_providers/{uuid}", **_as("reader")),
    ):
        assert response.status_code == 403
        assert response.json["errors"][0]["code"] == "placement.undefined_code"
    names = [
        p["name"]
        for p in token_api.get("/resource_providers", **_as("admin")).json["resource_providers"]
    ]
    assert names == ["cn1"]


@pytest.mark.parametrize("token", ["admin", "wrong", "admin-secret-", "ADMIN-SECRET"])
def test_unknown_tokens_are_401(token_api, token):
    # "admin" is the noauth2 admin token; it means nothing to the token strategy.
    response = token_api.get("/resource_providers", token=token)
    assert response.status_code == 401
    assert response.json["errors"][0]["status"] == 401


def test_no_token_is_401_but_the_root_is_open(token_api):
    assert token_api.get("/resource_providers", token=None).status_code == 401
    assert token_api.get("/", token=None).status_code == 200


def test_roles_header_is_ignored(token_api):
    response = token_api.post(
        "/resource_providers",
        json={"name": "cn1"},
        headers={"X-Roles": "admin"},
        **_as("reader"),
    )
    assert response.status_code == 403


@pytest.mark.parametrize("scheme", ["Bearer", "bearer"])
def test_authorization_bearer_works(token_api, scheme):
    headers = {"Authorization": f"{scheme} {TOKENS['service']}"}
    created = token_api.post(
        "/resource_providers", json={"name": "cn1"}, token=None, headers=headers
    )
    assert created.status_code == 200
    reader = {"Authorization": f"Bearer {TOKENS['reader']}"}
    assert token_api.get("/resource_providers", token=None, headers=reader).status_code == 200
    refused = token_api.post(
        "/resource_providers", json={"name": "cn2"}, token=None, headers=reader
    )
    assert refused.status_code == 403


def test_bad_bearer_is_401(token_api):
    for value in ("Bearer nope", "Basic YWRtaW46YWRtaW4=", "Bearer "):
        response = token_api.get(
            "/resource_providers", token=None, headers={"Authorization": value}
        )
        assert response.status_code == 401, value


def test_token_strategy_needs_a_tokens_file():
    with pytest.raises(ConfigError):
        Config(auth_strategy="token")


@pytest.mark.parametrize(
    "text",
    ["", "# only a comment\n", "root secret\n", "admin\n", "admin a b\n"],
)
def test_malformed_tokens_files_are_refused(tmp_path, text):
    path = tmp_path / "tokens"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError):
        TokenAuth.from_file(str(path))
