"""A client refused by this service reads upstream's status and upstream's sentence.

Clients and operators' scripts match the words of upstream Placement's refusals
(Nova matches several), so each refusal here answers upstream 16.0.0's status and
its detail contains upstream's sentence; our own clearer words may follow it. The
story: one operator builds a provider, its inventory, classes, traits and
allocations through the API, and makes every mistake on the way.
"""

import uuid

import pytest

from tests.conftest import error_code

UUID_KEYS = "'^[0-9a-fA-F-]{36}$'"


def detail(response) -> str:
    return response.json["errors"][0]["detail"]


def refused(response, status: int) -> str:
    assert response.status_code == status, response.json
    return detail(response)


@pytest.fixture
def host(api) -> str:
    provider = api.create_provider("host")["uuid"]
    api.set_inventory(provider, VCPU={"total": 8}, DISK_GB={"total": 100})
    return provider


def _allocation(resources: dict, **extra) -> dict:
    return {
        "project_id": "p",
        "user_id": "u",
        "consumer_generation": None,
        "consumer_type": "INSTANCE",
        **extra,
        "allocations": resources,
    }


# Bodies: JSON Schema's sentences, and where in upstream's schema the rule lives.


def test_a_class_name_in_the_url_is_checked_as_a_body_would_be(api):
    for name in ("COW", "VCPU"):
        text = refused(api.put(f"/resource_classes/{name}", version="1.7"), 400)
        assert text == (
            f"JSON does not validate: '{name}' does not match '^CUSTOM_[A-Z0-9_]+$'\n\n"
            "Failed validating 'pattern' in schema['properties']['name']"
        )
    long_name = "CUSTOM_" + "S" * 249
    text = refused(api.put(f"/resource_classes/{long_name}", version="1.7"), 400)
    assert text.endswith(
        "is too long\n\nFailed validating 'maxLength' in schema['properties']['name']"
    )
    assert refused(api.post("/resource_classes", json={"name": long_name}), 400) == text


def test_provider_bodies(api):
    text = refused(api.post("/resource_providers", json={"zz": 1, "name": "a", "aa": 2}), 400)
    assert text == (
        "JSON does not validate: Additional properties are not allowed ('aa', 'zz' were "
        "unexpected)\n\nFailed validating 'additionalProperties' in schema"
    )
    # The shallowest refusal is the one told, as jsonschema's best match.
    text = refused(api.post("/resource_providers", json={"uuid": 5}), 400)
    assert text.startswith("JSON does not validate: 'name' is a required property")
    text = refused(api.post("/resource_providers", json={"name": None}), 400)
    assert text.startswith("JSON does not validate: None is not of type 'string'")
    text = refused(api.post("/resource_providers", json=["x"]), 400)
    assert text.startswith("JSON does not validate: ['x'] is not of type 'object'")
    body = {"name": "a", "parent_provider_uuid": 5}
    text = refused(api.post("/resource_providers", json=body), 400)
    assert text == (
        "JSON does not validate: 5 is not valid under any of the given schemas\n\n"
        "Failed validating 'anyOf' in schema['properties']['parent_provider_uuid']"
    )


def test_aggregate_bodies(api):
    provider = api.create_provider("cn")["uuid"]
    path = f"/resource_providers/{provider}/aggregates"
    agg = str(uuid.uuid4())
    text = refused(
        api.put(path, json={"aggregates": [agg, agg], "resource_provider_generation": 0}), 400
    )
    assert text == (
        f"JSON does not validate: ['{agg}', '{agg}'] has non-unique elements\n\n"
        "Failed validating 'uniqueItems' in schema['properties']['aggregates']"
    )
    text = refused(api.put(path, json=[agg, agg], version="1.1"), 400)
    assert text.endswith("has non-unique elements\n\nFailed validating 'uniqueItems' in schema")
    text = refused(api.put(path, json={"a": 1}, version="1.1"), 400)
    assert text == (
        "JSON does not validate: {'a': 1} is not of type 'array'\n\n"
        "Failed validating 'type' in schema"
    )
    text = refused(
        api.put(path, json={"aggregates": ["x"], "resource_provider_generation": 0}), 400
    )
    assert text.endswith("in schema['properties']['aggregates']['items']")
    stale = api.put(path, json={"aggregates": [], "resource_provider_generation": 10**30})
    assert refused(stale, 409) == (
        "Resource provider's generation already changed. Please update the generation and "
        "try again."
    )
    assert error_code(stale) == "placement.concurrent_update"


def test_provider_trait_bodies(api):
    provider = api.create_provider("cn")["uuid"]
    path = f"/resource_providers/{provider}/traits"
    text = refused(
        api.put(path, json={"traits": "invalid_type", "resource_provider_generation": 0}), 400
    )
    assert text == (
        "JSON does not validate: 'invalid_type' is not of type 'array'\n\n"
        "Failed validating 'type' in schema['properties']['traits']"
    )
    text = refused(api.put(path, json={"traits": [""], "resource_provider_generation": 0}), 400)
    assert text.endswith(
        "should be non-empty\n\nFailed validating 'minLength' in "
        "schema['properties']['traits']['items']"
    )
    # Any other string is a name, refused as no trait (upstream's words, no "(s):").
    body = {"traits": ["abc", "CUSTOM_NOPE"], "resource_provider_generation": 0}
    assert refused(api.put(path, json=body), 400) == "No such trait CUSTOM_NOPE, abc"


def test_allocation_bodies(api, host):
    consumer = str(uuid.uuid4())
    path = f"/allocations/{consumer}"
    body = _allocation({"nice_house_friend": {"resources": {"VCPU": 1}}})
    assert refused(api.put(path, json=body), 400) == (
        f"JSON does not validate: 'nice_house_friend' does not match any of the regexes: "
        f"{UUID_KEYS}\n\nFailed validating 'additionalProperties' in "
        "schema['properties']['allocations']"
    )
    body = _allocation({host: {"resources": {"vcpu": 1, "DISK_GB": 20}}})
    assert refused(api.put(path, json=body), 400) == (
        "JSON does not validate: 'vcpu' does not match any of the regexes: '^[A-Z0-9_]+$'"
        "\n\nFailed validating 'additionalProperties' in schema['properties']['allocations']"
        f"['patternProperties'][{UUID_KEYS}]['properties']['resources']"
    )
    body = _allocation({host: {"resources": {"VCPU": 0}}})
    assert refused(api.put(path, json=body), 400).startswith(
        "JSON does not validate: 0 is less than the minimum of 1"
    )
    body = _allocation({host: {"resources": {"VCPU": 1}}}, mappings={"alpha": "beta"})
    assert refused(api.put(path, json=body), 400) == (
        "JSON does not validate: 'beta' is not of type 'array'\n\nFailed validating 'type' in "
        "schema['properties']['mappings']['patternProperties']['[a-zA-Z0-9_-]{1,64}']"
    )
    body = _allocation({host: {"resources": {"VCPU": 1}}}, project_id=None)
    assert refused(api.put(path, json=body), 400).startswith(
        "JSON does not validate: None is not of type 'string'"
    )
    old = {"allocations": {}}
    assert refused(api.put(path, json=old, version="1.0"), 400).startswith(
        "JSON does not validate: {} is not of type 'array'"
    )


@pytest.mark.parametrize(
    "body, sentence, where",
    [
        ([], "[] is not of type 'object'", "'type' in schema"),
        ({}, "{} should be non-empty", "'minProperties' in schema"),
        (
            {"xyz": {}},
            f"'xyz' does not match any of the regexes: {UUID_KEYS}",
            "'additionalProperties' in schema",
        ),
        (
            {"c0a1f9d6-0000-4000-8000-000000000001": 5},
            "5 is not of type 'object'",
            f"'type' in schema['patternProperties'][{UUID_KEYS}]",
        ),
    ],
)
def test_post_allocations_body(api, body, sentence, where):
    text = refused(api.post("/allocations", json=body), 400)
    assert text == f"JSON does not validate: {sentence}\n\nFailed validating {where}"


def test_reshaper_bodies(api, host):
    body = {"inventories": {}, "allocations": {}}
    assert refused(api.post("/reshaper", json=body), 400).startswith(
        "JSON does not validate: {} should be non-empty"
    )
    consumer = str(uuid.uuid4())
    body = {
        "inventories": {host: {"resource_provider_generation": 1, "inventories": {}}},
        "allocations": {consumer: {"allocations": {}}},
    }
    assert refused(api.post("/reshaper", json=body), 400) == (
        "JSON does not validate: 'project_id' is a required property\n\nFailed validating "
        f"'required' in schema['properties']['allocations']['patternProperties'][{UUID_KEYS}]"
    )


# Names that do not exist, and what refers to them.


def test_unknown_resource_classes_as_each_endpoint_says_it(api, host):
    inventories = f"/resource_providers/{host}/inventories"
    text = refused(api.post(inventories, json={"resource_class": "NO_CLASS_14", "total": 2}), 400)
    assert text == (
        f"Unable to create inventory for resource provider {host}: "
        "No such resource class NO_CLASS_14."
    )
    generation = api.generation(host)
    # Any key is a class name here, as upstream's schema takes it.
    for name in ("HOUSE", "vcpu"):
        body = {"resource_provider_generation": generation, "inventories": {name: {"total": 1}}}
        assert refused(api.put(inventories, json=body), 400) == (
            f"Unknown resource class in inventory for resource provider {host}: "
            f"No such resource class {name}."
        )
    consumer = str(uuid.uuid4())
    body = _allocation({host: {"resources": {"COWS": 12}}})
    assert refused(api.put(f"/allocations/{consumer}", json=body), 400) == (
        f"Unable to allocate inventory for consumer {consumer}: No such resource class COWS."
    )
    body = {consumer: _allocation({host: {"resources": {"CUSTOM_PONY": 1}}})}
    assert "No such resource class CUSTOM_PONY" in refused(api.post("/allocations", json=body), 400)
    body = {
        "inventories": {
            host: {
                "resource_provider_generation": generation,
                "inventories": {"DISK_OF_STEEL": {"total": 2}},
            }
        },
        "allocations": {},
    }
    assert refused(api.post("/reshaper", json=body), 400) == (
        "malformed reshaper data: No such resource class DISK_OF_STEEL."
    )
    assert api.generation(host) == generation


def test_inventory_refusals(api, host):
    inventories = f"/resource_providers/{host}/inventories"
    body = {"resource_class": "MEMORY_MB", "total": 256, "reserved": 512}
    assert refused(api.post(inventories, json=body), 400).startswith(
        f"Unable to create inventory for resource provider {host}: Invalid inventory for "
        f"'MEMORY_MB' on resource provider '{host}'. The reserved value is greater than total."
    )
    body = {"resource_provider_generation": api.generation(host), "total": 2, "reserved": 2}
    assert refused(api.put(f"{inventories}/VCPU", json=body, version="1.25"), 400).startswith(
        f"Unable to update inventory for resource provider {host}: Invalid inventory for "
        f"'VCPU' on resource provider '{host}'. The reserved value is greater than or equal "
        "to total."
    )
    for name in ("IPV4_ADDRESS", "HOUSE"):
        assert refused(api.get(f"{inventories}/{name}"), 404).startswith(
            f"No inventory of class {name} for {host}"
        )
    assert refused(api.delete(f"{inventories}/IPV4_ADDRESS"), 404).startswith(
        "No inventory of class IPV4_ADDRESS found for delete"
    )
    assert refused(api.delete(f"{inventories}/HOUSE"), 404) == (
        "No inventory of class HOUSE found for delete: No such resource class HOUSE."
    )


def test_allocating_a_class_the_provider_lacks(api, host):
    consumer = str(uuid.uuid4())
    body = {consumer: _allocation({host: {"resources": {"VCPU": 1, "PCI_DEVICE": 1}}})}
    assert refused(api.post("/allocations", json=body), 409).startswith(
        f"Unable to allocate inventory: Inventory for 'PCI_DEVICE' on resource provider "
        f"'{host}' invalid."
    )
    body = _allocation({host: {"resources": {"VCPU": 9}}})
    assert refused(api.put(f"/allocations/{consumer}", json=body), 409).startswith(
        f"Unable to allocate inventory: Unable to create allocation for 'VCPU' on resource "
        f"provider '{host}'. The requested amount would exceed the capacity."
    )


def test_resource_class_refusals(api, host):
    for name in ("CUSTOM_GOLD", "CUSTOM_SILVER"):
        assert api.put(f"/resource_classes/{name}").status_code == 201
    renamed = api.put(
        "/resource_classes/CUSTOM_GOLD", json={"name": "CUSTOM_SILVER"}, version="1.6"
    )
    assert refused(renamed, 409) == "Resource class already exists: CUSTOM_SILVER"
    assert error_code(renamed) is None  # before 1.23
    api.set_inventory(host, CUSTOM_GOLD={"total": 1})
    assert refused(api.delete("/resource_classes/CUSTOM_GOLD"), 409) == (
        "Error in delete resource class: Cannot delete resource class CUSTOM_GOLD. "
        "Class is in use in inventory."
    )
    assert refused(api.delete("/resource_classes/VCPU"), 400) == (
        "Error in delete resource class: Cannot delete standard resource class VCPU."
    )


def test_trait_refusals(api, host):
    sentence = (
        "The trait is invalid. A valid trait must be no longer than 255 characters, start "
        'with the prefix "CUSTOM_" and use following characters: "A"-"Z", "0"-"9" and "_"'
    )
    for name in ("TRAIT_X", "CUSTOM_ABC:1", "CUSTOM_" + "A" * 249):
        assert refused(api.put(f"/traits/{name}"), 400).startswith(sentence)
    assert api.put("/traits/CUSTOM_TRAIT_1").status_code == 201
    api.set_traits(host, "CUSTOM_TRAIT_1")
    assert refused(api.delete("/traits/CUSTOM_TRAIT_1"), 409) == (
        "The trait CUSTOM_TRAIT_1 is in use by a resource provider."
    )
    for method in ("GET", "DELETE"):
        missing = api.request(method, "/traits/CUSTOM_NOPE")
        assert refused(missing, 404) == "No such trait(s): CUSTOM_NOPE."
    stale = {"traits": ["CUSTOM_TRAIT_1"], "resource_provider_generation": 5}
    response = api.put(f"/resource_providers/{host}/traits", json=stale, version="1.23")
    assert refused(response, 409) == (
        "Resource provider's generation already changed. Please update the generation and "
        "try again."
    )
    assert error_code(response) == "placement.concurrent_update"


def test_provider_refusals(api):
    parent = api.create_provider("parent")["uuid"]
    child = api.create_provider("child", parent=parent)["uuid"]
    other = api.create_provider("other")["uuid"]
    itself = str(uuid.uuid4())
    body = {"name": "new", "uuid": itself, "parent_provider_uuid": itself}
    assert refused(api.post("/resource_providers", json=body), 400) == (
        f'Unable to create resource provider "new", {itself}: Object action create failed '
        "because: parent provider UUID cannot be same as UUID. Please set parent provider "
        "UUID to None if there is no parent."
    )
    missing = str(uuid.uuid4())
    # The parent is checked before the name is: 400, not 409.
    body = {"name": "other", "uuid": itself, "parent_provider_uuid": missing}
    assert refused(api.post("/resource_providers", json=body), 400) == (
        f'Unable to create resource provider "other", {itself}: Object action create failed '
        "because: parent provider UUID does not exist."
    )
    path = f"/resource_providers/{child}"
    saving = f"Unable to save resource provider {child}: Object action"
    cases = [
        ("1.39", missing, "create failed because: parent provider UUID does not exist."),
        ("1.36", other, "update failed because: re-parenting a provider is not currently allowed."),
        ("1.36", None, "update failed because: un-parenting a provider is not currently allowed."),
        (
            "1.39",
            child,
            "update failed because: creating loop in the provider tree is not allowed.",
        ),
    ]
    for version, new_parent, reason in cases:
        # A taken name is refused only after the parent.
        body = {"name": "other", "parent_provider_uuid": new_parent}
        assert refused(api.put(path, json=body, version=version), 400) == f"{saving} {reason}"
    body = {"name": "parent", "parent_provider_uuid": child}
    assert refused(api.put(f"/resource_providers/{parent}", json=body), 400).endswith(
        "creating loop in the provider tree is not allowed."
    )
    gone = api.delete(f"/resource_providers/{missing}")
    assert refused(gone, 404) == f"No resource provider with uuid {missing} found for delete."
    assert error_code(gone) == "placement.resource_provider.not_found"


def test_reshaper_generation_conflict_names_both_generations(api, host):
    generation = api.generation(host)
    body = {
        "inventories": {
            host: {
                "resource_provider_generation": generation - 1,
                "inventories": {"VCPU": {"total": 1}},
            }
        },
        "allocations": {},
    }
    response = api.post("/reshaper", json=body)
    assert refused(response, 409) == (
        f"resource provider generation conflict for provider {host}: "
        f"actual: {generation}, given: {generation - 1}"
    )
    assert error_code(response) == "placement.concurrent_update"
