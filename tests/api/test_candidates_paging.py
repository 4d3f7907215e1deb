"""GET /allocation_candidates with ``limit`` stops early: the answer is the head of the
full one, whether the query matches most trees or few."""

import pytest

TREES = 30
MATCHING = (4, 11, 12, 23, 29)  # the trees (in creation order) with CUSTOM_RARE


@pytest.fixture
def forest(api):
    """30 trees (a root with a child holding VCPU); the children of MATCHING have a rare
    trait; tree 12's child is full."""
    children = []
    for number in range(TREES):
        root = api.create_provider(f"root-{number:02d}")
        child = api.create_provider(f"child-{number:02d}", parent=root["uuid"])
        api.set_inventory(child["uuid"], VCPU=4)
        if number in MATCHING:
            api.set_traits(child["uuid"], "CUSTOM_RARE")
        children.append(child["uuid"])
    consumer = "5b0b8a8e-52f2-4d3a-8a3e-1f2e3d4c5b6a"
    response = api.allocate(consumer, {children[12]: {"VCPU": 4}})
    assert response.status_code == 204, response.json
    return children


def _trees(api, query) -> list[str]:
    response = api.get(f"/allocation_candidates?{query}")
    assert response.status_code == 200, response.json
    summaries = response.json["provider_summaries"]
    used = [next(iter(r["allocations"])) for r in response.json["allocation_requests"]]
    return [summaries[u]["root_provider_uuid"] for u in used]


@pytest.mark.parametrize("limit", [1, 2, 3, 4, 10])
def test_a_limited_answer_is_the_head_of_the_full_one(api, forest, limit):
    for query in ("resources=VCPU:1&required=CUSTOM_RARE", "resources=VCPU:2"):
        everything = _trees(api, query)
        assert _trees(api, f"{query}&limit={limit}") == everything[:limit]


def test_the_rare_query_skips_the_full_tree(api, forest):
    everything = _trees(api, "resources=VCPU:1&required=CUSTOM_RARE")
    assert len(everything) == len(MATCHING) - 1  # tree 12 is full
