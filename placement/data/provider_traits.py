"""The traits of one provider."""

from sqlalchemy import Connection, delete, insert, select

from placement.clock import utcnow
from placement.data import names
from placement.data.providers import Provider, bump_generation, check_generation
from placement.db.tables import resource_provider_traits, traits


def get_provider_traits(conn: Connection, provider: Provider) -> list[str]:
    """The provider's trait names in upstream's order (the traits' ids: standard ones
    first, custom ones as they were created)."""
    return list(
        conn.scalars(
            select(traits.c.name)
            .join(resource_provider_traits, resource_provider_traits.c.trait_id == traits.c.id)
            .where(resource_provider_traits.c.resource_provider_id == provider.id)
            .order_by(traits.c.id)
        )
    )


def set_provider_traits(
    conn: Connection, provider: Provider, wanted: list[str], generation: int | None
) -> int:
    """Replace the provider's traits with ``wanted``; returns the new generation. As
    upstream, a write that changes nothing leaves the generation as it is."""
    trait_ids = names.trait_ids(conn, wanted)
    current = set(
        conn.scalars(
            select(resource_provider_traits.c.trait_id).where(
                resource_provider_traits.c.resource_provider_id == provider.id
            )
        )
    )
    if current == set(trait_ids.values()):
        if generation is not None:
            check_generation(provider, generation)
        return provider.generation
    new_generation = bump_generation(conn, provider, generation)
    conn.execute(
        delete(resource_provider_traits).where(
            resource_provider_traits.c.resource_provider_id == provider.id
        )
    )
    if trait_ids:
        now = utcnow()
        conn.execute(
            insert(resource_provider_traits),
            [
                {"resource_provider_id": provider.id, "trait_id": id_, "created_at": now}
                for id_ in trait_ids.values()
            ],
        )
    return new_generation
