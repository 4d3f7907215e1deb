"""Request bodies for the inventory endpoints."""

from marshmallow import Schema

from placement.schemas.fields import (
    CLASS_NAME_PATTERN,
    MAX_INT,
    StrictDict,
    StrictInteger,
    StrictNested,
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
    """One inventory record. ``resource_provider_generation`` may be given in a record
    (upstream's schema allows it) and is ignored there."""

    total = StrictInteger(required=True, minimum=1)
    reserved = StrictInteger(minimum=0)
    min_unit = StrictInteger(minimum=1)
    max_unit = StrictInteger(minimum=1)
    step_size = StrictInteger(minimum=1)
    # No lower bound, as upstream: 0 reserves everything (from 1.26); a ratio that
    # leaves a negative capacity is refused by the capacity check.
    allocation_ratio = StrictNumber(minimum=None)
    resource_provider_generation = StrictInteger(minimum=None, maximum=None)


class UpdateInventory(InventoryFields):
    """PUT /resource_providers/{uuid}/inventories/{resource_class}."""

    resource_provider_generation = StrictInteger(required=True, minimum=None, maximum=None)


class CreateInventory(InventoryFields):
    """POST /resource_providers/{uuid}/inventories: ``resource_provider_generation`` is
    optional and, as upstream, not checked (openstacksdk does not send it)."""

    resource_class = StrictString(required=True, pattern=CLASS_NAME_PATTERN)


class ReplaceInventories(Schema):
    """PUT /resource_providers/{uuid}/inventories. As upstream's schema, any key is
    taken: a name that is no resource class is refused by name afterwards."""

    resource_provider_generation = StrictInteger(required=True, minimum=None, maximum=None)
    inventories = StrictDict(
        values=StrictNested(InventoryFields),
        key_pattern=CLASS_NAME_PATTERN.pattern,
        other_keys="load",
        required=True,
    )
