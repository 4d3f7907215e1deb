"""Request bodies for POST and PUT /resource_providers."""

from marshmallow import Schema

from placement.schemas.fields import StrictString, UuidString, violation


class ParentUuid(UuidString):
    """A parent provider's uuid, or null for none. Upstream's schema says "a uuid
    string or null" (``anyOf``), so a value of another type is refused in those
    words."""

    def __init__(self, **kwargs):
        super().__init__(allow_none=True, **kwargs)

    def _deserialize(self, value, attr, data, **kwargs):
        if not isinstance(value, str):
            raise violation(f"{value!r} is not valid under any of the given schemas", "anyOf")
        return super()._deserialize(value, attr, data, **kwargs)


class CreateProvider(Schema):
    name = StrictString(required=True, max_length=200)
    uuid = UuidString()


class CreateNestedProvider(CreateProvider):
    # 1.14: a provider may be created under a parent.
    parent_provider_uuid = ParentUuid()


class UpdateProvider(Schema):
    name = StrictString(required=True, max_length=200)


class UpdateNestedProvider(UpdateProvider):
    # 1.14: the parent may be set (and from 1.37 changed or removed).
    parent_provider_uuid = ParentUuid()
