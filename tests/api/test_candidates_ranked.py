"""Ranked requests (soft preferences) where the search's shortcuts matter: the twins'
reorderings, the stop at a tree's bound, a time budget, random tie order.

Each answer is checked against the same request without a limit (every candidate, scored
by the service): the brute-force oracle over random worlds is
``test_candidates_preferences_oracle``.
"""

import json

from placement.app import create_app
from placement.candidates import search as candidate_search
from placement.candidates import service as candidate_service
from tests.api.candidate_helpers import Providers
from tests.conftest import Api

GPUS = 8


# The search's looks at the clock before its budget of 1 ms is spent (the first is
# the one that sets the deadline).
LOOKS_BEFORE_THE_BUDGET_ENDS = 6


def gpu_groups(count: int, prefer: str = "") -> str:
    groups = "&".join(f"resources_G{i}=PGPU:1" for i in range(count))
    if prefer:
        groups += "&" + "&".join(f"prefer_G{i}={prefer}" for i in range(count))
    return groups + "&group_policy=isolate"


def gpu_hosts(api, hosts: int, fast_gpus) -> Providers:
    """``hosts`` hosts of 8 GPUs; host h has ``fast_gpus(h)`` GPUs with CUSTOM_FAST, and
    h x 8 of its 64 VCPU used."""
    tree = Providers(api)
    for host in range(hosts):
        root = tree.add(f"host{host}", inventory={"VCPU": {"total": 64}})
        for gpu in range(GPUS):
            traits = ["CUSTOM_FAST"] if gpu < fast_gpus(host) else []
            tree.add(
                f"host{host}-gpu{gpu}",
                parent=f"host{host}",
                inventory={"PGPU": {"total": 1}},
                traits=traits,
            )
        if host:
            claim = {
                "allocations": {root: {"resources": {"VCPU": host * 8}}},
                "project_id": "p",
                "user_id": "u",
                "consumer_generation": None,
            }
            consumer = f"00000000-0000-0000-0000-{host:012d}"
            answer = api.put(f"/allocations/{consumer}", json=claim, version="1.28")
            assert answer.status_code == 204
    return tree


def unbounded(config, engine, **settings) -> Api:
    settings.setdefault("max_allocation_candidates", -1)
    return Api(create_app(config.replace(**settings), engine=engine).test_client())


def ranked(tree: Providers, query: str) -> dict:
    body = tree.get(query)
    assert len(body["scores"]) == len(body["allocation_requests"])
    assert body["scores"] == sorted(body["scores"], reverse=True)
    return body


def scored(body: dict) -> list[tuple[float, frozenset]]:
    return [
        (score, frozenset(request["allocations"]))
        for score, request in zip(body["scores"], body["allocation_requests"], strict=True)
    ]


def test_the_best_of_8_isolated_gpus_are_found_without_listing_every_reordering(config, engine):
    # Host h has h fast GPUs (3 hosts: 0, 1, 2): only 8 of 8 are asked, so every host
    # scores the same for all its 8! reorderings; 4 of 8 asked: the fast ones first.
    tree = gpu_hosts(unbounded(config, engine), 3, fast_gpus=lambda h: h)
    every = ranked(tree, gpu_groups(4, prefer="CUSTOM_FAST"))
    assert len(every["allocation_requests"]) == 3 * 8 * 7 * 6 * 5
    best = ranked(tree, gpu_groups(4, prefer="CUSTOM_FAST") + "&limit=30")
    assert best["scores"] == every["scores"][:30]
    assert best["scores"][0] == 2.0  # host2's two fast GPUs, and two others
    top = {pair for pair in scored(every) if pair[0] == 2.0}
    assert set(scored(best)) <= top


def test_utilization_ranks_hosts_and_the_bound_stops_at_the_best(config, engine):
    tree = gpu_hosts(unbounded(config, engine), 4, fast_gpus=lambda h: 0)
    query = "resources=VCPU:8&" + gpu_groups(2)
    spread = ranked(tree, query + "&utilization=spread&limit=5")
    pack = ranked(tree, query + "&utilization=pack&limit=5")
    # VCPU used: host h has h x 8 of 64; the GPU groups are idle (1 - 0 for spread).
    assert spread["scores"] == [3.0] * 5
    for request in spread["allocation_requests"]:  # the idle host
        assert {tree.name[u].split("-")[0] for u in request["allocations"]} == {"host0"}
    assert pack["scores"] == [0.375] * 5  # host3: 24 / 64
    every = ranked(tree, query + "&utilization=pack")
    assert pack["scores"] == every["scores"][:5]
    assert len(every["scores"]) == 4 * 8 * 7


class LookCountingClock:
    """``time.monotonic`` for the search: still at the start for its first ``looks``
    looks, then a second later. A budget then cuts the search at the same place
    whatever the machine's load."""

    def __init__(self, looks: int) -> None:
        self.looks_left = looks

    def monotonic(self) -> float:
        self.looks_left -= 1
        return 0.0 if self.looks_left >= 0 else 1.0


def test_a_budget_cuts_a_ranked_search_and_says_so(config, engine, monkeypatch):
    tree = gpu_hosts(unbounded(config, engine), 3, fast_gpus=lambda h: 4)
    clock = LookCountingClock(looks=LOOKS_BEFORE_THE_BUDGET_ENDS)
    monkeypatch.setattr(candidate_service, "time", clock)
    monkeypatch.setattr(candidate_search, "time", clock)
    answer = tree.api.get(
        f"/allocation_candidates?{gpu_groups(GPUS, prefer='!CUSTOM_FAST')}&budget_ms=1",
        version="1.39",
    )
    assert answer.status_code == 200
    assert answer.headers["Placement-Search-Cut"].startswith("trees=")
    body = answer.json
    assert body["scores"] == sorted(body["scores"], reverse=True)
    assert 0 < len(body["allocation_requests"]) < 3 * 40320
    for request in body["allocation_requests"]:
        assert len(request["allocations"]) == GPUS
        assert len({tree.name[u].split("-")[0] for u in request["allocations"]}) == 1


def test_randomized_ties_keep_the_best_scores(config, engine):
    api = unbounded(config, engine)
    tree = gpu_hosts(api, 3, fast_gpus=lambda h: 2 * h)
    query = gpu_groups(2, prefer="CUSTOM_FAST") + "&limit=7"
    fixed = ranked(tree, query)
    shuffled_api = unbounded(config, engine, randomize_allocation_candidates=True)
    tree.api = shuffled_api
    shuffled = ranked(tree, query)
    assert shuffled["scores"] == fixed["scores"]
    every = {pair for pair in scored(ranked(tree, gpu_groups(2, prefer="CUSTOM_FAST")))}
    assert set(scored(shuffled)) <= every


def test_no_candidate_still_has_scores(api):
    tree = Providers(api)
    tree.add("small", inventory={"VCPU": {"total": 1}})
    body = tree.get("resources=VCPU:2&utilization=pack")
    assert body == {"allocation_requests": [], "scores": [], "provider_summaries": {}}
    # No plan at all (an aggregate nobody is in): the same fields, in the same order.
    unknown = "12345678-1234-1234-1234-123456789012"
    for query in (
        "resources=VCPU:2&utilization=pack",
        f"resources=VCPU:1&member_of={unknown}&utilization=pack",
    ):
        answer = api.get(f"/allocation_candidates?{query}", version="1.39")
        assert list(json.loads(answer.get_data())) == [
            "allocation_requests",
            "scores",
            "provider_summaries",
        ]
    assert tree.get("resources=VCPU:2") == {"allocation_requests": [], "provider_summaries": {}}


def test_the_bounds_kept_between_requests_follow_every_write(config, engine):
    # Host h has h x 8 VCPU used: packing picks host2, until host0 is used more, then
    # a preferred trait on host1 outweighs any utilization.
    api = unbounded(config, engine)
    tree = gpu_hosts(api, 3, fast_gpus=lambda h: 0)

    def best_host(query: str) -> str:
        body = ranked(tree, query + "&limit=1")
        (request,) = body["allocation_requests"]
        return tree.name[next(iter(request["allocations"]))]

    pack = "resources=VCPU:8&utilization=pack"
    assert best_host(pack) == "host2"
    claim = {
        "allocations": {tree.uuid["host0"]: {"resources": {"VCPU": 40}}},
        "project_id": "p",
        "user_id": "u",
        "consumer_generation": None,
    }
    answer = api.put(
        "/allocations/10000000-0000-0000-0000-000000000000", json=claim, version="1.28"
    )
    assert answer.status_code == 204
    assert best_host(pack) == "host0"
    preferring = f"{pack}&prefer=CUSTOM_FAST"
    assert api.put("/traits/CUSTOM_FAST").status_code == 201  # no provider has it yet
    assert best_host(preferring) == "host0"
    api.set_traits(tree.uuid["host1"], "CUSTOM_FAST")
    assert best_host(preferring) == "host1"
    with api.as_a_new_worker():
        assert best_host(preferring) == "host1"


def test_a_placement_on_a_sharing_provider_alone_keeps_its_place_whatever_the_limit(config, engine):
    # A (rank 0) and B (rank 2) are in the sharing provider S's aggregate; W (rank 1) is
    # not. S alone scores 0, as W0 does: S is anchored in A, the first tree S serves, so it
    # comes before W0 among the ties, whether the walk (best bound first) meets it from A
    # or from B, and limit=k answers the first k of the whole answer.
    api = unbounded(config, engine)
    assert api.put("/traits/CUSTOM_P").status_code == 201
    tree = Providers(api)
    tree.add("A", inventory={"VCPU": {"total": 4}}, aggregates=["agg"])
    tree.add("W", inventory={"DISK_GB": {"total": 10}}, traits=["CUSTOM_P"])
    tree.add("W0", parent="W", inventory={"DISK_GB": {"total": 10}})
    tree.add("B", inventory={"DISK_GB": {"total": 10}}, traits=["CUSTOM_P"], aggregates=["agg"])
    tree.add(
        "S",
        inventory={"DISK_GB": {"total": 10}},
        traits=["MISC_SHARES_VIA_AGGREGATE"],
        aggregates=["agg"],
    )
    query = "resources1=DISK_GB:1&prefer1=CUSTOM_P"

    def named(body: dict) -> list[tuple[float, str]]:
        return [
            (score, tree.name[next(iter(request["allocations"]))])
            for score, request in zip(body["scores"], body["allocation_requests"], strict=True)
        ]

    every = named(ranked(tree, query))
    assert every == [(1.0, "W"), (1.0, "B"), (0.0, "S"), (0.0, "W0")]
    for k in range(1, len(every) + 1):
        assert named(ranked(tree, f"{query}&limit={k}")) == every[:k]
