"""GET /allocation_candidates/explain: each filter's count, the step that empties the
answer, the nearest misses; checked on a story and against the brute-force oracle of
``test_candidates_oracle`` on random trees (the counts are the search's own)."""

import random

import pytest

from tests.api.candidate_helpers import Providers
from tests.api.test_candidates_oracle import (
    Oracle,
    build,
    query_of,
    random_request,
    random_world,
)


def explained(tree: Providers, query: str, version: str = "1.39") -> dict:
    answer = tree.api.get(f"/allocation_candidates/explain?{tree.query(query)}", version=version)
    assert answer.status_code == 200, answer.json
    return answer.json


def counts(filters: list[dict]) -> list[tuple[str, int]]:
    return [(f["filter"], f["passing"]) for f in filters]


@pytest.fixture
def computes(api) -> Providers:
    """cn1: 8 VCPU, 6 used, AVX2; cn2: 4 VCPU, no AVX2; cn3: disk only."""
    tree = Providers(api)
    tree.add("cn1", inventory={"VCPU": {"total": 8}}, traits=["HW_CPU_X86_AVX2"])
    tree.add("cn2", inventory={"VCPU": {"total": 4, "max_unit": 4}})
    tree.add("cn3", inventory={"DISK_GB": {"total": 100}})
    consumer = "00000000-0000-0000-0000-000000000001"
    used = {
        "allocations": {tree.uuid["cn1"]: {"resources": {"VCPU": 6}}},
        "project_id": "p",
        "user_id": "u",
        "consumer_generation": None,
    }
    assert api.put(f"/allocations/{consumer}", json=used, version="1.28").status_code == 204
    return tree


def test_each_filter_is_counted_in_turn_and_the_first_empty_one_named(computes):
    body = explained(computes, "resources=VCPU:4&required=HW_CPU_X86_AVX2")
    [group] = body["groups"]
    assert group["group"] == "" and group["resources"] == {"VCPU": 4}
    assert counts(group["filters"]) == [
        ("providers", 3),
        ("has VCPU", 2),
        ("VCPU: min_unit, max_unit and step_size allow 4", 2),
        ("VCPU: 4 free (capacity less usage)", 1),
        ("with trait HW_CPU_X86_AVX2", 0),
    ]
    assert counts(body["trees"]) == [
        ("trees", 3),
        ("a provider for every group", 0),
        (
            "a placement of every group together (group_policy, same_subtree, amounts summed "
            "on a shared provider)",
            0,
        ),
    ]
    assert body["empties_at"] == "the unsuffixed group: with trait HW_CPU_X86_AVX2"


def test_the_nearest_misses_say_what_one_provider_lacks(computes):
    misses = explained(computes, "resources=VCPU:4&required=HW_CPU_X86_AVX2")["nearest_misses"]
    assert [(m["tree"]["name"], m["provider"]["name"], m["fails"], m["short"]) for m in misses] == [
        ("cn1", "cn1", "VCPU: 4 free (capacity less usage)", {"VCPU": 2}),
        ("cn2", "cn2", "with trait HW_CPU_X86_AVX2", None),
    ]


def test_a_request_that_finds_candidates_empties_nothing(computes):
    body = explained(computes, "resources=VCPU:2")
    assert body["empties_at"] is None
    assert counts(body["trees"])[-1][1] == 2
    assert body["nearest_misses"] == []


def test_it_refuses_what_the_candidates_refuse(computes):
    unknown = computes.api.get("/allocation_candidates/explain?resources=CUSTOM_NOPE:1")
    assert unknown.status_code == 400
    below = computes.api.get("/allocation_candidates/explain?resources=VCPU:1", version="1.9")
    assert below.status_code == 404


def test_a_name_that_matches_nothing_is_said(computes):
    body = explained(
        computes, "resources=VCPU:1&member_of=" + "1" * 8 + "-1111-1111-1111-" + "1" * 12
    )
    assert body["groups"] == [] and body["empties_at"].startswith("a name that matches nothing")


class Counting(Oracle):
    """The oracle's own counts: per slot, the providers that can serve it; the trees with a
    valid choice."""

    def slot_providers(self, group, cls) -> int:
        def serves(name: str) -> bool:
            if not self.serves(name, group, cls):
                return False
            if group.suffix or len(group.resources) > 1:
                return True
            # A lone unsuffixed class must have the group's traits itself.
            return all(s & self.nodes[name].traits for s in group.required)

        return sum(1 for name in self.nodes if serves(name))

    def answering_roots(self, request) -> set[str]:
        return {root for root, _slots, _choice in self.valid_choices(request)}


@pytest.mark.parametrize("seed", range(15))
def test_the_counts_are_the_brute_force_oracles(api, seed):
    rng = random.Random(seed)
    nodes = random_world(rng)
    tree = build(api, nodes)
    oracle = Counting(nodes)
    checked = 0
    for _ in range(8):
        request = random_request(rng, nodes)
        body = explained(tree, query_of(request))
        if body["groups"] == []:  # no plan: a name that matches nothing
            assert body["empties_at"].startswith("a name that matches nothing")
            continue
        by_slot = {(g["group"], tuple(sorted(g["resources"]))): g for g in body["groups"]}
        for group in request.groups:
            for cls in group.resources if not group.suffix else [None]:
                if cls is None and not group.resources:
                    key = (group.suffix, ())
                else:
                    key = (group.suffix, (cls,) if cls else tuple(sorted(group.resources)))
                steps = by_slot[key]["filters"]
                assert steps[0]["passing"] == len(nodes)
                passing = [s["passing"] for s in steps]
                assert passing == sorted(passing, reverse=True)  # each filter narrows
                assert steps[-1]["passing"] == oracle.slot_providers(group, cls), key
        trees = body["trees"]
        assert trees[0]["passing"] == len({oracle.root(n) for n in nodes})
        assert trees[-1]["passing"] == len(oracle.answering_roots(request)), query_of(request)
        assert (body["empties_at"] is None) == (trees[-1]["passing"] > 0)
        checked += 1
    assert checked > 0
