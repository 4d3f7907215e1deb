"""Allocations and consumers through HTTP: claims, generations, bodies per microversion."""

import uuid

import pytest
from sqlalchemy import select

from placement.data import allocations as allocation_data
from placement.db.tables import resource_providers
from tests.conftest import error_code


@pytest.fixture
def host(api):
    provider = api.create_provider("host")
    api.set_inventory(
        provider["uuid"],
        VCPU={"total": 8},
        MEMORY_MB={"total": 1024, "min_unit": 64, "step_size": 64, "max_unit": 512},
        DISK_GB={"total": 100, "reserved": 10},
    )
    return provider["uuid"]


def claim(api, consumer, allocations, generation=None, version="1.39", **extra):
    body = {
        "allocations": {rp: {"resources": res} for rp, res in allocations.items()},
        "project_id": extra.pop("project_id", "proj"),
        "user_id": extra.pop("user_id", "user"),
        "consumer_generation": generation,
        "consumer_type": extra.pop("consumer_type", "INSTANCE"),
    }
    as_tuple = tuple(int(part) for part in version.split("."))
    if as_tuple < (1, 38):
        body.pop("consumer_type")
    if as_tuple < (1, 28):
        body.pop("consumer_generation")
    body.update(extra)
    return api.put(f"/allocations/{consumer}", json=body, version=version)


def test_claim_then_read_back(api, host):
    consumer = str(uuid.uuid4())
    response = claim(api, consumer, {host: {"VCPU": 2, "MEMORY_MB": 128}})
    assert response.status_code == 204, response.json
    shown = api.get(f"/allocations/{consumer}").json
    assert shown["allocations"][host]["resources"] == {"VCPU": 2, "MEMORY_MB": 128}
    assert shown["project_id"] == "proj"
    assert shown["user_id"] == "user"
    assert shown["consumer_generation"] == 1
    assert shown["consumer_type"] == "INSTANCE"
    usages = api.get(f"/resource_providers/{host}/usages").json["usages"]
    assert usages == {"VCPU": 2, "MEMORY_MB": 128, "DISK_GB": 0}
    by_provider = api.get(f"/resource_providers/{host}/allocations").json
    assert by_provider["allocations"][consumer]["resources"] == {"VCPU": 2, "MEMORY_MB": 128}


def test_fields_of_get_follow_the_microversion(api, host):
    consumer = str(uuid.uuid4())
    assert claim(api, consumer, {host: {"VCPU": 1}}).status_code == 204
    path = f"/allocations/{consumer}"
    assert set(api.get(path, version="1.11").json) == {"allocations"}
    assert set(api.get(path, version="1.12").json) == {"allocations", "project_id", "user_id"}
    assert "consumer_generation" in api.get(path, version="1.28").json
    assert "consumer_type" not in api.get(path, version="1.37").json
    assert api.get(path, version="1.38").json["consumer_type"] == "INSTANCE"


def test_unknown_consumer_reads_as_empty(api):
    assert api.get(f"/allocations/{uuid.uuid4()}").json == {"allocations": {}}


def test_provider_generation_moves_with_each_claim(api, host):
    before = api.generation(host)
    assert claim(api, str(uuid.uuid4()), {host: {"VCPU": 1}}).status_code == 204
    assert api.generation(host) == before + 1


def test_over_capacity_is_409_and_leaves_nothing(api, host):
    consumer = str(uuid.uuid4())
    response = claim(api, consumer, {host: {"VCPU": 9}})
    assert response.status_code == 409
    assert error_code(response) == "placement.undefined_code"
    assert api.get(f"/allocations/{consumer}").json == {"allocations": {}}
    # The failed write left no consumer behind: a new claim with null generation works.
    assert claim(api, consumer, {host: {"VCPU": 8}}).status_code == 204


def test_reserved_counts_against_capacity(api, host):
    assert claim(api, str(uuid.uuid4()), {host: {"DISK_GB": 91}}).status_code == 409
    assert claim(api, str(uuid.uuid4()), {host: {"DISK_GB": 90}}).status_code == 204


@pytest.mark.parametrize("amount", [32, 576, 100])
def test_min_max_and_step_are_enforced(api, host, amount):
    assert claim(api, str(uuid.uuid4()), {host: {"MEMORY_MB": amount}}).status_code == 409


def test_class_without_inventory_is_409(api, host):
    response = claim(api, str(uuid.uuid4()), {host: {"PCPU": 1}})
    assert response.status_code == 409


def test_unknown_provider_is_400_and_leaves_no_consumer(api, host):
    consumer = str(uuid.uuid4())
    response = claim(api, consumer, {str(uuid.uuid4()): {"VCPU": 1}})
    assert response.status_code == 400
    # Upstream 16.0.0 leaves a consumer behind here; the retry must not get a 409.
    assert claim(api, consumer, {host: {"VCPU": 1}}).status_code == 204


@pytest.mark.parametrize(
    "resources",
    [{"VCPU": 0}, {"VCPU": -1}, {"VCPU": "1"}, {"VCPU": 1.5}, {}, {"vcpu": 1}, {"CUSTOM_NOPE": 1}],
)
def test_bad_amounts_and_classes_are_400(api, host, resources):
    response = claim(api, str(uuid.uuid4()), {host: resources})
    assert response.status_code == 400


def test_consumer_generation_is_checked_from_1_28(api, host):
    consumer = str(uuid.uuid4())
    assert claim(api, consumer, {host: {"VCPU": 1}}).status_code == 204
    stale = claim(api, consumer, {host: {"VCPU": 2}}, generation=None)
    assert stale.status_code == 409
    assert error_code(stale) == "placement.concurrent_update"
    wrong = claim(api, consumer, {host: {"VCPU": 2}}, generation=7)
    assert error_code(wrong) == "placement.concurrent_update"
    assert claim(api, consumer, {host: {"VCPU": 2}}, generation=1).status_code == 204
    assert api.get(f"/allocations/{consumer}").json["consumer_generation"] == 2
    new_with_generation = claim(api, str(uuid.uuid4()), {host: {"VCPU": 1}}, generation=0)
    assert error_code(new_with_generation) == "placement.concurrent_update"


def test_empty_allocations_remove_the_consumer_from_1_28(api, host):
    consumer = str(uuid.uuid4())
    assert claim(api, consumer, {host: {"VCPU": 1}}).status_code == 204
    assert claim(api, consumer, {}, generation=1, version="1.27").status_code == 400
    assert claim(api, consumer, {}, generation=1).status_code == 204
    assert api.get(f"/allocations/{consumer}").json == {"allocations": {}}
    assert api.get(f"/resource_providers/{host}/usages").json["usages"]["VCPU"] == 0


def test_list_body_before_1_12(api, host):
    consumer = str(uuid.uuid4())
    body = {"allocations": [{"resource_provider": {"uuid": host}, "resources": {"VCPU": 1}}]}
    assert api.put(f"/allocations/{consumer}", json=body, version="1.0").status_code == 204
    with_project = dict(body, project_id="p", user_id="u")
    assert api.put(f"/allocations/{consumer}", json=with_project, version="1.7").status_code == 400
    assert api.put(f"/allocations/{consumer}", json=body, version="1.8").status_code == 400
    assert api.put(f"/allocations/{consumer}", json=with_project, version="1.8").status_code == 204
    duplicate = dict(with_project, allocations=body["allocations"] * 2)
    assert api.put(f"/allocations/{consumer}", json=duplicate, version="1.8").status_code == 400


def test_consumer_type_needed_from_1_38_and_validated(api, host):
    consumer = str(uuid.uuid4())
    body = {
        "allocations": {host: {"resources": {"VCPU": 1}}},
        "project_id": "p",
        "user_id": "u",
        "consumer_generation": None,
    }
    assert api.put(f"/allocations/{consumer}", json=body, version="1.38").status_code == 400
    typed = dict(body, consumer_type="instance")
    assert api.put(f"/allocations/{consumer}", json=typed, version="1.38").status_code == 400
    assert api.put(f"/allocations/{consumer}", json=typed, version="1.37").status_code == 400
    typed["consumer_type"] = "MIGRATION"
    assert api.put(f"/allocations/{consumer}", json=typed, version="1.38").status_code == 204


def test_mappings_accepted_from_1_34(api, host):
    consumer = str(uuid.uuid4())
    extra = {"mappings": {"_COMPUTE": [host]}}
    assert claim(api, consumer, {host: {"VCPU": 1}}, version="1.33", **extra).status_code == 400
    assert claim(api, consumer, {host: {"VCPU": 1}}, version="1.34", **extra).status_code == 204


def test_malformed_consumer_uuid_is_400(api, host):
    response = api.put(
        "/allocations/not-a-uuid",
        json={
            "allocations": {host: {"resources": {"VCPU": 1}}},
            "project_id": "p",
            "user_id": "u",
            "consumer_generation": None,
            "consumer_type": "INSTANCE",
        },
    )
    assert response.status_code == 400


def test_delete(api, host):
    consumer = str(uuid.uuid4())
    assert claim(api, consumer, {host: {"VCPU": 3}}).status_code == 204
    generation = api.generation(host)
    assert api.delete(f"/allocations/{consumer}").status_code == 204
    assert api.get(f"/resource_providers/{host}/usages").json["usages"]["VCPU"] == 0
    # As upstream, the provider's generation stays: a client holding it writes on.
    assert api.generation(host) == generation
    assert api.delete(f"/allocations/{consumer}").status_code == 404


def test_generations_move_where_upstream_moves_them(api, host):
    # Upstream bumps the providers allocated from and those a consumer is emptied
    # from; a provider a consumer moves away from keeps its generation.
    other = api.create_provider("other")["uuid"]
    api.set_inventory(other, VCPU={"total": 8})
    consumer = str(uuid.uuid4())
    assert claim(api, consumer, {host: {"VCPU": 1}}).status_code == 204
    before = {rp: api.generation(rp) for rp in (host, other)}
    assert claim(api, consumer, {other: {"VCPU": 1}}, generation=1).status_code == 204
    assert api.generation(host) == before[host]
    assert api.generation(other) == before[other] + 1
    assert api.get(f"/resource_providers/{host}/usages").json["usages"]["VCPU"] == 0

    emptied = api.put(
        f"/allocations/{consumer}",
        json={
            "allocations": {},
            "project_id": "proj",
            "user_id": "user",
            "consumer_generation": 2,
            "consumer_type": "INSTANCE",
        },
    )
    assert emptied.status_code == 204
    assert api.generation(other) == before[other] + 2
    assert api.generation(host) == before[host]

    second = str(uuid.uuid4())
    assert claim(api, second, {host: {"VCPU": 1}}).status_code == 204
    generation = api.generation(host)
    body = {
        second: {
            "allocations": {},
            "project_id": "proj",
            "user_id": "user",
            "consumer_generation": 1,
            "consumer_type": "INSTANCE",
        }
    }
    assert api.post("/allocations", json=body).status_code == 204
    assert api.generation(host) == generation + 1


def test_delete_racing_a_move_is_409_and_deletes_nothing(api, host, engine, monkeypatch):
    """A DELETE that read the consumer's providers before a concurrent PUT moved its
    allocations elsewhere must not delete them from a provider whose generation it did
    not lock (the providers' versions are how every worker's copy sees usage change)."""
    other = api.create_provider("other")["uuid"]
    api.set_inventory(other, VCPU={"total": 8})
    consumer = str(uuid.uuid4())
    assert claim(api, consumer, {other: {"VCPU": 3}}).status_code == 204
    stale = {_provider_id(engine, host)}  # as if read before a PUT moved them to other
    monkeypatch.setattr(allocation_data, "_providers_of_consumers", lambda conn, ids: stale)

    response = api.delete(f"/allocations/{consumer}")

    assert response.status_code == 409
    assert error_code(response) == "placement.concurrent_update"
    assert api.get(f"/resource_providers/{other}/usages").json["usages"]["VCPU"] == 3


def _provider_id(engine, uuid_) -> int:
    with engine.connect() as conn:
        return conn.scalar(
            select(resource_providers.c.id).where(resource_providers.c.uuid == uuid_)
        )


def test_provider_with_allocations_cannot_be_deleted(api, host):
    assert claim(api, str(uuid.uuid4()), {host: {"VCPU": 1}}).status_code == 204
    response = api.delete(f"/resource_providers/{host}")
    assert response.status_code == 409
    assert error_code(response) == "placement.resource_provider.inuse"


def test_inventory_in_use_cannot_be_removed(api, host):
    assert claim(api, str(uuid.uuid4()), {host: {"VCPU": 6}}).status_code == 204
    generation = api.generation(host)
    removed = api.put(
        f"/resource_providers/{host}/inventories",
        json={"resource_provider_generation": generation, "inventories": {"DISK_GB": {"total": 1}}},
    )
    assert removed.status_code == 409
    assert error_code(removed) == "placement.inventory.inuse"
    # Upstream's code for this one DELETE is concurrent_update.
    one = api.delete(f"/resource_providers/{host}/inventories/VCPU")
    assert one.status_code == 409
    assert error_code(one) == "placement.concurrent_update"
    everything = api.delete(f"/resource_providers/{host}/inventories")
    assert error_code(everything) == "placement.inventory.inuse"
    assert api.get(f"/resource_providers/{host}/inventories/VCPU").json["total"] == 8
    assert api.generation(host) == generation


@pytest.mark.parametrize(
    "change",
    [{"total": 5}, {"total": 8, "reserved": 3}, {"total": 8, "allocation_ratio": 0.5}],
)
def test_inventory_shrunk_below_usage_is_accepted_and_offers_no_room(api, host, change):
    # As upstream: how operators put a node in maintenance (reserve everything) or
    # apply a lower ratio. The allocations stay; nothing more fits until they go.
    consumer = str(uuid.uuid4())
    assert claim(api, consumer, {host: {"VCPU": 6}}).status_code == 204
    generation = api.generation(host)
    shrunk = api.put(
        f"/resource_providers/{host}/inventories/VCPU",
        json={"resource_provider_generation": generation, **change},
    )
    assert shrunk.status_code == 200, shrunk.json
    assert shrunk.json["resource_provider_generation"] == generation + 1
    assert api.get(f"/resource_providers/{host}/usages").json["usages"]["VCPU"] == 6
    assert api.get("/allocation_candidates?resources=VCPU:1").json["allocation_requests"] == []
    assert api.get("/resource_providers?resources=VCPU:1").json["resource_providers"] == []
    assert claim(api, str(uuid.uuid4()), {host: {"VCPU": 1}}).status_code == 409
    assert api.delete(f"/allocations/{consumer}").status_code == 204
    assert api.get("/allocation_candidates?resources=VCPU:1").json["allocation_requests"]


class TestPostAllocations:
    def test_many_consumers_in_one_write(self, api, host):
        first, second = str(uuid.uuid4()), str(uuid.uuid4())
        body = {
            consumer: {
                "allocations": {host: {"resources": {"VCPU": 2}}},
                "project_id": "p",
                "user_id": "u",
                "consumer_generation": None,
                "consumer_type": "INSTANCE",
            }
            for consumer in (first, second)
        }
        assert api.post("/allocations", json=body).status_code == 204
        assert api.get(f"/resource_providers/{host}/usages").json["usages"]["VCPU"] == 4

    def test_all_or_nothing(self, api, host):
        good, bad = str(uuid.uuid4()), str(uuid.uuid4())
        body = {
            good: {
                "allocations": {host: {"resources": {"VCPU": 2}}},
                "project_id": "p",
                "user_id": "u",
                "consumer_generation": None,
                "consumer_type": "INSTANCE",
            },
            bad: {
                "allocations": {host: {"resources": {"VCPU": 7}}},
                "project_id": "p",
                "user_id": "u",
                "consumer_generation": None,
                "consumer_type": "INSTANCE",
            },
        }
        assert api.post("/allocations", json=body).status_code == 409
        assert api.get(f"/allocations/{good}").json == {"allocations": {}}
        assert api.get(f"/resource_providers/{host}/usages").json["usages"]["VCPU"] == 0

    def test_needs_1_13(self, api):
        assert api.post("/allocations", json={}, version="1.12").status_code == 404

    def test_move_between_consumers(self, api, host):
        source, target = str(uuid.uuid4()), str(uuid.uuid4())
        assert claim(api, source, {host: {"VCPU": 8}}).status_code == 204
        body = {
            source: {
                "allocations": {},
                "project_id": "p",
                "user_id": "u",
                "consumer_generation": 1,
                "consumer_type": "INSTANCE",
            },
            target: {
                "allocations": {host: {"resources": {"VCPU": 8}}},
                "project_id": "p",
                "user_id": "u",
                "consumer_generation": None,
                "consumer_type": "MIGRATION",
            },
        }
        assert api.post("/allocations", json=body).status_code == 204
        assert api.get(f"/allocations/{source}").json == {"allocations": {}}
        assert api.get(f"/allocations/{target}").json["consumer_type"] == "MIGRATION"


class TestUsages:
    def test_by_project_user_and_type(self, api, host):
        assert (
            claim(
                api, str(uuid.uuid4()), {host: {"VCPU": 1}}, project_id="a", user_id="x"
            ).status_code
            == 204
        )
        assert (
            claim(
                api,
                str(uuid.uuid4()),
                {host: {"VCPU": 2}},
                project_id="a",
                user_id="y",
                consumer_type="MIGRATION",
            ).status_code
            == 204
        )
        assert claim(api, str(uuid.uuid4()), {host: {"VCPU": 4}}, project_id="b").status_code == 204
        assert api.get("/usages?project_id=a", version="1.9").json == {"usages": {"VCPU": 3}}
        assert api.get("/usages?project_id=a&user_id=y", version="1.9").json == {
            "usages": {"VCPU": 2}
        }
        assert api.get("/usages?project_id=a").json == {
            "usages": {
                "INSTANCE": {"consumer_count": 1, "VCPU": 1},
                "MIGRATION": {"consumer_count": 1, "VCPU": 2},
            }
        }
        assert api.get("/usages?project_id=a&consumer_type=all").json == {
            "usages": {"all": {"consumer_count": 2, "VCPU": 3}}
        }
        assert api.get("/usages?project_id=a&consumer_type=MIGRATION").json == {
            "usages": {"MIGRATION": {"consumer_count": 1, "VCPU": 2}}
        }
        assert api.get("/usages?project_id=a&consumer_type=unknown").json == {"usages": {}}

    def test_untyped_consumers_are_unknown(self, api, host):
        assert claim(api, str(uuid.uuid4()), {host: {"VCPU": 1}}, version="1.28").status_code == 204
        assert api.get("/usages?project_id=proj&consumer_type=unknown").json == {
            "usages": {"unknown": {"consumer_count": 1, "VCPU": 1}}
        }

    def test_errors(self, api):
        assert api.get("/usages?project_id=a", version="1.8").status_code == 404
        assert api.get("/usages").status_code == 400
        assert api.get("/usages?project_id=a&consumer_type=x", version="1.37").status_code == 400
        assert api.get("/usages?project_id=a&consumer_type=bad-type").status_code == 400
