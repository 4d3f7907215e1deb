"""Request bodies for PUT /resource_providers/{uuid}/aggregates."""

from marshmallow import Schema, ValidationError, fields

from placement.schemas.fields import StrictInteger, UuidString


def _unique(uuids: list[str]) -> None:
    if len(set(uuids)) != len(uuids):
        raise ValidationError("aggregate uuids must be unique.")


def aggregate_uuids() -> fields.List:
    return fields.List(UuidString(), required=True, validate=_unique)


class AggregateList(Schema):
    """Before 1.19 the body is a bare list; it is validated wrapped as {"aggregates": [...]}."""

    aggregates = aggregate_uuids()


class ProviderAggregates(AggregateList):
    # 1.19: the body is an object carrying the provider generation.
    resource_provider_generation = StrictInteger(required=True)
