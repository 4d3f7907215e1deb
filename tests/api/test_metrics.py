"""GET /metrics (``placement.observability.metrics``): who may read it, and that requests,
candidate searches, claims, the copy of the providers and the database pool move it."""

import uuid

import pytest
from prometheus_client.parser import text_string_to_metric_families

from placement.app import create_app
from tests.api.group_resource_helpers import claim, sync
from tests.api.test_hardening import assert_error
from tests.conftest import Api


def scrape(api, **request) -> dict[tuple[str, frozenset], float]:
    """Every sample of /metrics: (name, labels) -> value."""
    response = api.client.get("/metrics", headers={"X-Auth-Token": "admin"}, **request)
    assert response.status_code == 200, response.data
    samples = {}
    for family in text_string_to_metric_families(response.get_data(as_text=True)):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples


def value(samples, name: str, **labels) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def test_metrics_need_an_admin_token_and_no_microversion(api):
    assert_error(api.client.get("/metrics"), 401)
    assert_error(api.client.get("/metrics", headers={"X-Auth-Token": "someone"}), 403)
    response = api.client.get("/metrics", headers={"X-Auth-Token": "admin"})
    assert response.status_code == 200
    assert response.content_type.startswith("text/plain; version=")
    assert "OpenStack-API-Version" not in response.headers  # not in the API
    assert b"placement_http_requests_total" in response.data
    assert api.client.head("/metrics", headers={"X-Auth-Token": "admin"}).status_code == 200
    assert_error(api.client.post("/metrics", headers={"X-Auth-Token": "admin"}), 405)


def test_metrics_are_refused_to_remote_clients_under_noauth2(api):
    remote = {"REMOTE_ADDR": "10.1.2.3"}
    response = api.client.get("/metrics", headers={"X-Auth-Token": "admin"}, environ_base=remote)
    assert_error(response, 403)


def test_an_option_opens_the_metrics_to_anyone(config, engine):
    open_api = Api(create_app(config.replace(metrics_unauthenticated=True), engine).test_client())
    assert open_api.client.get("/metrics").status_code == 200
    remote = {"REMOTE_ADDR": "10.1.2.3"}
    assert open_api.client.get("/metrics", environ_base=remote).status_code == 200
    # The API itself is as protected as ever.
    assert open_api.client.get("/resource_providers").status_code == 401


def test_requests_are_counted_by_route_template_method_and_status(api):
    before = scrape(api)
    missing = str(uuid.uuid4())
    for _ in range(3):
        assert api.get(f"/resource_providers/{missing}").status_code == 404
    assert api.post("/resource_providers", json={"name": "counted"}).status_code == 200
    assert api.get("/no/such/route").status_code == 404
    after = scrape(api)

    def moved(name, **labels):
        return value(after, name, **labels) - value(before, name, **labels)

    template = "/resource_providers/<uuid>"
    counter = "placement_http_requests_total"
    assert moved(counter, route=template, method="GET", status="404") == 3
    assert moved(counter, route="/resource_providers", method="POST", status="200") == 1
    assert moved(counter, route="unmatched", method="GET", status="404") == 1
    assert moved("placement_http_request_duration_seconds_count", route=template, method="GET") == 3
    assert (
        moved(
            "placement_http_request_duration_seconds_bucket",
            route=template,
            method="GET",
            le="+Inf",
        )
        == 3
    )
    assert (
        value(after, "placement_http_request_duration_seconds_sum", route=template, method="GET")
        > 0
    )
    # Never a raw path: its uuid would make a series per provider.
    assert not any(missing in str(labels) for _, labels in after)
    # The scrape before counts too, once answered.
    assert moved(counter, route="/metrics", method="GET", status="200") == 1


def test_candidate_searches_count_trees_reuse_and_caps(api):
    for name in ("cn1", "cn2", "cn3"):
        api.set_inventory(api.create_provider(name)["uuid"], VCPU=8)
    before = scrape(api)
    query = "/allocation_candidates?resources=VCPU:1"
    assert len(api.get(query).json["allocation_requests"]) == 3
    assert len(api.get(query).json["allocation_requests"]) == 3  # the same body, reused
    assert len(api.get(query + "&limit=1").json["allocation_requests"]) == 1
    after = scrape(api)

    def moved(name, **labels):
        return value(after, name, **labels) - value(before, name, **labels)

    assert moved("placement_candidate_searches_total", answer="searched") == 2
    assert moved("placement_candidate_searches_total", answer="reused") == 1
    assert moved("placement_candidate_search_trees_count") == 2
    # The first search looked at the three trees; the one with a limit reused one of them.
    assert moved("placement_candidate_search_trees_sum") == 3 + 1
    assert moved("placement_candidate_trees_reused_total") == 1
    assert moved("placement_candidate_answers_capped_total", by="limit") == 1
    assert value(after, "placement_candidate_kept_requests") == 1
    assert value(after, "placement_candidate_kept_bytes") > 0


def test_an_answer_cut_by_max_allocation_candidates_is_counted(config, engine):
    api = Api(create_app(config.replace(max_allocation_candidates=2), engine).test_client())
    for name in ("cn1", "cn2", "cn3"):
        api.set_inventory(api.create_provider(name)["uuid"], VCPU=8)
    assert len(api.get("/allocation_candidates?resources=VCPU:1").json["allocation_requests"]) == 2
    samples = scrape(api)
    assert (
        value(samples, "placement_candidate_answers_capped_total", by="max_allocation_candidates")
        == 1
    )


def test_the_copy_of_the_providers_is_measured_as_it_is_refreshed(api):
    for name in ("cn1", "cn2"):
        api.create_provider(name)
    assert api.client.get("/healthcheck/ready").status_code == 200  # reads both
    samples = scrape(api)
    assert value(samples, "placement_replica_providers") == 2
    assert value(samples, "placement_replica_trees") == 2
    assert value(samples, "placement_replica_refresh_duration_seconds_count") == 1
    assert value(samples, "placement_replica_lag_providers_sum") == 2
    api.create_provider("cn3")
    assert api.get("/allocation_candidates?resources=VCPU:1").status_code == 200
    samples = scrape(api)
    assert value(samples, "placement_replica_providers") == 3
    assert value(samples, "placement_replica_refresh_duration_seconds_count") == 2
    assert value(samples, "placement_replica_lag_providers_sum") == 3  # one read again


def test_claims_are_counted_granted_and_refused(api):
    sync(api, "node1", {"cpu": 4})
    assert claim(api, {"cpu": 3}, str(uuid.uuid4())).status_code == 200
    assert claim(api, {"cpu": 3}, str(uuid.uuid4())).status_code == 409  # no room left
    samples = scrape(api)
    claims = "placement_claims_total"
    assert value(samples, claims, kind="group_resources", outcome="granted") == 1
    assert value(samples, claims, kind="group_resources", outcome="refused") == 1
    # Retries need a concurrent claim (tests/api/test_claim_retries.py); none here.
    assert value(samples, "placement_claim_retries_total", kind="group_resources") == 0


def test_the_database_pool_is_sampled(api):
    assert api.get("/resource_providers").status_code == 200
    samples = scrape(api)
    assert value(samples, "placement_db_pool_size") >= 1
    assert value(samples, "placement_db_pool_connections", state="idle") >= 1
    assert ("placement_db_pool_connections", frozenset({("state", "in_use")})) in samples


@pytest.mark.parametrize("path", ["/metrics", "/healthcheck"])
def test_every_application_counts_from_zero(api, config, engine, path):
    """Metrics belong to their application, not to the process."""
    api.client.get(path, headers={"X-Auth-Token": "admin"})
    fresh = Api(create_app(config, engine).test_client())
    samples = scrape(fresh)
    assert (
        value(samples, "placement_http_requests_total", route=path, method="GET", status="200") == 0
    )


def test_searches_cut_by_their_time_budget_are_counted_by_kind(api):
    from tests.api import test_devices_budget as devices
    from tests.api import test_group_resources_budget as translator

    translator.wide_world(api)
    devices.wide_world(api)
    cut = "placement_node_searches_cut_total"
    for path, request in (
        ("/group_resources/candidates", translator.WIDE_REQUEST),
        ("/group_resources/device_candidates", devices.WIDE_REQUEST),
    ):
        whole = api.post(path, json={"resources": request})
        assert whole.status_code == 200 and "cut" not in whole.json
    samples = scrape(api)
    assert value(samples, cut, kind="group_resources") == value(samples, cut, kind="devices") == 0
    for path, request in (
        ("/group_resources/candidates", translator.WIDE_REQUEST),
        ("/group_resources/device_candidates", devices.WIDE_REQUEST),
    ):
        answer = api.post(path, json={"resources": request, "budget_ms": 1})
        assert answer.status_code == 200 and "cut" in answer.json
    samples = scrape(api)
    assert value(samples, cut, kind="group_resources") == 1
    assert value(samples, cut, kind="devices") == 1
