"""Request bodies for the inventory endpoints."""

from marshmallow import Schema, fields

from placement.schemas.fields import (
    CLASS_NAME_PATTERN,
    MAX_INT,
    StrictInteger,
    StrictNumber,
    StrictString,
)

DEFAULTS = {
    "reserved": 0,
    "min_unit": 1,
    "max_unit": MAX_INT,
    "step_size": 1,
    "allocation_ratio": 1.0,
}


class InventoryFields(Schema):
    total = StrictInteger(required=True, minimum=1)
    reserved = StrictInteger(minimum=0)
    min_unit = StrictInteger(minimum=1)
    max_unit = StrictInteger(minimum=1)
    step_size = StrictInteger(minimum=1)
    allocation_ratio = StrictNumber()


class UpdateInventory(InventoryFields):
    """PUT /resource_providers/{uuid}/inventories/{resource_class}."""

    resource_provider_generation = StrictInteger(required=True)


class CreateInventory(UpdateInventory):
    """POST /resource_providers/{uuid}/inventories."""

    resource_class = StrictString(required=True, pattern=CLASS_NAME_PATTERN)


class ReplaceInventories(Schema):
    """PUT /resource_providers/{uuid}/inventories."""

    resource_provider_generation = StrictInteger(required=True)
    inventories = fields.Dict(
        keys=StrictString(pattern=CLASS_NAME_PATTERN),
        values=fields.Nested(InventoryFields),
        required=True,
    )
