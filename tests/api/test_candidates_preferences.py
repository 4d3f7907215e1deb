"""Soft preferences on GET /allocation_candidates, by hand: three compute nodes whose order
each preference changes in its own way, the refusals, and requests without preferences
answered as before. (The brute-force check on random trees is
``test_candidates_preferences_oracle``.)"""

import pytest

from placement.app import create_app
from tests.api.candidate_helpers import Providers
from tests.conftest import Api

QUERY = "resources=VCPU:1,MEMORY_MB:512"
AGG = "aaaaaaaa-0000-4000-8000-00000000000a"
ERROR_KEYS = {"status", "title", "detail", "code", "request_id"}


def consume(api, tree: Providers, name: str, number: int, **resources) -> None:
    response = api.allocate(f"00000000-0000-0000-0000-{number:012d}", {tree.uuid[name]: resources})
    assert response.status_code == 204, response.json


@pytest.fixture
def computes(api) -> Providers:
    """CN1, CN2, CN3 (created in that order), VCPU 8 and MEMORY_MB 4096 each.

    ======  ============  ======================  =========  ==========================
    node    trait         capacity VCPU / MEM     used       utilization (mean of both)
    ======  ============  ======================  =========  ==========================
    CN1     CUSTOM_SLOW   8 / 4096                6 / 1024   (6/8 + 1/4) / 2 = 0.5
    CN2     CUSTOM_FAST   16 (ratio 2) / 3072     4 / 0      (4/16 + 0) / 2 = 0.125
                          (1024 reserved)
    CN3                   8 / 4096, aggregate A   2 / 2048   (2/8 + 1/2) / 2 = 0.375
    ======  ============  ======================  =========  ==========================
    """
    for trait in ("CUSTOM_FAST", "CUSTOM_SLOW"):
        api.put(f"/traits/{trait}")
    tree = Providers(api)
    tree.aggregates["A"] = AGG
    tree.add("CN1", inventory={"VCPU": 8, "MEMORY_MB": 4096}, traits=["CUSTOM_SLOW"])
    tree.add(
        "CN2",
        inventory={
            "VCPU": {"total": 8, "allocation_ratio": 2.0},
            "MEMORY_MB": {"total": 4096, "reserved": 1024},
        },
        traits=["CUSTOM_FAST"],
    )
    tree.add("CN3", inventory={"VCPU": 8, "MEMORY_MB": 4096}, aggregates=["A"])
    consume(api, tree, "CN1", 1, VCPU=6, MEMORY_MB=1024)
    consume(api, tree, "CN2", 2, VCPU=4)
    consume(api, tree, "CN3", 3, VCPU=2, MEMORY_MB=2048)
    return tree


def ranked(tree: Providers, query: str, version: str = "1.39") -> tuple[list[str], list]:
    """The provider of each candidate (one each here), and the scores."""
    body = tree.get(query, version)
    names = []
    for candidate in map(tree.named, body["allocation_requests"]):
        [(name, _resources)] = candidate
        names.append(name)
    return names, body.get("scores")


def test_without_preferences_the_order_is_as_ever_and_there_are_no_scores(computes):
    assert ranked(computes, QUERY) == (["CN1", "CN2", "CN3"], None)


@pytest.mark.parametrize(
    ("preferences", "order", "scores"),
    [
        ("prefer=CUSTOM_FAST,!CUSTOM_SLOW", ["CN2", "CN3", "CN1"], [1, 0, -1]),
        ("prefer=CUSTOM_FAST&prefer=!CUSTOM_SLOW", ["CN2", "CN3", "CN1"], [1, 0, -1]),
        ("prefer=!CUSTOM_FAST", ["CN1", "CN3", "CN2"], [0, 0, -1]),
        ("utilization=pack", ["CN1", "CN3", "CN2"], [0.5, 0.375, 0.125]),
        ("utilization=spread", ["CN2", "CN3", "CN1"], [0.875, 0.625, 0.5]),
        ("prefer=CUSTOM_SLOW&utilization=spread", ["CN1", "CN2", "CN3"], [1.5, 0.875, 0.625]),
        (f"prefer_member_of={AGG}", ["CN3", "CN1", "CN2"], [1, 0, 0]),
        (f"prefer_member_of=!{AGG}&utilization=pack", ["CN1", "CN2", "CN3"], [0.5, 0.125, -0.625]),
        # A trait no one has: every score 0, and equal scores keep the order without them.
        ("prefer=HW_CPU_X86_AVX2", ["CN1", "CN2", "CN3"], [0, 0, 0]),
        # An aggregate nobody is in is no error: it matches nothing.
        ("prefer_member_of=bbbbbbbb-0000-4000-8000-00000000000b", ["CN1", "CN2", "CN3"], [0, 0, 0]),
    ],
)
def test_each_preference_orders_the_three_nodes(computes, preferences, order, scores):
    assert ranked(computes, f"{QUERY}&{preferences}") == (order, scores)


def test_with_a_limit_the_best_ones(computes):
    assert ranked(computes, f"{QUERY}&utilization=pack&limit=1") == (["CN1"], [0.5])
    assert ranked(computes, f"{QUERY}&utilization=spread&limit=2") == (
        ["CN2", "CN3"],
        [0.875, 0.625],
    )
    body = computes.get(f"{QUERY}&utilization=spread&limit=1")
    assert [computes.name[u] for u in body["provider_summaries"]] == ["CN2"]


def test_max_allocation_candidates_keeps_the_best_ones(computes, config, engine):
    capped = Providers(
        Api(create_app(config.replace(max_allocation_candidates=2), engine=engine).test_client())
    )
    capped.uuid, capped.name = computes.uuid, computes.name

    assert ranked(capped, f"{QUERY}&utilization=spread") == (["CN2", "CN3"], [0.875, 0.625])


def test_randomized_answers_still_put_the_best_first(computes, config, engine):
    shuffled = Providers(
        Api(
            create_app(
                config.replace(randomize_allocation_candidates=True), engine=engine
            ).test_client()
        )
    )
    shuffled.uuid, shuffled.name = computes.uuid, computes.name

    for _ in range(5):
        assert ranked(shuffled, f"{QUERY}&utilization=pack") == (
            ["CN1", "CN3", "CN2"],
            [0.5, 0.375, 0.125],
        )


def test_a_budget_answers_the_same_when_it_does_not_run_out(computes):
    query = f"{QUERY}&prefer=CUSTOM_FAST&utilization=pack"
    answer = computes.api.get(f"/allocation_candidates?{query}&budget_ms=60000")

    assert answer.status_code == 200
    assert "Placement-Search-Cut" not in answer.headers
    assert answer.json == computes.get(query)


@pytest.mark.parametrize(
    ("query", "version", "order", "scores"),
    [
        ("resources=VCPU:1&prefer=CUSTOM_FAST", "1.10", ["CN2", "CN1", "CN3"], [1, 0, 0]),
        ("resources=VCPU:1&prefer=!CUSTOM_SLOW&limit=2", "1.17", ["CN2", "CN3"], [0, 0]),
        ("resources1=VCPU:1&prefer1=CUSTOM_FAST&limit=1", "1.25", ["CN2"], [1]),
        (
            f"resources_C=VCPU:1&prefer_C=CUSTOM_FAST&prefer_member_of_C={AGG}",
            "1.33",
            ["CN2", "CN3", "CN1"],
            [1, 1, 0],
        ),
    ],
)
def test_every_microversion_with_candidates_takes_preferences(
    computes, query, version, order, scores
):
    assert ranked(computes, query, version) == (order, scores)


def test_only_the_unsuffixed_group_counts_the_roots_aggregates(api):
    tree = Providers(api)
    tree.aggregates["A"] = AGG
    tree.add("ROOT", aggregates=["A"])
    tree.add("NUMA", parent="ROOT", inventory={"VCPU": 4})

    assert tree.get(f"resources=VCPU:1&prefer_member_of={AGG}")["scores"] == [1]
    assert tree.get(f"resources_G=VCPU:1&prefer_member_of_G={AGG}")["scores"] == [0]


def test_a_group_scores_the_traits_of_all_its_providers_once(api):
    """The unsuffixed group's providers together: a trait two of them have counts once."""
    api.put("/traits/CUSTOM_FAST")
    tree = Providers(api)
    tree.add("CN", inventory={"VCPU": 4}, traits=["CUSTOM_FAST"])
    tree.add("NUMA", parent="CN", inventory={"MEMORY_MB": 1024}, traits=["CUSTOM_FAST"])
    tree.add("DISK", parent="CN", inventory={"DISK_GB": 10})

    body = tree.get(
        "resources=VCPU:1,MEMORY_MB:1,DISK_GB:1&prefer=CUSTOM_FAST,HW_NUMA_ROOT&utilization=spread"
    )

    assert body["scores"] == [2]  # CUSTOM_FAST once, and (1 - 0) for the group


# Refusals.


def assert_refused(response) -> dict:
    """The one error format (with a code: every microversion here is 1.23 or later)."""
    assert response.status_code == 400, response.get_data(as_text=True)
    [error] = response.json["errors"]
    assert error.keys() == ERROR_KEYS, error
    assert error["status"] == 400 and error["title"] == "Bad Request"
    assert error["request_id"].startswith("req-")
    assert error["code"].startswith("placement."), error
    return error


@pytest.mark.parametrize(
    ("query", "version"),
    [
        # A trait both preferred and avoided, in one parameter or two; an aggregate too.
        ("resources=VCPU:1&prefer=CUSTOM_FAST,!CUSTOM_FAST", "1.39"),
        ("resources=VCPU:1&prefer=CUSTOM_FAST&prefer=!CUSTOM_FAST", "1.39"),
        ("resources_A=VCPU:1&prefer_A=!CUSTOM_FAST,CUSTOM_FAST", "1.39"),
        (f"resources=VCPU:1&prefer_member_of={AGG},!{AGG}", "1.39"),
        (f"resources=VCPU:1&prefer_member_of={AGG}&prefer_member_of=!{AGG}", "1.39"),
        # No in: syntax.
        ("resources=VCPU:1&prefer=in:CUSTOM_FAST,CUSTOM_SLOW", "1.39"),
        (f"resources=VCPU:1&prefer_member_of=in:{AGG}", "1.39"),
        # A group that exists only through its preferences.
        ("resources=VCPU:1&prefer_X=CUSTOM_FAST", "1.39"),
        (f"resources=VCPU:1&prefer_member_of_X={AGG}", "1.39"),
        ("resources=VCPU:1&prefer1=CUSTOM_FAST", "1.25"),
        ("resources_A=VCPU:1&prefer_B=CUSTOM_FAST&utilization=pack", "1.39"),
        ("resources_A=VCPU:1&required_A=CUSTOM_FAST&prefer_B=CUSTOM_FAST&same_subtree=_A", "1.39"),
        # utilization is pack or spread.
        ("resources=VCPU:1&utilization=balanced", "1.39"),
        ("resources=VCPU:1&utilization=", "1.39"),
        ("resources=VCPU:1&utilization=PACK", "1.39"),
        ("resources=VCPU:1&utilization=pack,spread", "1.39"),
        # A malformed aggregate uuid, preferred or avoided.
        ("resources=VCPU:1&prefer_member_of=not-a-uuid", "1.39"),
        ("resources=VCPU:1&prefer_member_of=!not-a-uuid", "1.39"),
    ],
)
def test_bad_preferences_are_400(computes, query, version):
    error = assert_refused(computes.api.get(f"/allocation_candidates?{query}", version=version))
    # Refused for what the preference says, not as an unknown parameter.
    assert "match any of the regexes" not in error["detail"], error
    assert "Additional properties are not allowed" not in error["detail"], error


@pytest.mark.parametrize(
    ("query", "version"),
    [
        # Suffixes follow the microversion's grammar: none before 1.25, strings from 1.33.
        ("resources=VCPU:1&prefer1=CUSTOM_FAST", "1.24"),
        ("resources1=VCPU:1&resources2=VCPU:1&prefer_X=CUSTOM_FAST&group_policy=none", "1.32"),
    ],
)
def test_a_suffix_the_microversion_does_not_know_is_400(computes, query, version):
    assert_refused(computes.api.get(f"/allocation_candidates?{query}", version=version))


@pytest.mark.parametrize("names", ["CUSTOM_NOPE", "!CUSTOM_NOPE", "CUSTOM_FAST,!CUSTOM_NOPE"])
def test_an_unknown_trait_is_refused_as_required_refuses_it(computes, names):
    preferred = computes.api.get(f"/allocation_candidates?{QUERY}&prefer={names}")
    required = computes.api.get(f"/allocation_candidates?{QUERY}&required=CUSTOM_NOPE")

    error = assert_refused(preferred)
    assert error["detail"] == "No such trait(s): CUSTOM_NOPE."
    assert (error["detail"], error["code"]) == (
        required.json["errors"][0]["detail"],
        required.json["errors"][0]["code"],
    )


# Requests without preferences.


NO_PREFERENCES = [  # (query, microversion, the suffix of a group it has)
    (QUERY, "1.10", ""),
    (QUERY + "&limit=2", "1.16", ""),
    (QUERY + "&required=!CUSTOM_SLOW", "1.25", ""),
    ("resources_C=VCPU:1&resources_M=MEMORY_MB:512&group_policy=none&limit=2", "1.39", "_C"),
    (QUERY, "1.39", ""),
]


def test_requests_without_preferences_are_answered_as_before_them(computes):
    api = computes.api

    def answers() -> list[bytes]:
        return [
            api.get(f"/allocation_candidates?{query}", version=version).get_data()
            for query, version, _suffix in NO_PREFERENCES
        ]

    with api.as_a_new_worker():
        never_saw_preferences = answers()
    before = answers()
    for preferences in (
        "prefer{}=CUSTOM_FAST&utilization=spread",
        f"prefer_member_of{{}}={AGG}&utilization=pack",
    ):
        for query, version, suffix in NO_PREFERENCES:
            ranked = f"/allocation_candidates?{query}&{preferences.format(suffix)}"
            answer = api.get(ranked, version=version)
            assert answer.status_code == 200, answer.json
            assert "scores" in answer.json
    after = answers()
    with api.as_a_new_worker():
        asked_with_preferences_first = [
            api.get(f"/allocation_candidates?{query}&utilization=pack", version=version).status_code
            for query, version, _suffix in NO_PREFERENCES
        ]
        after_in_a_new_worker = answers()

    assert asked_with_preferences_first == [200] * len(NO_PREFERENCES)
    assert before == never_saw_preferences
    assert after == before
    assert after_in_a_new_worker == before
    assert all(b"scores" not in body for body in before)
