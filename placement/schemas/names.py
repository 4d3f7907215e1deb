"""Request bodies naming resource classes and traits."""

from marshmallow import Schema, fields

from placement.schemas.fields import (
    CLASS_NAME_PATTERN,
    CUSTOM_NAME_PATTERN,
    StrictInteger,
    StrictString,
)


class CreateResourceClass(Schema):
    """POST /resource_classes, and PUT /resource_classes/{name} before 1.7 (rename)."""

    name = StrictString(required=True, pattern=CUSTOM_NAME_PATTERN)


class ProviderTraits(Schema):
    """PUT /resource_providers/{uuid}/traits."""

    traits = fields.List(StrictString(pattern=CLASS_NAME_PATTERN), required=True)
    resource_provider_generation = StrictInteger(required=True)
