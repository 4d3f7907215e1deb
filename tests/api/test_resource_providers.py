"""Resource providers through HTTP: create, show, list filters, update, delete."""

import uuid

from tests.conftest import error_code


def test_create_before_1_20_answers_201_with_location_and_no_body(api):
    response = api.post("/resource_providers", json={"name": "cn1"}, version="1.19")
    assert response.status_code == 201
    assert response.data == b""
    assert response.headers["Location"].endswith(
        "/resource_providers/" + response.headers["Location"].rsplit("/", 1)[1]
    )


def test_create_from_1_20_answers_200_with_the_provider(api):
    wanted = str(uuid.uuid4())
    response = api.post("/resource_providers", json={"name": "cn1", "uuid": wanted}, version="1.20")
    assert response.status_code == 200
    body = response.json
    assert body["uuid"] == wanted
    assert body["name"] == "cn1"
    assert body["generation"] == 0
    assert body["root_provider_uuid"] == wanted
    assert body["parent_provider_uuid"] is None
    assert response.headers["Location"].endswith(f"/resource_providers/{wanted}")


def test_uuid_without_dashes_is_normalized(api):
    raw = uuid.uuid4()
    body = api.create_provider("cn1", uuid=raw.hex)
    assert body["uuid"] == str(raw)


def test_links_and_nested_fields_follow_the_microversion(api):
    provider = api.create_provider("cn1")
    path = f"/resource_providers/{provider['uuid']}"
    rels = {
        version: [link["rel"] for link in api.get(path, version=version).json["links"]]
        for version in ("1.0", "1.1", "1.6", "1.11")
    }
    assert rels["1.0"] == ["self", "inventories", "usages"]
    assert "aggregates" in rels["1.1"] and "traits" not in rels["1.1"]
    assert "traits" in rels["1.6"] and "allocations" not in rels["1.6"]
    assert "allocations" in rels["1.11"]
    assert "root_provider_uuid" not in api.get(path, version="1.13").json
    assert "root_provider_uuid" in api.get(path, version="1.14").json


def test_last_modified_and_cache_control_from_1_15(api):
    provider = api.create_provider("cn1")
    path = f"/resource_providers/{provider['uuid']}"
    old = api.get(path, version="1.14")
    assert "Last-Modified" not in old.headers
    new = api.get(path, version="1.15")
    assert new.headers["Cache-Control"] == "no-cache"
    assert new.headers["Last-Modified"].endswith("GMT")


def test_duplicate_name_and_uuid_are_409_duplicate_name(api):
    provider = api.create_provider("cn1")
    by_name = api.post("/resource_providers", json={"name": "cn1"})
    assert by_name.status_code == 409
    assert error_code(by_name) == "placement.duplicate_name"
    # Nova looks for these words to tell a name conflict from others.
    assert (
        "Conflicting resource provider name: cn1 already exists"
        in (by_name.json["errors"][0]["detail"])
    )
    by_uuid = api.post("/resource_providers", json={"name": "other", "uuid": provider["uuid"]})
    assert by_uuid.status_code == 409
    assert error_code(by_uuid) == "placement.duplicate_name"
    assert f"uuid: {provider['uuid']}" in by_uuid.json["errors"][0]["detail"]
    other = api.create_provider("other")
    renamed = api.put(f"/resource_providers/{other['uuid']}", json={"name": "cn1"})
    assert renamed.status_code == 409
    assert (
        "Conflicting resource provider cn1 already exists" in (renamed.json["errors"][0]["detail"])
    )


def test_error_code_appears_from_1_23(api):
    missing = f"/resource_providers/{uuid.uuid4()}"
    assert "code" not in api.get(missing, version="1.22").json["errors"][0]
    assert api.get(missing, version="1.23").json["errors"][0]["code"] == (
        "placement.resource_provider.not_found"
    )


def test_bad_bodies_are_400_and_write_nothing(api):
    for body in (
        {},
        {"name": ""},
        {"name": "x" * 201},
        {"name": 5},
        {"name": "ok", "uuid": "not-a-uuid"},
        {"name": "ok", "extra": 1},
        {"name": "ok", "parent_provider_uuid": str(uuid.uuid4())},
    ):
        response = api.post("/resource_providers", json=body)
        assert response.status_code == 400, body
        assert response.json["errors"][0]["status"] == 400
    assert api.get("/resource_providers").json["resource_providers"] == []


def test_parent_before_1_14_is_an_unknown_field(api):
    parent = api.create_provider("root")
    response = api.post(
        "/resource_providers",
        json={"name": "child", "parent_provider_uuid": parent["uuid"]},
        version="1.13",
    )
    assert response.status_code == 400


def test_malformed_json_and_wrong_media_type(api):
    bad = api.post("/resource_providers", data="{", content_type="application/json")
    assert bad.status_code == 400
    text = api.post("/resource_providers", data="{}", content_type="text/plain")
    assert text.status_code == 415


def test_list_filters(api):
    agg = str(uuid.uuid4())
    one = api.create_provider("one")
    two = api.create_provider("two")
    child = api.create_provider("child", parent=one["uuid"])
    api.set_inventory(two["uuid"], VCPU=4)
    api.set_traits(two["uuid"], "HW_CPU_X86_AVX2")
    api.set_aggregates(one["uuid"], agg)

    def names(query, version="1.39"):
        response = api.get(f"/resource_providers?{query}", version=version)
        assert response.status_code == 200, response.json
        return sorted(p["name"] for p in response.json["resource_providers"])

    assert names("name=two") == ["two"]
    assert names(f"uuid={one['uuid']}") == ["one"]
    assert names(f"member_of={agg}") == ["one"]
    assert names(f"member_of=in:{agg},{uuid.uuid4()}") == ["one"]
    assert names(f"member_of=!{agg}") == ["child", "two"]
    assert names("resources=VCPU:4") == ["two"]
    assert names("resources=VCPU:5") == []
    assert names(f"in_tree={child['uuid']}") == ["child", "one"]
    assert names("required=HW_CPU_X86_AVX2") == ["two"]
    assert names("required=!HW_CPU_X86_AVX2") == ["child", "one"]
    assert names("required=in:HW_CPU_X86_AVX2,HW_CPU_X86_SSE") == ["two"]


def test_list_filters_are_gated_by_microversion(api):
    for query, version in (
        ("member_of=" + str(uuid.uuid4()), "1.2"),
        ("resources=VCPU:1", "1.3"),
        ("in_tree=" + str(uuid.uuid4()), "1.13"),
        ("required=HW_CPU_X86_AVX2", "1.17"),
        ("foo=bar", "1.39"),
    ):
        response = api.get(f"/resource_providers?{query}", version=version)
        assert response.status_code == 400, (query, version)


def test_list_bad_filter_values(api):
    for query in (
        "resources=VCPU",
        "resources=VCPU:0",
        "resources=CUSTOM_NOPE:1",
        "required=CUSTOM_NOPE",
        "member_of=not-a-uuid",
        "uuid=not-a-uuid",
        "required=!HW_CPU_X86_AVX2",
    ):
        version = "1.21" if query.startswith("required=!") else "1.39"
        response = api.get(f"/resource_providers?{query}", version=version)
        assert response.status_code == 400, query


def test_rename_and_set_parent(api):
    root = api.create_provider("root")
    other = api.create_provider("other")
    path = f"/resource_providers/{other['uuid']}"
    renamed = api.put(path, json={"name": "renamed"})
    assert renamed.status_code == 200
    assert renamed.json["name"] == "renamed"
    adopted = api.put(path, json={"name": "renamed", "parent_provider_uuid": root["uuid"]})
    assert adopted.status_code == 200
    assert adopted.json["parent_provider_uuid"] == root["uuid"]
    assert adopted.json["root_provider_uuid"] == root["uuid"]


def test_reparent_and_unparent_need_1_37(api):
    first = api.create_provider("first")
    second = api.create_provider("second")
    child = api.create_provider("child", parent=first["uuid"])
    grandchild = api.create_provider("grandchild", parent=child["uuid"])
    path = f"/resource_providers/{child['uuid']}"
    move = {"name": "child", "parent_provider_uuid": second["uuid"]}
    assert api.put(path, json=move, version="1.36").status_code == 400
    moved = api.put(path, json=move, version="1.37")
    assert moved.status_code == 200
    assert moved.json["root_provider_uuid"] == second["uuid"]
    shown = api.get(f"/resource_providers/{grandchild['uuid']}").json
    assert shown["root_provider_uuid"] == second["uuid"]
    unparent = {"name": "child", "parent_provider_uuid": None}
    assert api.put(path, json=unparent, version="1.36").status_code == 400
    freed = api.put(path, json=unparent, version="1.37")
    assert freed.json["root_provider_uuid"] == child["uuid"]
    assert freed.json["parent_provider_uuid"] is None
    shown = api.get(f"/resource_providers/{grandchild['uuid']}").json
    assert shown["root_provider_uuid"] == child["uuid"]


def test_loops_are_refused(api):
    root = api.create_provider("root")
    child = api.create_provider("child", parent=root["uuid"])
    path = f"/resource_providers/{root['uuid']}"
    for parent in (root["uuid"], child["uuid"]):
        response = api.put(path, json={"name": "root", "parent_provider_uuid": parent})
        assert response.status_code == 400


def test_delete_parent_is_409_and_leaf_is_204(api):
    root = api.create_provider("root")
    child = api.create_provider("child", parent=root["uuid"])
    refused = api.delete(f"/resource_providers/{root['uuid']}")
    assert refused.status_code == 409
    assert error_code(refused) == "placement.resource_provider.cannot_delete_parent"
    assert api.delete(f"/resource_providers/{child['uuid']}").status_code == 204
    assert api.delete(f"/resource_providers/{root['uuid']}").status_code == 204
    assert api.get(f"/resource_providers/{root['uuid']}").status_code == 404


def test_resources_filter_counts_each_providers_own_usage(api):
    busy = api.create_provider("busy")["uuid"]
    idle = api.create_provider("idle")["uuid"]
    for provider in (busy, idle):
        api.set_inventory(provider, VCPU=4)
    assert api.allocate(uuid.uuid4(), {busy: {"VCPU": 3}}).status_code == 204

    def names(query):
        providers = api.get(f"/resource_providers?{query}").json["resource_providers"]
        return sorted(p["name"] for p in providers)

    assert names("resources=VCPU:1") == ["busy", "idle"]
    assert names("resources=VCPU:2") == ["idle"]
    assert names("resources=VCPU:4") == ["idle"]
