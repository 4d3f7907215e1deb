"""``auth_strategy = keystone`` against a real Keystone: tokens checked by
keystonemiddleware, roles and projects judged by the policy as upstream's are.

Each test asks Keystone for real tokens of the users of ``tests.keystone.USERS``.
"""

import uuid

import pytest

from placement.app import create_app
from placement.config import Config

LATEST = {"OpenStack-API-Version": "placement latest"}


@pytest.fixture
def make_client(keystone, engine, tmp_path):
    """A test client of the service behind Keystone (policy settings as given)."""

    def make(**settings):
        config_file = tmp_path / "placement.conf"
        config_file.write_text("[api]\nauth_strategy = keystone\n\n" + keystone.authtoken_section())
        config = Config(
            database_url=engine.url.render_as_string(hide_password=False),
            auth_strategy="keystone",
            source_file=str(config_file),
            **settings,
        )
        return create_app(config, engine=engine).test_client()

    return make


@pytest.fixture
def client(make_client):
    return make_client()


def _as(keystone, user: str) -> dict:
    return {"X-Auth-Token": keystone.token(user), **LATEST}


def test_without_a_token_keystonemiddleware_answers_401(client, keystone):
    answer = client.get("/resource_providers", headers=LATEST)
    assert answer.status_code == 401
    assert answer.headers["WWW-Authenticate"] == f'Keystone uri="{keystone.url}"'


def test_a_forged_token_is_401(client):
    answer = client.get("/resource_providers", headers={"X-Auth-Token": "forged", **LATEST})
    assert answer.status_code == 401


def test_the_root_and_the_probes_need_no_token(client):
    root = client.get("/")
    assert root.status_code == 200 and root.json["versions"][0]["max_version"] == "1.39"
    assert client.get("/healthcheck").status_code == 200
    assert client.get("/healthcheck/ready").status_code == 200


def test_an_admin_and_a_service_may_write(client, keystone):
    for user in ("admin", "operator", "nova"):
        name = f"cn-{user}-{uuid.uuid4().hex[:6]}"
        created = client.post(
            "/resource_providers", json={"name": name}, headers=_as(keystone, user)
        )
        assert created.status_code == 200, (user, created.json)
    listed = client.get("/resource_providers", headers=_as(keystone, "nova"))
    assert listed.status_code == 200 and len(listed.json["resource_providers"]) == 3


def test_a_member_is_refused_with_the_rule_named(client, keystone):
    answer = client.get("/resource_providers", headers=_as(keystone, "alice"))
    assert answer.status_code == 403
    assert answer.json["errors"][0]["detail"] == (
        "Policy does not allow placement:resource_providers:list to be performed."
    )


def test_a_reader_reads_the_usages_of_its_own_project_only(client, keystone):
    own, other = keystone.project_ids["demo"], keystone.project_ids["admin"]
    headers = _as(keystone, "rita")
    assert client.get(f"/usages?project_id={own}", headers=headers).status_code == 200
    assert client.get(f"/usages?project_id={other}", headers=headers).status_code == 403
    assert client.get("/resource_providers", headers=headers).status_code == 403


def test_the_new_defaults_keep_the_reshaper_for_services(make_client, keystone):
    strict = make_client(enforce_new_defaults=True)
    # Past the policy a bad body is 400; before it, 403.
    assert strict.post("/reshaper", json={}, headers=_as(keystone, "operator")).status_code == 403
    assert strict.post("/reshaper", json={}, headers=_as(keystone, "nova")).status_code == 400
    legacy = make_client()
    assert legacy.post("/reshaper", json={}, headers=_as(keystone, "operator")).status_code == 400
