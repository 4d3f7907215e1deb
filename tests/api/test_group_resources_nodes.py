"""Node sync through /group_resources/nodes: trees, idempotence, changes, refusals."""

import contextlib
import uuid

from tests.api.group_resource_helpers import (
    MIXED_MEMORY_NODE,
    candidates,
    claim,
    eight_gpu_node,
    sync,
)
from tests.conftest import error_code


def _groups(api, name):
    body = api.get(f"/group_resources/nodes/{name}").json
    return {group["key"]: group for group in body["groups"]}


def test_a_synced_node_is_a_provider_tree_named_by_key_paths(api):
    response = sync(api, "n1", eight_gpu_node())
    assert response.status_code == 201
    body = response.json
    assert body["inventories"]["VCPU"]["total"] == 16
    assert body["inventories"]["MEMORY_MB"]["total"] == 65536
    keys = {group["key"] for group in body["groups"]}
    assert "Gpugrp1/0/Gpugrp0/1/gpu/dev3" in keys and "Gpugrp1/1" in keys
    assert len(keys) == 2 + 4 + 8
    dev3 = next(g for g in body["groups"] if g["key"] == "Gpugrp1/0/Gpugrp0/1/gpu/dev3")
    provider = api.get(f"/resource_providers/{dev3['uuid']}").json
    assert provider["name"] == "n1/Gpugrp1/0/Gpugrp0/1/gpu/dev3"
    assert provider["root_provider_uuid"] == body["uuid"]
    parent = api.get(f"/resource_providers/{provider['parent_provider_uuid']}").json
    assert parent["name"] == "n1/Gpugrp1/0/Gpugrp0/1"
    traits = api.get(f"/resource_providers/{dev3['uuid']}/traits").json["traits"]
    assert traits == ["CUSTOM_GROUP_LEVEL_GPU"]
    inventories = api.get(f"/resource_providers/{dev3['uuid']}/inventories").json
    assert inventories["inventories"]["CUSTOM_GPU_MEMORY_MB"]["total"] == 16384
    assert inventories["inventories"]["CUSTOM_GPU_CARDS"]["max_unit"] == 1
    listed = api.get("/group_resources/nodes").json["nodes"]
    assert listed == [{"name": "n1", "uuid": body["uuid"]}]


def test_syncing_the_same_map_again_changes_nothing(api):
    first = sync(api, "n1", eight_gpu_node()).json
    generations = {g["uuid"]: api.generation(g["uuid"]) for g in first["groups"]} | {
        first["uuid"]: api.generation(first["uuid"])
    }
    again = sync(api, "n1", eight_gpu_node())
    assert again.status_code == 200
    assert again.json["changed"] is False
    assert {u: api.generation(u) for u in generations} == generations


def test_a_changed_map_adds_updates_and_removes(api):
    sync(api, "n1", MIXED_MEMORY_NODE)
    changed = dict(MIXED_MEMORY_NODE)
    del changed["gpu/dev3/cards"], changed["gpu/dev3/memory"]
    changed["gpu/dev1/memory"] = "6GiB"
    changed["gpu/dev4/cards"] = 1
    changed["cpu"] = 8
    body = sync(api, "n1", changed).json
    assert body["changed"] is True
    groups = {g["key"]: g for g in body["groups"]}
    assert set(groups) == {"gpu/dev0", "gpu/dev1", "gpu/dev2", "gpu/dev4"}
    assert groups["gpu/dev1"]["inventories"]["CUSTOM_GPU_MEMORY_MB"]["total"] == 6144
    assert groups["gpu/dev4"]["inventories"] == {
        "CUSTOM_GPU_CARDS": {"total": 1, "reserved": 0, "allocation_ratio": 1.0, "used": 0}
    }
    assert body["inventories"]["VCPU"]["total"] == 8


def test_removing_an_allocated_group_is_refused_and_changes_nothing(api):
    sync(api, "n1", MIXED_MEMORY_NODE)
    response = claim(api, {"gpu/0/cards": 1, "gpu/0/memory": "4GiB"}, str(uuid.uuid4()))
    assert response.status_code == 200, response.json
    assert set(response.json["mappings"].values()) == {"gpu/dev3/cards", "gpu/dev3/memory"}
    before = _groups(api, "n1")
    shrunk = {k: v for k, v in MIXED_MEMORY_NODE.items() if not k.startswith("gpu/dev3/")}
    shrunk["cpu"] = 99  # would change, but the whole sync is refused
    refused = sync(api, "n1", shrunk, expect=(409,))
    assert error_code(refused) == "placement.resource_provider.inuse"
    assert "gpu/dev3" in refused.json["errors"][0]["detail"]
    assert _groups(api, "n1") == before
    node = api.get("/group_resources/nodes/n1").json
    assert node["inventories"]["VCPU"]["total"] == 4


def test_shrinking_an_allocated_inventory_below_its_usage_is_refused(api):
    sync(api, "n1", MIXED_MEMORY_NODE)
    claim(api, {"gpu/0/cards": 1, "gpu/0/memory": "4GiB"}, str(uuid.uuid4()))
    smaller = dict(MIXED_MEMORY_NODE, **{"gpu/dev3/memory": "2GiB"})
    refused = sync(api, "n1", smaller, expect=(409,))
    assert error_code(refused) == "placement.inventory.inuse"
    assert "gpu/dev3" in refused.json["errors"][0]["detail"]


def test_a_provider_with_the_name_that_is_not_a_node_is_left_alone(api):
    api.create_provider("compute1")
    refused = sync(api, "compute1", MIXED_MEMORY_NODE, expect=(409,))
    assert error_code(refused) == "placement.duplicate_name"
    assert api.get("/group_resources/nodes/compute1").status_code == 404


def test_bad_node_maps_are_refused_naming_the_key(api):
    cases = {
        "gpu/0": "gpu/0",
        "gpu/dev0/memory": "gpu/dev0/memory",  # with "1G": not whole MiB
    }
    response = sync(api, "n1", {"gpu/0": 1}, expect=(400,))
    assert cases["gpu/0"] in response.json["errors"][0]["detail"]
    response = sync(api, "n1", {"gpu/dev0/memory": "1G"}, expect=(400,))
    assert cases["gpu/dev0/memory"] in response.json["errors"][0]["detail"]
    response = sync(api, "n1", {"cpu": "many"}, expect=(400,))
    assert "cpu" in response.json["errors"][0]["detail"]
    response = api.put("/group_resources/nodes/n1", json={"resources": [1]})
    assert response.status_code == 400
    response = api.put("/group_resources/nodes/n1", json={"resource": {}})
    assert response.status_code == 400
    assert api.get("/group_resources/nodes").json["nodes"] == []


def test_delete_removes_the_whole_tree_unless_allocated(api):
    root = sync(api, "n1", MIXED_MEMORY_NODE).json["uuid"]
    consumer = str(uuid.uuid4())
    claim(api, {"gpu/0/cards": 1}, consumer)
    refused = api.delete("/group_resources/nodes/n1")
    assert refused.status_code == 409
    assert error_code(refused) == "placement.resource_provider.inuse"
    assert api.delete(f"/allocations/{consumer}").status_code == 204
    assert api.delete("/group_resources/nodes/n1").status_code == 204
    assert api.get(f"/resource_providers/{root}").status_code == 404
    assert api.get("/resource_providers").json["resource_providers"] == []
    assert api.delete("/group_resources/nodes/n1").status_code == 404


def test_claims_refuse_an_existing_consumer_and_bad_bodies(api):
    sync(api, "n1", MIXED_MEMORY_NODE)
    consumer = str(uuid.uuid4())
    assert claim(api, {"gpu/0/cards": 1}, consumer).status_code == 200
    again = claim(api, {"gpu/0/cards": 1}, consumer)
    assert again.status_code == 409
    assert error_code(again) == "placement.group_resources.consumer_exists"
    bad_scorer = claim(api, {"gpu/0/cards": 1}, str(uuid.uuid4()), scorer="best")
    assert bad_scorer.status_code == 400
    bad_key = claim(api, {"gpu/0/cards/x": 1}, str(uuid.uuid4()))
    assert bad_key.status_code == 400
    assert "gpu/0/cards/x" in bad_key.json["errors"][0]["detail"]
    # Nothing was written by the refused claims: one consumer, one GPU used.
    used = [
        g
        for g in _groups(api, "n1").values()
        if g["inventories"].get("CUSTOM_GPU_CARDS", {}).get("used")
    ]
    assert len(used) == 1


def test_candidates_name_the_key_no_node_can_take(api):
    sync(api, "n1", MIXED_MEMORY_NODE)
    sync(api, "n2", MIXED_MEMORY_NODE)
    answer = api.post(
        "/group_resources/candidates",
        json={"resources": {"gpu/0/cards": 1, "gpu/0/memory": "8GiB"}},
    ).json
    assert answer["candidates"] == []
    assert answer["feasible_nodes"] == 0
    [blocking] = answer["unplaced"]
    assert blocking["key"] == "gpu/0/cards" or blocking["key"] == "gpu/0/memory"
    assert blocking["nodes"] == 2


def test_candidates_rank_nodes_and_honour_limit_and_node_filter(api):
    sync(api, "n1", MIXED_MEMORY_NODE)
    sync(api, "n2", MIXED_MEMORY_NODE)
    claim(api, {"gpu/0/cards": 1}, str(uuid.uuid4()), nodes=["n2"])
    request = {"gpu/0/cards": 1}
    packed = api.post("/group_resources/candidates", json={"resources": request}).json
    assert [c["node"] for c in packed["candidates"]] == ["n2", "n1"]
    assert packed["candidates"][0]["score"] > packed["candidates"][1]["score"]
    spread = api.post(
        "/group_resources/candidates", json={"resources": request, "scorer": "spread"}
    ).json
    assert [c["node"] for c in spread["candidates"]] == ["n1", "n2"]
    limited = api.post("/group_resources/candidates", json={"resources": request, "limit": 1}).json
    assert len(limited["candidates"]) == 1 and limited["feasible_nodes"] == 2
    only = api.post(
        "/group_resources/candidates", json={"resources": request, "nodes": ["n1"]}
    ).json
    assert [c["node"] for c in only["candidates"]] == ["n1"]


def test_names_too_long_for_a_provider_are_refused_naming_the_group(api):
    deep = "/".join(f"level{depth}/{'i' * 20}" for depth in range(8)) + "/cards"
    response = sync(api, "n1", {deep: 1}, expect=(400,))
    assert "longer than 200" in response.json["errors"][0]["detail"]
    assert sync(api, "x" * 201, {"cpu": 1}, expect=(400,)).status_code == 400
    assert sync(api, "a%00b", {"cpu": 1}, expect=(400,)).status_code == 400  # NUL
    assert sync(api, "a%09b", {"cpu": 1}, expect=(400,)).status_code == 400  # tab


def test_level_names_match_without_case(api):
    sync(api, "n1", {"GPU/dev0/cards": 1, "Gpu/dev1/cards": 1})
    [best] = api.post(
        "/group_resources/candidates",
        json={"resources": {"gpu/a/cards": 1, "gpu/b/cards": 1}},
    ).json["candidates"]
    assert set(best["mappings"].values()) == {"GPU/dev0/cards", "Gpu/dev1/cards"}


def test_providers_added_by_others_are_left_alone_and_block_delete(api):
    node = sync(api, "n1", MIXED_MEMORY_NODE).json
    api.create_provider("extra", parent=node["uuid"])
    assert {g["key"] for g in _groups(api, "n1").values()} == {
        "gpu/dev0",
        "gpu/dev1",
        "gpu/dev2",
        "gpu/dev3",
    }
    assert sync(api, "n1", MIXED_MEMORY_NODE).json["changed"] is False
    refused = api.delete("/group_resources/nodes/n1")
    assert refused.status_code == 409
    assert "extra" in refused.json["errors"][0]["detail"]


def test_limit_answers_are_the_head_of_the_full_ranking(api):
    """The best-first search (more nodes than its first batch) answers as a full search."""
    for index in range(40):
        devices = 2 if index % 2 else 6  # nodes of two sizes: bounds and scores order apart
        sync(api, f"n{index:02d}", {"cpu": 8, **{f"gpu/dev{d}/cards": 1 for d in range(devices)}})
    # Uneven use: some nodes get one GPU taken, some more.
    for index in range(0, 40, 3):
        for _ in range(1 + (index % 2) * 0 + (index % 4 == 0) * 2):
            response = claim(api, {"gpu/0/cards": 1}, str(uuid.uuid4()), nodes=[f"n{index:02d}"])
            assert response.status_code == 200, response.json
    # A GPU whose whole inventory is reserved: capacity 0 must not spoil the bounds.
    dev3 = _groups(api, "n07")["gpu/dev1"]["uuid"]
    reserved = api.put(
        f"/resource_providers/{dev3}/inventories/CUSTOM_GPU_CARDS",
        json={"resource_provider_generation": api.generation(dev3), "total": 1, "reserved": 1},
    )
    assert reserved.status_code == 200, reserved.json
    for request in ({"gpu/0/cards": 1}, {"cpu": 2, "gpu/a/cards": 1, "gpu/b/cards": 1}):
        for scorer in ("pack", "spread"):
            full = api.post(
                "/group_resources/candidates", json={"resources": request, "scorer": scorer}
            ).json
            assert full["feasible_nodes"] == len(full["candidates"]) >= 30
            for limit in (1, 3, 10):
                head = api.post(
                    "/group_resources/candidates",
                    json={"resources": request, "scorer": scorer, "limit": limit},
                ).json
                assert head["candidates"] == full["candidates"][:limit], (scorer, limit)


def test_a_group_name_taken_by_another_provider_is_a_conflict(api):
    api.create_provider("n1/gpu/dev0")
    refused = sync(api, "n1", MIXED_MEMORY_NODE, expect=(409,))
    assert error_code(refused) == "placement.duplicate_name"
    assert "n1/gpu/dev0" in refused.json["errors"][0]["detail"]
    assert api.get("/group_resources/nodes").json["nodes"] == []  # nothing half-written


def test_a_group_moved_through_the_generic_api_is_put_back_by_sync(api):
    node = {f"Gpugrp0/{d // 2}/gpu/dev{d}/cards": 1 for d in range(3)}
    sync(api, "n1", node)
    groups = _groups(api, "n1")
    moved = api.put(
        f"/resource_providers/{groups['Gpugrp0/0/gpu/dev1']['uuid']}",
        json={"name": "n1/Gpugrp0/0/gpu/dev1", "parent_provider_uuid": groups["Gpugrp0/1"]["uuid"]},
    )
    assert moved.status_code == 200, moved.json
    pair = {"Gpugrp0/RA/gpu/a/cards": 1, "Gpugrp0/RA/gpu/b/cards": 1}
    # While moved, the node is not as its map says: it is left out, never split.
    assert (
        api.post("/group_resources/candidates", json={"resources": pair}).json["candidates"] == []
    )
    assert sync(api, "n1", node).json["changed"] is True
    provider = api.get(f"/resource_providers/{groups['Gpugrp0/0/gpu/dev1']['uuid']}").json
    assert provider["parent_provider_uuid"] == groups["Gpugrp0/0"]["uuid"]
    [best] = api.post("/group_resources/candidates", json={"resources": pair}).json["candidates"]
    assert {v.split("/")[1] for v in best["mappings"].values()} == {"0"}


def test_a_group_renamed_through_the_generic_api_is_seen_by_the_next_search(api):
    """The searches read the nodes from the process's copy of the providers: a rename
    keeps the generation (as upstream's) and must still reach the copy."""
    sync(api, "n1", {"gpu/dev0/cards": 1})
    request = {"gpu/0/cards": 1}
    [before] = candidates(api, request)["candidates"]  # the copy holds n1 now
    assert before["mappings"] == {"gpu/0/cards": "gpu/dev0/cards"}
    dev0 = _groups(api, "n1")["gpu/dev0"]["uuid"]
    generation = api.generation(dev0)
    renamed = api.put(f"/resource_providers/{dev0}", json={"name": "n1/gpu/devZ"})
    assert renamed.status_code == 200, renamed.json
    assert api.generation(dev0) == generation
    [after] = candidates(api, request)["candidates"]
    assert after["mappings"] == {"gpu/0/cards": "gpu/devZ/cards"}
    assert candidates(api, request, limit=1)["candidates"][0]["mappings"] == after["mappings"]


def test_an_absurd_allocation_ratio_elsewhere_does_not_break_the_search(api):
    sync(api, "n1", MIXED_MEMORY_NODE)
    sync(api, "n2", MIXED_MEMORY_NODE)
    dev0 = _groups(api, "n2")["gpu/dev0"]["uuid"]
    changed = api.put(
        f"/resource_providers/{dev0}/inventories/CUSTOM_GPU_CARDS",
        json={
            "resource_provider_generation": api.generation(dev0),
            "total": 1,
            "allocation_ratio": 1e-300,
        },
    )
    assert changed.status_code == 200, changed.json
    for options in ({}, {"limit": 1}):
        response = api.post(
            "/group_resources/candidates", json={"resources": {"gpu/0/cards": 1}, **options}
        )
        assert response.status_code == 200, response.json
    assert claim(api, {"gpu/0/cards": 1}, str(uuid.uuid4())).status_code == 200


def test_a_claim_whose_choice_vanished_chooses_again(api, app, monkeypatch):
    from placement.replica.replica import Replica
    from placement.replica.world import ProviderWorld

    sync(api, "n1", MIXED_MEMORY_NODE)
    sync(api, "n2", {"gpu/dev0/cards": 1})  # the best node for pack: its one GPU full
    engine = app.extensions["placement"].engine
    stale = ProviderWorld()
    with engine.connect() as conn, conn.begin():
        stale.refresh(conn)  # the nodes as the claim reads them, before n2 goes
    # n2 is deleted by a transaction that commits after the claim read the nodes.
    assert api.delete("/group_resources/nodes/n2").status_code == 204
    reads = []
    real_current = Replica.current

    @contextlib.contextmanager
    def stale_first(replica, conn):
        reads.append(conn)
        if len(reads) == 1:
            with stale.lock:
                yield stale
        else:
            with real_current(replica, conn) as world:
                yield world

    monkeypatch.setattr(Replica, "current", stale_first)
    response = claim(api, {"gpu/0/cards": 1}, str(uuid.uuid4()))
    assert response.status_code == 200, response.json
    assert response.json["node"] == "n1"
    assert len(reads) >= 2  # it chose n2, could not write, and chose again


def test_nodes_kept_between_requests_answer_as_a_fresh_copy_after_every_write(api):
    """The translator keeps each tree's node until the tree changes: after each kind of
    write, the kept nodes answer exactly as nodes built afresh (a new worker's) do, and
    the answer moved as the write says."""
    sync(api, "n1", eight_gpu_node())
    sync(api, "n2", eight_gpu_node())
    request = {"Gpugrp0/A/gpu/a/cards": 1, "Gpugrp0/A/gpu/b/cards": 1}

    def warm_then_cold(**options):
        warm = candidates(api, request, **options)
        api.services.replica.forget()
        assert candidates(api, request, **options) == warm
        return warm

    first = warm_then_cold()
    consumer = str(uuid.uuid4())
    claim(api, request, consumer, nodes=["n1"])
    after_claim = warm_then_cold()
    assert after_claim != first
    assert warm_then_cold(limit=1)["candidates"][0]["node"] == "n1"  # pack: the used one
    sync(api, "n2", eight_gpu_node(memory=None))  # fewer inventories: another score
    after_sync = warm_then_cold()
    assert after_sync != after_claim
    assert api.delete(f"/allocations/{consumer}").status_code == 204
    after_delete = warm_then_cold()
    assert after_delete != after_sync
    assert warm_then_cold(scorer="spread", limit=1)["candidates"][0]["node"] in ("n1", "n2")
