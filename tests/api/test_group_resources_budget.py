"""budget_ms on POST /group_resources/candidates and /claims (and [group_resources]
candidates_budget_ms): a search its time budget stops answers the best placements of the
nodes it looked at, each the one the whole search gives that node, and says how far it got
(the ``cut`` field, the Placement-Search-Cut header)."""

import time
import uuid

import pytest

from placement import errors
from placement.app import create_app
from placement.group_resources.request_tree import parse_request
from placement.nodes.search_budget import SearchBudget
from tests.api.group_resource_helpers import candidates, claim, sync
from tests.conftest import Api

NODES = 30
GPUS = 16
# 8 GPUs of 8 sizes on nodes of 16 GPUs of 16 sizes, the sizes shifted on each node: every
# node's best placement is a search of its own (nothing alike to remember), a few
# milliseconds each, so the whole search takes far beyond a millisecond.
WIDE_REQUEST = {
    "cpu": 1,
    **{
        key: value
        for k in range(8)
        for key, value in ((f"gpu/{k}/cards", 1), (f"gpu/{k}/memory", f"{8 + k}GiB"))
    },
}


def wide_node(index: int) -> dict:
    resources: dict = {"cpu": 64, "memory": "256GiB"}
    for device in range(GPUS):
        resources[f"gpu/dev{device}/cards"] = 1
        resources[f"gpu/dev{device}/memory"] = f"{8 + (device * 7 + index) % 23}GiB"
    return resources


def wide_world(api) -> None:
    for index in range(NODES):
        sync(api, f"n{index:02d}", wide_node(index))


@pytest.fixture
def wide(api) -> Api:
    wide_world(api)
    return api


def by_node(answer: dict) -> dict[str, dict]:
    return {candidate["node"]: candidate for candidate in answer["candidates"]}


def spent_budget() -> SearchBudget:
    """A budget whose deadline passed before the search starts: it stops after one node."""
    budget = SearchBudget(1)
    budget.start()
    time.sleep(0.005)
    return budget


def assert_claimed_as_found(api, response, consumer: str, best: dict[str, dict]) -> None:
    """A claim its budget cut: its node's best placement (``best``), written as answered."""
    assert response.status_code == 200, response.json
    assert_cut(response, NODES)
    claimed = response.json
    expected = best[claimed["node"]]
    assert {key: claimed[key] for key in expected} == expected
    written = api.get(f"/allocations/{consumer}").json["allocations"]
    assert {uuid: a["resources"] for uuid, a in written.items()} == {
        uuid: a["resources"] for uuid, a in claimed["allocations"].items()
    }


def assert_refused_after_cut(refused: errors.Conflict, start: str) -> None:
    assert refused.code == errors.GROUP_UNPLACEABLE
    assert refused.detail.startswith(start)
    assert refused.detail.endswith("The time budget ran out after 1 of 2 node(s) were looked at.")


def assert_cut(response, nodes: int) -> dict:
    """The cut field and the header agree, and say fewer nodes than all were looked at."""
    cut = response.json["cut"]
    assert cut["nodes"] == nodes and 1 <= cut["nodes_looked_at"] < nodes, cut
    assert response.headers["Placement-Search-Cut"] == (
        f"nodes={cut['nodes_looked_at']}/{cut['nodes']}"
    )
    return cut


def test_a_budget_cuts_a_wide_search_and_every_candidate_is_the_nodes_best(wide):
    response = wide.post(
        "/group_resources/candidates", json={"resources": WIDE_REQUEST, "budget_ms": 1}
    )
    assert response.status_code == 200, response.json
    cut = assert_cut(response, NODES)
    answer = response.json
    assert "feasible_nodes" not in answer and answer["unplaced"] == []
    assert 1 <= len(answer["candidates"]) <= cut["nodes_looked_at"]
    whole = candidates(wide, WIDE_REQUEST)  # the same request without a budget
    assert whole["feasible_nodes"] == NODES and "cut" not in whole
    best = by_node(whole)
    for candidate in answer["candidates"]:  # each valid: its node's own best placement
        assert candidate == best[candidate["node"]]
    ranks = [(-c["score"], c["node"]) for c in answer["candidates"]]
    assert ranks == sorted(ranks)


def test_a_cut_search_with_limit_answers_the_best_it_found(wide):
    response = wide.post(
        "/group_resources/candidates", json={"resources": WIDE_REQUEST, "limit": 3, "budget_ms": 1}
    )
    assert response.status_code == 200
    assert_cut(response, NODES)
    best = by_node(candidates(wide, WIDE_REQUEST))
    found = response.json["candidates"]
    assert 1 <= len(found) <= 3
    assert all(candidate == best[candidate["node"]] for candidate in found)


def test_without_a_budget_nothing_changes(wide):
    plain = wide.post("/group_resources/candidates", json={"resources": WIDE_REQUEST})
    roomy = wide.post(
        "/group_resources/candidates", json={"resources": WIDE_REQUEST, "budget_ms": 9_999_999}
    )
    for response in (plain, roomy):
        assert "Placement-Search-Cut" not in response.headers
        assert list(response.json) == ["candidates", "unplaced", "feasible_nodes"]
    assert roomy.get_data() == plain.get_data()
    limited = {"resources": WIDE_REQUEST, "limit": 2}
    assert (
        wide.post("/group_resources/candidates", json=limited).get_data()
        == wide.post(
            "/group_resources/candidates", json={**limited, "budget_ms": 9_999_999}
        ).get_data()
    )


def test_a_claim_under_a_cut_budget_claims_the_best_it_found(wide):
    consumer = str(uuid.uuid4())
    best = by_node(candidates(wide, WIDE_REQUEST))
    assert_claimed_as_found(wide, claim(wide, WIDE_REQUEST, consumer, budget_ms=1), consumer, best)


def test_a_claim_that_finds_nothing_in_its_budget_is_refused_as_when_nothing_fits(api, engine):
    """The node whose cpu is all taken has the higher bound (pack), so it is looked at
    first; the budget, spent before the search, stops the search after it."""
    sync(api, "a-full", wide_node(0))
    sync(api, "b-empty", wide_node(1))
    assert claim(api, {"cpu": 64}, str(uuid.uuid4()), nodes=["a-full"]).status_code == 200
    with engine.connect() as conn, conn.begin(), pytest.raises(errors.Conflict) as refused:
        api.services.group_resources.claim(
            conn,
            parse_request(WIDE_REQUEST, api.services.config.group_naming()),
            str(uuid.uuid4()),
            "p",
            "u",
            budget=spent_budget(),
        )
    assert_refused_after_cut(refused.value, "No node can take the request: ")
    # Without the budget the emptier node takes it.
    assert claim(api, WIDE_REQUEST, str(uuid.uuid4())).json["node"] == "b-empty"


BAD_BUDGETS = [0, -1, 1.5, "10", 10_000_000, True, None]
CLAIMING = {"project_id": "p", "user_id": "u"}


def assert_bad_budget_refused(api, paths: tuple[str, str], resources: dict, value) -> None:
    """``budget_ms: value`` is 400 on the candidates and the claims ``paths``."""
    candidates_path, claims_path = paths
    for path, extra in (
        (candidates_path, {}),
        (claims_path, {"consumer_uuid": str(uuid.uuid4()), **CLAIMING}),
    ):
        response = api.post(
            f"/group_resources/{path}", json={"resources": resources, "budget_ms": value, **extra}
        )
        assert response.status_code == 400, (path, response.json)
        assert "budget_ms" in response.json["errors"][0]["detail"]


@pytest.mark.parametrize("value", BAD_BUDGETS)
def test_a_bad_budget_is_400(api, value):
    assert_bad_budget_refused(api, ("candidates", "claims"), {"cpu": 1}, value)


def api_with_default_budget(config, engine) -> Api:
    """An API whose configuration gives every search a budget of 1 ms."""
    return Api(
        create_app(config.replace(group_candidates_budget_ms=1), engine=engine).test_client()
    )


def test_the_configured_default_budget_applies_without_budget_ms(config, engine):
    api = api_with_default_budget(config, engine)
    wide_world(api)
    cut = api.post("/group_resources/candidates", json={"resources": WIDE_REQUEST})
    assert_cut(cut, NODES)
    roomy = api.post(
        "/group_resources/candidates", json={"resources": WIDE_REQUEST, "budget_ms": 9_999_999}
    )
    assert "cut" not in roomy.json and roomy.json["feasible_nodes"] == NODES


def test_a_deadline_met_where_no_node_left_could_enter_cuts_nothing(api, engine):
    """Two nodes alike: the first placed scores its bound, so the second (its bound equal,
    its name after) could not enter a limit of one: a budget spent before the search,
    which stops it after the first node, changed nothing and says no cut."""
    sync(api, "a", {"cpu": 8})
    sync(api, "b", {"cpu": 8})
    budget = spent_budget()
    with engine.connect() as conn, conn.begin():
        answer = api.services.group_resources.find(
            conn,
            parse_request({"cpu": 2}, api.services.config.group_naming()),
            limit=1,
            budget=budget,
        )
    assert [placement.node.name for placement in answer.placements] == ["a"]
    assert budget.cut is None
