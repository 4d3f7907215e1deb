"""Request bodies for POST and PUT /resource_providers."""

from marshmallow import Schema

from placement.schemas.fields import StrictString, UuidString


class CreateProvider(Schema):
    name = StrictString(required=True, max_length=200)
    uuid = UuidString()


class CreateNestedProvider(CreateProvider):
    # 1.14: a provider may be created under a parent.
    parent_provider_uuid = UuidString(allow_none=True)


class UpdateProvider(Schema):
    name = StrictString(required=True, max_length=200)


class UpdateNestedProvider(UpdateProvider):
    # 1.14: the parent may be set (and from 1.37 changed or removed).
    parent_provider_uuid = UuidString(allow_none=True)
