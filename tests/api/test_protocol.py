"""The HTTP protocol around every view: versions, headers, auth, policy and the error format."""

import re
import uuid

import pytest

from tests.conftest import LATEST, error_code

REQUEST_ID = re.compile(r"^req-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def _raw(client, method, path, headers=None, **kwargs):
    """A request with exactly ``headers``: no token and no version unless given."""
    return client.open(path, method=method, headers=headers or {}, **kwargs)


def _assert_error_format(response, status):
    assert response.status_code == status
    assert response.mimetype == "application/json"
    body = response.json
    assert list(body) == ["errors"]
    assert len(body["errors"]) == 1
    error = body["errors"][0]
    assert error["status"] == status
    assert isinstance(error["title"], str) and error["title"]
    assert isinstance(error["detail"], str) and error["detail"]
    assert error["request_id"] == response.headers["X-Openstack-Request-Id"]
    assert REQUEST_ID.match(error["request_id"])
    return error


def test_root_needs_no_auth_and_describes_the_versions(api):
    response = _raw(api.client, "GET", "/")
    assert response.status_code == 200
    assert response.json == {
        "versions": [
            {
                "id": "v1.0",
                "min_version": "1.0",
                "max_version": LATEST,
                "status": "CURRENT",
                "links": [{"rel": "self", "href": ""}],
            }
        ]
    }
    assert LATEST == "1.39"


def test_without_a_version_header_the_minimum_is_used(api):
    response = api.client.get("/resource_providers", headers={"X-Auth-Token": "admin"})
    assert response.status_code == 200
    assert response.headers["OpenStack-API-Version"] == "placement 1.0"
    other_service = api.client.get("/", headers={"OpenStack-API-Version": "compute 2.1"})
    assert other_service.headers["OpenStack-API-Version"] == "placement 1.0"


@pytest.mark.parametrize("version", ["1.0", "1.14", "1.15", "1.39"])
def test_the_version_is_echoed(api, version):
    response = api.get("/resource_providers", version=version)
    assert response.status_code == 200
    assert response.headers["OpenStack-API-Version"] == f"placement {version}"
    assert response.headers["Vary"] == "openstack-api-version"


def test_latest_means_the_maximum(api):
    for path in ("/", "/resource_providers"):
        response = api.get(path, version="latest")
        assert response.status_code == 200
        assert response.headers["OpenStack-API-Version"] == "placement 1.39"


def test_a_leading_zero_minor_is_read_as_a_number(api):
    response = api.get("/", version="1.01")
    assert response.status_code == 200
    assert response.headers["OpenStack-API-Version"] == "placement 1.1"


@pytest.mark.parametrize(
    "method, path, status",
    [
        ("GET", "/", 200),
        ("GET", "/resource_providers", 200),
        ("POST", "/resource_providers", 400),
        ("GET", "/resource_providers/5471e51c-fc5d-4bd4-8178-29ad826cf537", 404),
        ("GET", "/nowhere", 404),
        ("PATCH", "/resource_providers", 405),
        ("GET", "/traits?foo=bar", 400),
    ],
)
def test_version_vary_and_request_id_headers_on_every_response(api, method, path, status):
    response = api.request(method, path, version="1.23", json={})
    assert response.status_code == status
    assert response.headers["OpenStack-API-Version"] == "placement 1.23"
    assert response.headers["Vary"] == "openstack-api-version"  # upstream's spelling
    assert REQUEST_ID.match(response.headers["X-Openstack-Request-Id"])


def test_each_response_gets_its_own_request_id(api):
    ids = {api.get("/").headers["X-Openstack-Request-Id"] for _ in range(3)}
    assert len(ids) == 3


@pytest.mark.parametrize("version", ["1.40", "2.0", "0.9"])
def test_unsupported_versions_are_406_naming_the_range(api, version):
    for path, token in (("/", None), ("/resource_providers", "admin")):
        response = api.get(path, version=version, token=token)
        error = _assert_error_format(response, 406)
        assert error["min_version"] == "1.0"
        assert error["max_version"] == "1.39"
        assert "Vary" in response.headers


@pytest.mark.parametrize("version", ["foo", "1", "1.x", "latest1"])
def test_garbage_versions_are_400(api, version):
    response = api.get("/resource_providers", version=version)
    _assert_error_format(response, 400)


def test_no_token_is_401(api):
    response = _raw(
        api.client, "GET", "/resource_providers", {"OpenStack-API-Version": "placement 1.23"}
    )
    error = _assert_error_format(response, 401)
    assert error["title"] == "Unauthorized"
    assert error["code"] == "placement.undefined_code"


@pytest.mark.parametrize("roles", ["member", "", "reader-ish", "member,observer"])
def test_a_user_without_a_role_that_allows_it_is_403(api, roles):
    headers = {"X-Auth-Token": "user", "X-Roles": roles}
    response = api.get("/resource_providers", token=None, headers=headers)
    error = _assert_error_format(response, 403)
    assert error["title"] == "Forbidden"
    refused = api.post("/resource_providers", token=None, headers=headers, json={"name": "x"})
    assert refused.status_code == 403
    assert api.get("/resource_providers").json["resource_providers"] == []


@pytest.mark.parametrize("roles", ["service", "admin", "member,admin", "ADMIN"])
def test_service_and_admin_roles_may_read_and_write(api, roles):
    headers = {"X-Auth-Token": "user", "X-Roles": roles}
    created = api.post(
        "/resource_providers", token=None, headers=headers, json={"name": "cn1"}, version="1.20"
    )
    assert created.status_code == 200
    listed = api.get("/resource_providers", token=None, headers=headers)
    assert listed.status_code == 200
    assert [p["name"] for p in listed.json["resource_providers"]] == ["cn1"]


def test_noauth_reader_role_may_neither_list_providers_nor_write(api):
    # As upstream's default policy: provider reads are for admin and service only.
    headers = {"X-Auth-Token": "user", "X-Roles": "reader"}
    assert api.get("/resource_providers", token=None, headers=headers).status_code == 403
    response = api.post("/resource_providers", token=None, headers=headers, json={"name": "x"})
    assert response.status_code == 403


def test_unknown_url_is_404_json(api):
    response = api.get("/nowhere", version="1.23")
    error = _assert_error_format(response, 404)
    assert error["title"] == "Not Found"
    assert error["code"] == "placement.undefined_code"
    assert api.get("/resource_providers/", version="1.23").status_code == 404


def test_wrong_method_is_405_with_allow(api):
    response = api.request("PATCH", "/resource_providers", version="1.23")
    error = _assert_error_format(response, 405)
    assert error["title"] == "Method Not Allowed"
    allowed = {m.strip() for m in response.headers["Allow"].split(",")}
    assert {"GET", "POST"} <= allowed
    assert "PATCH" not in allowed
    put_root = api.put("/", json={})
    assert put_root.status_code == 405
    assert "GET" in put_root.headers["Allow"]


@pytest.mark.parametrize("path", ["/resource_providers", "/traits", "/usages?project_id=p"])
def test_accepting_only_html_is_406(api, path):
    response = api.get(path, headers={"Accept": "text/html"})
    assert response.status_code == 406
    assert "Vary" in response.headers


def test_accept_is_checked_only_where_upstream_checks_it(api):
    # Upstream's root, GET /traits/{name} and writes ignore Accept; routing comes first.
    html = {"Accept": "text/html"}
    assert api.get("/", headers=html).status_code == 200
    assert api.put("/traits/CUSTOM_A", headers=html).status_code == 201
    assert api.get("/traits/CUSTOM_A", headers=html).status_code == 204
    assert api.get("/nowhere", headers=html).status_code == 404
    assert api.request("PATCH", "/traits", headers=html).status_code == 405


def test_routing_comes_before_policy(api):
    # A reader's PATCH is 405 as upstream (not 403); its write to a real route is 403.
    reader = {"X-Roles": "reader"}
    assert api.request("PATCH", "/traits", token="user", headers=reader).status_code == 405
    assert api.request("OPTIONS", "/traits", token="user", headers=reader).status_code == 405
    assert api.put("/traits/CUSTOM_B", token="user", headers=reader).status_code == 403
    assert api.get("/traits", token=None, headers={"Accept": "text/html"}).status_code == 401


def test_accepting_json_or_anything_is_fine(api):
    for accept in ("application/json", "*/*", "text/html, application/json;q=0.5"):
        response = api.get("/resource_providers", headers={"Accept": accept})
        assert response.status_code == 200, accept


def test_error_code_is_absent_before_1_23_and_present_from_1_23(api):
    path = f"/resource_providers/{uuid.uuid4()}"
    old = _assert_error_format(api.get(path, version="1.22"), 404)
    assert "code" not in old
    new = _assert_error_format(api.get(path, version="1.23"), 404)
    assert new["code"] == "placement.resource_provider.not_found"
    assert set(new) == {"status", "title", "detail", "request_id", "code"}
    assert set(old) == {"status", "title", "detail", "request_id"}


def test_error_titles_are_the_http_reason_phrases(api):
    provider = api.create_provider("cn1")
    cases = {
        400: api.post("/resource_providers", json={}),
        404: api.get(f"/resource_providers/{uuid.uuid4()}"),
        409: api.post("/resource_providers", json={"name": "cn1"}),
        415: api.post("/resource_providers", data="{}", content_type="text/plain"),
    }
    titles = {status: _assert_error_format(r, status)["title"] for status, r in cases.items()}
    assert titles == {
        400: "Bad Request",
        404: "Not Found",
        409: "Conflict",
        415: "Unsupported Media Type",
    }
    assert api.get(f"/resource_providers/{provider['uuid']}").status_code == 200


def test_cache_headers_on_root_from_1_15(api):
    assert "Cache-Control" not in api.get("/", version="1.14").headers
    new = api.get("/", version="1.15")
    assert new.headers["Cache-Control"] == "no-cache"
    assert new.headers["Last-Modified"].endswith("GMT")


def test_errors_have_no_cache_headers(api):
    response = api.get(f"/resource_providers/{uuid.uuid4()}", version="1.39")
    assert response.status_code == 404
    assert "Last-Modified" not in response.headers


def test_a_406_for_the_version_carries_no_code(api):
    response = api.get("/resource_providers", version="1.40")
    assert error_code(response) is None


@pytest.mark.parametrize(
    "method, path",
    [
        ("GET", "/resource_classes/CUSTOM_%00"),
        ("DELETE", "/resource_classes/CUSTOM_%00"),
        ("PUT", "/resource_classes/CUSTOM_A%00"),
        ("GET", "/traits/CUSTOM_%00"),
        ("DELETE", "/traits/CUSTOM_%00"),
        ("GET", "/traits?name=in:A%00"),
        ("GET", "/traits?name=startswith:A%00"),
        ("GET", "/resource_providers?name=a%00"),
        ("GET", "/resource_providers?a%00=1"),
    ],
)
def test_nul_in_the_url_is_400_on_every_backend(api, method, path):
    # PostgreSQL cannot compare text with NUL: this used to be a 500 there.
    response = api.request(method, path, version="1.23")
    _assert_error_format(response, 400)


def test_nul_in_a_path_name_of_an_existing_provider_is_400(api):
    provider = api.create_provider("cn1")
    base = f"/resource_providers/{provider['uuid']}/inventories"
    body = {"resource_provider_generation": 0, "total": 1}
    assert api.put(f"{base}/VCPU%00", json=body).status_code == 400
    assert api.get(f"{base}/VCPU%00").status_code == 400
    assert api.generation(provider["uuid"]) == 0


@pytest.mark.parametrize("body", [{"name": "a\u0000"}, {"name": "\u0000"}])
def test_nul_in_a_json_string_is_400_on_every_backend(api, body):
    created = api.post("/resource_providers", json=body)
    _assert_error_format(created, 400)
    provider = api.create_provider("cn1")
    renamed = api.put(f"/resource_providers/{provider['uuid']}", json=body)
    _assert_error_format(renamed, 400)
    assert [p["name"] for p in api.get("/resource_providers").json["resource_providers"]] == ["cn1"]


class TestNoAuthReaderPolicy:
    """noauth2 follows upstream's default policy: a reader sees only its project's usages."""

    def test_reader_reads_own_project_usages_only(self, api):
        own = {"X-Roles": "reader", "X-Project-Id": "proj-1"}
        response = api.get("/usages?project_id=proj-1", token="user", headers=own)
        assert response.status_code == 200
        other = api.get("/usages?project_id=proj-2", token="user", headers=own)
        assert other.status_code == 403
        no_project = api.get(
            "/usages?project_id=proj-1", token="user", headers={"X-Roles": "reader"}
        )
        assert no_project.status_code == 403

    def test_the_token_names_user_and_project_as_upstream(self, api):
        # "user:project": the user admin is an admin without X-Roles; the project is the
        # token's unless X-Project-Id says otherwise; X-Roles decides when given.
        assert api.get("/resource_providers", token="admin:admin").status_code == 200
        assert api.get("/resource_providers", token="admin:some-project").status_code == 200
        reader = {"X-Roles": "reader"}
        assert (
            api.get("/usages?project_id=proj-1", token="user:proj-1", headers=reader).status_code
            == 200
        )
        assert (
            api.get("/usages?project_id=proj-1", token="user:proj-2", headers=reader).status_code
            == 403
        )
        assert api.get("/resource_providers", token="admin", headers=reader).status_code == 403
        assert api.get("/resource_providers", token="bob").status_code == 403

    def test_reader_cannot_list_providers(self, api):
        headers = {"X-Roles": "reader", "X-Project-Id": "proj-1"}
        assert api.get("/resource_providers", token="user", headers=headers).status_code == 403


# Bodies' headers, and the order of checks around them, as upstream's.


def test_a_content_length_that_is_no_integer_is_400_before_routing(api):
    for path in ("/resource_providers", "/nowhere"):
        response = api.post(
            path,
            data=b"{}",
            content_type="application/json",
            environ_overrides={"CONTENT_LENGTH": "hi mom"},
        )
        error = _assert_error_format(response, 400)
        assert error["detail"] == "content-length header must be an integer"


def test_a_body_without_a_content_type_is_400(api):
    response = api.post("/resource_providers", data=b"I want a resource provider please")
    error = _assert_error_format(response, 400)
    assert error["detail"] == "content-type header required when content-length > 0"


def test_a_body_of_another_type_is_415_before_anything_is_looked_up(api):
    missing = str(uuid.uuid4())
    # No body and no type at all: upstream names the type None.
    response = api.put(f"/resource_providers/{missing}")
    error = _assert_error_format(response, 415)
    assert error["detail"].startswith("The media type None is not supported, use application/json")
    for method, path in [
        ("PUT", f"/resource_providers/{missing}"),
        ("POST", f"/resource_providers/{missing}/inventories"),
        ("PUT", f"/resource_providers/{missing}/inventories"),
        ("PUT", f"/resource_providers/{missing}/inventories/VCPU"),
        ("PUT", f"/resource_providers/{missing}/aggregates"),
        ("PUT", f"/resource_providers/{missing}/traits"),
        ("PUT", "/allocations/not-a-uuid"),
    ]:
        response = api.request(method, path, data="x", content_type="text/plain")
        assert response.status_code == 415, (method, path)
        assert response.json["errors"][0]["detail"].startswith(
            "The media type text/plain is not supported, use application/json"
        )


def test_the_media_type_and_the_microversion_are_checked_in_upstreams_order(api):
    provider = api.create_provider("cn1")["uuid"]
    plain = {"data": "x", "content_type": "text/plain"}
    # Aggregates check the type first, the others their microversion.
    assert (
        api.put(f"/resource_providers/{provider}/aggregates", version="1.0", **plain).status_code
        == 415
    )
    assert api.post("/reshaper", version="1.29", **plain).status_code == 404
    assert api.post("/resource_classes", version="1.1", **plain).status_code == 404
    assert api.post("/allocations", version="1.12", **plain).status_code == 404


def test_unknown_urls_say_so_in_upstreams_words(api):
    provider = api.create_provider("cn1")["uuid"]
    for path in ("/moo", f"/resource_providers/{provider}/cows"):
        error = _assert_error_format(api.get(path), 404)
        assert error["detail"] == "The resource could not be found."


def test_errors_are_html_for_an_accept_that_prefers_html(api):
    html = api.get("/nowhere", headers={"Accept": "text/html"})
    assert html.status_code == 404
    assert html.headers["Content-Type"].startswith("text/html")
    assert "The resource could not be found." in html.get_data(as_text=True)
    version = api.get("/", version="0.5", headers={"Accept": "text/html"})
    assert version.status_code == 406
    assert "Unacceptable version header: 0.5" in version.get_data(as_text=True)
    for accept in (None, "*/*", "application/json", "text/html;q=0.5, application/json"):
        extra = {"Accept": accept} if accept else {}
        response = api.get("/nowhere", headers=extra)
        assert response.headers["Content-Type"] == "application/json", accept
        assert response.json["errors"][0]["status"] == 404


def test_405_names_the_method_and_the_routes_methods_without_head(api):
    response = api.delete("/")
    assert response.status_code == 405
    assert response.headers["Allow"] == "GET"
    on_app = api.request("OPTIONS", "/resource_providers")
    assert set(on_app.headers["Allow"].split(", ")) == {"GET", "POST"}
    assert on_app.json["errors"][0]["detail"] == (
        "The method OPTIONS is not allowed for this resource."
    )


def test_a_route_asked_below_its_microversion_says_which_it_needs(api):
    response = api.get("/allocation_candidates?resources=VCPU:1", version="1.0")
    assert response.status_code == 404
    detail = response.json["errors"][0]["detail"]
    assert detail.startswith("The resource could not be found.")  # upstream's sentence
    assert "needs microversion 1.10 or later" in detail
    assert "OpenStack-API-Version: placement 1.10" in detail


@pytest.mark.parametrize(
    ("url", "version", "named", "needed"),
    [
        ("/resource_providers?resources=VCPU:1", "1.0", "'resources'", "1.4"),
        ("/resource_providers?in_tree=" + str(uuid.UUID(int=1)), "1.13", "'in_tree'", "1.14"),
        ("/resource_providers?required=HW_CPU_X86_AVX", "1.17", "'required'", "1.18"),
        ("/allocation_candidates?resources=VCPU:1&limit=1", "1.10", "'limit'", "1.16"),
        (
            "/allocation_candidates?resources=VCPU:1&resources1=VCPU:1",
            "1.24",
            "'resources1'",
            "1.25",
        ),
        ("/allocation_candidates?resources_NUMA=VCPU:1", "1.32", "'resources_NUMA'", "1.33"),
        (
            "/allocation_candidates?resources=VCPU:1&root_required=X",
            "1.34",
            "'root_required'",
            "1.35",
        ),
        ("/usages?project_id=p&consumer_type=INSTANCE", "1.37", "'consumer_type'", "1.38"),
    ],
)
def test_a_query_parameter_asked_below_its_microversion_says_which_it_needs(
    api, url, version, named, needed
):
    response = api.get(url, version=version)
    assert response.status_code == 400
    detail = response.json["errors"][0]["detail"]
    assert detail.startswith("Invalid query string parameters: ")  # upstream's sentence
    assert named in detail.split("\n\n")[0]
    assert detail.endswith(
        f"{named} needs microversion {needed} or later "
        f"(OpenStack-API-Version: placement {needed}, or latest)."
    )


def test_a_query_parameter_no_microversion_takes_names_no_version(api):
    response = api.get("/resource_providers?colour=blue", version="1.0")
    assert response.status_code == 400
    detail = response.json["errors"][0]["detail"]
    assert "'colour' was unexpected" in detail
    assert "needs microversion" not in detail
