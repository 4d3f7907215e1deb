"""budget_ms (and allocation_candidates_budget_ms): a search its time budget stops answers
what it found, each candidate valid, and says so (the Placement-Search-Cut header)."""

import pytest

from placement.app import create_app
from tests.api.candidate_helpers import Providers
from tests.conftest import Api

HOSTS = 3
GPUS = 8
# 8 GPUs, each its own group, none sharing a GPU: 8! = 40,320 candidates per host.
WIDE = "&".join(f"resources_G{i}=PGPU:1" for i in range(GPUS)) + "&group_policy=isolate"


def wide_hosts(api) -> Providers:
    tree = Providers(api)
    for host in range(HOSTS):
        tree.add(f"host{host}", inventory={"VCPU": {"total": 64}})
        for gpu in range(GPUS):
            tree.add(f"host{host}-gpu{gpu}", parent=f"host{host}", inventory={"PGPU": {"total": 1}})
    return tree


def unbounded_api(config, engine, **settings) -> Api:
    """An API whose answers max_allocation_candidates does not bound (only the budget)."""
    settings.setdefault("max_allocation_candidates", -1)
    return Api(create_app(config.replace(**settings), engine=engine).test_client())


@pytest.fixture
def wide(config, engine) -> Providers:
    return wide_hosts(unbounded_api(config, engine))


def assert_valid(tree: Providers, body: dict) -> None:
    """Each candidate: 8 GPUs of one host, one PGPU each, every group on its own GPU."""
    assert body["allocation_requests"]
    for request in body["allocation_requests"]:
        allocations = request["allocations"]
        names = [tree.name[uuid] for uuid in allocations]
        assert len(names) == GPUS and len({n.split("-")[0] for n in names}) == 1, names
        assert all(a["resources"] == {"PGPU": 1} for a in allocations.values())
        mapped = [uuid for uuids in request["mappings"].values() for uuid in uuids]
        assert sorted(mapped) == sorted(allocations)


def test_a_budget_cuts_a_wide_search_and_every_candidate_is_valid(wide):
    # 120,960 candidates take seconds to find; the first takes a few milliseconds.
    answer = wide.api.get(f"/allocation_candidates?{WIDE}&budget_ms=200")
    assert answer.status_code == 200
    looked, trees = answer.headers["Placement-Search-Cut"].removeprefix("trees=").split("/")
    assert int(trees) == HOSTS and 0 <= int(looked) <= HOSTS
    body = answer.json
    assert 0 < len(body["allocation_requests"]) < HOSTS * 40320
    assert_valid(wide, body)


def test_without_a_budget_nothing_changes(wide):
    answer = wide.api.get(f"/allocation_candidates?{WIDE}&limit=20")
    assert answer.status_code == 200 and "Placement-Search-Cut" not in answer.headers
    assert len(answer.json["allocation_requests"]) == 20
    roomy = wide.api.get(f"/allocation_candidates?{WIDE}&limit=20&budget_ms=60000")
    assert "Placement-Search-Cut" not in roomy.headers
    assert roomy.json == answer.json


def test_a_cut_answer_is_not_given_again_to_a_request_without_a_budget(wide):
    # 4 GPUs of 8, in order: 1,680 candidates per host, tens of milliseconds of work.
    four = "&".join(f"resources_G{i}=PGPU:1" for i in range(4)) + "&group_policy=isolate"
    cut = wide.api.get(f"/allocation_candidates?{four}&budget_ms=1")
    assert "Placement-Search-Cut" in cut.headers
    whole = wide.api.get(f"/allocation_candidates?{four}")  # the same request, no budget
    assert "Placement-Search-Cut" not in whole.headers
    assert len(whole.json["allocation_requests"]) == HOSTS * 8 * 7 * 6 * 5


@pytest.mark.parametrize("value", ["0", "-1", "abc", "1.5", "10000000"])
def test_a_bad_budget_is_400(wide, value):
    answer = wide.api.get(f"/allocation_candidates?resources=VCPU:1&budget_ms={value}")
    assert answer.status_code == 400
    assert "budget_ms" in answer.json["errors"][0]["detail"]


def test_the_configured_default_budget_applies_without_budget_ms(config, engine):
    api = unbounded_api(config, engine, allocation_candidates_budget_ms=200)
    tree = wide_hosts(api)
    answer = api.get(f"/allocation_candidates?{WIDE}")
    assert "Placement-Search-Cut" in answer.headers
    assert_valid(tree, answer.json)
