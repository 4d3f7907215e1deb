"""Request bodies for PUT /resource_providers/{uuid}/aggregates."""

from marshmallow import Schema, fields

from placement.schemas.fields import StrictInteger, UuidString


class ProviderAggregates(Schema):
    # 1.19: the body is an object carrying the provider generation; before, a bare list.
    aggregates = fields.List(UuidString(), required=True)
    resource_provider_generation = StrictInteger(required=True)
