"""Concurrent node syncs against the real service: gunicorn, several workers, both databases.

Four clients sync the same few nodes at once, each alternating between two maps
(or two topologies) whose trees differ: nodes are created, groups added and
removed, inventories changed, all racing. Every answer is a success or a 409
``placement.concurrent_update`` (never a 500, never ``duplicate_name`` for a race),
and each node ends exactly as one of the requests asked: no half tree left.
"""

import pytest
import requests

from tests.functional.gunicorn import race, running_gunicorn

CLIENTS = 4
ROUNDS = 10  # per client and route: 2 x 4 x 10 = 80 syncs per test
NODES = ("n0", "n1", "n2")
HEADERS = {"X-Auth-Token": "admin", "OpenStack-API-Version": "placement 1.39"}
ACCEPTED = {200, 201, 204}

GROUP_MAPS = (
    {"cpu": 64, "Gpugrp0/0/gpu/dev0/cards": 1, "Gpugrp0/0/gpu/dev1/cards": 1},
    {
        "cpu": 32,
        **{f"Gpugrp1/{d // 4}/Gpugrp0/{d // 2}/gpu/dev{d}/cards": 1 for d in range(8)},
    },
)


def _devices(switches: int) -> dict:
    devices = []
    for switch in range(switches):
        devices += [
            {
                "type": "gpu",
                "minor": 2 * switch + g,
                "numa": switch // 2,
                "pcie": switch,
                "memory": "16Gi",
            }
            for g in range(2)
        ]
        devices.append(
            {"type": "rdma", "minor": switch, "numa": switch // 2, "pcie": switch, "vfs": 2}
        )
    return {"devices": devices}


TOPOLOGIES = (_devices(1), _devices(4))


@pytest.fixture(params=["postgresql", "sqlite", "mysql"])
def service(request, empty_database_url, tmp_path):
    with running_gunicorn(empty_database_url(request.param), tmp_path, workers=4) as base:
        yield base, tmp_path / "gunicorn.log"


def _shape(view: dict) -> object:
    """What a node view says of the tree, without what differs between two writes of the
    same state (uuids, generations, the ``changed`` flag)."""
    if isinstance(view, dict):
        return sorted(
            (key, _shape(value))
            for key, value in view.items()
            if key not in {"uuid", "provider", "generation", "changed"}
        )
    if isinstance(view, list):
        return sorted((_shape(item) for item in view), key=repr)
    return view


def _sync_many(base: str, route: str, bodies: tuple, log) -> list[requests.Response]:
    """CLIENTS clients, each syncing every node ROUNDS times with alternating bodies."""

    def client(index: int):
        answers = []
        with requests.Session() as session:
            for round_ in range(ROUNDS):
                for offset, node in enumerate(NODES):
                    body = bodies[(index + round_ + offset) % len(bodies)]
                    answers.append(
                        session.put(
                            f"{base}/{route}/{node}", json=body, headers=HEADERS, timeout=60
                        )
                    )
        return answers

    responses = [
        r for answers in race([lambda i=i: client(i) for i in range(CLIENTS)]) for r in answers
    ]
    failed = [
        (r.status_code, r.text)
        for r in responses
        if r.status_code not in ACCEPTED and not _concurrent_update(r)
    ]
    assert not failed, (failed[:5], log.read_text()[-4000:])
    return responses


def _concurrent_update(response: requests.Response) -> bool:
    return response.status_code == 409 and (
        response.json()["errors"][0]["code"] == "placement.concurrent_update"
    )


def _expected_shapes(base: str, route: str, bodies: tuple) -> list:
    """The view of each body synced alone (on a scratch node, deleted afterwards)."""
    shapes = []
    for body in bodies:
        response = requests.put(f"{base}/{route}/scratch", json=body, headers=HEADERS)
        assert response.status_code in {200, 201}, response.text
        shapes.append(_shape({**response.json(), "name": None}))
    assert requests.delete(f"{base}/{route}/scratch", headers=HEADERS).status_code == 204
    return shapes


@pytest.mark.slow
@pytest.mark.parametrize(
    ("route", "bodies"),
    [
        ("group_resources/nodes", tuple({"resources": m} for m in GROUP_MAPS)),
        ("group_resources/device_nodes", TOPOLOGIES),
    ],
    ids=["nodes", "device_nodes"],
)
def test_concurrent_syncs_of_the_same_nodes(service, route, bodies):
    base, log = service
    expected = _expected_shapes(base, route, bodies)
    responses = _sync_many(base, route, bodies, log)
    assert any(r.status_code == 201 for r in responses)
    for node in NODES:
        view = requests.get(f"{base}/{route}/{node}", headers=HEADERS)
        assert view.status_code == 200, view.text
        assert _shape({**view.json(), "name": None}) in expected, node
    # Wherever the race left them, the nodes still take a plain sync and a delete.
    for node in NODES:
        again = requests.put(f"{base}/{route}/{node}", json=bodies[0], headers=HEADERS)
        assert again.status_code == 200, again.text
        assert requests.delete(f"{base}/{route}/{node}", headers=HEADERS).status_code == 204
