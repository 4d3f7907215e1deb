"""Request bodies for PUT/POST /allocations and POST /reshaper, by microversion."""

import re

from marshmallow import Schema, fields, validate

from placement.schemas.fields import (
    CLASS_NAME_PATTERN,
    StrictInteger,
    StrictString,
    UuidString,
    not_of_type,
    violation,
)
from placement.schemas.inventory import ReplaceInventories

CONSUMER_TYPE_PATTERN = CLASS_NAME_PATTERN
# A mappings key that names a request group contains a suffix character somewhere.
GROUP_KEY_CHARACTER = re.compile(r"[a-zA-Z0-9_-]")


def _resources() -> fields.Dict:
    return fields.Dict(
        keys=StrictString(pattern=CLASS_NAME_PATTERN),
        values=StrictInteger(minimum=1),
        required=True,
        validate=validate.Length(min=1),
    )


class _ProviderRef(Schema):
    uuid = UuidString(required=True)


class _ListAllocation(Schema):
    resource_provider = fields.Nested(_ProviderRef, required=True)
    resources = _resources()


class _ProviderAllocation(Schema):
    resources = _resources()
    # Clients echo the provider generation they read; it is accepted and ignored.
    generation = StrictInteger(minimum=None, maximum=None)


class AllocationsV1_0(Schema):
    """1.0: a list of {resource_provider: {uuid}, resources}."""

    allocations = fields.List(
        fields.Nested(_ListAllocation), required=True, validate=validate.Length(min=1)
    )


class AllocationsV1_8(AllocationsV1_0):
    # 1.8: project_id and user_id are required.
    project_id = StrictString(required=True)
    user_id = StrictString(required=True)


def _allocation_dict(min_providers: int) -> fields.Dict:
    return fields.Dict(
        keys=UuidString(),
        values=fields.Nested(_ProviderAllocation),
        required=True,
        validate=validate.Length(min=min_providers),
    )


class AllocationsV1_12(Schema):
    """1.12: allocations keyed by provider uuid."""

    allocations = _allocation_dict(min_providers=1)
    project_id = StrictString(required=True)
    user_id = StrictString(required=True)


class AllocationsV1_28(AllocationsV1_12):
    # 1.28: consumer_generation is required (null for a new consumer); an empty
    # allocations object removes the consumer's allocations.
    allocations = _allocation_dict(min_providers=0)
    consumer_generation = StrictInteger(
        required=True, allow_none=True, minimum=None, maximum=None
    )


class Mappings(fields.Field):
    """The ``mappings`` of an allocation candidate passed back (1.34): request group ->
    provider uuids. Accepted and not used.

    The unsuffixed group's key is the empty string, and Nova sends candidates back
    exactly as it got them, so any key is taken (as upstream does); a key that
    names a group must map to a non-empty list of provider uuids.
    """

    def _deserialize(self, value, attr, data, **kwargs):
        if not isinstance(value, dict):
            raise not_of_type(value, "object")
        if not value:
            raise violation("{} should be non-empty", "minProperties")
        providers = fields.List(UuidString(), validate=validate.Length(min=1))
        for key, uuids in value.items():
            if GROUP_KEY_CHARACTER.search(key):
                providers.deserialize(uuids)
        return value


def _mappings() -> fields.Field:
    return Mappings()


class AllocationsV1_34(AllocationsV1_28):
    # 1.34: the mappings of an allocation candidate may be passed back.
    mappings = _mappings()


class AllocationsV1_38(AllocationsV1_34):
    # 1.38: consumer_type is required.
    consumer_type = StrictString(required=True, pattern=CONSUMER_TYPE_PATTERN)


class ConsumerAllocationsV1_13(AllocationsV1_12):
    """One consumer's entry in POST /allocations; empty allocations remove them."""

    allocations = _allocation_dict(min_providers=0)


class ConsumerAllocationsV1_28(ConsumerAllocationsV1_13):
    consumer_generation = StrictInteger(
        required=True, allow_none=True, minimum=None, maximum=None
    )


class ConsumerAllocationsV1_34(ConsumerAllocationsV1_28):
    mappings = _mappings()


class ConsumerAllocationsV1_38(ConsumerAllocationsV1_34):
    consumer_type = StrictString(required=True, pattern=CONSUMER_TYPE_PATTERN)


def put_schema(version) -> Schema:
    """The PUT /allocations/{consumer_uuid} schema for a microversion."""
    for minimum, schema in (
        ((1, 38), AllocationsV1_38),
        ((1, 34), AllocationsV1_34),
        ((1, 28), AllocationsV1_28),
        ((1, 12), AllocationsV1_12),
        ((1, 8), AllocationsV1_8),
    ):
        if version >= minimum:
            return schema()
    return AllocationsV1_0()


def consumer_schema(version) -> Schema:
    """The schema of one consumer's entry in POST /allocations or /reshaper."""
    for minimum, schema in (
        ((1, 38), ConsumerAllocationsV1_38),
        ((1, 34), ConsumerAllocationsV1_34),
        ((1, 28), ConsumerAllocationsV1_28),
    ):
        if version >= minimum:
            return schema()
    return ConsumerAllocationsV1_13()


class Reshape(Schema):
    """POST /reshaper (1.30): every inventory and allocation of the affected providers."""

    inventories = fields.Dict(
        keys=UuidString(),
        values=fields.Nested(ReplaceInventories),
        required=True,
        validate=validate.Length(min=1),
    )
    allocations = fields.Dict(keys=UuidString(), values=fields.Raw(), required=True)
