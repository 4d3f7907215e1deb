"""The aggregates a provider belongs to."""

from sqlalchemy import Connection, delete, insert, select

from placement.clock import utcnow
from placement.data.providers import Provider, bump_generation, bump_revision
from placement.data.sql import insert_ignoring_conflicts
from placement.db.tables import placement_aggregates, resource_provider_aggregates


def get_provider_aggregates(conn: Connection, provider: Provider) -> list[str]:
    """The provider's aggregate uuids in upstream's order (as the aggregates were first
    seen)."""
    return list(
        conn.scalars(
            select(placement_aggregates.c.uuid)
            .join(
                resource_provider_aggregates,
                resource_provider_aggregates.c.aggregate_id == placement_aggregates.c.id,
            )
            .where(resource_provider_aggregates.c.resource_provider_id == provider.id)
            .order_by(placement_aggregates.c.id)
        )
    )


def set_provider_aggregates(
    conn: Connection, provider: Provider, wanted: list[str], generation: int | None
) -> int:
    """Replace the provider's aggregates with ``wanted``; returns the new generation.

    ``generation`` None (before 1.19, where the body has none) leaves the generation
    as it is, as upstream does, and bumps the provider's revision instead."""
    if generation is None:
        bump_revision(conn, provider)
        new_generation = provider.generation
    else:
        new_generation = bump_generation(conn, provider, generation)
    wanted = list(dict.fromkeys(wanted))  # new aggregates get their ids in request order
    now = utcnow()
    insert_ignoring_conflicts(
        conn, placement_aggregates, [{"uuid": u, "created_at": now} for u in wanted]
    )
    conn.execute(
        delete(resource_provider_aggregates).where(
            resource_provider_aggregates.c.resource_provider_id == provider.id
        )
    )
    if wanted:
        ids = conn.scalars(
            select(placement_aggregates.c.id).where(placement_aggregates.c.uuid.in_(wanted))
        ).all()
        conn.execute(
            insert(resource_provider_aggregates),
            [
                {"resource_provider_id": provider.id, "aggregate_id": id_, "created_at": now}
                for id_ in ids
            ],
        )
    return new_generation
