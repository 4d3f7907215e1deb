"""The probes (``placement.handlers.health``): no token, no microversion, liveness without
the database or another request's turn, readiness that reads the database (both
databases, and one that cannot be reached)."""

import threading

import pytest

from tests.api.test_hardening import UNREACHABLE_URLS, assert_error, unreachable_database


def test_liveness_needs_no_token_and_no_microversion(api):
    response = api.client.get("/healthcheck")
    assert (response.status_code, response.json) == (200, {"status": "alive"})
    assert api.client.head("/healthcheck").status_code == 200
    # A microversion a client could not ask the API for changes nothing here.
    odd = api.client.get("/healthcheck", headers={"OpenStack-API-Version": "placement 9.99"})
    assert odd.status_code == 200
    assert_error(api.client.post("/healthcheck"), 405)
    # The API itself still wants a token.
    assert api.client.get("/resource_providers").status_code == 401


def test_readiness_reads_the_database_and_the_copy(api):
    assert api.client.get("/healthcheck/ready").json == {"status": "ready", "providers": 0}
    assert api.post("/resource_providers", json={"name": "ready"}).status_code == 200
    assert api.client.get("/healthcheck/ready").json == {"status": "ready", "providers": 1}


def test_liveness_does_not_wait_for_a_long_request(api):
    services = api.services
    answered = []
    with services.serving_lock:  # as a long search holds this process's turn
        probe = threading.Thread(
            target=lambda: answered.append(api.client.get("/healthcheck").status_code)
        )
        probe.start()
        probe.join(timeout=5)
    assert answered == [200]


def test_probes_answer_remote_clients_under_noauth2(api):
    """noauth2 serves loopback clients only; a probe from the kubelet's address says nothing
    and is answered."""
    remote = {"REMOTE_ADDR": "10.1.2.3"}
    assert api.client.get("/healthcheck", environ_base=remote).status_code == 200
    assert api.client.get("/healthcheck/ready", environ_base=remote).status_code == 200
    assert api.client.get("/", environ_base=remote).status_code == 403


@pytest.mark.parametrize("url", UNREACHABLE_URLS, ids=["postgresql", "sqlite"])
def test_readiness_is_503_while_the_database_cannot_be_reached(api, app, url):
    with unreachable_database(app, url):
        assert api.client.get("/healthcheck").status_code == 200  # alive all the same
        response = api.client.get("/healthcheck/ready")
        error = assert_error(response, 503)
        assert response.headers["Retry-After"] == "5"
        assert "database" in error["detail"]
    assert api.client.get("/healthcheck/ready").status_code == 200
