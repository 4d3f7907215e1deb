"""Request bodies naming resource classes and traits."""

from marshmallow import Schema

from placement.schemas.fields import (
    CUSTOM_NAME_PATTERN,
    StrictInteger,
    StrictList,
    StrictString,
)


class CreateResourceClass(Schema):
    """POST /resource_classes, and PUT /resource_classes/{name} before 1.7 (rename); from
    1.7 the name in the URL is checked by it too."""

    name = StrictString(required=True, pattern=CUSTOM_NAME_PATTERN)


class ProviderTraits(Schema):
    """PUT /resource_providers/{uuid}/traits. As upstream, a trait name is any string of
    1 to 255 characters here: one that does not exist is refused by name."""

    traits = StrictList(StrictString(), required=True)
    resource_provider_generation = StrictInteger(required=True, minimum=None, maximum=None)
