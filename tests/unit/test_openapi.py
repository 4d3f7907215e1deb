"""The OpenAPI document (``placement.openapi``): valid OpenAPI 3.1, exactly the routes of
``placement.routes``, the request bodies the views really take, every status api-ref/ gives
a route, and committed in api-ref/openapi.json as ``placement openapi`` prints it now."""

import difflib
import pathlib
import re

import pytest
from openapi_schema_validator import OAS31Validator
from openapi_spec_validator import validate

from placement import errors
from placement.cli import main as cli
from placement.handlers import aggregate, allocation, devices, group_resources, inventory
from placement.handlers import resource_provider as provider
from placement.openapi import document, operations
from placement.routes import METRICS_PATH, OUTSIDE_THE_API, scheduler_extender_routes
from placement.routes import ROUTES as API_ROUTES
from placement.schemas import validate as load

API_REF = pathlib.Path(__file__).resolve().parents[2] / "api-ref"
COMMITTED = API_REF / "openapi.json"
# The API's routes and kube-scheduler's extender verbs (at the default prefix).
ROUTES = {**API_ROUTES, **scheduler_extender_routes()}
STALE = "api-ref/openapi.json is not what `placement openapi` prints now: run `make openapi`"

RP = "4e8e5957-649f-477b-9e5b-f1f75b21c03c"
AGGREGATE = "1e3f5b2a-8c4d-4e6f-9a0b-2c4d6e8f0a1b"
CONSUMER = "11111111-2222-3333-4444-555555555555"
ALLOCATION = {
    "allocations": {RP: {"resources": {"VCPU": 2}}},
    "project_id": "p1",
    "user_id": "u1",
    "consumer_generation": None,
    "consumer_type": "INSTANCE",
}


@pytest.fixture(scope="module")
def spec() -> dict:
    return document.build()


def _operations(spec: dict) -> dict[tuple[str, str], dict]:
    return {
        (method.upper(), path): operation
        for path, item in spec["paths"].items()
        for method, operation in item.items()
        if method != "parameters"
    }


def test_the_document_is_valid_openapi(spec):
    validate(spec)
    assert spec["openapi"] == "3.1.0"


def test_it_has_every_route_and_method_and_nothing_else(spec):
    routed = (
        {
            (method, document.openapi_path(path))
            for path, methods in ROUTES.items()
            for method in methods
        }
        | {("GET", path) for path in OUTSIDE_THE_API}
        | {("GET", METRICS_PATH)}
    )
    assert set(_operations(spec)) == routed


def test_every_view_has_its_answers_and_each_write_its_body_or_none():
    views = {view for methods in ROUTES.values() for view in methods.values()}
    views |= {outside.view for outside in OUTSIDE_THE_API.values()}
    assert set(operations.ANSWERS) == views
    writes = {
        view
        for methods in ROUTES.values()
        for method, view in methods.items()
        if method in ("POST", "PUT", "PATCH")
    }
    bodies = set(operations.request_bodies())
    assert bodies <= writes
    assert not bodies & operations.WITHOUT_BODY
    assert writes - bodies == operations.WITHOUT_BODY, "a write without a stated request body"


def test_path_parameters_and_security(spec):
    item = spec["paths"]["/resource_providers/{uuid}/inventories/{resource_class}"]
    assert [(p["name"], p["in"], p["required"]) for p in item["parameters"]] == [
        ("uuid", "path", True),
        ("resource_class", "path", True),
    ]
    assert spec["security"] == [{"token": []}]
    assert spec["components"]["securitySchemes"]["token"] == {
        "type": "apiKey",
        "in": "header",
        "name": "X-Auth-Token",
        "description": "Under `auth_strategy = token` also `Authorization: Bearer <token>`.",
    }
    by_route = _operations(spec)
    assert by_route[("GET", "/")]["security"] == []
    assert "401" not in by_route[("GET", "/")]["responses"]
    for path in OUTSIDE_THE_API:
        assert by_route[("GET", path)]["security"] == []
        assert "parameters" not in by_route[("GET", path)]  # no microversion
    microversion = {"$ref": "#/components/parameters/Microversion"}
    assert microversion in by_route[("GET", "/resource_providers")]["parameters"]


def test_answers_and_the_error_format(spec):
    by_route = _operations(spec)
    responses = by_route[("POST", "/resource_providers/{uuid}/inventories")]["responses"]
    assert set(responses) == {"201", "400", "401", "403", "404", "406", "409", "415"}
    assert responses["409"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Errors"
    }
    assert responses["401"] == {"$ref": "#/components/responses/Unauthorized"}
    # A view below its microversion is 404; an answer without a body has no content.
    reshape = by_route[("POST", "/reshaper")]
    assert "1.30" in reshape["responses"]["404"]["description"]
    assert "content" not in reshape["responses"]["204"]
    error = spec["components"]["schemas"]["Error"]
    assert set(error["required"]) == {"status", "title", "detail", "request_id"}
    assert set(error["properties"]) == {"status", "title", "detail", "code", "request_id"}


def _body_schema(spec: dict, view) -> dict:
    [operation] = [
        operation
        for operation in _operations(spec).values()
        if operation["operationId"] == document.operation_id(view)
    ]
    schema = operation["requestBody"]["content"]["application/json"]["schema"]
    # References resolve against the document's components.
    return {**schema, "components": spec["components"]}


def test_the_provider_body_requires_a_name(spec):
    schema = spec["components"]["schemas"]["CreateNestedProvider"]
    assert schema["required"] == ["name"]
    assert schema["properties"]["parent_provider_uuid"]["type"] == ["string", "null"]
    assert schema["additionalProperties"] is False
    assert _body_schema(spec, provider.create_provider)["$ref"] == (
        "#/components/schemas/CreateNestedProvider"
    )


BODIES = [
    (provider.create_provider, {"name": "cn1"}, True),
    (provider.create_provider, {"name": "cn1", "parent_provider_uuid": None}, True),
    (provider.create_provider, {"name": "cn1", "parent_provider_uuid": RP, "uuid": RP}, True),
    (provider.create_provider, {}, False),
    (provider.create_provider, {"name": ""}, False),
    (provider.create_provider, {"name": "x" * 201}, False),
    (provider.create_provider, {"name": "cn1", "colour": "red"}, False),
    (provider.create_provider, {"name": 1}, False),
    (
        inventory.replace_inventories,
        {"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 8}}},
        True,
    ),
    (
        inventory.replace_inventories,
        {"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 0}}},
        False,
    ),
    (inventory.replace_inventories, {"inventories": {}}, False),
    (inventory.create_inventory, {"resource_class": "VCPU", "total": 4}, True),
    (inventory.create_inventory, {"resource_class": "vcpu", "total": 4}, False),
    (
        aggregate.set_aggregates,
        {"aggregates": [AGGREGATE], "resource_provider_generation": 1},
        True,
    ),
    (
        aggregate.set_aggregates,
        {"aggregates": [AGGREGATE, AGGREGATE], "resource_provider_generation": 1},
        False,
    ),
    (aggregate.set_aggregates, {"aggregates": [AGGREGATE]}, False),
    (allocation.put_allocations, ALLOCATION, True),
    (allocation.put_allocations, {**ALLOCATION, "allocations": {}}, True),
    (
        allocation.put_allocations,
        {**ALLOCATION, "allocations": {RP: {"resources": {"vcpu": 2}}}},
        False,
    ),
    (
        allocation.put_allocations,
        {**ALLOCATION, "allocations": {RP: {"resources": {"VCPU": 0}}}},
        False,
    ),
    (
        allocation.put_allocations,
        {key: value for key, value in ALLOCATION.items() if key != "consumer_type"},
        False,
    ),
    (allocation.post_allocations, {CONSUMER: ALLOCATION}, True),
    (allocation.post_allocations, {}, False),
    (allocation.post_allocations, {"not-a-uuid": ALLOCATION}, False),
    (
        group_resources.claim,
        {"resources": {"cpu": 4}, "consumer_uuid": CONSUMER, "project_id": "p1", "user_id": "u1"},
        True,
    ),
    (group_resources.claim, {"resources": {"cpu": 4}, "project_id": "p1", "user_id": "u1"}, False),
    (group_resources.find_candidates, {"resources": {"cpu": 4}, "scorer": "spread"}, True),
    (group_resources.find_candidates, {"resources": {"cpu": 4}, "scorer": "best"}, False),
    (group_resources.find_candidates, {"resources": {"cpu": 4}, "nodes": []}, False),
    (devices.find_candidates, {"resources": {"nvidia.com/gpu": 4}, "limit": 2}, True),
    (devices.find_candidates, {"resources": {"nvidia.com/gpu": 4}, "limit": 0}, False),
]


@pytest.mark.parametrize(("view", "body", "valid"), BODIES)
def test_request_schemas_take_what_the_views_take(spec, view, body, valid):
    """The document's schema of a view's body and the view's own marshmallow schema agree on
    real bodies, valid and not."""
    assert OAS31Validator(_body_schema(spec, view)).is_valid(body) is valid
    schema = operations.request_bodies()[view]
    if valid:
        load(schema, body)
    else:
        with pytest.raises(errors.BadRequest):
            load(schema, body)


# --- api-ref/ -------------------------------------------------------------------------

HEADING = re.compile(r"^#{1,3}\s")
ROUTE = re.compile(r"^###\s+([A-Z]+)\s+(/\S*)\s*$")
# A status in a table's first column, in bold (``**404**``), or first on an "Errors:" line.
STATUS = re.compile(r"^\|\s*(\d{3})\s*\||\*\*(\d{3})\b|^Errors:.*?\b(\d{3})\b")


def _documented() -> dict[tuple[str, str], tuple[str, set[int]]]:
    """(method, path) -> the api-ref/ page that documents it, and the statuses it gives."""
    found: dict[tuple[str, str], tuple[str, set[int]]] = {}
    for page in sorted(API_REF.glob("*.md")):
        route = None
        in_fence = False
        for line in page.read_text(encoding="utf-8").splitlines():
            if line.lstrip().startswith("```"):
                in_fence = not in_fence
            elif in_fence:
                continue
            elif HEADING.match(line):
                match = ROUTE.match(line)
                route = (match[1], match[2]) if match else None
                if route:
                    found[route] = (page.stem, set())
            elif route:
                for match in STATUS.finditer(line):
                    found[route][1].add(int(next(group for group in match.groups() if group)))
    return found


def test_each_operation_has_every_status_api_ref_gives_it_and_is_tagged_with_its_page(spec):
    documented = _documented()
    for route, operation in _operations(spec).items():
        page, statuses = documented[route]
        assert operation["tags"] == [page], route
        missing = statuses - {int(status) for status in operation["responses"]}
        assert not missing, f"{route}: api-ref/{page}.md gives {sorted(missing)}"
    assert {tag["name"] for tag in spec["tags"]} == {page for page, _ in documented.values()}


# --- The committed document -----------------------------------------------------------


def test_the_committed_document_is_what_placement_openapi_prints(run, capsys):
    assert cli.main(["openapi"]) == 0
    printed = capsys.readouterr().out
    assert printed == document.render()
    committed = COMMITTED.read_text(encoding="utf-8") if COMMITTED.exists() else ""
    if committed != printed:
        diff = difflib.unified_diff(
            committed.splitlines(),
            printed.splitlines(),
            "api-ref/openapi.json",
            "placement openapi",
            lineterm="",
        )
        pytest.fail(f"{STALE}\n" + "\n".join(list(diff)[:40]))
