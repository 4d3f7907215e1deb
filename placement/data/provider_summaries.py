"""What GET /allocation_candidates says about each provider: the provider_summaries.

Three reads for a set of providers (given as whole trees or one by one):
their uuids with parent and root uuids, their inventories as capacity and
usage, and their trait names.
"""

from collections.abc import Iterable
from dataclasses import dataclass, field

from sqlalchemy import Connection, and_, func, select

from placement.data.sql import id_conditions
from placement.db.tables import (
    allocations,
    inventories,
    resource_classes,
    resource_provider_traits,
    resource_providers,
    traits,
)

rp = resource_providers


@dataclass
class Summary:
    uuid: str
    parent_uuid: str | None  # known when the provider's whole tree was read
    root_uuid: str
    resources: dict[str, dict[str, int]] = field(default_factory=dict)
    traits: list[str] = field(default_factory=list)


def summaries(
    conn: Connection,
    root_ids: Iterable[int] = (),
    provider_ids: Iterable[int] = (),
    class_ids: set[int] | None = None,
    with_traits: bool = True,
) -> dict[int, Summary]:
    """Summaries of every provider of the trees ``root_ids`` and of ``provider_ids``.

    ``class_ids`` limits the resources shown (None: every inventory).
    """
    found: dict[int, Summary] = {}
    for column, ids in ((rp.c.root_provider_id, root_ids), (rp.c.id, provider_ids)):
        for condition in id_conditions(conn, column, ids):
            _read_batch(conn, found, condition, class_ids, with_traits)
    return found


def _read_batch(conn, found, where, class_ids, with_traits) -> None:
    # SELECT id, uuid, parent_provider_id, root_provider_id FROM resource_providers
    # WHERE <rp in batch>   (parents and roots are mapped to uuids below: a whole
    # tree is read at once, so they are in the batch; a provider read alone
    # (before 1.29) does not show them)
    rows = conn.execute(
        select(rp.c.id, rp.c.uuid, rp.c.parent_provider_id, rp.c.root_provider_id).where(where)
    ).all()
    uuid_of = {id_: uuid for id_, uuid, _, _ in rows}
    new_ids = set()
    for id_, uuid, parent_id, root_id in rows:
        if id_ not in found:
            found[id_] = Summary(uuid, uuid_of.get(parent_id), uuid_of.get(root_id, ""))
            new_ids.add(id_)
    if not new_ids:
        return
    # SELECT i.resource_provider_id, rc.name, (total - reserved) * allocation_ratio,
    #        COALESCE(u.used, 0)
    # FROM inventories i JOIN resource_classes rc ON rc.id = i.resource_class_id
    # JOIN resource_providers rp ON rp.id = i.resource_provider_id
    # LEFT JOIN (SELECT a.resource_provider_id, a.resource_class_id, SUM(a.used) AS used
    #            FROM allocations a JOIN resource_providers rp ON ...
    #            WHERE <rp in batch> GROUP BY 1, 2) u ON <same provider and class>
    # WHERE <rp in batch> [AND i.resource_class_id IN (:class_ids)]
    usage = (
        select(
            allocations.c.resource_provider_id,
            allocations.c.resource_class_id,
            func.sum(allocations.c.used).label("used"),
        )
        .join(rp, rp.c.id == allocations.c.resource_provider_id)
        .where(where)
        .group_by(allocations.c.resource_provider_id, allocations.c.resource_class_id)
        .subquery()
    )
    inventory_query = (
        select(
            inventories.c.resource_provider_id,
            resource_classes.c.name,
            (inventories.c.total - inventories.c.reserved) * inventories.c.allocation_ratio,
            func.coalesce(usage.c.used, 0),
        )
        .join(resource_classes, resource_classes.c.id == inventories.c.resource_class_id)
        .join(rp, rp.c.id == inventories.c.resource_provider_id)
        .outerjoin(
            usage,
            and_(
                usage.c.resource_provider_id == inventories.c.resource_provider_id,
                usage.c.resource_class_id == inventories.c.resource_class_id,
            ),
        )
        .where(where)
    )
    if class_ids is not None:
        inventory_query = inventory_query.where(
            inventories.c.resource_class_id.in_(sorted(class_ids))
        )
    for provider_id, class_name, capacity, used_amount in conn.execute(inventory_query).all():
        if provider_id not in new_ids:
            continue
        found[provider_id].resources[class_name] = {
            "capacity": int(capacity),
            "used": int(used_amount),
        }
    if with_traits:
        trait_query = (
            select(resource_provider_traits.c.resource_provider_id, traits.c.name)
            .join(traits, traits.c.id == resource_provider_traits.c.trait_id)
            .join(rp, rp.c.id == resource_provider_traits.c.resource_provider_id)
            .where(where)
        )
        for provider_id, name in conn.execute(trait_query).all():
            if provider_id in new_ids:
                found[provider_id].traits.append(name)
