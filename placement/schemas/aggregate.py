"""Request bodies for PUT /resource_providers/{uuid}/aggregates."""

from marshmallow import Schema, ValidationError, fields

from placement.schemas.fields import StrictInteger, UuidString


def _unique(uuids: list[str]) -> None:
    if len(set(uuids)) != len(uuids):
        raise ValidationError("aggregate uuids must be unique.")


class ProviderAggregates(Schema):
    # 1.19: the body is an object carrying the provider generation; before, a bare list.
    aggregates = fields.List(UuidString(), required=True, validate=_unique)
    resource_provider_generation = StrictInteger(required=True)
