"""Request bodies for PUT /resource_providers/{uuid}/aggregates."""

from marshmallow import Schema

from placement.schemas.fields import StrictInteger, StrictList, UuidString


def aggregate_uuids(**kwargs) -> StrictList:
    """Before 1.19 the whole body: a list of distinct aggregate uuids."""
    return StrictList(UuidString(), unique=True, **kwargs)


class ProviderAggregates(Schema):
    # 1.19: the body is an object carrying the provider generation.
    aggregates = aggregate_uuids(required=True)
    resource_provider_generation = StrictInteger(required=True, minimum=None, maximum=None)
