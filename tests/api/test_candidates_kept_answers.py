"""Each tree's candidates are kept between requests, and searched again only where changed.

``placement.candidates.answers``: a worker keeps, per request (the plan's
signature and the microversion), each tree's candidates with their allocation
requests written; a repeated request takes them and walks only the trees
written since. Every test here checks both halves: that the kept answers are
used (no walk where nothing changed) and that they are exact (the body is
byte for byte what a worker with nothing kept answers).
"""

import dataclasses
import uuid

import pytest

from placement.app import create_app
from placement.candidates import answers as answers_module
from placement.candidates import search
from placement.candidates.answers import (
    ANSWER_BYTES,
    KEY_BYTES,
    NO_ANSWERS,
    TREE_ENTRY_BYTES,
    AnswerMemo,
)
from placement.candidates.plan import SearchPlan
from tests.api.candidate_helpers import Providers
from tests.conftest import Api

QUERY = "resources=VCPU:2"
TWO_NUMA = "resources_A=VCPU:1&resources_B=VCPU:1&group_policy=isolate"


@pytest.fixture
def tree(api) -> Providers:
    return Providers(api)  # (each test has its own application, so its own world)


@pytest.fixture
def walks(monkeypatch) -> list[int]:
    """The root of every tree the search walks, in order."""
    walked: list[int] = []
    tree_options = SearchPlan.tree_options

    def recording(plan, root_id):
        walked.append(root_id)
        return tree_options(plan, root_id)

    monkeypatch.setattr(SearchPlan, "tree_options", recording)
    return walked


def the_world(api: Api):
    return api.services.replica.world


def kept_answers(api: Api):
    return api.services.candidates.answers


def body_of(api: Api, tree: Providers, query: str, version: str = "1.39") -> bytes:
    response = api.get(f"/allocation_candidates?{tree.query(query)}", version=version)
    assert response.status_code == 200, response.json
    return response.data


def cold_body(api: Api, tree: Providers, query: str, version: str = "1.39") -> bytes:
    with api.as_a_new_worker():
        return body_of(api, tree, query, version)


def cold_candidates(tree: Providers, query: str) -> list[frozenset]:
    with tree.api.as_a_new_worker():
        return tree.candidates(query)


def claim(api: Api, allocations: dict) -> None:
    response = api.allocate(str(uuid.uuid4()), allocations)
    assert response.status_code == 204, response.json


def root_id(tree: Providers, name: str) -> int:
    return the_world(tree.api).id_of_uuid[tree.uuid[name]]


# One per host: hosts with different traits are different kinds of tree, each walked.
HOST_TRAITS = ("HW_CPU_X86_AVX", "HW_CPU_X86_AVX2", "HW_CPU_X86_SSE42", "HW_CPU_X86_SSE41")


def hosts(tree: Providers, *names_and_vcpus) -> None:
    """Flat hosts, each a kind of tree of its own."""
    for index, (name, vcpus) in enumerate(names_and_vcpus):
        tree.add(name, inventory={"VCPU": vcpus}, traits=[HOST_TRAITS[index]])


def test_a_repeated_request_walks_no_tree(tree, api, walks):
    hosts(tree, ("H1", 4), ("H2", 8), ("H3", 16))
    first = body_of(api, tree, QUERY)
    assert len(walks) == 3

    walks.clear()
    again = body_of(api, tree, QUERY)

    assert walks == []
    assert again == first
    assert again == cold_body(api, tree, QUERY)


def test_a_write_walks_again_only_the_tree_it_changed(tree, api, walks):
    hosts(tree, ("H1", 4), ("H2", 8), ("H3", 16))
    body_of(api, tree, QUERY)
    walks.clear()

    claim(api, {tree.uuid["H2"]: {"VCPU": 7}})  # H2 has 1 VCPU left: too few

    after = body_of(api, tree, QUERY)
    assert walks == [root_id(tree, "H2")]
    assert tree.uuid["H2"] not in after.decode()
    assert after == cold_body(api, tree, QUERY)


def test_a_new_tree_is_walked_and_a_deleted_one_dropped(tree, api, walks):
    hosts(tree, ("H1", 4), ("H2", 8))
    body_of(api, tree, QUERY)
    walks.clear()

    tree.add("H3", inventory={"VCPU": 32})
    assert api.delete(f"/resource_providers/{tree.uuid['H1']}").status_code == 204

    after = body_of(api, tree, QUERY)
    assert walks == [root_id(tree, "H3")]
    assert tree.uuid["H3"] in after.decode() and tree.uuid["H1"] not in after.decode()
    assert after == cold_body(api, tree, QUERY)
    for kept in kept_answers(tree.api):
        assert set(kept.trees) <= set(the_world(tree.api).trees)


@pytest.fixture
def looked_at(monkeypatch) -> list[list[int]]:
    """The trees each request's first round is given to look at, per request."""
    given: list[list[int]] = []
    collect_by_form = search._collect_by_form

    def recording(roots, *args):
        given.append(list(roots))
        return collect_by_form(roots, *args)

    monkeypatch.setattr(search, "_collect_by_form", recording)
    return given


def roots_of(tree: Providers, *names: str) -> list[int]:
    return sorted(root_id(tree, name) for name in names)


def test_a_repeated_request_looks_only_at_the_trees_that_answer(tree, api, looked_at):
    hosts(tree, ("H1", 4), ("H2", 1), ("H3", 8))  # H2: too few VCPUs for two
    tree.add("D1", inventory={"DISK_GB": 10})  # no VCPU at all
    body_of(api, tree, QUERY)
    # D1 lacks a class asked for: the copy never gives it (ProviderWorld.roots_having).
    assert looked_at == [roots_of(tree, "H1", "H2", "H3")]

    claim(api, {tree.uuid["H3"]: {"VCPU": 1}})  # H3 still answers
    looked_at.clear()
    again = body_of(api, tree, QUERY)

    assert looked_at == [roots_of(tree, "H1", "H3")]
    assert again == cold_body(api, tree, QUERY)

    claim(api, {tree.uuid["H1"]: {"VCPU": 3}})  # H1 has too few VCPUs left now
    body_of(api, tree, QUERY)
    claim(api, {tree.uuid["H3"]: {"VCPU": 1}})
    looked_at.clear()
    last = body_of(api, tree, QUERY)
    assert looked_at == [roots_of(tree, "H3")]
    assert last == cold_body(api, tree, QUERY)


def test_trees_that_answered_nothing_are_looked_at_again_once_written(tree, api, looked_at):
    hosts(tree, ("H1", 4), ("H2", 1), ("H4", 1))  # H4 never answers
    tree.add("D1", inventory={"DISK_GB": 10})
    body_of(api, tree, QUERY)
    looked_at.clear()

    tree.api.set_inventory(tree.uuid["H2"], VCPU=8)
    tree.api.set_inventory(tree.uuid["D1"], DISK_GB=10, VCPU=2)

    after = body_of(api, tree, QUERY)
    assert looked_at == [roots_of(tree, "H1", "H2", "D1")]
    assert tree.uuid["H2"] in after.decode() and tree.uuid["D1"] in after.decode()
    assert after == cold_body(api, tree, QUERY)
    looked_at.clear()
    body_of(api, tree, f"{QUERY}&limit=5")  # another cap: not the body kept
    assert looked_at == [roots_of(tree, "H1", "H2", "D1")]  # all three answer now


def test_a_tree_whose_root_now_passes_the_root_filter_is_looked_at_again(tree, api, looked_at):
    hosts(tree, ("H1", 4), ("H2", 8))
    only_avx = f"{QUERY}&root_required={HOST_TRAITS[0]}"  # H1's trait
    assert tree.uuid["H2"] not in body_of(api, tree, only_avx).decode()

    tree.api.set_traits(tree.uuid["H2"], HOST_TRAITS[0])
    looked_at.clear()
    after = body_of(api, tree, only_avx)

    assert looked_at == [roots_of(tree, "H1", "H2")]  # H1 answers, H2 changed
    assert tree.uuid["H2"] in after.decode()
    assert after == cold_body(api, tree, only_avx)


def test_an_answer_asked_again_with_nothing_written_is_the_body_kept(tree, api, looked_at):
    hosts(tree, ("H1", 4), ("H2", 8))
    first = body_of(api, tree, QUERY)
    looked_at.clear()

    again = body_of(api, tree, QUERY)

    assert looked_at == []  # not even collected
    assert again == first == cold_body(api, tree, QUERY)
    (kept,) = kept_answers(tree.api)
    assert kept.body == first


@pytest.mark.parametrize(
    "write", ["claim", "tree answering nothing", "tree lacking the class", "new tree"]
)
def test_any_tree_written_drops_the_body_kept(tree, api, looked_at, write):
    hosts(tree, ("H1", 4), ("H2", 8), ("H3", 1))  # H3: kept as answering nothing
    tree.add("D1", inventory={"DISK_GB": 10})  # no VCPU: not kept at all
    body_of(api, tree, QUERY)
    if write == "claim":
        claim(api, {tree.uuid["H2"]: {"VCPU": 1}})
    elif write == "tree answering nothing":
        tree.api.set_inventory(tree.uuid["H3"], VCPU=8)
    elif write == "tree lacking the class":
        tree.api.set_inventory(tree.uuid["D1"], DISK_GB=10, VCPU=4)
    else:
        tree.add("H4", inventory={"VCPU": 16})
    looked_at.clear()

    after = body_of(api, tree, QUERY)

    assert len(looked_at) == 1
    assert after == cold_body(api, tree, QUERY)


@pytest.mark.parametrize("other", ["limit=1", f"root_required={HOST_TRAITS[1]}"])
def test_the_body_kept_answers_only_the_same_cap_and_root_filter(tree, api, other):
    hosts(tree, ("H1", 4), ("H2", 8))
    full = body_of(api, tree, QUERY)

    answer = body_of(api, tree, f"{QUERY}&{other}")

    assert answer != full
    assert answer == cold_body(api, tree, f"{QUERY}&{other}")
    assert body_of(api, tree, QUERY) == full == cold_body(api, tree, QUERY)


def test_randomized_answers_keep_no_body(tree, config, engine):
    api = Api(
        create_app(
            config.replace(randomize_allocation_candidates=True), engine=engine
        ).test_client()
    )
    tree = Providers(api)
    hosts(tree, ("H1", 4), ("H2", 8))
    body_of(api, tree, QUERY)
    answer = tree.candidates(QUERY)
    (kept,) = kept_answers(tree.api)
    assert kept.body is None and len(kept.trees) == 2
    assert sorted(answer, key=sorted) == sorted(cold_candidates(tree, QUERY), key=sorted)


def test_a_body_that_would_take_its_request_over_the_budget_is_not_kept():
    kept = answers_module.KeptAnswers()
    kept.keep_body("cap and filter", b"x" * 100, budget_bytes=KEY_BYTES + 100)
    assert kept.body_for("cap and filter") == b"x" * 100
    assert kept.body_for("another cap") is None
    assert kept.size == KEY_BYTES + 100

    kept.keep_body("cap and filter", b"y" * 101, budget_bytes=KEY_BYTES + 100)
    assert kept.body_for("cap and filter") is None
    assert kept.size == KEY_BYTES

    kept.keep_body("cap and filter", b"z", budget_bytes=KEY_BYTES + 100)
    kept.trees_changed(set())  # nothing changed (a new class, say): still the same
    assert kept.body_for("cap and filter") == b"z"
    kept.trees_changed({7})
    assert kept.body_for("cap and filter") is None and kept.size == KEY_BYTES


def test_a_request_with_another_root_filter_looks_at_every_tree(tree, api, looked_at):
    # root_required only chooses trees: both requests share their kept answers, but the
    # trees the first one skipped were never looked at for the second.
    hosts(tree, ("H1", 4), ("H2", 8))
    only_avx = f"{QUERY}&root_required={HOST_TRAITS[0]}"
    assert tree.uuid["H2"] not in body_of(api, tree, only_avx).decode()
    body_of(api, tree, only_avx)
    looked_at.clear()

    every_host = body_of(api, tree, QUERY)

    assert looked_at == [roots_of(tree, "H1", "H2")]
    assert tree.uuid["H2"] in every_host.decode()
    assert every_host == cold_body(api, tree, QUERY)
    assert body_of(api, tree, only_avx) == cold_body(api, tree, only_avx)


def test_a_written_tree_a_limit_did_not_reach_is_looked_at_by_the_next_request(
    tree, api, looked_at
):
    hosts(tree, ("H1", 4), ("H2", 8), ("H3", 1))
    body_of(api, tree, QUERY)
    tree.api.set_inventory(tree.uuid["H3"], VCPU=16)

    limited = body_of(api, tree, f"{QUERY}&limit=1")  # stops at H1, before H3
    assert tree.uuid["H3"] not in limited.decode()
    looked_at.clear()

    after = body_of(api, tree, QUERY)
    assert looked_at == [roots_of(tree, "H1", "H2", "H3")]
    assert tree.uuid["H3"] in after.decode()
    assert after == cold_body(api, tree, QUERY)


def test_a_request_asked_first_after_a_tree_went_looks_at_the_trees_left(tree, api):
    hosts(tree, ("H1", 4), ("H2", 8))
    body_of(api, tree, QUERY)
    assert api.delete(f"/resource_providers/{tree.uuid['H1']}").status_code == 204

    other = "resources=VCPU:1"  # never asked: looks at every tree
    assert body_of(api, tree, other) == cold_body(api, tree, other)
    assert the_world(tree.api).roots_in_order() == roots_of(tree, "H2")


def test_more_trees_changed_than_kept_are_looked_at_again_all():
    kept = answers_module.KeptAnswers()
    for root in (1, 2):
        kept.add_tree(root, NO_ANSWERS)
    to_look_at = kept.to_look_at
    to_look_at.looked_at("no filter", [1, 2], every_one=True)
    assert to_look_at.for_request("no filter") == set()
    assert to_look_at.for_request("another filter") is None

    kept.trees_changed({3})
    assert to_look_at.for_request("no filter") == {3}
    kept.trees_changed({4, 5})  # 3 changed trees, 2 kept: look at every tree
    assert to_look_at.for_request("no filter") is None


def test_a_capped_look_leaves_the_trees_it_did_not_reach_to_look_at():
    kept = answers_module.KeptAnswers()
    for root in (1, 2, 3, 4):
        kept.add_tree(root, NO_ANSWERS)
    to_look_at = kept.to_look_at
    to_look_at.looked_at("no filter", [1, 2, 3, 4], every_one=True)
    kept.trees_changed({2, 3})

    to_look_at.looked_at("no filter", [2], every_one=False)  # a cap stopped it at 2
    assert to_look_at.for_request("no filter") == {3}
    to_look_at.looked_at("another filter", [3], every_one=False)
    assert to_look_at.for_request("no filter") == {3}


def two_numa_hosts(tree: Providers, *names: str) -> None:
    """Hosts with two NUMA nodes of 4 VCPUs, each host a kind of tree of its own."""
    for index, name in enumerate(names):
        tree.add(name, traits=[HOST_TRAITS[index]])
        for numa in ("N0", "N1"):
            tree.add(f"{name}{numa}", parent=name, inventory={"VCPU": 4})


def test_a_limited_answer_is_kept_as_far_as_asked_and_a_longer_one_goes_on(tree, api, walks):
    two_numa_hosts(tree, "H1", "H2", "H3")
    limited = body_of(api, tree, f"{TWO_NUMA}&limit=2")
    assert limited == cold_body(api, tree, f"{TWO_NUMA}&limit=2")
    kept = [answers for kept in kept_answers(tree.api) for answers in kept.trees.values()]
    assert sorted(len(answers.candidates) for answers in kept) == [1, 1]
    assert not any(answers.complete for answers in kept)

    whole = body_of(api, tree, TWO_NUMA)

    assert whole == cold_body(api, tree, TWO_NUMA)
    assert whole.count(b'"allocations"') == 6  # 3 hosts, 2 orders of A and B each
    walks.clear()
    again = body_of(api, tree, f"{TWO_NUMA}&limit=4")
    assert walks == []
    assert again == cold_body(api, tree, f"{TWO_NUMA}&limit=4")


@pytest.mark.parametrize(
    ("first", "second", "query"),
    [
        ("1.34", "1.33", TWO_NUMA),  # mappings from 1.34
        ("1.12", "1.11", QUERY),  # allocations a dict from 1.12, a list before
    ],
)
def test_microversions_that_write_requests_differently_are_kept_apart(
    tree, api, first, second, query
):
    two_numa_hosts(tree, "H1", "H2")
    hosts(tree, ("H3", 4))
    bodies = set()
    for version in (first, second, first):
        body = body_of(api, tree, query, version)
        assert body == cold_body(api, tree, query, version)
        bodies.add(body)
    assert len(bodies) == 2
    assert len(kept_answers(tree.api)) == 2


def host_and_shared_disk(tree: Providers) -> None:
    """A host CN with VCPUs, and SS sharing its disk with CN's aggregate."""
    tree.add("CN", inventory={"VCPU": 8}, aggregates=["agg"])
    tree.add(
        "SS", inventory={"DISK_GB": 100}, traits=["MISC_SHARES_VIA_AGGREGATE"], aggregates=["agg"]
    )


def test_answers_through_sharing_providers_are_not_kept(tree, api):
    host_and_shared_disk(tree)
    query = "resources=VCPU:1,DISK_GB:10"
    assert body_of(api, tree, query) == cold_body(api, tree, query)
    assert b"DISK_GB" in body_of(api, tree, query)
    assert len(kept_answers(tree.api)) == 0


def test_an_answer_through_a_sharing_provider_follows_its_usage(tree, api):
    # The sharing provider is a tree of its own: a claim on it changes no provider of
    # the tree the answer is anchored in.
    host_and_shared_disk(tree)
    query = "resources=VCPU:1,DISK_GB:60"
    assert tree.uuid["SS"] in body_of(api, tree, query).decode()

    claim(api, {tree.uuid["SS"]: {"DISK_GB": 50}})

    after = body_of(api, tree, query)
    assert after == cold_body(api, tree, query)
    assert b'allocation_requests":[]' in after


def test_a_cache_of_zero_keeps_nothing(tree, config, engine):
    api = Api(
        create_app(config.replace(allocation_candidates_cache_mib=0), engine=engine).test_client()
    )
    tree = Providers(api)
    hosts(tree, ("H1", 4))
    assert tree.uuid["H1"] in body_of(api, tree, QUERY).decode()
    assert tree.uuid["H1"] in body_of(api, tree, QUERY).decode()
    assert len(kept_answers(tree.api)) == 0


def test_the_size_kept_is_accounted_as_trees_come_and_go(tree, api):
    two_numa_hosts(tree, "H1", "H2")
    hosts(tree, ("H3", 1))  # too small for two VCPUs: kept as answering nothing
    tree.add("D1", inventory={"DISK_GB": 10})  # no VCPU at all: not kept
    body_of(api, tree, TWO_NUMA)
    claim(api, {tree.uuid["H1N0"]: {"VCPU": 1}})
    body_of(api, tree, TWO_NUMA)
    (kept,) = kept_answers(tree.api)
    assert kept.size == KEY_BYTES + len(kept.body) + sum(
        TREE_ENTRY_BYTES + sum(ANSWER_BYTES + len(c.request) for c in answers.candidates)
        for answers in kept.trees.values()
    )
    assert set(kept.trees) == {root_id(tree, name) for name in ("H1", "H2", "H3")}


def test_a_request_whose_trees_all_changed_is_dropped(tree, api):
    hosts(tree, ("H1", 4))
    body_of(api, tree, QUERY)
    body_of(api, tree, "resources=VCPU:1")
    assert len(kept_answers(tree.api)) == 2

    claim(api, {tree.uuid["H1"]: {"VCPU": 1}})
    hosts(tree, ("H2", 4))  # (read in the same refresh as the claim)

    body_of(api, tree, QUERY)
    (kept,) = kept_answers(tree.api)  # the other request kept nothing any more
    assert set(kept.trees) == {root_id(tree, "H1"), root_id(tree, "H2")}


def test_requests_with_in_tree_are_not_kept(tree, api):
    hosts(tree, ("H1", 4), ("H2", 8))
    query = "resources=VCPU:1&in_tree=<H2>"
    assert body_of(api, tree, query) == cold_body(api, tree, query)
    assert len(kept_answers(tree.api)) == 0


def test_a_tree_kept_from_one_kind_is_extended_from_another_tree_of_it(tree, api, walks):
    # H1 and H2 are one kind; the answer kept for H1 was found walking H1. After a claim
    # on H1 that leaves it the same kind, H1 is walked again and H2 goes on from that walk.
    for name in ("H1", "H2"):
        tree.add(name)
        for numa in ("N0", "N1"):
            tree.add(f"{name}{numa}", parent=name, inventory={"VCPU": 4})
    limited = f"{TWO_NUMA}&limit=3"
    assert body_of(api, tree, limited) == cold_body(api, tree, limited)
    claim(api, {tree.uuid["H1N0"]: {"VCPU": 1}})
    walks.clear()

    whole = body_of(api, tree, TWO_NUMA)

    assert walks == [root_id(tree, "H1")]
    assert whole == cold_body(api, tree, TWO_NUMA)
    assert whole.count(b'"allocations"') == 4


def test_the_least_recently_asked_requests_are_dropped_first():
    memo = AnswerMemo()
    kept = {}
    for key in ("a", "b", "c"):
        kept[key] = memo.kept_for((key,))
        kept[key].size = 100
    assert memo.kept_for(("a",)) is kept["a"]  # asked again: now the most recent

    memo.keep_within(250)

    assert list(memo) == [kept["c"], kept["a"]]
    memo.keep_within(100)
    assert list(memo) == [kept["a"]]
    memo.keep_within(0)
    assert len(memo) == 0
    assert memo.kept_for(("a",)) is not kept["a"]


def test_bodies_go_before_any_request_s_answers_least_recently_asked_first():
    memo = AnswerMemo()
    kept = {}
    for key in ("a", "b", "c"):
        kept[key] = memo.kept_for((key,))
        kept[key].keep_body("cap", b"x" * 100, budget_bytes=10_000)
    budget = 3 * KEY_BYTES + 150

    memo.keep_within(budget)

    assert list(memo) == [kept["a"], kept["b"], kept["c"]]  # every request's answers
    assert [k.body for k in memo] == [None, None, b"x" * 100]
    assert sum(k.size for k in memo) == 3 * KEY_BYTES + 100


def test_a_request_alone_over_the_budget_is_dropped_and_the_others_kept():
    memo = AnswerMemo()
    small = memo.kept_for(("small",))
    small.size = 100
    memo.kept_for(("huge",)).size = 1000

    memo.keep_within(500)

    assert list(memo) == [small]


def test_dropped_trees_leave_each_request_and_an_emptied_request_goes():
    memo = AnswerMemo()
    first, second = memo.kept_for(("first",)), memo.kept_for(("second",))
    for root_id in (1, 2, 3):
        first.add_tree(root_id, NO_ANSWERS)
    second.add_tree(2, NO_ANSWERS)

    memo.drop_trees({2})  # fewer trees dropped than kept
    assert set(first.trees) == {1, 3} and list(memo) == [first]
    memo.drop_trees({1, 7, 8, 9, 10})  # more dropped than kept
    assert set(first.trees) == {3}
    assert first.size == KEY_BYTES + TREE_ENTRY_BYTES


def test_at_most_so_many_requests_are_kept(monkeypatch):
    monkeypatch.setattr(answers_module, "MAX_REQUESTS_KEPT", 3)
    memo = AnswerMemo()
    for key in range(5):
        memo.kept_for((key,))
    newest = [memo.kept_for((key,)) for key in (2, 3, 4)]

    memo.keep_within(10**9)

    assert list(memo) == newest


# What a tree's candidates depend on besides the tree: every field of the plan is either
# in its signature or named here with the reason it need not be.
NOT_IN_SIGNATURE = {
    "world",  # the trees themselves: their kept answers are dropped when they change
    "root_filter",  # chooses the trees (candidate_roots), not their candidates
    "in_tree_roots",  # likewise
    "sharing_options",
    "anchors",
    "sharing",  # nothing is kept when something is shared
    "subtree_sets_of_slot",
    "twin_families",
    "demand",  # follow from the slots and sets
    "preferred_trait_ids",  # only ranked requests read it, and nothing is kept for them
}
IN_SIGNATURE = {
    "slots",
    "filter_of_slot",
    "isolate",
    "subtree_sets",
    "unsuffixed_slots",
    "unsuffixed_traits",
    "one_provider_per_tree",
    "class_names",
}


def test_every_field_of_the_plan_is_in_its_signature_or_follows_from_it():
    fields = {field.name for field in dataclasses.fields(SearchPlan)}
    assert fields == IN_SIGNATURE | NOT_IN_SIGNATURE
    assert not IN_SIGNATURE & NOT_IN_SIGNATURE


def test_a_plan_differing_in_any_signed_field_has_another_signature(tree, api, monkeypatch):
    hosts(tree, ("H1", 4))
    plans: list[SearchPlan] = []
    collect = search.collect

    def capturing(plan, *args, **kwargs):
        plans.append(plan)
        return collect(plan, *args, **kwargs)

    monkeypatch.setattr(search, "collect", capturing)
    body_of(api, tree, QUERY)
    (plan,) = plans
    different_values = {
        "slots": [],
        "filter_of_slot": [],
        "isolate": not plan.isolate,
        "subtree_sets": [(0,)],
        "unsuffixed_slots": (),
        "unsuffixed_traits": (frozenset({1}),),
        "one_provider_per_tree": not plan.one_provider_per_tree,
        "class_names": {},
    }
    assert set(different_values) == IN_SIGNATURE
    for name, value in different_values.items():
        changed = dataclasses.replace(plan, **{name: value})
        assert changed.signature() != plan.signature(), name
