"""Policy: each route's rule, upstream's names and defaults, overridden by a policy file.

Upstream's own policy suites (``*-policy.yaml``, ``*-secure-rbac.yaml``,
``*-legacy-rbac.yaml``) run against this service in ``tests/upstream``; these
tests cover the table of rules and the policy file.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from oslo_policy.policy import DocumentedRuleDefault

from placement.app import create_app
from placement.policy import API_RULES, list_rules
from placement.routes import (
    METRICS_PATH,
    documented_rules,
    every_route,
    operation_path,
    scheduler_extender_routes,
)
from placement.routes import ROUTES as API_ROUTES
from tests.conftest import Api

REPO = Path(__file__).resolve().parents[2]
OPEN_ROUTES = {("GET", "/")}
# The extender's verbs have rules too (for clients not in [k8s] scheduler_clients).
ROUTES = {**API_ROUTES, **scheduler_extender_routes()}


def test_every_route_has_one_rule_and_every_rule_names_routes():
    without = [
        (method, path)
        for method, path, route in every_route()
        if (method, path) not in OPEN_ROUTES and route.rule is None
    ]
    assert not without, f"routes without a policy rule: {without}"
    unknown = [route.rule for _, _, route in every_route() if route.rule not in {None, *API_RULES}]
    assert not unknown, f"routes naming a rule policy does not define: {unknown}"
    routes = {
        (method, operation_path(path)) for path, methods in ROUTES.items() for method in methods
    } | {("GET", METRICS_PATH)}
    named = [
        (rule.name, operation["method"], operation["path"])
        for rule in documented_rules()
        if isinstance(rule, DocumentedRuleDefault)
        for operation in rule.operations
    ]
    assert len({(m, p) for _, m, p in named}) == len(named), "an operation has two rules"
    assert [n for n in named if (n[1], n[2]) not in routes] == []
    assert len(named) == len(routes) - len(OPEN_ROUTES)
    assert {name for name, _, _ in named} == set(API_RULES), "a rule that guards no route"


def test_upstream_rules_keep_upstream_names():
    names = {rule.name for rule in list_rules()}
    for name in (
        "placement:resource_providers:list",
        "placement:usages",
        "placement:reshaper:reshape",
        "placement:allocations:manage",
        "admin_or_service_api",
        "project_reader_api",
    ):
        assert name in names


@pytest.fixture
def policy_api(config, engine, tmp_path):
    def make(rules: str) -> Api:
        path = tmp_path / "policy.yaml"
        path.write_text(rules)
        return Api(create_app(config.replace(policy_file=str(path)), engine=engine).test_client())

    return make


def test_a_policy_file_overrides_the_defaults(policy_api):
    api = policy_api(
        '"placement:resource_providers:list": "role:reader"\n'
        '"placement:resource_providers:create": "!"\n'
    )
    reader = {"X-Roles": "reader"}
    assert api.get("/resource_providers", token="someone", headers=reader).status_code == 200
    refused = api.post("/resource_providers", json={"name": "cn"})
    assert refused.status_code == 403
    assert refused.json["errors"][0]["detail"] == (
        "Policy does not allow placement:resource_providers:create to be performed."
    )
    # The rules the file leaves alone keep their defaults.
    assert api.get("/traits", token="someone", headers=reader).status_code == 403
    assert api.get("/traits").status_code == 200


def test_a_changed_policy_file_is_read_again(policy_api, tmp_path):
    api = policy_api('"placement:traits:list": "!"\n')
    assert api.get("/traits").status_code == 403
    path = tmp_path / "policy.yaml"
    path.write_text('"placement:traits:list": "@"\n')
    later = os.stat(path).st_mtime + 5
    os.utime(path, (later, later))
    assert api.get("/traits", token="someone").status_code == 200


def test_a_missing_policy_file_stops_the_start(config, engine, tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        create_app(config.replace(policy_file=str(tmp_path / "nowhere.yaml")), engine=engine)


def test_noauth2_system_scope_is_refused_by_the_project_scoped_rules(api):
    answer = api.get("/resource_providers", headers={"OpenStack-System-Scope": "all"})
    assert answer.status_code == 403


def test_the_sample_policy_file_is_current():
    written = subprocess.run(
        [sys.executable, "-m", "placement.cli.main", "policy-sample"],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    ).stdout
    sample = (REPO / "etc" / "policy.yaml.sample").read_text()
    assert written == sample, "etc/policy.yaml.sample is stale: run `make sample-config`"


NON_ADMIN = {"X-Auth-Token": "someone"}  # no role: policy refuses it every route


@pytest.mark.parametrize(
    ("method", "path", "version", "status"),
    [
        ("GET", "/traits", "1.5", 404),
        ("PUT", "/traits/CUSTOM_X", "1.5", 404),
        ("GET", "/resource_classes", "1.1", 404),
        ("GET", "/usages?project_id=p", "1.8", 404),
        ("GET", "/allocation_candidates?resources=VCPU:1", "1.9", 404),
        ("POST", "/reshaper", "1.29", 404),
        ("DELETE", "/resource_providers/{uuid}/inventories", "1.4", 405),
        # At the route's version, the same requests are policy's to refuse.
        ("GET", "/traits", "1.6", 403),
        ("GET", "/usages?project_id=p", "1.9", 403),
        ("DELETE", "/resource_providers/{uuid}/inventories", "1.5", 403),
    ],
)
def test_a_route_below_its_version_is_404_before_policy(api, method, path, version, status):
    """As upstream's: the version a route needs is checked before policy, so a client
    policy refuses learns the route is not there at its version (405: a method that came
    later), not that it may not use it."""
    uuid = api.create_provider("cn1")["uuid"]
    response = api.request(
        method, path.format(uuid=uuid), version=version, token=None, headers=NON_ADMIN
    )
    assert response.status_code == status, response.json


@pytest.mark.parametrize(
    ("method", "path", "version", "with_json"),
    [
        ("POST", "/resource_providers", "1.39", 403),
        ("PUT", "/resource_providers/{uuid}", "1.39", 403),
        ("PUT", "/resource_providers/{uuid}/inventories", "1.39", 403),
        # Upstream checks this one's media type before its version.
        ("PUT", "/resource_providers/{uuid}/aggregates", "1.0", 404),
        ("PUT", "/resource_classes/CUSTOM_X", "1.6", 403),
        ("POST", "/allocations", "1.39", 403),
        ("POST", "/reshaper", "1.39", 403),
    ],
)
def test_a_body_that_is_not_json_is_415_before_policy(api, method, path, version, with_json):
    """As upstream's: the media type is checked before policy; sent as JSON, the same
    request goes on to the route's other checks, then to policy."""
    path = path.format(uuid=api.create_provider("cn1")["uuid"])
    text = {**NON_ADMIN, "Content-Type": "text/plain"}
    response = api.request(
        method, path, version=version, token=None, headers=text, data='{"name": "x"}'
    )
    assert response.status_code == 415, response.json
    response = api.request(
        method, path, version=version, token=None, headers=NON_ADMIN, json={"name": "x"}
    )
    assert response.status_code == with_json, response.json


def test_a_resource_class_put_without_a_body_is_policys_from_1_7(api):
    text = {**NON_ADMIN, "Content-Type": "text/plain"}
    response = api.request(
        "PUT", "/resource_classes/CUSTOM_X", version="1.7", token=None, headers=text, data="x"
    )
    assert response.status_code == 403, response.json
