"""Gang claims racing single device claims against the real service: gunicorn, four
workers, each backend. Read back from the database: no GPU is given twice, and every
gang is whole (each member holds its devices) or absent (no member holds anything)."""

import uuid

import pytest
import requests
import sqlalchemy as sa

from placement.db.engine import make_engine
from tests.api.gang_helpers import gpu_box
from tests.functional.gunicorn import race, running_gunicorn

HEADERS = {"X-Auth-Token": "admin", "OpenStack-API-Version": "placement 1.39"}
LEVELS = ["spine", "leaf", "nvlink_domain"]
# 2 spines x 2 leaves x 2 nodes of 4 GPUs.
PLACES = {f"gpu-{i}": (f"s{i // 4}", f"l{i // 2}", f"v{i // 2}") for i in range(8)}
GANG = {"members": 3, "member": {"resources": {"nvidia.com/gpu": 4}}, "required": "spine"}
GANG_CLAIMERS = 4
SINGLE_CLAIMERS = 10


@pytest.fixture(params=["postgresql", "sqlite", "mysql"])
def service(request, empty_database_url, tmp_path):
    url = empty_database_url(request.param)
    with running_gunicorn(url, tmp_path, workers=4) as base:
        yield base, url


def _post(base, path, body):
    return requests.post(f"{base}{path}", json=body, headers=HEADERS, timeout=120)


def _gang_claim(base):
    body = {
        **GANG,
        "gang_uuid": str(uuid.uuid4()),
        "consumer_uuids": [str(uuid.uuid4()) for _ in range(GANG["members"])],
        "project_id": "p",
        "user_id": "u",
    }
    return body, _post(base, "/group_resources/gang_claims", body)


def _single_claim(base):
    body = {
        "resources": {"nvidia.com/gpu": 2},
        "consumer_uuid": str(uuid.uuid4()),
        "project_id": "p",
        "user_id": "u",
    }
    return body, _post(base, "/group_resources/device_claims", body)


def _check_database(url, gang_claims) -> int:
    """No GPU held by two consumers or beyond its core; each gang whole or absent. The
    number of gangs held."""
    engine = make_engine(url)
    with engine.connect() as conn:
        held = conn.execute(
            sa.text(
                "SELECT a.resource_provider_id, COUNT(DISTINCT a.consumer_id), SUM(a.used)"
                " FROM allocations a JOIN resource_classes rc ON rc.id = a.resource_class_id"
                " WHERE rc.name = 'CUSTOM_GPU_CORE' GROUP BY a.resource_provider_id"
            )
        ).all()
        gpus_of = dict(
            conn.execute(
                sa.text(
                    "SELECT c.uuid, COUNT(*) FROM allocations a"
                    " JOIN consumers c ON c.id = a.consumer_id"
                    " JOIN resource_classes rc ON rc.id = a.resource_class_id"
                    " WHERE rc.name = 'CUSTOM_GPU_CORE' GROUP BY c.uuid"
                )
            ).all()
        )
        members = conn.execute(sa.text("SELECT gang_uuid, consumer_uuid FROM gang_members")).all()
    engine.dispose()
    assert all(consumers == 1 and used <= 100 for _, consumers, used in held), held
    recorded: dict[str, list[str]] = {}
    for gang, consumer in members:
        recorded.setdefault(gang, []).append(consumer)
    whole = 0
    for body, response in gang_claims:
        holding = [gpus_of.get(consumer, 0) for consumer in body["consumer_uuids"]]
        assert (body["gang_uuid"] in recorded) == (response.status_code == 200)
        if body["gang_uuid"] in recorded:
            assert sorted(recorded[body["gang_uuid"]]) == sorted(body["consumer_uuids"])
            assert holding == [4] * GANG["members"], holding
            whole += 1
        else:
            assert holding == [0] * GANG["members"], holding
    return whole


@pytest.mark.slow
def test_gang_claims_racing_single_claims_give_no_device_twice(service):
    base, url = service
    for name in PLACES:
        response = requests.put(
            f"{base}/group_resources/device_nodes/{name}",
            json=gpu_box(4),
            headers=HEADERS,
            timeout=60,
        )
        assert response.status_code == 201, response.text
    network = {
        "levels": LEVELS,
        "nodes": {n: dict(zip(LEVELS, p, strict=True)) for n, p in PLACES.items()},
    }
    assert (
        requests.put(
            f"{base}/group_resources/network", json=network, headers=HEADERS, timeout=60
        ).status_code
        == 200
    )

    results = race(
        [lambda: _gang_claim(base)] * GANG_CLAIMERS
        + [lambda: _single_claim(base)] * SINGLE_CLAIMERS
    )
    for _, response in results:
        assert response.status_code in (200, 409), response.text
    gang_claims = results[:GANG_CLAIMERS]
    granted = [body for body, response in gang_claims if response.status_code == 200]
    assert len(granted) <= 2  # a spine holds one gang of 3 nodes
    assert _check_database(url, gang_claims) == len(granted)
    for _, response in gang_claims:
        if response.status_code == 409:
            assert "spine" in response.json()["errors"][0]["detail"]

    # Round two: the gangs are released while new gang claims race single claims.
    releases = [
        lambda b=b: (
            b,
            requests.delete(
                f"{base}/group_resources/gangs/{b['gang_uuid']}", headers=HEADERS, timeout=120
            ),
        )
        for b in granted
    ]
    second = race(
        releases + [lambda: _gang_claim(base)] * GANG_CLAIMERS + [lambda: _single_claim(base)] * 4
    )
    for _, response in second:
        assert response.status_code in (200, 204, 409), response.text
    assert {response.status_code for _, response in second[: len(granted)]} == {204}
    _check_database(url, second[len(granted) : len(granted) + GANG_CLAIMERS])
    for body in granted:  # released whole
        for consumer in body["consumer_uuids"]:
            shown = requests.get(f"{base}/allocations/{consumer}", headers=HEADERS, timeout=60)
            assert shown.json()["allocations"] == {}
