"""The group allocator's own readings, chosen per request (``options``) or by configuration:
the examples of api-ref/group_resources.md (Options) through candidates, claims and queries.
"""

import uuid

import pytest

from placement.app import create_app
from tests.api.group_resource_helpers import candidates, claim, eight_gpu_node, sync
from tests.conftest import Api, error_code

ROUTES = ("/group_resources/candidates", "/group_resources/claims", "/group_resources/queries")
TWO_GPUS = {"gpu/0/cards": 1, "gpu/1/cards": 1}

# One Gpugrp1 of two Gpugrp0 pairs: four GPUs.
ONE_GROUP1 = {f"Gpugrp1/0/Gpugrp0/{d // 2}/gpu/dev{d}/cards": 1 for d in range(4)}


def _query(api, resources, **fields):
    response = api.post("/group_resources/queries", json={"resources": resources, **fields})
    assert response.status_code == 200, response.json
    return response.json["queries"]


def _claimed(api, resources, **fields):
    response = claim(api, resources, str(uuid.uuid4()), **fields)
    assert response.status_code == 200, response.json
    return response.json


def _group1(node_key: str) -> str:
    return node_key.split("/")[1]


def test_flat_requests_fill_levels_gives_each_group_its_own_higher_groups(api):
    sync(api, "four", ONE_GROUP1)
    sync(api, "gpu8", eight_gpu_node(memory=None))
    fill = {"options": {"flat_requests": "fill_levels"}}
    assert {c["node"] for c in candidates(api, TWO_GPUS)["candidates"]} == {"four", "gpu8"}

    answer = candidates(api, TWO_GPUS, **fill)
    [best] = answer["candidates"]
    assert best["node"] == "gpu8"
    assert _group1(best["mappings"]["gpu/0/cards"]) != _group1(best["mappings"]["gpu/1/cards"])
    assert answer["feasible_nodes"] == 1

    alone = candidates(api, TWO_GPUS, nodes=["four"], **fill)
    assert alone["candidates"] == []
    [blocked] = alone["unplaced"]
    assert "not enough distinct groups" in blocked["reason"]

    claimed = _claimed(api, TWO_GPUS, **fill)
    assert claimed["node"] == "gpu8"
    assert _group1(claimed["mappings"]["gpu/0/cards"]) != (
        _group1(claimed["mappings"]["gpu/1/cards"])
    )

    [anywhere] = _query(api, TWO_GPUS, nodes=["gpu8"])
    [filled] = _query(api, TWO_GPUS, nodes=["gpu8"], **fill)
    assert sorted(anywhere["groups"].values()) == ["gpu/0", "gpu/1"]
    assert sorted(filled["groups"].values()) == [
        "Gpugrp1/0",
        "Gpugrp1/0/Gpugrp0/0",
        "Gpugrp1/1",
        "Gpugrp1/1/Gpugrp0/1",
        "gpu/0",
        "gpu/1",
    ]
    assert "same_subtree=" in filled["query"] and "group_policy=isolate" in filled["query"]


def _gpus(count: int) -> dict:
    return {f"gpu/dev{d}/cards": 1 for d in range(count)}


def test_node_ranking_sum_prefers_the_node_with_the_larger_sum(api):
    sync(api, "big", _gpus(8))
    sync(api, "small", _gpus(4))
    for node, used in (("big", 4), ("small", 3)):
        for _ in range(used):
            _claimed(api, {"gpu/0/cards": 1}, nodes=[node])
    one = {"gpu/0/cards": 1}
    mean = candidates(api, one)["candidates"]
    assert [(c["node"], c["score"]) for c in mean] == [("small", 1.0), ("big", 0.625)]
    summed = candidates(api, one, options={"node_ranking": "sum"})["candidates"]
    assert [(c["node"], c["score"]) for c in summed] == [("big", 5.0), ("small", 4.0)]
    limited = candidates(api, one, limit=1, options={"node_ranking": "sum"})["candidates"]
    assert [c["node"] for c in limited] == ["big"]
    spread = candidates(api, one, scorer="spread", options={"node_ranking": "sum"})
    # spread sums 1 - used / capacity: 8 - 5 on big, 4 - 4 on small.
    assert [(c["node"], c["score"]) for c in spread["candidates"]] == [("big", 3.0), ("small", 0.0)]
    assert _claimed(api, one, options={"node_ranking": "sum"})["node"] == "big"
    # The query is unscored: the ranking changes nothing in it.
    assert _query(api, one) == _query(api, one, options={"node_ranking": "sum"})


def test_shared_sibling_groups_put_two_requested_gpus_on_one_device_with_room(api):
    sync(api, "n1", {"gpu/d0/cards": 2})
    default = candidates(api, TWO_GPUS)
    assert default["candidates"] == []
    assert "not enough distinct groups" in default["unplaced"][0]["reason"]

    shared = {"options": {"sibling_groups": "shared"}}
    [best] = candidates(api, TWO_GPUS, **shared)["candidates"]
    assert best["mappings"] == {"gpu/0/cards": "gpu/d0/cards", "gpu/1/cards": "gpu/d0/cards"}
    [device] = api.get("/group_resources/nodes/n1").json["groups"]
    assert best["allocations"] == {device["uuid"]: {"resources": {"CUSTOM_GPU_CARDS": 2}}}
    assert best["score"] == 1.0

    [query] = _query(api, TWO_GPUS, **shared)
    assert query["query"].endswith("group_policy=none")
    listed = api.get(f"/allocation_candidates?{query['query']}", version=query["microversion"])
    assert [c["allocations"] for c in listed.json["allocation_requests"]] == [
        {device["uuid"]: {"resources": {"CUSTOM_GPU_CARDS": 2}}}
    ]

    claimed = _claimed(api, TWO_GPUS, **shared)
    assert claimed["mappings"] == best["mappings"]
    usage = api.get(f"/resource_providers/{device['uuid']}/usages").json["usages"]
    assert usage == {"CUSTOM_GPU_CARDS": 2}
    full = claim(api, {"gpu/0/cards": 1}, str(uuid.uuid4()), **shared)
    assert (full.status_code, error_code(full)) == (409, "placement.group_resources.unplaceable")
    assert "not enough" not in full.json["errors"][0]["detail"]  # the device's cards: none free


@pytest.mark.parametrize(
    ("units", "fits"),
    [({}, True), ({"max_unit": 1}, False), ({"step_size": 2}, False)],
)
def test_shared_groups_fit_alone_and_their_sum_as_one_allocation(api, units, fits):
    # max_unit 1: each group of 1 fits alone, their sum does not; step_size 2: neither
    # fits alone (as placement's granular groups must), whatever their sum.
    sync(api, "n1", {"gpu/d0/cards": 2})
    [device] = api.get("/group_resources/nodes/n1").json["groups"]
    api.set_inventory(device["uuid"], CUSTOM_GPU_CARDS={"total": 2, **units})
    shared = {"sibling_groups": "shared"}
    assert len(candidates(api, TWO_GPUS, options=shared)["candidates"]) == int(fits)
    [query] = _query(api, TWO_GPUS, options=shared)
    listed = api.get(f"/allocation_candidates?{query['query']}", version=query["microversion"])
    assert len(listed.json["allocation_requests"]) == int(fits)


def test_shared_groups_are_bounded_by_how_many_kinds_meet(api):
    sync(api, "n1", {f"gpu/dev{d}/cards": 1 for d in range(10)})
    request = {f"gpu/{i}/cards": i + 1 for i in range(10)}  # ten kinds: 3**10 moves
    answer = candidates(api, request, options={"sibling_groups": "shared"})
    assert answer["candidates"] == []
    assert "too many different 'gpu' groups to share out" in answer["unplaced"][0]["reason"]


def test_the_configuration_chooses_for_requests_that_do_not(config, engine):
    api = Api(create_app(config.replace(group_sibling_groups="shared"), engine).test_client())
    sync(api, "n1", {"gpu/d0/cards": 2})
    assert len(candidates(api, TWO_GPUS)["candidates"]) == 1
    distinct = candidates(api, TWO_GPUS, options={"sibling_groups": "distinct"})
    assert distinct["candidates"] == []
    [query] = _query(api, TWO_GPUS)
    assert query["query"].endswith("group_policy=none")


def test_no_options_and_empty_options_are_the_defaults(api):
    sync(api, "gpu8", eight_gpu_node())
    request = {"Gpugrp0/RA/gpu/a/cards": 1, "gpu/x/cards": 1, "cpu": 2}
    assert candidates(api, request) == candidates(api, request, options={})
    assert _query(api, request) == _query(api, request, options={})


@pytest.mark.parametrize(
    ("options", "detail"),
    [
        ({"node_ranking": "max"}, "options.node_ranking: Must be one of: mean, sum."),
        (
            {"flat_requests": "fill_all"},
            "options.flat_requests: Must be one of: anywhere, fill_levels.",
        ),
        ({"sibling_groups": True}, "options.sibling_groups: True is not of type 'string'"),
        ({"shared": "yes"}, "options.shared: Additional properties are not allowed"),
        ("sum", "options: Invalid input type."),
    ],
)
def test_bad_options_are_refused_on_every_route(api, options, detail):
    body = {
        "resources": TWO_GPUS,
        "options": options,
        "consumer_uuid": str(uuid.uuid4()),
        "project_id": "p",
        "user_id": "u",
    }
    for route in ROUTES:
        fields = (
            body
            if route.endswith("claims")
            else {k: v for k, v in body.items() if k in ("resources", "options")}
        )
        response = api.post(route, json=fields)
        assert response.status_code == 400, (route, response.json)
        assert error_code(response) == "placement.undefined_code"
        assert response.json["errors"][0]["detail"].startswith(
            f"JSON does not validate: {detail}"
        ), (route, response.json)
