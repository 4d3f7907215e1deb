"""A node's kubelet checkpoint reported while claims run: no device is ever given twice,
on either database.

A claim chooses from what it read, then writes; a checkpoint report holding the
chosen device may commit in between. Both write through placement's one write path
(providers locked, capacity checked with tenancy), so whichever commits second is
refused: the claim chooses again, the report is 409 and writes nothing.
"""

import threading
import uuid

import pytest
import requests

from placement import errors
from placement.db import migrate
from placement.db.engine import make_engine
from placement.devices import checkpoints, importing, service
from placement.devices.device_list import parse_device_list
from placement.devices.request import parse_device_request
from placement.nodes.naming import Naming
from placement.replica.replica import Replica
from tests.functional.device_races import QUEUED_WRITERS, claim_with_a_write_between
from tests.functional.device_races import minors as _minors
from tests.functional.device_races import write as _write
from tests.functional.gunicorn import race, running_gunicorn

HEADERS = {"X-Auth-Token": "admin", "OpenStack-API-Version": "placement 1.39"}
NAMING = Naming()
TWO_GPUS = {
    "devices": [
        {"type": "gpu", "minor": m, "numa": 0, "pcie": 0, "memory": "8Gi", "id": f"GPU-{m}"}
        for m in (0, 1)
    ]
}
HALF = {"kubernetes.io/gpu": 50}
GPU0_HELD = [
    {
        "podUID": "pod-a",
        "containerName": "main",
        "resourceName": "nvidia.com/gpu",
        "deviceIDs": ["GPU-0"],
    }
]


@pytest.mark.parametrize("target", ["postgresql", "sqlite", "mysql"])
def test_a_checkpoint_between_a_claims_choice_and_its_write(target, empty_database_url):
    """The claim chooses GPU0 (both idle: the lower minor); a report holding GPU0 is
    started right then. PostgreSQL: the report commits first, so the claim's write
    fails the capacity check and it chooses again: GPU1. SQLite: writers are
    serialized, the report waits for the claim, which commits on GPU0; the report is
    then refused (409) and writes nothing."""
    engine = make_engine(empty_database_url(target))
    migrate.upgrade(engine)
    _write(
        engine, lambda conn: importing.import_node(conn, "n", parse_device_list(TWO_GPUS), NAMING)
    )
    search = service.DeviceSearch(Replica())
    request = parse_device_request(HALF, {}, NAMING)

    def claim(conn):
        return search.claim(conn, request, NAMING, str(uuid.uuid4()), "p", "u")

    reported: list = []

    def report():
        own_search = service.DeviceSearch(Replica())  # another worker's
        entries = checkpoints.checkpoints_from_body(
            [{"pod_uid": "pod-a", "resource_name": "nvidia.com/gpu", "device_ids": ["GPU-0"]}]
        )
        try:
            reported.append(
                _write(engine, lambda conn: own_search.hold_checkpoints(conn, NAMING, "n", entries))
            )
        except errors.PlacementError as exc:
            reported.append(exc)

    reporter = threading.Thread(target=report)
    chosen, claimed = claim_with_a_write_between(engine, search, claim, reporter, target)
    assert chosen == [[0]]
    [outcome] = reported
    if target not in QUEUED_WRITERS:
        assert _minors(claimed) == [1]
        assert isinstance(outcome, checkpoints.HoldResult) and outcome.changed
    else:
        assert _minors(claimed) == [0]
        assert isinstance(outcome, errors.Conflict), outcome
        assert "would exceed the capacity" in outcome.detail
    view = _write(engine, lambda conn: search.node_view(conn, NAMING, "n"))
    used = [d["inventories"]["core"]["used"] for d in view["devices"]]
    assert used == ([100, 50] if target not in QUEUED_WRITERS else [50, 0])
    engine.dispose()


@pytest.fixture(params=["postgresql", "sqlite", "mysql"])
def served(request, empty_database_url, tmp_path):
    url = empty_database_url(request.param)
    with running_gunicorn(url, tmp_path, workers=4) as base:
        yield base


CLAIMERS = 8  # halves: more than the two GPUs can give
ROUNDS = 3


@pytest.mark.slow
def test_claims_racing_a_checkpoint_never_share_its_device(served):
    """Each round: 8 claims of half a GPU and a report holding GPU0, released together.
    Afterwards GPU0 is either held by the pod's consumer alone (the report won) or by
    claims alone (the report is 409); no GPU is over-committed; every answer is 200 or
    409. Everything is freed between rounds."""
    base = served
    created = requests.put(
        f"{base}/group_resources/device_nodes/n", json=TWO_GPUS, headers=HEADERS, timeout=60
    )
    assert created.status_code == 201, created.text
    gpu0, gpu1 = (d["provider"] for d in created.json()["devices"])
    pod_consumer = checkpoints.consumer_uuid("pod-a")

    def claim():
        body = {
            "resources": HALF,
            "consumer_uuid": str(uuid.uuid4()),
            "project_id": "p",
            "user_id": "u",
        }
        return requests.post(
            f"{base}/group_resources/device_claims", json=body, headers=HEADERS, timeout=60
        )

    def report(entries):
        return requests.put(
            f"{base}/group_resources/device_nodes/n/checkpoints",
            json={"checkpoints": entries},
            headers=HEADERS,
            timeout=60,
        )

    outcomes = []
    for _ in range(ROUNDS):
        calls = (
            [claim] * (CLAIMERS // 2)
            + [lambda: report(GPU0_HELD)]
            + [claim] * (CLAIMERS - CLAIMERS // 2)
        )
        responses = race(calls)
        reported = responses[CLAIMERS // 2]
        claims = responses[: CLAIMERS // 2] + responses[CLAIMERS // 2 + 1 :]
        assert reported.status_code in (200, 409), reported.text
        assert {r.status_code for r in claims} <= {200, 409}, [r.text for r in claims]
        held = {}
        for gpu in (gpu0, gpu1):
            answer = requests.get(
                f"{base}/resource_providers/{gpu}/allocations", headers=HEADERS, timeout=60
            ).json()["allocations"]
            held[gpu] = answer
            assert sum(a["resources"]["CUSTOM_GPU_CORE"] for a in answer.values()) <= 100
        granted = [r.json()["consumer_uuid"] for r in claims if r.status_code == 200]
        if reported.status_code == 200:
            assert list(held[gpu0]) == [pod_consumer]
            assert len(granted) <= 2 and set(held[gpu1]) == set(granted)
        else:  # a claim took part of GPU0 first
            assert pod_consumer not in held[gpu0] and held[gpu0]
            assert len(granted) <= 4 and set(held[gpu0]) | set(held[gpu1]) == set(granted)
        outcomes.append(reported.status_code)
        assert report([]).status_code == 200
        for consumer in granted:
            freed = requests.delete(f"{base}/allocations/{consumer}", headers=HEADERS, timeout=60)
            assert freed.status_code == 204, freed.text
    assert set(outcomes) <= {200, 409}
