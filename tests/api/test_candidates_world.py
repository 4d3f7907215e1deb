"""The worker's copy of the providers is exact: a warm world answers like a cold one.

GET /allocation_candidates answers from ``placement.replica.world``: a
per-worker copy of the providers, refreshed on every request by reading the
providers logged as changed since the last one and re-reading those whose
version changed. The claim is that
the copy is exact, so every test here

1. warms the world with a query,
2. makes one kind of write through the HTTP API,
3. asks again with the warm world, then with a cold one (the application's
   ``Replica`` forgets its world for one request, the warm one put back
   afterwards so that it keeps
   refreshing incrementally for the rest of the test), and asserts both
   bodies are the same, byte for byte, and
4. asserts that the answer changed the way the write says it must, so that
   no test passes on an answer that simply never changes.

After every comparison the warm world's state is also compared with a world
loaded from scratch (providers, trees, indexes, tree forms, kept summaries).
"""

import dataclasses
import uuid as uuid_lib
from collections import defaultdict

import pytest
from sqlalchemy import text

from placement.candidates.summaries import TreeSummaries
from placement.data import provider_world
from placement.replica.world import ProviderWorld
from tests.api.candidate_helpers import Providers, alloc
from tests.conftest import LATEST


class WarmCold:
    """Asks every query of a test twice: of the warm world, then of a cold one."""

    def __init__(self, tree: Providers, engine) -> None:
        self.tree = tree
        self.api = tree.api
        self.engine = engine

    def world(self) -> ProviderWorld:
        return self.api.services.replica.world

    def answer(self, query: str, version: str = LATEST, status: int = 200) -> dict:
        """The body of the query, the same from the warm world and from a cold one."""
        path = f"/allocation_candidates?{self.tree.query(query)}"
        warm_world = self.world()
        assert warm_world.providers or warm_world.class_names, (
            "the fixture loads a world before anything else"
        )
        warm = self.api.get(path, version=version)
        assert self.world() is warm_world, "the warm request must use the kept world"
        with self.api.as_a_new_worker():
            cold = self.api.get(path, version=version)
            assert self.world() is not warm_world
        assert warm.status_code == cold.status_code == status, (warm.json, cold.json)
        if status != 200:  # errors differ by their request ids only
            assert _without_request_ids(warm.json) == _without_request_ids(cold.json)
            return warm.json
        assert warm.json == cold.json
        # The same order too (candidates, summaries, fields), but for the order of the
        # classes in a summary's resources: that is the order in which the database
        # returned a provider's inventory rows, which differs between reading one
        # provider again and reading them all (and, on PostgreSQL, after an update).
        assert warm.data == cold.data
        self.assert_world_exact()
        return warm.json

    def candidates(self, query: str, version: str = LATEST) -> set[frozenset]:
        body = self.answer(query, version)
        return {self.tree.named(request) for request in body["allocation_requests"]}

    def summary(self, body: dict, name: str) -> dict:
        return body["provider_summaries"][self.tree.uuid[name]]

    def assert_world_exact(self) -> None:
        """The warm world holds what a world loaded from scratch holds."""
        warm = self.world()
        cold = ProviderWorld()
        with self.engine.connect() as conn:
            cold.refresh(conn)
        with warm.lock:
            for name in (
                "class_names",
                "_versions",
                "trees",
                "id_of_uuid",
                "trait_id_of_name",
                "aggregate_id_of_uuid",
            ):
                if hasattr(cold, name):
                    assert getattr(warm, name) == getattr(cold, name), name
            assert warm.providers.keys() == cold.providers.keys()
            for provider_id, provider in cold.providers.items():
                assert _comparable(warm.providers[provider_id]) == _comparable(provider)
            for name in ("with_trait", "in_aggregate"):
                assert _non_empty(getattr(warm, name)) == _non_empty(getattr(cold, name)), name
            assert _forms(warm) == _forms(cold)
            assert warm.roots_in_order() == sorted(cold.trees)
            kept = self.api.services.candidates.summaries
            kept.follow(warm)
            for root_id in cold.trees:
                assert kept.of_tree(warm, root_id) == TreeSummaries().of_tree(cold, root_id)


def _without_request_ids(body: dict) -> dict:
    return {
        "errors": [
            {k: v for k, v in error.items() if k != "request_id"} for error in body["errors"]
        ]
    }


def _non_empty(index: dict[int, set[int]]) -> dict[int, set[int]]:
    return {key: members for key, members in index.items() if members}


def _comparable(provider) -> dict:
    """A provider's fields, tuples of pairs in database row order as sets (its traits are
    sorted by name: kept in order)."""
    fields = {f.name: getattr(provider, f.name) for f in dataclasses.fields(provider)}
    ordered = "trait_ids_by_name"
    return {
        name: frozenset(value) if isinstance(value, tuple) and name != ordered else value
        for name, value in fields.items()
    }


def _forms(world: ProviderWorld) -> dict:
    """Each tree's form, with each form number replaced by the set of trees that have
    it (the numbers themselves differ between two worlds)."""

    def parts(form) -> list[tuple[str, object]]:
        # (``keys`` is what the search worked out of the form, per request: not state)
        if dataclasses.is_dataclass(form):
            return [
                (f.name, getattr(form, f.name))
                for f in dataclasses.fields(form)
                if f.name != "keys"
            ]
        return [("form", form)]

    sharing: dict[tuple, set[int]] = defaultdict(set)
    for root_id, form in world.form_of_tree.items():
        for name, value in parts(form):
            if isinstance(value, int):
                sharing[(name, value)].add(root_id)
    return {
        root_id: tuple(
            (name, frozenset(sharing[(name, value)]) if isinstance(value, int) else value)
            for name, value in parts(form)
        )
        for root_id, form in world.form_of_tree.items()
    }


@pytest.fixture
def tree(api) -> Providers:
    # (Each test has its own application, so its own world: the database is emptied
    # between tests under the same URL, which a kept world is not meant to follow.)
    # Load the world before the test's providers exist, so that every answer of
    # the test comes from a world kept from an earlier request.
    assert api.get("/allocation_candidates?resources=VCPU:1").status_code == 200
    return Providers(api)


@pytest.fixture
def check(tree, engine) -> WarmCold:
    return WarmCold(tree, engine)


# Writes through the API.


def put_inventory(api, provider_uuid, class_name, version=LATEST, **fields):
    """PUT of one class's inventory (the single-inventory path)."""
    body = {"resource_provider_generation": api.generation(provider_uuid), **fields}
    response = api.put(
        f"/resource_providers/{provider_uuid}/inventories/{class_name}",
        json=body,
        version=version,
    )
    assert response.status_code == 200, response.json
    return response.json


def claim(api, consumer, allocations, generation=None):
    response = api.allocate(consumer, allocations, generation)
    assert response.status_code == 204, response.json


def move(api, provider_uuid, name, parent_uuid):
    body = {"name": name, "parent_provider_uuid": parent_uuid}
    response = api.put(f"/resource_providers/{provider_uuid}", json=body, version="1.37")
    assert response.status_code == 200, response.json


def new_consumer() -> str:
    return str(uuid_lib.uuid4())


# Inventories.


def test_inventory_total(check, tree, api):
    tree.add("CN1", inventory={"VCPU": 4})
    tree.add("CN2", inventory={"VCPU": 8})
    assert check.candidates("resources=VCPU:6") == {alloc(("CN2", "VCPU", 6))}

    api.set_inventory(tree.uuid["CN1"], VCPU=8)  # PUT of every inventory

    assert check.candidates("resources=VCPU:6") == {
        alloc(("CN1", "VCPU", 6)),
        alloc(("CN2", "VCPU", 6)),
    }
    body = check.answer("resources=VCPU:1")
    assert check.summary(body, "CN1")["resources"]["VCPU"] == {"capacity": 8, "used": 0}

    put_inventory(api, tree.uuid["CN2"], "VCPU", total=2)  # PUT of one inventory

    assert check.candidates("resources=VCPU:6") == {alloc(("CN1", "VCPU", 6))}
    body = check.answer("resources=VCPU:1")
    assert check.summary(body, "CN2")["resources"]["VCPU"] == {"capacity": 2, "used": 0}


def test_inventory_added_with_post(check, tree, api):
    tree.add("CN", inventory={"VCPU": 4})
    assert check.candidates("resources=VCPU:1,DISK_GB:10") == set()

    body = {
        "resource_class": "DISK_GB",
        "total": 100,
        "resource_provider_generation": api.generation(tree.uuid["CN"]),
    }
    response = api.post(f"/resource_providers/{tree.uuid['CN']}/inventories", json=body)
    assert response.status_code == 201, response.json

    assert check.candidates("resources=VCPU:1,DISK_GB:10") == {
        alloc(("CN", "VCPU", 1, "DISK_GB", 10)),
    }


def test_reserved(check, tree, api):
    tree.add("CN", inventory={"VCPU": 8})
    assert check.candidates("resources=VCPU:6") == {alloc(("CN", "VCPU", 6))}

    put_inventory(api, tree.uuid["CN"], "VCPU", total=8, reserved=4)

    assert check.candidates("resources=VCPU:6") == set()
    assert check.candidates("resources=VCPU:4") == {alloc(("CN", "VCPU", 4))}
    body = check.answer("resources=VCPU:1")
    assert check.summary(body, "CN")["resources"]["VCPU"] == {"capacity": 4, "used": 0}

    api.set_inventory(tree.uuid["CN"], VCPU={"total": 8, "reserved": 0})

    assert check.candidates("resources=VCPU:6") == {alloc(("CN", "VCPU", 6))}


def test_allocation_ratio(check, tree, api):
    tree.add("CN", inventory={"VCPU": 4})
    assert check.candidates("resources=VCPU:6") == set()

    put_inventory(api, tree.uuid["CN"], "VCPU", total=4, allocation_ratio=2.0)

    assert check.candidates("resources=VCPU:6") == {alloc(("CN", "VCPU", 6))}
    body = check.answer("resources=VCPU:1")
    assert check.summary(body, "CN")["resources"]["VCPU"] == {"capacity": 8, "used": 0}

    put_inventory(api, tree.uuid["CN"], "VCPU", total=4, allocation_ratio=0.5)

    assert check.candidates("resources=VCPU:3") == set()
    assert check.candidates("resources=VCPU:2") == {alloc(("CN", "VCPU", 2))}


def test_min_unit_max_unit_and_step_size(check, tree, api):
    cn = tree.add("CN", inventory={"VCPU": 8})
    assert check.candidates("resources=VCPU:3") == {alloc(("CN", "VCPU", 3))}

    put_inventory(api, cn, "VCPU", total=8, step_size=2)
    assert check.candidates("resources=VCPU:3") == set()
    assert check.candidates("resources=VCPU:4") == {alloc(("CN", "VCPU", 4))}

    put_inventory(api, cn, "VCPU", total=8, min_unit=5)
    assert check.candidates("resources=VCPU:3") == set()
    assert check.candidates("resources=VCPU:5") == {alloc(("CN", "VCPU", 5))}

    put_inventory(api, cn, "VCPU", total=8, max_unit=2)
    assert check.candidates("resources=VCPU:3") == set()
    assert check.candidates("resources=VCPU:2") == {alloc(("CN", "VCPU", 2))}

    put_inventory(api, cn, "VCPU", total=8)
    assert check.candidates("resources=VCPU:3") == {alloc(("CN", "VCPU", 3))}


def test_step_size_of_groups_on_one_provider(check, tree, api):
    cn = tree.add("CN", inventory={"VCPU": 8})
    query = "resources1=VCPU:2&resources2=VCPU:2&group_policy=none"
    assert check.candidates(query) == {alloc(("CN", "VCPU", 4))}

    put_inventory(api, cn, "VCPU", total=8, step_size=4)
    assert check.candidates(query) == set()

    put_inventory(api, cn, "VCPU", total=8, step_size=2)
    assert check.candidates(query) == {alloc(("CN", "VCPU", 4))}


def test_inventory_deleted(check, tree, api):
    tree.add("CN1", inventory={"VCPU": 4, "DISK_GB": 100})
    tree.add("CN2", inventory={"VCPU": 4, "DISK_GB": 100})
    query = "resources=VCPU:1,DISK_GB:10"
    assert check.candidates(query) == {
        alloc(("CN1", "VCPU", 1, "DISK_GB", 10)),
        alloc(("CN2", "VCPU", 1, "DISK_GB", 10)),
    }
    check.answer("resources=VCPU:1")  # keeps both trees' summaries

    response = api.delete(f"/resource_providers/{tree.uuid['CN1']}/inventories/DISK_GB")
    assert response.status_code == 204

    assert check.candidates(query) == {alloc(("CN2", "VCPU", 1, "DISK_GB", 10))}
    body = check.answer("resources=VCPU:1")
    assert set(check.summary(body, "CN1")["resources"]) == {"VCPU"}

    response = api.delete(f"/resource_providers/{tree.uuid['CN2']}/inventories")
    assert response.status_code == 204

    assert check.candidates(query) == set()
    assert check.candidates("resources=VCPU:1") == {alloc(("CN1", "VCPU", 1))}


# Allocations.


def test_put_and_delete_allocations(check, tree, api):
    cn1 = tree.add("CN1", inventory={"VCPU": 4})
    cn2 = tree.add("CN2", inventory={"VCPU": 4})
    both_3 = {alloc(("CN1", "VCPU", 3)), alloc(("CN2", "VCPU", 3))}
    assert check.candidates("resources=VCPU:3") == both_3
    first, second = new_consumer(), new_consumer()

    claim(api, first, {cn1: {"VCPU": 2}})  # usage grows
    assert check.candidates("resources=VCPU:3") == {alloc(("CN2", "VCPU", 3))}
    body = check.answer("resources=VCPU:1")
    assert check.summary(body, "CN1")["resources"]["VCPU"] == {"capacity": 4, "used": 2}

    claim(api, second, {cn2: {"VCPU": 2}})
    assert check.candidates("resources=VCPU:3") == set()
    assert check.candidates("resources=VCPU:2") == {
        alloc(("CN1", "VCPU", 2)),
        alloc(("CN2", "VCPU", 2)),
    }

    # The first consumer moves from CN1 to CN2: CN1 is empty again, CN2 full.
    claim(api, first, {cn2: {"VCPU": 2}}, generation=1)
    assert check.candidates("resources=VCPU:1") == {alloc(("CN1", "VCPU", 1))}
    assert check.candidates("resources=VCPU:4") == {alloc(("CN1", "VCPU", 4))}
    body = check.answer("resources=VCPU:1")
    assert check.summary(body, "CN1")["resources"]["VCPU"] == {"capacity": 4, "used": 0}

    generation = api.generation(cn2)
    assert api.delete(f"/allocations/{first}").status_code == 204  # usage back
    assert api.generation(cn2) == generation  # as upstream; the revision moved
    assert check.candidates("resources=VCPU:2") == {
        alloc(("CN1", "VCPU", 2)),
        alloc(("CN2", "VCPU", 2)),
    }
    assert check.candidates("resources=VCPU:3") == {alloc(("CN1", "VCPU", 3))}

    assert api.delete(f"/allocations/{second}").status_code == 204
    assert check.candidates("resources=VCPU:3") == both_3


def test_post_allocations_of_several_consumers(check, tree, api):
    cn1 = tree.add("CN1", inventory={"VCPU": 4})
    cn2 = tree.add("CN2", inventory={"VCPU": 4})
    assert check.candidates("resources=VCPU:2") == {
        alloc(("CN1", "VCPU", 2)),
        alloc(("CN2", "VCPU", 2)),
    }
    a, b, c = new_consumer(), new_consumer(), new_consumer()

    def entry(allocations, generation):
        return {
            "allocations": {rp: {"resources": res} for rp, res in allocations.items()},
            "project_id": "p",
            "user_id": "u",
            "consumer_generation": generation,
            "consumer_type": "INSTANCE",
        }

    body = {a: entry({cn1: {"VCPU": 4}}, None), b: entry({cn2: {"VCPU": 3}}, None)}
    assert api.post("/allocations", json=body).status_code == 204

    assert check.candidates("resources=VCPU:1") == {alloc(("CN2", "VCPU", 1))}
    assert check.candidates("resources=VCPU:2") == set()

    # a gives up everything, c takes 2 on CN1, b grows on CN2 to full.
    body = {a: entry({}, 1), c: entry({cn1: {"VCPU": 2}}, None), b: entry({cn2: {"VCPU": 4}}, 1)}
    assert api.post("/allocations", json=body).status_code == 204

    assert check.candidates("resources=VCPU:2") == {alloc(("CN1", "VCPU", 2))}
    assert check.candidates("resources=VCPU:3") == set()
    summaries = check.answer("resources=VCPU:1")
    assert check.summary(summaries, "CN1")["resources"]["VCPU"]["used"] == 2


def test_sharing_provider_usage(check, tree, api):
    tree.add("CN", inventory={"VCPU": 4}, aggregates=["A"])
    ss = tree.add(
        "SS", inventory={"DISK_GB": 100}, traits=["MISC_SHARES_VIA_AGGREGATE"], aggregates=["A"]
    )
    query = "resources=VCPU:1,DISK_GB:60"
    assert check.candidates(query) == {alloc(("CN", "VCPU", 1), ("SS", "DISK_GB", 60))}

    consumer = new_consumer()
    claim(api, consumer, {ss: {"DISK_GB": 50}})
    assert check.candidates(query) == set()
    assert check.candidates("resources=VCPU:1,DISK_GB:50") == {
        alloc(("CN", "VCPU", 1), ("SS", "DISK_GB", 50)),
    }

    assert api.delete(f"/allocations/{consumer}").status_code == 204
    assert check.candidates(query) == {alloc(("CN", "VCPU", 1), ("SS", "DISK_GB", 60))}


# Traits and aggregates.


def test_required_and_forbidden_traits(check, tree, api):
    tree.add("CN1", inventory={"VCPU": 4})
    tree.add("CN2", inventory={"VCPU": 4})
    required = "resources=VCPU:1&required=HW_CPU_X86_AVX2"
    forbidden = "resources=VCPU:1&required=!HW_CPU_X86_AVX2"
    both = {alloc(("CN1", "VCPU", 1)), alloc(("CN2", "VCPU", 1))}
    assert check.candidates(required) == set()
    assert check.candidates(forbidden) == both

    api.set_traits(tree.uuid["CN1"], "HW_CPU_X86_AVX2")
    assert check.candidates(required) == {alloc(("CN1", "VCPU", 1))}
    assert check.candidates(forbidden) == {alloc(("CN2", "VCPU", 1))}
    body = check.answer("resources=VCPU:1", version="1.17")
    assert check.summary(body, "CN1")["traits"] == ["HW_CPU_X86_AVX2"]
    body = check.answer("resources=VCPU:1")
    assert check.summary(body, "CN1")["traits"] == ["HW_CPU_X86_AVX2"]

    api.set_traits(tree.uuid["CN1"], "CUSTOM_OTHER")  # replaced
    assert check.candidates(required) == set()
    assert check.candidates(forbidden) == both
    assert check.candidates("resources=VCPU:1&required=CUSTOM_OTHER") == {
        alloc(("CN1", "VCPU", 1)),
    }

    assert api.delete(f"/resource_providers/{tree.uuid['CN1']}/traits").status_code == 204
    assert check.candidates("resources=VCPU:1&required=CUSTOM_OTHER") == set()
    body = check.answer("resources=VCPU:1")
    assert check.summary(body, "CN1")["traits"] == []


def test_traits_of_a_nested_provider(check, tree, api):
    tree.add("CN", inventory={"DISK_GB": 100})
    tree.add("NUMA0", parent="CN", inventory={"VCPU": 4})
    tree.add("NUMA1", parent="CN", inventory={"VCPU": 4})
    query = "resources=DISK_GB:1&resources1=VCPU:1&required1=HW_NUMA_ROOT"
    assert check.candidates(query) == set()

    api.set_traits(tree.uuid["NUMA1"], "HW_NUMA_ROOT")
    assert check.candidates(query) == {alloc(("CN", "DISK_GB", 1), ("NUMA1", "VCPU", 1))}

    api.set_traits(tree.uuid["NUMA0"], "HW_NUMA_ROOT")
    api.set_traits(tree.uuid["NUMA1"])
    assert check.candidates(query) == {alloc(("CN", "DISK_GB", 1), ("NUMA0", "VCPU", 1))}


def test_member_of(check, tree, api):
    cn1 = tree.add("CN1", inventory={"VCPU": 4})
    cn2 = tree.add("CN2", inventory={"VCPU": 4})
    a, b = tree.aggregate("A"), tree.aggregate("B")
    member_of_a = "resources=VCPU:1&member_of={A}"
    not_in_a = "resources=VCPU:1&member_of=!{A}"
    assert check.candidates(member_of_a) == set()  # no such aggregate yet

    api.set_aggregates(cn1, a)
    assert check.candidates(member_of_a) == {alloc(("CN1", "VCPU", 1))}
    assert check.candidates(not_in_a) == {alloc(("CN2", "VCPU", 1))}

    # Before 1.19 the body is a bare list (and the generation is not given, nor bumped:
    # the copy sees the change by the provider's revision).
    generation = api.generation(cn2)
    response = api.put(f"/resource_providers/{cn2}/aggregates", json=[a, b], version="1.18")
    assert response.status_code == 200, response.json
    assert api.generation(cn2) == generation
    assert check.candidates(member_of_a) == {
        alloc(("CN1", "VCPU", 1)),
        alloc(("CN2", "VCPU", 1)),
    }
    assert check.candidates(not_in_a) == set()

    api.set_aggregates(cn1)  # removed from every aggregate
    assert check.candidates(member_of_a) == {alloc(("CN2", "VCPU", 1))}
    assert check.candidates("resources=VCPU:1&member_of=in:{A},{B}") == {
        alloc(("CN2", "VCPU", 1)),
    }
    assert check.candidates(not_in_a) == {alloc(("CN1", "VCPU", 1))}


def test_aggregate_of_the_root_spans_its_tree(check, tree, api):
    root = tree.add("CN")
    tree.add("NUMA", parent="CN", inventory={"VCPU": 4})
    tree.aggregate("A")
    query = "resources=VCPU:1&member_of={A}"
    check.answer("resources=VCPU:1")
    assert check.candidates(query) == set()

    api.set_aggregates(root, tree.aggregate("A"))  # only the root changes
    assert check.candidates(query) == {alloc(("NUMA", "VCPU", 1))}

    api.set_aggregates(root)  # now no provider is in A
    assert check.candidates(query) == set()
    assert check.candidates("resources=VCPU:1&member_of=!{A}") == {alloc(("NUMA", "VCPU", 1))}


def test_sharing_provider_gives_and_loses_disk(check, tree, api):
    cn = tree.add("CN", inventory={"VCPU": 4})
    ss = tree.add(
        "SS", inventory={"DISK_GB": 100}, traits=["MISC_SHARES_VIA_AGGREGATE"], aggregates=["A"]
    )
    a = tree.aggregate("A")
    query = "resources=VCPU:1,DISK_GB:10"
    assert check.candidates(query) == set()

    api.set_aggregates(cn, a)  # CN joins the aggregate of SS
    with_ss = {alloc(("CN", "VCPU", 1), ("SS", "DISK_GB", 10))}
    assert check.candidates(query) == with_ss
    body = check.answer(query)
    assert set(body["provider_summaries"]) == {cn, ss}

    api.set_traits(ss)  # SS no longer shares
    assert check.candidates(query) == set()

    api.set_traits(ss, "MISC_SHARES_VIA_AGGREGATE")
    assert check.candidates(query) == with_ss

    put_inventory(api, ss, "DISK_GB", total=5)
    assert check.candidates(query) == set()
    put_inventory(api, ss, "DISK_GB", total=100)
    assert check.candidates(query) == with_ss

    cn2 = tree.add("CN2", inventory={"VCPU": 4})
    api.set_aggregates(cn2, a)
    assert check.candidates(query) == with_ss | {alloc(("CN2", "VCPU", 1), ("SS", "DISK_GB", 10))}

    api.set_aggregates(cn)  # CN leaves it
    assert check.candidates(query) == {alloc(("CN2", "VCPU", 1), ("SS", "DISK_GB", 10))}

    api.set_aggregates(ss, tree.aggregate("B"))  # SS moves to another aggregate
    assert check.candidates(query) == set()


# Providers created, deleted, moved.


def test_provider_created_and_deleted(check, tree, api):
    tree.add("CN1", inventory={"VCPU": 4})
    assert check.candidates("resources=VCPU:1") == {alloc(("CN1", "VCPU", 1))}

    tree.add("CN2", inventory={"VCPU": 4})  # a new tree
    assert check.candidates("resources=VCPU:1") == {
        alloc(("CN1", "VCPU", 1)),
        alloc(("CN2", "VCPU", 1)),
    }

    tree.add("NUMA", parent="CN2", inventory={"VCPU": 2})  # a new child
    assert check.candidates("resources=VCPU:1") == {
        alloc(("CN1", "VCPU", 1)),
        alloc(("CN2", "VCPU", 1)),
        alloc(("NUMA", "VCPU", 1)),
    }
    body = check.answer("resources=VCPU:1")
    assert tree.uuid["NUMA"] in body["provider_summaries"]

    assert api.delete(f"/resource_providers/{tree.uuid['NUMA']}").status_code == 204
    assert check.candidates("resources=VCPU:1") == {
        alloc(("CN1", "VCPU", 1)),
        alloc(("CN2", "VCPU", 1)),
    }

    assert api.delete(f"/resource_providers/{tree.uuid['CN1']}").status_code == 204
    assert check.candidates("resources=VCPU:1") == {alloc(("CN2", "VCPU", 1))}
    body = check.answer("resources=VCPU:1")
    assert set(body["provider_summaries"]) == {tree.uuid["CN2"]}


def test_provider_replaced_by_one_alike(check, tree, api):
    """A provider deleted and another created alike (same generation, parent and
    root; on SQLite even the same id) between two requests."""
    tree.add("CN1", inventory={"VCPU": 4})
    tree.add("OLD", inventory={"VCPU": 8})
    assert check.candidates("resources=VCPU:6") == {alloc(("OLD", "VCPU", 6))}

    assert api.delete(f"/resource_providers/{tree.uuid['OLD']}").status_code == 204
    tree.add("NEW", inventory={"VCPU": 8})

    assert check.candidates("resources=VCPU:6") == {alloc(("NEW", "VCPU", 6))}
    body = check.answer("resources=VCPU:6")
    assert set(body["provider_summaries"]) == {tree.uuid["NEW"]}


def test_provider_recreated_with_its_uuid(check, tree, api):
    """A provider deleted and created again with the same uuid, brought to the same
    generation (on SQLite it gets the same id back): its new inventory is seen."""
    tree.add("CN1", inventory={"VCPU": 4})
    uuid = tree.add("CN2", inventory={"VCPU": 8})
    assert check.candidates("resources=VCPU:10") == set()

    assert api.delete(f"/resource_providers/{uuid}").status_code == 204
    assert api.create_provider("CN2", uuid=uuid)["uuid"] == uuid
    api.set_inventory(uuid, VCPU=16)

    assert check.candidates("resources=VCPU:10") == {alloc(("CN2", "VCPU", 10))}


@pytest.fixture
def numa_hosts(tree) -> Providers:
    """H1 with NUMA nodes N10 (GPU G10) and N11 (GPU G11); H2 with N20 (GPU G20)."""
    for host, numas in (("H1", ("N10", "N11")), ("H2", ("N20",))):
        tree.add(host, inventory={"VCPU": 8})
        for numa in numas:
            tree.add(numa, parent=host, traits=["HW_NUMA_ROOT"])
            tree.add(f"G{numa[1:]}", parent=numa, inventory={"PGPU": 1})
    return tree


SAME_NUMA_GPUS = (
    "required_N=HW_NUMA_ROOT&resources_G0=PGPU:1&resources_G1=PGPU:1"
    "&group_policy=isolate&same_subtree=_N,_G0,_G1"
)


def test_reparenting_changes_same_subtree_answers(check, numa_hosts, api):
    tree = numa_hosts
    assert check.answer(SAME_NUMA_GPUS)["allocation_requests"] == []

    move(api, tree.uuid["G11"], "G11", tree.uuid["N10"])  # both GPUs of H1 under N10

    body = check.answer(SAME_NUMA_GPUS)
    assert {frozenset(tree.named(r)) for r in body["allocation_requests"]} == {
        alloc(("G10", "PGPU", 1), ("G11", "PGPU", 1)),
    }
    assert len(body["allocation_requests"]) == 2  # the two orders of the GPU groups
    assert {tree.mappings(r)["_N"] == {"N10"} for r in body["allocation_requests"]} == {True}
    summary = check.summary(body, "G11")
    assert summary["parent_provider_uuid"] == tree.uuid["N10"]

    move(api, tree.uuid["G11"], "G11", tree.uuid["N20"])  # to the other host

    body = check.answer(SAME_NUMA_GPUS)
    assert {tree.mappings(r)["_N"] == {"N20"} for r in body["allocation_requests"]} == {True}
    assert {frozenset(tree.named(r)) for r in body["allocation_requests"]} == {
        alloc(("G20", "PGPU", 1), ("G11", "PGPU", 1)),
    }
    summary = check.summary(body, "G11")
    assert summary["root_provider_uuid"] == tree.uuid["H2"]

    move(api, tree.uuid["G11"], "G11", tree.uuid["N11"])  # back where it was
    assert check.answer(SAME_NUMA_GPUS)["allocation_requests"] == []


def test_moving_a_subtree_between_trees(check, numa_hosts, api):
    tree = numa_hosts
    in_h2 = "resources=PGPU:1&in_tree=<H2>"
    assert check.candidates(in_h2) == {alloc(("G20", "PGPU", 1))}
    in_h1 = "resources=PGPU:1&in_tree=<G11>"  # names H1's tree through a GPU
    assert check.candidates(in_h1) == {alloc(("G10", "PGPU", 1)), alloc(("G11", "PGPU", 1))}

    move(api, tree.uuid["N11"], "N11", tree.uuid["H2"])  # N11 and its GPU move to H2

    assert check.candidates(in_h2) == {alloc(("G20", "PGPU", 1)), alloc(("G11", "PGPU", 1))}
    assert check.candidates(in_h1) == {alloc(("G20", "PGPU", 1)), alloc(("G11", "PGPU", 1))}
    assert check.candidates("resources=PGPU:1&in_tree=<H1>") == {alloc(("G10", "PGPU", 1))}

    move(api, tree.uuid["N11"], "N11", None)  # N11 becomes a root of its own

    assert check.candidates(in_h2) == {alloc(("G20", "PGPU", 1))}
    assert check.candidates("resources=PGPU:1&in_tree=<N11>") == {alloc(("G11", "PGPU", 1))}
    body = check.answer("resources=PGPU:1&in_tree=<G11>")
    assert check.summary(body, "G11")["root_provider_uuid"] == tree.uuid["N11"]
    assert check.summary(body, "N11")["parent_provider_uuid"] is None

    move(api, tree.uuid["H1"], "H1", tree.uuid["G11"])  # a whole tree under another
    assert check.candidates("resources=PGPU:1&in_tree=<N11>") == {
        alloc(("G11", "PGPU", 1)),
        alloc(("G10", "PGPU", 1)),
    }
    assert check.candidates("resources=VCPU:1,PGPU:1") == {
        alloc(("H2", "VCPU", 1), ("G20", "PGPU", 1)),
        alloc(("H1", "VCPU", 1), ("G10", "PGPU", 1)),
        alloc(("H1", "VCPU", 1), ("G11", "PGPU", 1)),
    }


def test_root_required_after_a_root_trait_change(check, tree, api):
    tree.add("R1")
    tree.add("C1", parent="R1", inventory={"VCPU": 4})
    tree.add("R2")
    tree.add("C2", parent="R2", inventory={"VCPU": 4})
    for trait in ("CUSTOM_GOOD", "CUSTOM_BAD"):
        assert api.put(f"/traits/{trait}").status_code in (201, 204)
    good = "resources=VCPU:1&root_required=CUSTOM_GOOD"
    not_bad = "resources=VCPU:1&root_required=!CUSTOM_BAD"
    both = {alloc(("C1", "VCPU", 1)), alloc(("C2", "VCPU", 1))}
    assert check.candidates(good, version="1.35") == set()
    assert check.candidates(not_bad, version="1.35") == both

    api.set_traits(tree.uuid["R1"], "CUSTOM_GOOD")
    api.set_traits(tree.uuid["R2"], "CUSTOM_BAD")
    assert check.candidates(good, version="1.35") == {alloc(("C1", "VCPU", 1))}
    assert check.candidates(not_bad, version="1.35") == {alloc(("C1", "VCPU", 1))}

    api.set_traits(tree.uuid["R1"], "CUSTOM_BAD")
    api.set_traits(tree.uuid["R2"], "CUSTOM_GOOD")
    assert check.candidates(good, version="1.35") == {alloc(("C2", "VCPU", 1))}
    assert check.candidates(not_bad) == {alloc(("C2", "VCPU", 1))}

    # A trait on a child is not the root's.
    api.set_traits(tree.uuid["R2"])
    api.set_traits(tree.uuid["C2"], "CUSTOM_GOOD")
    assert check.candidates(good) == set()


def test_custom_trait_deleted_and_created_again(check, tree, api):
    """A custom trait's last holder drops it, the trait is deleted and created again
    under the same name (a new id), and another provider takes it, all between two
    requests of the worker."""
    q = tree.add("Q", inventory={"VCPU": 4})  # the lower id: read again first
    p = tree.add("P", inventory={"VCPU": 4}, traits=["CUSTOM_T"])
    query = "resources=VCPU:1&required=CUSTOM_T"
    assert check.candidates(query) == {alloc(("P", "VCPU", 1))}

    api.set_traits(p)
    assert api.delete("/traits/CUSTOM_T").status_code == 204
    assert api.put("/traits/CUSTOM_FILLER").status_code == 201  # the old id, on SQLite
    assert api.put("/traits/CUSTOM_T").status_code == 201
    api.set_traits(q, "CUSTOM_T")

    assert check.candidates(query) == {alloc(("Q", "VCPU", 1))}
    assert check.candidates("resources=VCPU:1&required=!CUSTOM_T") == {alloc(("P", "VCPU", 1))}

    api.set_traits(q)  # its last holder drops it again
    assert check.candidates(query) == set()


def test_holder_of_a_trait_created_again_deleted(check, tree, api):
    """As above, then the provider holding the trait created again is deleted: every
    later request of the worker must still answer."""
    q = tree.add("Q", inventory={"VCPU": 4})  # the lower id: read again first
    p = tree.add("P", inventory={"VCPU": 4}, traits=["CUSTOM_T"])
    assert check.candidates("resources=VCPU:1&required=CUSTOM_T") == {alloc(("P", "VCPU", 1))}
    api.set_traits(p)
    assert api.delete("/traits/CUSTOM_T").status_code == 204
    assert api.put("/traits/CUSTOM_FILLER").status_code == 201
    assert api.put("/traits/CUSTOM_T").status_code == 201
    api.set_traits(q, "CUSTOM_T")
    assert api.get("/allocation_candidates?resources=VCPU:1").status_code == 200

    assert api.delete(f"/resource_providers/{q}").status_code == 204

    statuses = [api.get("/allocation_candidates?resources=VCPU:1").status_code for _ in range(3)]
    assert statuses == [200, 200, 200]
    assert check.candidates("resources=VCPU:1") == {alloc(("P", "VCPU", 1))}


def test_custom_trait_deleted_and_its_id_given_to_another(check, tree, api):
    """A custom trait deleted and another one created (on SQLite under the same id),
    held by another provider: the deleted name is unknown again (400)."""
    q = tree.add("Q", inventory={"VCPU": 4})  # the lower id: read again first
    p = tree.add("P", inventory={"VCPU": 4}, traits=["CUSTOM_GONE"])
    assert check.candidates("resources=VCPU:1&required=CUSTOM_GONE") == {
        alloc(("P", "VCPU", 1)),
    }

    api.set_traits(p)
    assert api.delete("/traits/CUSTOM_GONE").status_code == 204
    api.set_traits(q, "CUSTOM_NEW")  # created by the helper with PUT /traits

    check.answer("resources=VCPU:1&required=CUSTOM_GONE", status=400)
    check.answer("resources=VCPU:1&required=!CUSTOM_GONE", status=400)
    assert check.candidates("resources=VCPU:1&required=CUSTOM_NEW") == {
        alloc(("Q", "VCPU", 1)),
    }


# Resource classes renamed.


@pytest.mark.parametrize("rename_version", ["1.2", "1.6"])
def test_renamed_class_is_shown_by_its_new_name(check, tree, api, rename_version):
    assert api.post("/resource_classes", json={"name": "CUSTOM_OLD"}).status_code == 201
    cn = tree.add("CN", inventory={"VCPU": 4, "CUSTOM_OLD": 8})
    consumer = new_consumer()
    claim(api, consumer, {cn: {"CUSTOM_OLD": 3}})
    # Keep the tree's summaries (1.29+), and answer the class at 1.26 and 1.28.
    body = check.answer("resources=VCPU:1")
    assert check.summary(body, "CN")["resources"]["CUSTOM_OLD"] == {"capacity": 8, "used": 3}
    check.answer("resources=CUSTOM_OLD:1", version="1.26")
    check.answer("resources=CUSTOM_OLD:1", version="1.28")

    response = api.put(
        "/resource_classes/CUSTOM_OLD", json={"name": "CUSTOM_NEW"}, version=rename_version
    )
    assert response.status_code == 200, response.json

    body = check.answer("resources=VCPU:1")  # the tree's kept summary
    assert check.summary(body, "CN")["resources"] == {
        "VCPU": {"capacity": 4, "used": 0},
        "CUSTOM_NEW": {"capacity": 8, "used": 3},
    }
    body = check.answer("resources=CUSTOM_NEW:5")
    assert body["allocation_requests"] == [
        {"allocations": {cn: {"resources": {"CUSTOM_NEW": 5}}}, "mappings": {"": [cn]}}
    ]
    for version in ("1.26", "1.28"):
        body = check.answer("resources=CUSTOM_NEW:1", version=version)
        resources = check.summary(body, "CN")["resources"]
        expected = {"CUSTOM_NEW": {"capacity": 8, "used": 3}}
        if version == "1.28":
            expected["VCPU"] = {"capacity": 4, "used": 0}
        assert resources == expected
    check.answer("resources=CUSTOM_OLD:1", status=400)


def test_two_classes_swap_names(check, tree, api):
    for name in ("CUSTOM_A", "CUSTOM_B"):
        assert api.post("/resource_classes", json={"name": name}).status_code == 201
    cn = tree.add("CN", inventory={"CUSTOM_A": 2, "CUSTOM_B": 8})
    assert check.candidates("resources=CUSTOM_A:4") == set()
    check.answer("resources=CUSTOM_B:1")

    for old, new in (("CUSTOM_A", "CUSTOM_T"), ("CUSTOM_B", "CUSTOM_A"), ("CUSTOM_T", "CUSTOM_B")):
        response = api.put(f"/resource_classes/{old}", json={"name": new}, version="1.6")
        assert response.status_code == 200, response.json

    assert check.candidates("resources=CUSTOM_A:4") == {alloc(("CN", "CUSTOM_A", 4))}
    body = check.answer("resources=CUSTOM_B:1")
    assert body["provider_summaries"][cn]["resources"] == {
        "CUSTOM_A": {"capacity": 8, "used": 0},
        "CUSTOM_B": {"capacity": 2, "used": 0},
    }


# Reshaper.


def test_reshape_moves_inventory_and_allocations_to_a_child(check, tree, api):
    root = tree.add("ROOT", inventory={"VGPU": 4})
    consumer = new_consumer()
    claim(api, consumer, {root: {"VGPU": 2}})
    child = tree.add("GPU0", parent="ROOT")
    assert check.candidates("resources=VGPU:2") == {alloc(("ROOT", "VGPU", 2))}
    assert check.candidates("resources=VGPU:3") == set()

    body = {
        "inventories": {
            root: {"resource_provider_generation": api.generation(root), "inventories": {}},
            child: {
                "resource_provider_generation": api.generation(child),
                "inventories": {"VGPU": {"total": 4}},
            },
        },
        "allocations": {
            consumer: {
                "allocations": {child: {"resources": {"VGPU": 2}}},
                "project_id": "p",
                "user_id": "u",
                "consumer_generation": 1,
                "consumer_type": "INSTANCE",
            }
        },
    }
    response = api.post("/reshaper", json=body)
    assert response.status_code == 204, response.json

    assert check.candidates("resources=VGPU:2") == {alloc(("GPU0", "VGPU", 2))}
    assert check.candidates("resources=VGPU:3") == set()
    body = check.answer("resources=VGPU:1")
    assert check.summary(body, "ROOT")["resources"] == {}
    assert check.summary(body, "GPU0")["resources"] == {"VGPU": {"capacity": 4, "used": 2}}


# Trees of one form.


def test_trees_of_one_form_split_and_merge(check, tree, api):
    """Idle identical hosts share a form; a write to one must split it off (and
    undoing the write must merge it back) without touching the others' answers."""
    hosts = [f"H{i}" for i in range(4)]
    for host in hosts:
        tree.add(host, inventory={"DISK_GB": 100})
        tree.add(f"{host}N", parent=host, inventory={"VCPU": 4})
    query = "resources=DISK_GB:10&resources1=VCPU:3"
    every = {alloc((h, "DISK_GB", 10), (f"{h}N", "VCPU", 3)) for h in hosts}
    assert check.candidates(query) == every

    consumer = new_consumer()
    claim(api, consumer, {tree.uuid["H0N"]: {"VCPU": 2}})
    assert check.candidates(query) == every - {alloc(("H0", "DISK_GB", 10), ("H0N", "VCPU", 3))}

    api.set_traits(tree.uuid["H2N"], "HW_NUMA_ROOT")
    assert check.candidates(query + "&required1=HW_NUMA_ROOT") == {
        alloc(("H2", "DISK_GB", 10), ("H2N", "VCPU", 3)),
    }

    assert api.delete(f"/allocations/{consumer}").status_code == 204
    api.set_traits(tree.uuid["H2N"])
    assert check.candidates(query) == every
    with_limit = check.answer(query + "&limit=2")
    assert len(with_limit["allocation_requests"]) == 2


def test_usage_counts_where_room_is_short(check, tree, api):
    """Hosts alike but for their usage: where every provider has room for all a request
    asks, usage decides nothing; where one lacks it, the host must be searched anew."""
    hosts = ("H0", "H1", "H2")
    for host in hosts:
        tree.add(host, inventory={"DISK_GB": 100})
        for numa in ("N0", "N1"):
            tree.add(f"{host}{numa}", parent=host, inventory={"VCPU": 4})
    one = "resources=DISK_GB:1&resources1=VCPU:1"
    two = "resources=DISK_GB:1&resources1=VCPU:1&resources2=VCPU:1&group_policy=none"

    def one_each(*names):
        return {alloc((n[:2], "DISK_GB", 1), (n, "VCPU", 1)) for n in names}

    def pairs(host, numas):
        found = set()
        for first in numas:
            for second in numas:
                if first == second:
                    found.add(alloc((host, "DISK_GB", 1), (f"{host}{first}", "VCPU", 2)))
                else:
                    found.add(
                        alloc(
                            (host, "DISK_GB", 1),
                            (f"{host}{first}", "VCPU", 1),
                            (f"{host}{second}", "VCPU", 1),
                        )
                    )
        return found

    every = one_each(*(f"{h}{n}" for h in hosts for n in ("N0", "N1")))
    assert check.candidates(one) == every
    all_pairs = pairs("H0", ("N0", "N1")) | pairs("H1", ("N0", "N1")) | pairs("H2", ("N0", "N1"))
    assert check.candidates(two) == all_pairs
    assert len(check.answer(two)["allocation_requests"]) == 12  # 4 per host: N0/N1 by group

    consumer = new_consumer()
    claim(api, consumer, {tree.uuid["H1N0"]: {"VCPU": 3}})  # H1N0 has room for 1 only

    assert check.candidates(one) == every  # room for 1 everywhere: nothing changes
    # H1N0 cannot take both groups; it can still take one of them.
    assert check.candidates(two) == all_pairs - {
        alloc(("H1", "DISK_GB", 1), ("H1N0", "VCPU", 2)),
    }
    assert len(check.answer(two)["allocation_requests"]) == 11
    body = check.answer("resources=DISK_GB:1&resources1=VCPU:2")
    assert {tree.name[u] for r in body["allocation_requests"] for u in r["mappings"]["1"]} == {
        "H0N0",
        "H0N1",
        "H1N1",
        "H2N0",
        "H2N1",
    }

    claim(api, consumer, {tree.uuid["H1N0"]: {"VCPU": 4}}, generation=1)  # H1N0 full
    assert check.candidates(one) == every - one_each("H1N0")

    assert api.delete(f"/allocations/{consumer}").status_code == 204
    assert check.candidates(two) == all_pairs


# A write committed while a request reads the world.


def test_a_write_between_the_versions_and_the_details_waits_for_the_next_request(
    check, tree, api, engine, monkeypatch
):
    """A write committed while a request reads the world is not seen by it (it reads
    one snapshot), and is seen by the next request."""
    tree.add("CN1", inventory={"VCPU": 4})
    cn2 = tree.add("CN2", inventory={"VCPU": 4})
    assert check.candidates("resources=VCPU:6") == set()
    with engine.connect() as conn:
        cn2_id = conn.execute(
            text("SELECT id FROM resource_providers WHERE uuid = :u"), {"u": cn2}
        ).scalar_one()

    original = provider_world.provider_details
    raced = []

    def racing_details(conn, provider_ids):
        # The versions of this request are read: commit a change of CN2 now.
        if not raced and provider_ids is not None and cn2_id in provider_ids:
            raced.append(True)
            with engine.begin() as other:
                other.execute(
                    text("UPDATE inventories SET total = 8 WHERE resource_provider_id = :id"),
                    {"id": cn2_id},
                )
                other.execute(
                    text(
                        "UPDATE resource_providers SET generation = generation + 1 WHERE id = :id"
                    ),
                    {"id": cn2_id},
                )
        return original(conn, provider_ids)

    put_inventory(api, cn2, "VCPU", total=5)  # CN2's version changes: its details are read
    monkeypatch.setattr(provider_world, "provider_details", racing_details)
    during = api.get("/allocation_candidates?resources=VCPU:6")
    monkeypatch.setattr(provider_world, "provider_details", original)
    assert raced
    assert during.status_code == 200
    # The racing request answers from its one snapshot (REPEATABLE READ on PostgreSQL):
    # the total of 5 its log and versions showed, not the 8 committed since. The next
    # request must show 8.
    assert during.json["allocation_requests"] == []
    assert check.candidates("resources=VCPU:6") == {alloc(("CN2", "VCPU", 6))}
    body = check.answer("resources=VCPU:1")
    assert check.summary(body, "CN2")["resources"]["VCPU"] == {"capacity": 8, "used": 0}


# Microversions: the body's shape after a write, warm and cold.


@pytest.mark.parametrize("version", ["1.10", "1.12", "1.17", "1.27", "1.29", "1.34"])
def test_body_shape_per_microversion(check, tree, api, version):
    cn1 = tree.add("CN1", inventory={"VCPU": 8, "MEMORY_MB": 1024}, traits=["HW_CPU_X86_AVX2"])
    cn2 = tree.add("CN2", inventory={"DISK_GB": 100})
    n2 = tree.add("N2", parent="CN2", inventory={"VCPU": 8})
    as_tuple = tuple(int(part) for part in version.split("."))
    check.answer("resources=VCPU:1", version=version)
    check.answer("resources=VCPU:1")  # the kept summaries of 1.29+, too

    claim(api, new_consumer(), {cn1: {"VCPU": 2}, cn2: {"DISK_GB": 10}})
    put_inventory(api, n2, "VCPU", total=6)

    body = check.answer("resources=VCPU:1", version=version)
    requests = body["allocation_requests"]
    if as_tuple < (1, 12):
        assert sorted(r["allocations"][0]["resource_provider"]["uuid"] for r in requests) == (
            sorted([cn1, n2])
        )
        assert all(r["allocations"][0]["resources"] == {"VCPU": 1} for r in requests)
    else:
        assert sorted(uuid for r in requests for uuid in r["allocations"]) == sorted([cn1, n2])
        assert all(("mappings" in r) is (as_tuple >= (1, 34)) for r in requests)
    summaries = body["provider_summaries"]
    expected_providers = {cn1, n2} | ({cn2} if as_tuple >= (1, 29) else set())
    assert set(summaries) == expected_providers  # before 1.29: the providers used only
    fields = {"resources"}
    if as_tuple >= (1, 17):
        fields.add("traits")
    if as_tuple >= (1, 29):
        fields |= {"parent_provider_uuid", "root_provider_uuid"}
    assert {frozenset(s) for s in summaries.values()} == {frozenset(fields)}
    cn1_resources = summaries[cn1]["resources"]
    assert cn1_resources["VCPU"] == {"capacity": 8, "used": 2}
    if as_tuple < (1, 27):  # the requested classes only
        assert set(cn1_resources) == {"VCPU"}
    else:
        assert cn1_resources["MEMORY_MB"] == {"capacity": 1024, "used": 0}
    assert summaries[n2]["resources"]["VCPU"] == {"capacity": 6, "used": 0}
    if as_tuple >= (1, 17):
        assert summaries[cn1]["traits"] == ["HW_CPU_X86_AVX2"]
    if as_tuple >= (1, 29):
        assert summaries[cn2]["resources"]["DISK_GB"] == {"capacity": 100, "used": 10}
        assert summaries[n2]["root_provider_uuid"] == cn2
