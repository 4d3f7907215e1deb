"""Device nodes are kept between requests, per worker: every change made through any
route shows in the very next answer."""

import random
import uuid

from tests.api.device_helpers import candidates, claim, import_node, minors, switch_box

ONE_SWITCH = switch_box(gpus_per_switch=(2,), nics_per_switch=(0,), switches_per_numa=1)


def _gpu(body, minor):
    return next(d for d in body["devices"] if d["type"] == "gpu" and d["minor"] == minor)


def test_allocations_written_through_placement_show_at_once(api):
    body = import_node(api, "n", ONE_SWITCH).json
    assert minors(candidates(api, {"nvidia.com/gpu": 1})["candidates"][0], "gpu") == [0]
    consumer = str(uuid.uuid4())
    gpu0 = _gpu(body, 0)["provider"]
    response = api.allocate(consumer, {gpu0: {"CUSTOM_GPU_CORE": 1}})
    assert response.status_code == 204, response.json
    assert minors(candidates(api, {"nvidia.com/gpu": 1})["candidates"][0], "gpu") == [1]
    assert api.delete(f"/allocations/{consumer}").status_code == 204
    assert minors(candidates(api, {"nvidia.com/gpu": 1})["candidates"][0], "gpu") == [0]


def test_inventory_changes_renames_and_moves_show_at_once(api):
    body = import_node(api, "n", ONE_SWITCH).json
    candidates(api, {"nvidia.com/gpu": 2})
    gpu1 = _gpu(body, 1)["provider"]
    inventories = api.get(f"/resource_providers/{gpu1}/inventories").json
    memory = {
        **inventories["inventories"]["CUSTOM_GPU_MEMORY_KB"],
        "total": 1024 * 1024,
        "max_unit": 1024 * 1024,
    }
    api.put(
        f"/resource_providers/{gpu1}/inventories/CUSTOM_GPU_MEMORY_KB",
        json={
            **memory,
            "resource_provider_generation": inventories["resource_provider_generation"],
        },
    )
    [best] = candidates(api, {"kubernetes.io/gpu-core": 10, "kubernetes.io/gpu-memory": "2Gi"})[
        "candidates"
    ]
    assert minors(best, "gpu") == [0]
    # A rename takes the node out of the search (its tree no longer matches).
    provider = api.get(f"/resource_providers/{gpu1}").json
    renamed = api.put(f"/resource_providers/{gpu1}", json={"name": "elsewhere"})
    assert renamed.status_code == 200, renamed.json
    answer = candidates(api, {"nvidia.com/gpu": 1})
    assert (answer["candidates"], answer["nodes_out_of_sync"]) == ([], ["n"])
    api.put(f"/resource_providers/{gpu1}", json={"name": provider["name"]})
    assert len(candidates(api, {"nvidia.com/gpu": 1})["candidates"]) == 1


def test_claims_are_seen_by_the_next_claim(api):
    import_node(api, "n", ONE_SWITCH)
    first = claim(api, {"nvidia.com/gpu": 1})
    second = claim(api, {"nvidia.com/gpu": 1})
    assert {minors(first, "gpu")[0], minors(second, "gpu")[0]} == {0, 1}
    claim(api, {"nvidia.com/gpu": 1}, expect=409)


def test_a_reimport_with_new_labels_shows_at_once(api):
    import_node(api, "n", ONE_SWITCH)
    hint = {"gpu": {"selector": {"matchLabels": {"model": "A100"}}}}
    assert candidates(api, {"nvidia.com/gpu": 1}, hint=hint)["candidates"] == []
    labelled = switch_box(gpus_per_switch=(2,), nics_per_switch=(0,), switches_per_numa=1)
    labelled["devices"][1]["labels"] = {"model": "A100"}
    import_node(api, "n", labelled)
    [best] = candidates(api, {"nvidia.com/gpu": 1}, hint=hint)["candidates"]
    assert minors(best, "gpu") == [1]


def test_a_reimport_that_changes_only_the_document_shows_at_once(api):
    """New device ids change no provider of the tree, only the stored topology."""
    import_node(api, "n", ONE_SWITCH)
    [best] = candidates(api, {"nvidia.com/gpu": 1})["candidates"]
    assert best["devices"]["gpu"][0]["id"] == "GPU-0000"
    renamed = switch_box(gpus_per_switch=(2,), nics_per_switch=(0,), switches_per_numa=1)
    renamed["devices"][0]["id"] = "GPU-renamed"
    assert import_node(api, "n", renamed).json["changed"] is True
    [best] = candidates(api, {"nvidia.com/gpu": 1})["candidates"]
    assert best["devices"]["gpu"][0]["id"] == "GPU-renamed"


def test_a_warm_search_answers_as_a_cold_one_after_every_kind_of_change(api):
    """The device nodes kept from one search to the next (brought up to date with the
    trees changed since) give the answer a search reading every node again gives."""
    rng = random.Random(17)
    names = [f"n{i}" for i in range(6)]
    gpu_provider = {}  # node -> its second GPU's provider, as last imported
    for name in names[:4]:
        gpu_provider[name] = _gpu(import_node(api, name, ONE_SWITCH).json, 1)["provider"]
    held: list[str] = []
    request = {"nvidia.com/gpu": 1}
    seen_out_of_sync = False

    def answer():
        body = candidates(api, request)
        return (
            [(c["node"], minors(c, "gpu")) for c in body["candidates"]],
            body["nodes_out_of_sync"],
        )

    for step in range(30):
        action = rng.choice(["claim", "release", "import", "delete", "rename"])
        if action == "claim":
            consumer = str(uuid.uuid4())
            response = api.post(
                "/group_resources/device_claims",
                json={
                    "resources": request,
                    "consumer_uuid": consumer,
                    "project_id": "p",
                    "user_id": "u",
                },
            )
            assert response.status_code in (200, 409), response.json
            if response.status_code == 200:
                held.append(consumer)
        elif action == "release" and held:
            assert (
                api.delete(f"/allocations/{held.pop(rng.randrange(len(held)))}").status_code == 204
            )
        elif action == "import":
            name = rng.choice(names)
            gpu_provider[name] = _gpu(import_node(api, name, ONE_SWITCH).json, 1)["provider"]
        elif action == "delete":
            api.delete(f"/group_resources/device_nodes/{rng.choice(names)}")
        elif action == "rename":  # out of sync with its topology, then back in
            provider = gpu_provider[rng.choice(sorted(gpu_provider))]
            shown = api.get(f"/resource_providers/{provider}")
            if shown.status_code == 200:
                current = shown.json["name"]
                flipped = current[:-1] if current.endswith("~") else current + "~"
                assert (
                    api.put(f"/resource_providers/{provider}", json={"name": flipped}).status_code
                    == 200
                )
        warm = answer()
        seen_out_of_sync |= bool(warm[1])
        api.services.replica.forget()
        assert answer() == warm, (step, action)
    assert held  # the sequence claimed something
    assert seen_out_of_sync  # and had a node out of sync
