"""budget_ms on POST /group_resources/device_candidates and /device_claims (and
[group_resources] candidates_budget_ms): a search its time budget stops ranks the nodes it
looked at, each candidate the best choice on its node as the whole search makes it, and
says how far it got (the ``cut`` field, the Placement-Search-Cut header)."""

import uuid

import pytest

from placement import errors
from placement.devices.request import parse_device_request
from tests.api.device_helpers import candidates, claim, import_node, switch_box
from tests.api.test_group_resources_budget import (
    BAD_BUDGETS,
    CLAIMING,
    api_with_default_budget,
    assert_bad_budget_refused,
    assert_claimed_as_found,
    assert_cut,
    assert_refused_after_cut,
    by_node,
    spent_budget,
)
from tests.conftest import Api

NODES = 30
# 6 GPUs of 12 (924 sets to weigh on each node) on nodes whose GPU memory differs, so that
# no two nodes are alike: a few milliseconds per node, far beyond a millisecond in all.
WIDE_REQUEST = {"nvidia.com/gpu": 6}


def wide_node(index: int) -> dict:
    return switch_box(
        gpus_per_switch=(3,) * 4,
        nics_per_switch=(0,) * 4,
        switches_per_numa=2,
        memory=f"{16 + index}Gi",
    )


def wide_world(api) -> None:
    for index in range(NODES):
        import_node(api, f"d{index:02d}", wide_node(index))


@pytest.fixture
def wide(api) -> Api:
    wide_world(api)
    return api


def test_a_budget_cuts_a_wide_search_and_every_candidate_is_the_nodes_best(wide):
    response = wide.post(
        "/group_resources/device_candidates", json={"resources": WIDE_REQUEST, "budget_ms": 1}
    )
    assert response.status_code == 200, response.json
    cut = assert_cut(response, NODES)
    answer = response.json
    assert answer["nodes_considered"] == NODES and answer["unplaced"] == []
    assert 1 <= len(answer["candidates"]) <= cut["nodes_looked_at"]
    whole = candidates(wide, WIDE_REQUEST)  # the same request without a budget
    assert len(whole["candidates"]) == NODES and "cut" not in whole
    best = by_node(whole)
    for candidate in answer["candidates"]:  # each valid: its node's own best choice
        assert candidate == best[candidate["node"]]
    ranks = [(-c["score"], c["node"]) for c in answer["candidates"]]
    assert ranks == sorted(ranks)


def test_without_a_budget_nothing_changes(wide):
    for extra in ({}, {"limit": 2}):
        body = {"resources": WIDE_REQUEST, **extra}
        plain = wide.post("/group_resources/device_candidates", json=body)
        roomy = wide.post(
            "/group_resources/device_candidates", json={**body, "budget_ms": 9_999_999}
        )
        for response in (plain, roomy):
            assert "Placement-Search-Cut" not in response.headers
            assert list(response.json) == [
                "candidates",
                "nodes_considered",
                "unplaced",
                "nodes_out_of_sync",
            ]
        assert roomy.get_data() == plain.get_data()


def test_a_claim_under_a_cut_budget_claims_the_best_it_found(wide):
    best = by_node(candidates(wide, WIDE_REQUEST))
    consumer = str(uuid.uuid4())
    response = wide.post(
        "/group_resources/device_claims",
        json={"resources": WIDE_REQUEST, "consumer_uuid": consumer, **CLAIMING, "budget_ms": 1},
    )
    assert_claimed_as_found(wide, response, consumer, best)


def test_a_claim_that_finds_nothing_in_its_budget_is_refused_as_when_nothing_fits(api, engine):
    """Of the nodes named, the first by name is looked at first; the budget, spent before
    the search, stops the search after it."""
    import_node(api, "a-full", wide_node(0))
    import_node(api, "b-empty", wide_node(1))
    claim(api, {"nvidia.com/gpu": 12}, nodes=["a-full"])
    naming = api.services.config.group_naming()
    with engine.connect() as conn, conn.begin(), pytest.raises(errors.Conflict) as refused:
        api.services.devices.claim(
            conn,
            parse_device_request(WIDE_REQUEST, {}, naming),
            naming,
            str(uuid.uuid4()),
            "p",
            "u",
            node_names=["a-full", "b-empty"],
            budget=spent_budget(),
        )
    assert_refused_after_cut(refused.value, "No device node can take the request: ")
    # Without the budget the empty node takes it.
    assert claim(api, WIDE_REQUEST, nodes=["a-full", "b-empty"])["node"] == "b-empty"


@pytest.mark.parametrize("value", BAD_BUDGETS)
def test_a_bad_budget_is_400(api, value):
    assert_bad_budget_refused(
        api, ("device_candidates", "device_claims"), {"nvidia.com/gpu": 1}, value
    )


def test_the_configured_default_budget_applies_without_budget_ms(config, engine):
    api = api_with_default_budget(config, engine)
    wide_world(api)
    cut = api.post("/group_resources/device_candidates", json={"resources": WIDE_REQUEST})
    assert_cut(cut, NODES)
    roomy = api.post(
        "/group_resources/device_candidates",
        json={"resources": WIDE_REQUEST, "budget_ms": 9_999_999},
    )
    assert "cut" not in roomy.json and len(roomy.json["candidates"]) == NODES
