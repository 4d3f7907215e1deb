"""The reshaper: move inventories and allocations between providers in one step.

Inventories and allocations change together, so the usual checks (no removal
of used inventory, capacity for each allocation) would fail halfway. They run
once at the end instead, over every provider involved; anything wrong rolls
the whole request back.
"""

from sqlalchemy import Connection

from placement.data import allocation_fit
from placement.data import allocations as allocation_data
from placement.data.inventories import Inventory, get_inventories, write_inventories
from placement.data.providers import Provider, bump_generation


def reshape(
    conn: Connection,
    inventories: list[tuple[Provider, int, dict[str, Inventory]]],
    writes: list[allocation_data.ConsumerWrite],
) -> None:
    """Apply ``inventories`` (provider, expected generation, new inventory) and ``writes``.

    Generations move as upstream's do, whose reshape writes each provider's inventory
    twice around the allocations: +1 for the final inventory, +1 more for an interim
    one when the new inventory is not empty, and +1 when the provider is allocated
    from (``write_allocations``). Clients that reshape read the generations back.
    """
    for provider, generation, wanted in inventories:
        bump_generation(conn, provider, generation)
        if wanted:
            bump_generation(conn, provider, generation + 1)
    new_rows = allocation_data.write_allocations(conn, writes, check_capacity=False)
    for provider, _generation, wanted in inventories:
        write_inventories(conn, provider, get_inventories(conn, provider), wanted)
    affected = {provider.id for provider, _g, _w in inventories}
    affected |= allocation_data.providers_of_consumer_uuids(conn, [w.consumer_uuid for w in writes])
    allocation_fit.check_providers_consistent(conn, new_rows, affected)
