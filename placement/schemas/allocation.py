"""Request bodies for PUT/POST /allocations and POST /reshaper, by microversion."""

import functools

from marshmallow import Schema

from placement.schemas.fields import (
    CLASS_NAME_PATTERN,
    GROUP_KEY_PATTERN,
    UUID_KEY_PATTERN,
    StrictDict,
    StrictInteger,
    StrictList,
    StrictNested,
    StrictString,
    UuidString,
)
from placement.schemas.inventory import ReplaceInventories

CONSUMER_TYPE_PATTERN = CLASS_NAME_PATTERN


def _resources() -> StrictDict:
    return StrictDict(
        values=StrictInteger(minimum=1),
        key_pattern=CLASS_NAME_PATTERN.pattern,
        min_properties=1,
        required=True,
    )


def by_uuid(values: StrictNested, min_properties: int = 0, **kwargs) -> StrictDict:
    """An object keyed by provider or consumer uuid."""
    return StrictDict(
        values=values,
        keys=UuidString(),
        key_pattern=UUID_KEY_PATTERN,
        min_properties=min_properties,
        **kwargs,
    )


class _ProviderRef(Schema):
    uuid = UuidString(required=True)


class _ListAllocation(Schema):
    resource_provider = StrictNested(_ProviderRef, required=True)
    resources = _resources()


class _ProviderAllocation(Schema):
    resources = _resources()
    # Clients echo the provider generation they read; it is accepted and ignored.
    generation = StrictInteger(minimum=None, maximum=None)


class AllocationsV1_0(Schema):
    """1.0: a list of {resource_provider: {uuid}, resources}."""

    allocations = StrictList(StrictNested(_ListAllocation), min_items=1, required=True)


class AllocationsV1_8(AllocationsV1_0):
    # 1.8: project_id and user_id are required.
    project_id = StrictString(required=True)
    user_id = StrictString(required=True)


def _allocation_dict(min_providers: int) -> StrictDict:
    return by_uuid(StrictNested(_ProviderAllocation), min_providers, required=True)


class AllocationsV1_12(Schema):
    """1.12: allocations keyed by provider uuid."""

    allocations = _allocation_dict(min_providers=1)
    project_id = StrictString(required=True)
    user_id = StrictString(required=True)


class AllocationsV1_28(AllocationsV1_12):
    # 1.28: consumer_generation is required (null for a new consumer); an empty
    # allocations object removes the consumer's allocations.
    allocations = _allocation_dict(min_providers=0)
    consumer_generation = StrictInteger(required=True, allow_none=True, minimum=None, maximum=None)


def _mappings() -> StrictDict:
    """The ``mappings`` of an allocation candidate passed back (1.34): request group ->
    provider uuids. Accepted and not used.

    The unsuffixed group's key is the empty string, and Nova sends candidates back
    exactly as it got them, so any key is taken (as upstream does); a key that
    names a group must map to a non-empty list of provider uuids.
    """
    return StrictDict(
        values=StrictList(UuidString(), min_items=1),
        key_pattern=GROUP_KEY_PATTERN,
        other_keys="keep",
        min_properties=1,
    )


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
    consumer_generation = StrictInteger(required=True, allow_none=True, minimum=None, maximum=None)


class ConsumerAllocationsV1_34(ConsumerAllocationsV1_28):
    mappings = _mappings()


class ConsumerAllocationsV1_38(ConsumerAllocationsV1_34):
    consumer_type = StrictString(required=True, pattern=CONSUMER_TYPE_PATTERN)


# A schema's fields are deep-copied as it is made: each is made once, and shared by the
# requests (loading keeps nothing in the schema).
@functools.cache
def _made(schema_class: type[Schema]) -> Schema:
    return schema_class()


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
            return _made(schema)
    return _made(AllocationsV1_0)


def _consumer_schema_class(version) -> type[Schema]:
    for minimum, schema in (
        ((1, 38), ConsumerAllocationsV1_38),
        ((1, 34), ConsumerAllocationsV1_34),
        ((1, 28), ConsumerAllocationsV1_28),
    ):
        if version >= minimum:
            return schema
    return ConsumerAllocationsV1_13


def consumer_schema(version) -> Schema:
    """The schema of one consumer's entry in POST /allocations or /reshaper."""
    return _made(_consumer_schema_class(version))


def post_schema(version) -> StrictDict:
    """The whole body of POST /allocations (1.13): consumer uuid -> that consumer's
    allocations."""
    return _post_body(_consumer_schema_class(version))


@functools.cache
def _post_body(consumer_class: type[Schema]) -> StrictDict:
    return by_uuid(StrictNested(_made(consumer_class)), min_properties=1)


class ReshapeV1_30(Schema):
    """POST /reshaper (1.30): every inventory and allocation of the affected providers."""

    inventories = by_uuid(StrictNested(ReplaceInventories), min_properties=1, required=True)
    allocations = by_uuid(StrictNested(ConsumerAllocationsV1_28), required=True)


class ReshapeV1_34(ReshapeV1_30):
    # 1.34: the consumers' allocations may carry mappings.
    allocations = by_uuid(StrictNested(ConsumerAllocationsV1_34), required=True)


class ReshapeV1_38(ReshapeV1_34):
    # 1.38: the consumers' allocations carry a consumer_type.
    allocations = by_uuid(StrictNested(ConsumerAllocationsV1_38), required=True)


def reshape_schema(version) -> Schema:
    """The POST /reshaper schema for a microversion."""
    if version >= (1, 38):
        return _made(ReshapeV1_38)
    if version >= (1, 34):
        return _made(ReshapeV1_34)
    return _made(ReshapeV1_30)
