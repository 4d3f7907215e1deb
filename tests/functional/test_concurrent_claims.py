"""Concurrent claims against the real service: gunicorn, several workers, both databases.

24 claimers race for a provider with room for 10. Whatever the interleaving,
usage never exceeds capacity, every claim answered 2xx is stored, every refused
claim left nothing behind (not even its consumer), and consumer generations
move by one per successful write.
"""

import uuid

import pytest
import requests

from tests.functional.gunicorn import race, running_gunicorn

CLAIMERS = 24
CAPACITY = 10
HEADERS = {"X-Auth-Token": "admin", "OpenStack-API-Version": "placement 1.39"}


@pytest.fixture(params=["postgresql", "sqlite", "mysql"])
def service(request, empty_database_url, tmp_path):
    with running_gunicorn(empty_database_url(request.param), tmp_path, workers=4) as base:
        yield base


def _claim(base, provider, consumer, amount, generation):
    body = {
        "allocations": {provider: {"resources": {"VCPU": amount}}},
        "project_id": "project",
        "user_id": "user",
        "consumer_generation": generation,
        "consumer_type": "INSTANCE",
    }
    return requests.put(f"{base}/allocations/{consumer}", json=body, headers=HEADERS, timeout=60)


@pytest.mark.slow
def test_concurrent_claims_never_over_commit(service):
    base = service
    created = requests.post(
        f"{base}/resource_providers", json={"name": "small-host"}, headers=HEADERS
    ).json()
    provider = created["uuid"]
    inventory = requests.put(
        f"{base}/resource_providers/{provider}/inventories",
        json={"resource_provider_generation": 0, "inventories": {"VCPU": {"total": CAPACITY}}},
        headers=HEADERS,
    )
    assert inventory.status_code == 200

    consumers = [str(uuid.uuid4()) for _ in range(CLAIMERS)]
    responses = race([lambda c=c: _claim(base, provider, c, 1, None) for c in consumers])
    statuses = [r.status_code for r in responses]
    assert set(statuses) <= {204, 409}, [r.text for r in responses if r.status_code >= 500]
    winners = [c for c, s in zip(consumers, statuses, strict=True) if s == 204]
    losers = [c for c, s in zip(consumers, statuses, strict=True) if s != 204]
    # Locking, not optimistic retries: every claim that fits is granted.
    assert len(winners) == CAPACITY

    usage = requests.get(f"{base}/resource_providers/{provider}/usages", headers=HEADERS).json()
    assert usage["usages"]["VCPU"] == len(winners) <= CAPACITY
    for consumer in winners:
        shown = requests.get(f"{base}/allocations/{consumer}", headers=HEADERS).json()
        assert shown["allocations"][provider]["resources"] == {"VCPU": 1}
        assert shown["consumer_generation"] == 1
    for consumer in losers:
        shown = requests.get(f"{base}/allocations/{consumer}", headers=HEADERS).json()
        assert shown == {"allocations": {}}

    # Round two: every winner rewrites its claim at the generation it saw, while
    # every loser retries with the null generation of a new consumer. Each winner
    # frees nothing (same amount), so the losers still cannot fit.
    rewrites = [lambda c=c: _claim(base, provider, c, 1, 1) for c in winners]
    retries = [lambda c=c: _claim(base, provider, c, 1, None) for c in losers]
    second = race(rewrites + retries)
    assert [r.status_code for r in second[: len(winners)]] == [204] * len(winners)
    assert {r.status_code for r in second[len(winners) :]} == {409}
    for consumer in winners:
        shown = requests.get(f"{base}/allocations/{consumer}", headers=HEADERS).json()
        assert shown["consumer_generation"] == 2

    # Round three: two writers race on the same consumer with the same generation:
    # exactly one wins, the other gets a generation conflict.
    target = winners[0]
    duel = race([lambda: _claim(base, provider, target, 1, 2)] * 2)
    assert sorted(r.status_code for r in duel) == [204, 409]
    loser = next(r for r in duel if r.status_code == 409)
    assert loser.json()["errors"][0]["code"] == "placement.concurrent_update"

    final = requests.get(f"{base}/resource_providers/{provider}/usages", headers=HEADERS).json()
    assert final["usages"]["VCPU"] <= CAPACITY


def _gpu_node(index):
    resources = {"cpu": 64}
    for device in range(8):
        resources[f"Gpugrp1/{device // 4}/Gpugrp0/{device // 2}/gpu/dev{device}/cards"] = 1
    return resources


@pytest.mark.slow
def test_concurrent_group_resource_claims_never_share_a_device(service):
    base = service
    for index in range(2):
        response = requests.put(
            f"{base}/group_resources/nodes/gpu-{index}",
            json={"resources": _gpu_node(index)},
            headers=HEADERS,
        )
        assert response.status_code == 201, response.text
    # 2 nodes x 4 GPU pairs: 8 pair claims fit, 4 cannot.
    pair = {"cpu": 1, "Gpugrp0/RA/gpu/a/cards": 1, "Gpugrp0/RA/gpu/b/cards": 1}

    def claim(consumer):
        body = {"resources": pair, "consumer_uuid": consumer, "project_id": "p", "user_id": "u"}
        return requests.post(
            f"{base}/group_resources/claims", json=body, headers=HEADERS, timeout=60
        )

    consumers = [str(uuid.uuid4()) for _ in range(12)]
    responses = race([lambda c=c: claim(c) for c in consumers])
    statuses = [r.status_code for r in responses]
    assert sorted(statuses) == [200] * 8 + [409] * 4, [r.text for r in responses]
    devices = []
    for response in responses:
        if response.status_code == 200:
            body = response.json()
            devices += [(body["node"], key) for key in body["mappings"].values() if "/gpu/" in key]
        else:
            assert response.json()["errors"][0]["code"] == ("placement.group_resources.unplaceable")
    assert len(devices) == 16 == len(set(devices))
    for index in range(2):
        node = requests.get(f"{base}/group_resources/nodes/gpu-{index}", headers=HEADERS).json()
        for group in node["groups"]:
            cards = group["inventories"].get("CUSTOM_GPU_CARDS")
            if cards:
                assert cards["used"] == 1
        assert node["inventories"]["VCPU"]["used"] == 4


@pytest.mark.slow
def test_concurrent_exclusive_device_claims_never_share_a_switch(service):
    """12 claims race for 2 GPUs with their NICs, exclusive per PCIe switch, on 2 nodes of
    4 switches (2 GPUs and a NIC each): exactly 8 win, each with a switch of its own."""
    base = service
    for index in range(2):
        devices = []
        for switch in range(4):
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
                {"type": "rdma", "minor": switch, "numa": switch // 2, "pcie": switch, "vfs": 4}
            )
        response = requests.put(
            f"{base}/group_resources/device_nodes/dev-{index}",
            json={"devices": devices},
            headers=HEADERS,
        )
        assert response.status_code == 201, response.text
    annotations = {
        "scheduling.koordinator.sh/device-joint-allocate": (
            '{"deviceTypes": ["gpu", "rdma"], "requiredScope": "SamePCIe"}'
        ),
        "scheduling.koordinator.sh/device-allocate-hint": (
            '{"rdma": {"vfSelector": {}, "exclusivePolicy": "PCIeLevel"}}'
        ),
    }

    def claim(consumer):
        body = {
            "resources": {"kubernetes.io/gpu": 50, "koordinator.sh/rdma": 1},
            "annotations": annotations,
            "consumer_uuid": consumer,
            "project_id": "p",
            "user_id": "u",
        }
        return requests.post(
            f"{base}/group_resources/device_claims", json=body, headers=HEADERS, timeout=60
        )

    consumers = [str(uuid.uuid4()) for _ in range(12)]
    responses = race([lambda c=c: claim(c) for c in consumers])
    statuses = [r.status_code for r in responses]
    assert sorted(statuses) == [200] * 8 + [409] * 4, [r.text for r in responses]
    switches = [
        (r.json()["node"], r.json()["devices"]["rdma"][0]["pcie"])
        for r in responses
        if r.status_code == 200
    ]
    assert len(set(switches)) == 8
