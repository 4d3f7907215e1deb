"""POST /group_resources/candidates/explain: each requested key's checks counted in turn, the
node steps, the step that empties the answer, the nearest misses; on a story, and on the
random worlds of ``test_group_resources_oracle`` against the real search (the last count is
the nodes it answers) and the brute force (every key's counts, from the world's model)."""

import json
import random
import uuid

import pytest

from tests.api.group_resource_helpers import candidates, claim, sync
from tests.api.test_group_resources_oracle import (
    READINGS,
    NodeModel,
    Reading,
    build_world,
    expected,
    parse_request,
    random_node_resources,
    random_request,
    resource_class,
)


def explained(api, resources: dict, **options) -> dict:
    """The explanation, the body sent with its keys in the order written (Flask's test
    client would sort them)."""
    response = api.post(
        "/group_resources/candidates/explain",
        data=json.dumps({"resources": resources, **options}),
        content_type="application/json",
    )
    assert response.status_code == 200, response.json
    return response.json


def counts(filters: list[dict]) -> list[tuple[str, int]]:
    return [(f["filter"], f["passing"]) for f in filters]


LEVELS = "the node has the request's levels (those it skips filled in)"
EVERY_KEY = "every requested key has a group with room"
EVERY_GROUP = "every request group has one group with room for all its keys"
TOGETHER = "a placement of every group together (distinct groups, subgroups in their group)"


@pytest.fixture
def two_nodes(api):
    """a: two GPUs of 4 and 2 GiB; b: one GPU of 8 GiB whose card a claim holds."""
    sync(
        api,
        "a",
        {
            "cpu": 4,
            "gpu/dev0/cards": 1,
            "gpu/dev0/memory": "4GiB",
            "gpu/dev1/cards": 1,
            "gpu/dev1/memory": "2GiB",
        },
    )
    sync(api, "b", {"cpu": 4, "gpu/dev0/cards": 1, "gpu/dev0/memory": "8GiB"})
    taken = claim(api, {"gpu/0/cards": 1}, str(uuid.uuid4()), nodes=["b"])
    assert taken.status_code == 200, taken.json
    return api


def test_each_check_is_counted_in_turn_and_the_first_empty_step_named(two_nodes):
    body = explained(two_nodes, {"gpu/0/cards": 1, "gpu/0/memory": "6GiB"})
    cards, memory = body["keys"]
    assert (cards["key"], cards["resource_class"], cards["amount"]) == (
        "gpu/0/cards",
        "CUSTOM_GPU_CARDS",
        1,
    )
    assert counts(cards["filters"]) == [
        ("nodes", 2),
        ("a 'gpu' group", 2),
        ("has CUSTOM_GPU_CARDS", 2),
        ("CUSTOM_GPU_CARDS: min_unit, max_unit and step_size allow 1", 2),
        ("CUSTOM_GPU_CARDS: 1 free (capacity less usage)", 1),  # b's card is held
    ]
    assert (memory["key"], memory["amount"]) == ("gpu/0/memory", 6144)
    assert counts(memory["filters"]) == [
        ("nodes", 2),
        ("a 'gpu' group", 2),
        ("has CUSTOM_GPU_MEMORY_MB", 2),
        ("CUSTOM_GPU_MEMORY_MB: min_unit, max_unit and step_size allow 6144", 1),  # max_unit
        ("CUSTOM_GPU_MEMORY_MB: 6144 free (capacity less usage)", 1),
    ]
    assert counts(body["nodes"]) == [
        ("nodes", 2),
        (LEVELS, 2),
        (EVERY_KEY, 0),
        (EVERY_GROUP, 0),
        (TOGETHER, 0),
    ]
    assert body["empties_at"] == f"nodes: {EVERY_KEY}"


def test_the_nearest_misses_say_what_one_group_lacks(two_nodes):
    misses = explained(two_nodes, {"gpu/0/cards": 1, "gpu/0/memory": "6GiB"})["nearest_misses"]
    # a fails twice on each GPU (too small for max_unit, and not that much free): no miss.
    assert [(m["node"], m["key"], m["group"], m["fails"], m["short"]) for m in misses] == [
        (
            "b",
            "gpu/0/cards",
            "gpu/dev0",
            "CUSTOM_GPU_CARDS: 1 free (capacity less usage)",
            {"CUSTOM_GPU_CARDS": 1},
        ),
    ]
    assert misses[0]["node_uuid"] == two_nodes.get("/group_resources/nodes/b").json["uuid"]


def test_a_request_each_key_of_which_fits_alone_can_still_fail_together(two_nodes):
    body = explained(two_nodes, {"gpu/0/cards": 1, "gpu/1/cards": 1, "gpu/2/cards": 1})
    assert [key["filters"][-1]["passing"] for key in body["keys"]] == [1, 1, 1]
    assert counts(body["nodes"]) == [
        ("nodes", 2),
        (LEVELS, 2),
        (EVERY_KEY, 1),
        (EVERY_GROUP, 1),
        (TOGETHER, 0),
    ]
    assert body["empties_at"] == f"nodes: {TOGETHER}"
    assert body["nearest_misses"] == []


def test_a_request_that_finds_candidates_empties_nothing(two_nodes):
    body = explained(two_nodes, {"gpu/0/cards": 1, "cpu": 2}, limit=1, budget_ms=1)
    assert body["empties_at"] is None
    assert body["nodes"][-1]["passing"] == 1  # limit and budget_ms change nothing
    assert [key["key"] for key in body["keys"]] == ["gpu/0/cards", "cpu"]  # as written
    assert counts(body["keys"][1]["filters"])[:2] == [("nodes", 2), ("has VCPU", 2)]
    # The node that cannot take it is still a near miss.
    assert [(m["node"], m["short"]) for m in body["nearest_misses"]] == [
        ("b", {"CUSTOM_GPU_CARDS": 1})
    ]


def test_a_level_no_node_has_empties_the_key_and_the_levels(two_nodes):
    body = explained(two_nodes, {"fpga/0/slots": 1})
    assert counts(body["keys"][0]["filters"])[:2] == [("nodes", 2), ("a 'fpga' group", 0)]
    assert body["empties_at"] == "fpga/0/slots: a 'fpga' group"
    assert body["nodes"][1] == {"filter": LEVELS, "passing": 0}


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"resources": {}},
        {"resources": {"gpu/0/cards": 0}},
        {"resources": {"gpu//cards": 1}},
        {"resources": {"cpu": 1}, "nodes": []},
        {"resources": {"cpu": 1}, "options": {"flat_requests": "nowhere"}},
        {"resources": {"cpu": 1}, "colour": "red"},
    ],
)
def test_what_the_candidates_refuse_is_refused(api, body):
    response = api.post("/group_resources/candidates/explain", json=body)
    assert response.status_code == 400, response.json
    assert api.post("/group_resources/candidates", json=body).status_code == 400


def test_a_reader_may_not_explain(api):
    response = api.post(
        "/group_resources/candidates/explain",
        token="reader",
        json={"resources": {"cpu": 1}},
        headers={"X-Roles": "reader"},
    )
    assert response.status_code == 403


# Random worlds ---------------------------------------------------------------------


def key_passing(
    nodes: dict[str, NodeModel], level: str | None, base: str, amount: int
) -> list[int]:
    """The brute force's own count of the nodes passing each check of one key in turn."""
    cls = resource_class(level, base)
    passing = [len(nodes), 0, 0, 0, 0] if level is not None else [len(nodes), 0, 0, 0]
    for node in nodes.values():
        groups = [node.root] if level is None else node.of_level(level)
        reached = 0 if level is None else (1 if groups else 0)
        if groups or level is None:
            held = [g.inventories[cls] for g in groups if cls in g.inventories]
            units = [
                i for i in held if i.min_unit <= amount <= i.max_unit and amount % i.step_size == 0
            ]
            free = [i for i in units if i.used + amount <= i.capacity]
            reached += sum(1 for found in (held, units, free) if found)
        for index in range(reached):
            passing[1 + index] += 1
    return passing


@pytest.mark.parametrize("seed", range(12))
def test_the_counts_are_the_searchs_and_the_brute_forces(api, seed):
    rng = random.Random(19_000 + seed)
    world = build_world(
        api, rng, [f"x{i}" for i in range(rng.randint(1, 4))], random_node_resources
    )
    checked = 0
    for number in range(6):
        request = random_request(rng)
        reading = rng.choice([None, None, *sorted(READINGS)])
        options = {"options": READINGS[reading]} if reading else {}
        context = f"seed {seed}, request {number}: {request} {options}"
        body = explained(api, request, **options)
        whole = candidates(api, request, **options)  # the real search, every node
        oracle = expected(world, request, "pack", Reading.of(options.get("options")))
        nodes = [step["passing"] for step in body["nodes"]]
        assert nodes[0] == len(world.nodes), context
        assert nodes[1] == len(oracle.fitted), context
        assert nodes[-1] == whole["feasible_nodes"] == len(oracle.best), context
        assert nodes == sorted(nodes, reverse=True), context
        assert (body["empties_at"] is None) == bool(whole["candidates"]), context
        assert [key["key"] for key in body["keys"]] == list(request), context
        top, _flat = parse_request(request)
        for want in top.walk():
            for base, (key, amount) in want.demands.items():
                [entry] = [k for k in body["keys"] if k["key"] == key]
                passing = [f["passing"] for f in entry["filters"]]
                assert passing == key_passing(world.nodes, want.level, base, amount), (context, key)
        for miss in body["nearest_misses"]:
            assert miss["node"] not in oracle.best, context
            if miss["short"] is not None:
                [(cls, short)] = miss["short"].items()
                group = world.nodes[miss["node"]].groups[
                    tuple(miss["group"].split("/")) if miss["group"] else ()
                ]
                inventory = group.inventories[cls]
                amount = next(k["amount"] for k in body["keys"] if k["key"] == miss["key"])
                assert short == amount - (int(inventory.capacity) - inventory.used), context
        checked += 1
    assert checked
