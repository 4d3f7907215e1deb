"""budget_ms on POST /group_resources/gang_candidates, /explain and /gang_claims (and
[group_resources] candidates_budget_ms), as the device routes take it: a search its
time budget stops places the gang over the nodes it looked at, and says how far it got
(the ``cut`` field, the Placement-Search-Cut header)."""

import uuid

import pytest

from placement import errors
from placement.gangs import service
from placement.gangs.request import request_from_body
from tests.api.device_helpers import candidates, import_node
from tests.api.gang_helpers import claim_gang, gangs, gpu_box, set_network
from tests.api.test_devices_budget import NODES, WIDE_REQUEST, wide_node
from tests.api.test_group_resources_budget import (
    BAD_BUDGETS,
    CLAIMING,
    api_with_default_budget,
    assert_cut,
    assert_refused_after_cut,
    spent_budget,
)
from tests.conftest import Api

# Two members of 6 GPUs, sharing nodes of 12: a node alone holds the gang, so the first
# node looked at holds one.
GANG = {
    "members": 2,
    "member": {"resources": WIDE_REQUEST},
    "required": "spine",
    "share_nodes": True,
}


def wide_network(api) -> None:
    for index in range(NODES):
        import_node(api, f"d{index:02d}", wide_node(index))
    set_network(
        api, {f"d{index:02d}": ("s0", f"l{index % 3}", f"v{index}") for index in range(NODES)}
    )


@pytest.fixture
def wide(api) -> Api:
    wide_network(api)
    return api


def assert_members_are_their_nodes_choices(gang: dict, best: dict[str, dict]) -> None:
    """Each node's first member is the device route's best choice on it (``best``)."""
    seen = set()
    for member in gang["members"]:
        if member["node"] not in seen:
            assert member["devices"] == best[member["node"]]["devices"]
        seen.add(member["node"])


def nodes_best(api) -> dict[str, dict]:
    return {c["node"]: c for c in candidates(api, WIDE_REQUEST)["candidates"]}


def test_a_budget_cuts_a_wide_gang_search_and_the_gang_is_valid(wide):
    response = wide.post("/group_resources/gang_candidates", json={**GANG, "budget_ms": 1})
    assert response.status_code == 200, response.json
    cut = assert_cut(response, NODES)
    [gang] = response.json["gangs"]
    assert len(gang["members"]) == 2 and gang["required"]["domain"] == "s0"
    assert response.json["nodes_in_network"] == cut["nodes_looked_at"]
    assert_members_are_their_nodes_choices(gang, nodes_best(wide))
    whole = gangs(wide, GANG)  # the same request without a budget
    assert "cut" not in whole and whole["nodes_in_network"] == NODES

    explained = wide.post("/group_resources/gang_candidates/explain", json={**GANG, "budget_ms": 1})
    assert explained.status_code == 200
    assert_cut(explained, NODES)
    assert explained.json["gangs_found"] == 1


def test_without_a_budget_nothing_changes(wide):
    for path in ("gang_candidates", "gang_candidates/explain"):
        plain = wide.post(f"/group_resources/{path}", json=GANG)
        roomy = wide.post(f"/group_resources/{path}", json={**GANG, "budget_ms": 9_999_999})
        for response in (plain, roomy):
            assert response.status_code == 200
            assert "Placement-Search-Cut" not in response.headers
            assert "cut" not in response.json
        assert roomy.get_data() == plain.get_data()


def test_a_claim_under_a_cut_budget_claims_the_gang_it_found(wide):
    best = nodes_best(wide)
    claimed, answer = claim_gang(wide, {**GANG, "budget_ms": 1})
    assert answer["cut"]["nodes_looked_at"] < NODES
    assert_members_are_their_nodes_choices(answer, best)
    for member, consumer in zip(answer["members"], claimed["consumer_uuids"], strict=True):
        written = wide.get(f"/allocations/{consumer}").json["allocations"]
        assert {u: a["resources"] for u, a in written.items()} == {
            u: a["resources"] for u, a in member["allocations"].items()
        }


def test_a_claim_that_finds_nothing_in_its_budget_is_refused_as_when_nothing_fits(api, engine):
    """The node too small is first by name, looked at first; the budget, spent before
    the search, stops the search after it."""
    import_node(api, "a-small", gpu_box(4))
    import_node(api, "b-wide", wide_node(1))
    set_network(api, {"a-small": ("s0", "l0", "v0"), "b-wide": ("s0", "l0", "v1")})
    naming = api.services.config.group_naming()
    body = {**GANG, "members": 1}
    search = service.GangSearch(api.services.devices)
    with engine.connect() as conn, conn.begin(), pytest.raises(errors.Conflict) as refused:
        search.claim(
            conn,
            request_from_body(body, naming),
            naming,
            str(uuid.uuid4()),
            [service.NewConsumer(str(uuid.uuid4()), "p", "u", None)],
            budget=spent_budget(),
        )
    assert_refused_after_cut(refused.value, "No gang of 1 member(s) fits in one spine domain: ")
    # Without the budget the wide node takes it.
    _, answer = claim_gang(api, body)
    assert answer["members"][0]["node"] == "b-wide"


@pytest.mark.parametrize("value", BAD_BUDGETS)
def test_a_bad_budget_is_400_and_nothing_is_written(api, value):
    for path, extra in (
        ("gang_candidates", {}),
        ("gang_candidates/explain", {}),
        (
            "gang_claims",
            {"gang_uuid": str(uuid.uuid4()), "consumer_uuids": [str(uuid.uuid4())], **CLAIMING},
        ),
    ):
        body = {**GANG, "members": 1, "budget_ms": value, **extra}
        response = api.post(f"/group_resources/{path}", json=body)
        assert response.status_code == 400, (path, response.json)
        assert "budget_ms" in response.json["errors"][0]["detail"]
        if "gang_uuid" in extra:
            assert api.get(f"/group_resources/gangs/{extra['gang_uuid']}").status_code == 404


def test_the_configured_default_budget_applies_without_budget_ms(config, engine):
    api = api_with_default_budget(config, engine)
    wide_network(api)
    assert_cut(api.post("/group_resources/gang_candidates", json=GANG), NODES)
    roomy = api.post("/group_resources/gang_candidates", json={**GANG, "budget_ms": 9_999_999})
    assert "cut" not in roomy.json and roomy.json["nodes_in_network"] == NODES
