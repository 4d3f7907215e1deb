"""Body validation tells one refusal in JSON Schema's words, as upstream's jsonschema does.

No database: the schemas and ``validate`` alone.
"""

import pytest
from marshmallow import Schema

from placement import errors
from placement.schemas import ExtensionSchema, validate
from placement.schemas import allocation as allocation_schemas
from placement.schemas.fields import (
    StrictDict,
    StrictInteger,
    StrictList,
    StrictNested,
    StrictString,
    UuidString,
)

UUID = "c0a1f9d6-0000-4000-8000-000000000001"


def refusal(root, data) -> str:
    with pytest.raises(errors.BadRequest) as raised:
        validate(root, data)
    detail = raised.value.detail
    assert detail.startswith("JSON does not validate: ")
    return detail.removeprefix("JSON does not validate: ")


class Entry(Schema):
    count = StrictInteger(required=True, minimum=1)
    tags = StrictList(StrictString(), unique=True)


class Body(Schema):
    name = StrictString(required=True)
    entries = StrictDict(values=StrictNested(Entry), key_pattern="^[a-z]+$")
    loose = StrictDict(values=StrictInteger(), key_pattern="^[A-Z]+$", other_keys="keep")
    checked = StrictDict(values=StrictInteger(), key_pattern="^[A-Z]+$", other_keys="load")


@pytest.mark.parametrize(
    "data, expected",
    [
        (
            {"name": None},
            "None is not of type 'string'\n\nFailed validating 'type' in "
            "schema['properties']['name']",
        ),
        (
            {"name": "a", "entries": []},
            "[] is not of type 'object'\n\nFailed validating "
            "'type' in schema['properties']['entries']",
        ),
        (
            {"name": "a", "entries": {"ok": 5}},
            "5 is not of type 'object'\n\nFailed validating 'type' in schema['properties']"
            "['entries']['patternProperties']['^[a-z]+$']",
        ),
        (
            {"name": "a", "entries": {"ok": {"count": 0}}},
            "0 is less than the minimum of 1\n\nFailed validating 'minimum' in "
            "schema['properties']['entries']['patternProperties']['^[a-z]+$']['properties']"
            "['count']",
        ),
        (
            {"name": "a", "entries": {"ok": {"count": 1, "tags": ["x", 1]}}},
            "1 is not of type 'string'\n\nFailed validating 'type' in schema['properties']"
            "['entries']['patternProperties']['^[a-z]+$']['properties']['tags']['items']",
        ),
        (
            {"name": "a", "entries": {"ok": {"count": 1, "tags": ["x", "x"]}}},
            "['x', 'x'] has non-unique elements\n\nFailed validating 'uniqueItems' in "
            "schema['properties']['entries']['patternProperties']['^[a-z]+$']['properties']"
            "['tags']",
        ),
        (
            {"name": "a", "entries": {"B": {}, "A": {}}},
            "'A', 'B' do not match any of the regexes: '^[a-z]+$'\n\nFailed validating "
            "'additionalProperties' in schema['properties']['entries']",
        ),
        (
            {"name": "a", "checked": {"x": "1"}},
            "'1' is not of type 'integer'\n\nFailed validating 'type' in schema['properties']"
            "['checked']['patternProperties']['^[A-Z]+$']",
        ),
        (
            {"b": 1, "a": 2, "name": "x"},
            "Additional properties are not allowed ('a', 'b' were unexpected)\n\n"
            "Failed validating 'additionalProperties' in schema",
        ),
    ],
)
def test_the_refusal_reads_as_jsonschemas(data, expected):
    assert refusal(Body(), data) == expected


def test_the_shallowest_refusal_is_told():
    # A required property missing at the top outranks a deeper type error.
    data = {"entries": {"ok": {"count": "1"}}}
    assert refusal(Body(), data) == (
        "'name' is a required property\n\nFailed validating 'required' in schema"
    )


def test_keys_that_match_no_pattern_may_be_kept_unchecked_or_loaded():
    loaded = validate(Body(), {"name": "a", "loose": {"x": "anything"}, "checked": {"y": 1}})
    assert loaded["loose"] == {"x": "anything"}
    assert loaded["checked"] == {"y": 1}


def test_uuid_keys_are_loaded_in_canonical_form():
    field = StrictDict(values=StrictInteger(), keys=UuidString(), key_pattern="^[0-9a-fA-F-]{36}$")
    assert validate(field, {UUID.upper(): 1}) == {UUID: 1}


def test_a_field_may_stand_for_the_whole_body():
    assert refusal(StrictList(UuidString(), unique=True), {"a": 1}) == (
        "{'a': 1} is not of type 'array'\n\nFailed validating 'type' in schema"
    )
    post = allocation_schemas.post_schema((1, 39))
    assert refusal(post, {}) == (
        "{} should be non-empty\n\nFailed validating 'minProperties' in schema"
    )


def test_a_list_is_no_object_for_a_schema():
    assert refusal(Body(), [1]) == (
        "[1] is not of type 'object'\n\nFailed validating 'type' in schema"
    )


def test_extension_schemas_name_the_path_instead():
    class Node(ExtensionSchema):
        count = StrictInteger(required=True)

    with pytest.raises(errors.BadRequest) as raised:
        validate(Node(), {"count": "1"})
    assert raised.value.detail == "JSON does not validate: count: '1' is not of type 'integer'"
