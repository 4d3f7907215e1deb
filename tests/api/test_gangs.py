"""The network as levels, and gangs over HTTP: a story on a small cluster, and bad input
(400, nothing written)."""

import uuid

import pytest

from tests.api.gang_helpers import (
    LEVELS,
    build_cluster,
    claim_gang,
    gang_body,
    gangs,
)
from tests.conftest import error_code

# 2 spines; spine s0 has leaves l0 (nvlink domains a, b) and l1 (c); s1 has l2 (d).
CLUSTER = {
    "n0": ("s0", "l0", "a"),
    "n1": ("s0", "l0", "a"),
    "n2": ("s0", "l0", "b"),
    "n3": ("s0", "l1", "c"),
    "n4": ("s0", "l1", "c"),
    "n5": ("s1", "l2", "d"),
}


def _network(api):
    return api.get("/group_resources/network").json


def test_the_network_is_set_read_and_changed_one_node_at_a_time(api):
    build_cluster(api, CLUSTER)
    shown = _network(api)
    assert shown["levels"] == LEVELS
    assert shown["nodes"]["n3"] == {"spine": "s0", "leaf": "l1", "nvlink_domain": "c"}
    response = api.put(
        "/group_resources/network/nodes/n9",
        json={"domains": {"spine": "s1", "leaf": "l2", "nvlink_domain": "d"}},
    )
    assert response.status_code == 201, response.json
    assert api.get("/group_resources/network/nodes/n9").json["domains"]["leaf"] == "l2"
    assert api.delete("/group_resources/network/nodes/n9").status_code == 204
    assert api.get("/group_resources/network/nodes/n9").status_code == 404


def test_a_gang_is_found_claimed_shown_and_released(api):
    build_cluster(api, CLUSTER)
    # Three members of 4 GPUs (a whole box each) under one spine, as few leaves as can be.
    body = gang_body(3, 4, "spine", preferred="leaf")
    found = gangs(api, body)
    best = found["gangs"][0]
    assert best["required"] == {"level": "spine", "domain": "s0"}
    assert best["domains"]["leaf"] == ["l0"]
    assert best["domains"]["nvlink_domain"] == ["a", "b"]
    assert sorted(m["node"] for m in best["members"]) == ["n0", "n1", "n2"]
    assert found["domains_considered"] == 2 and len(found["gangs"]) == 1

    claimed, answer = claim_gang(api, body)
    assert [m["node"] for m in answer["members"]] == [m["node"] for m in best["members"]]
    shown = api.get(f"/group_resources/gangs/{claimed['gang_uuid']}").json
    assert [m["consumer_uuid"] for m in shown["members"]] == claimed["consumer_uuids"]
    for member in shown["members"]:
        assert member["allocations"]

    # What is left under s0: n3 and n4, two members at most.
    refused = api.post(
        "/group_resources/gang_claims",
        json={
            **body,
            "gang_uuid": claimed["gang_uuid"],
            "consumer_uuids": claimed["consumer_uuids"],
            "project_id": "p",
            "user_id": "u",
        },
    )
    assert refused.status_code == 409
    none = gangs(api, body)
    assert none["gangs"] == []
    assert none["closest"][0] == {
        "domain": "s0",
        "members_fit": 2,
        "members_needed": 3,
        "nodes": 5,
        "nodes_unfit": [{"reason": none["closest"][0]["nodes_unfit"][0]["reason"], "nodes": 3}],
    }
    _, refusal = claim_gang(api, body, expect=409)
    detail = refusal["errors"][0]["detail"]
    assert "one spine domain" in detail and "s0" in detail and "2 of 3" in detail

    assert api.delete(f"/group_resources/gangs/{claimed['gang_uuid']}").status_code == 204
    for consumer in claimed["consumer_uuids"]:
        assert api.get(f"/allocations/{consumer}").json["allocations"] == {}
    assert api.get(f"/group_resources/gangs/{claimed['gang_uuid']}").status_code == 404
    assert gangs(api, body)["gangs"][0]["domains"]["leaf"] == ["l0"]


def test_members_may_share_a_node(api):
    build_cluster(api, {"n0": ("s0", "l0", "a"), "n1": ("s0", "l1", "b")})
    body = gang_body(4, 2, "spine", preferred="nvlink_domain", share_nodes=True)
    best = gangs(api, body)["gangs"][0]
    assert best["nodes"] == 2 and best["domains"]["nvlink_domain"] == ["a", "b"]
    best = gangs(api, gang_body(2, 2, "spine", preferred="leaf", share_nodes=True))["gangs"][0]
    assert best["nodes"] == 1
    assert gangs(api, gang_body(2, 2, "spine"))["gangs"][0]["nodes"] == 2


@pytest.mark.parametrize(
    "change, words",
    [
        ({"levels": ["spine", "leaf", "spine"]}, "named twice"),
        ({"levels": []}, "at least one level"),
        ({"nodes": {"n0": {"spine": "s0", "leaf": "l0", "rack": "r"}}}, "unknown level 'rack'"),
        ({"nodes": {"n0": {"spine": "s0", "leaf": "l0"}}}, "no domain at level(s) nvlink_domain"),
        (
            {
                "nodes": {
                    "n0": {"spine": "s0", "leaf": "l0", "nvlink_domain": "a"},
                    "n1": {"spine": "s1", "leaf": "l0", "nvlink_domain": "b"},
                }
            },
            "two parents",
        ),
        (
            {
                "nodes": {
                    "n0": {"spine": "s0", "leaf": "l0", "nvlink_domain": "a"},
                    "n1": {"spine": "s0", "leaf": "l1", "nvlink_domain": "a"},
                }
            },
            "two parents",
        ),
        ({"nodes": ["n0"]}, "nodes"),
    ],
)
def test_a_bad_network_is_refused_and_nothing_is_written(api, change, words):
    build_cluster(api, CLUSTER)
    before = _network(api)
    body = {"levels": LEVELS, "nodes": {}, **change}
    response = api.put("/group_resources/network", json=body)
    assert response.status_code == 400, response.json
    assert words in response.json["errors"][0]["detail"]
    assert _network(api) == before


def test_a_node_with_a_second_parent_is_refused(api):
    build_cluster(api, CLUSTER)
    before = _network(api)
    response = api.put(
        "/group_resources/network/nodes/n9",
        json={"domains": {"spine": "s1", "leaf": "l0", "nvlink_domain": "z"}},
    )
    assert response.status_code == 400
    assert "leaf l0 has two parents" in response.json["errors"][0]["detail"]
    response = api.put(
        "/group_resources/network/nodes/n9",
        json={"domains": {"spine": "s1", "rack": "l0", "nvlink_domain": "z"}},
    )
    assert response.status_code == 400
    assert _network(api) == before


@pytest.mark.parametrize(
    "change, words",
    [
        ({"required": "rack"}, "unknown level 'rack'"),
        ({"preferred": "rack"}, "unknown level 'rack'"),
        ({"required": "leaf", "preferred": "spine"}, "broader than the required level"),
        ({"members": 0}, "members"),
        ({"member": {"resources": {"nvidia.com/gpu": "lots"}}}, "nvidia.com/gpu"),
        ({"member": {"resources": {}}}, "asks for no resource"),
        ({"member": {}}, "give 'resources'"),
    ],
)
def test_a_bad_gang_request_is_refused_and_nothing_is_written(api, change, words):
    build_cluster(api, CLUSTER)
    body = {**gang_body(2, 4, "spine"), **change}
    response = api.post("/group_resources/gang_candidates", json=body)
    assert response.status_code == 400, response.json
    assert words in response.json["errors"][0]["detail"]
    claimed, refusal = claim_gang(api, body, expect=400)
    for consumer in claimed["consumer_uuids"]:
        assert api.get(f"/allocations/{consumer}").json["allocations"] == {}
    assert api.get(f"/group_resources/gangs/{claimed['gang_uuid']}").status_code == 404
    assert (
        error_code(
            api.post(
                "/group_resources/gang_claims",
                json={
                    **gang_body(2, 4, "spine"),
                    "gang_uuid": claimed["gang_uuid"],
                    "consumer_uuids": claimed["consumer_uuids"][:1],
                    "project_id": "p",
                    "user_id": "u",
                },
            )
        )
        is not None
    )


def test_a_gang_claim_with_a_consumer_that_exists_writes_nothing(api):
    build_cluster(api, CLUSTER)
    body = gang_body(2, 4, "spine")
    claimed, _ = claim_gang(api, body)
    again = {
        **claimed,
        "gang_uuid": "8c1d3e2a-3a43-4b3e-9a33-7f0f3f2a1b00",
        "consumer_uuids": [claimed["consumer_uuids"][0], "9c1d3e2a-3a43-4b3e-9a33-7f0f3f2a1b00"],
    }
    response = api.post("/group_resources/gang_claims", json=again)
    assert response.status_code == 409
    assert error_code(response) == "placement.group_resources.consumer_exists"
    assert api.get(f"/allocations/{again['consumer_uuids'][1]}").json["allocations"] == {}
    assert api.get(f"/group_resources/gangs/{again['gang_uuid']}").status_code == 404


# One parameter server of 2 GPUs and two workers of 4 (a whole box each).
MIXED = [
    {"count": 1, "member": {"resources": {"nvidia.com/gpu": 2}}},
    {"count": 2, "member": {"resources": {"nvidia.com/gpu": 4}}},
]


def test_members_of_several_kinds_are_found_claimed_and_released(api):
    build_cluster(api, CLUSTER)
    body = {"members": MIXED, "required": "spine", "preferred": "leaf"}
    best = gangs(api, body)["gangs"][0]
    assert [m["kind"] for m in best["members"]] == [0, 1, 1]
    assert [m["member"] for m in best["members"]] == [0, 1, 2]
    assert [len(m["devices"]["gpu"]) for m in best["members"]] == [2, 4, 4]
    assert best["domains"]["leaf"] == ["l0"] and best["nodes"] == 3

    claimed, answer = claim_gang(api, body)
    assert [m["consumer_uuid"] for m in answer["members"]] == claimed["consumer_uuids"]
    assert [m["node"] for m in answer["members"]] == [m["node"] for m in best["members"]]
    for member, consumer in zip(answer["members"], claimed["consumer_uuids"], strict=True):
        held = api.get(f"/allocations/{consumer}").json["allocations"]
        assert {p: a["resources"] for p, a in held.items()} == {
            p: a["resources"] for p, a in member["allocations"].items()
        }
    assert api.delete(f"/group_resources/gangs/{claimed['gang_uuid']}").status_code == 204
    for consumer in claimed["consumer_uuids"]:
        assert api.get(f"/allocations/{consumer}").json["allocations"] == {}


def test_kinds_sharing_a_node_are_placed_in_request_order(api):
    build_cluster(api, {"n0": ("s0", "l0", "a"), "n1": ("s0", "l1", "b")})
    two_gpus = {"resources": {"nvidia.com/gpu": 2}}
    body = {
        "members": [{"count": 1, "member": two_gpus}, {"count": 1, "member": two_gpus}],
        "required": "spine",
        "preferred": "nvlink_domain",
        "share_nodes": True,
    }
    best = gangs(api, body)["gangs"][0]
    assert best["nodes"] == 1
    first, second = best["members"]
    assert (first["kind"], second["kind"]) == (0, 1)
    # The first kind chose on the empty node; the second on what it left.
    alone = api.post(
        "/group_resources/device_candidates", json={**two_gpus, "nodes": [first["node"]]}
    ).json["candidates"][0]
    assert first["devices"] == alone["devices"]
    minors = [{d["minor"] for d in m["devices"]["gpu"]} for m in (first, second)]
    assert not minors[0] & minors[1]


@pytest.mark.parametrize(
    "members, extra, words",
    [
        (MIXED, {"member": {"resources": {"nvidia.com/gpu": 1}}}, "without 'member'"),
        ([], {}, "members"),
        ([{"count": 0, "member": {"resources": {"nvidia.com/gpu": 1}}}], {}, "count"),
        ([{"count": 1}], {}, "member"),
        ([{"count": 1, "member": {"resources": {}}}], {}, "asks for no resource"),
        (
            [
                {"count": 32, "member": {"resources": {"nvidia.com/gpu": 1}}},
                {"count": 31, "member": {"resources": {"nvidia.com/gpu": 2}}},
            ],
            {},
            "the product of (count + 1) over the kinds is 1056, above the limit of 1025",
        ),
        (2, {}, "Missing data for required field"),
    ],
)
def test_a_bad_list_of_members_is_refused_and_nothing_is_written(api, members, extra, words):
    build_cluster(api, CLUSTER)
    body = {"members": members, "required": "spine", **extra}
    response = api.post("/group_resources/gang_candidates", json=body)
    assert response.status_code == 400, response.json
    assert words in response.json["errors"][0]["detail"]
    consumers = [str(uuid.uuid4()) for _ in range(3)]
    gang = str(uuid.uuid4())
    claim = {**body, "gang_uuid": gang, "consumer_uuids": consumers, "project_id": "p"}
    refused = api.post("/group_resources/gang_claims", json={**claim, "user_id": "u"})
    assert refused.status_code == 400
    for consumer in consumers:
        assert api.get(f"/allocations/{consumer}").json["allocations"] == {}
    assert api.get(f"/group_resources/gangs/{gang}").status_code == 404


def test_a_claim_of_several_kinds_takes_one_consumer_per_member(api):
    build_cluster(api, CLUSTER)
    body = {"members": MIXED, "required": "spine"}
    _, refusal = claim_gang(
        api, body, expect=400, consumer_uuids=[str(uuid.uuid4()) for _ in range(2)]
    )
    assert "give one per member (3), not 2" in refusal["errors"][0]["detail"]
