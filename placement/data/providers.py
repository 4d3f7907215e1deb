"""Resource providers: reading, listing with filters, creating, re-parenting, deleting.

Every provider row carries ``root_provider_id`` and ``parent_provider_id``; a
re-parent rewrites the root of the whole moved subtree in one UPDATE. Writes
that depend on what the client saw go through ``bump_generation``, which
fails with 409 ``placement.concurrent_update`` when the generation moved.
"""

import datetime
from dataclasses import dataclass

from sqlalchemy import Connection, and_, delete, exists, func, select, update

from placement import errors
from placement.clock import utcnow
from placement.data import names
from placement.data.sql import capacity_column, insert_ignoring_conflicts
from placement.db.aliases import parent_provider, root_provider
from placement.db.tables import (
    allocations,
    inventories,
    placement_aggregates,
    resource_provider_aggregates,
    resource_provider_traits,
    resource_providers,
)
from placement.query import AggregateFilter, TraitFilter

rp = resource_providers
_NO_PARENT = "parent provider UUID does not exist."


def _refused(what: str, action: str, reason: str) -> errors.BadRequest:
    """A refused parent, in upstream's words (its ObjectActionError), which its suite
    and clients match."""
    return errors.BadRequest(f"{what}: Object action {action} failed because: {reason}")


@dataclass(frozen=True)
class Provider:
    id: int
    uuid: str
    name: str
    generation: int
    root_provider_id: int
    parent_provider_id: int | None
    root_provider_uuid: str
    parent_provider_uuid: str | None
    created_at: datetime.datetime
    updated_at: datetime.datetime | None


@dataclass(frozen=True)
class ProviderFilters:
    """What GET /resource_providers may filter on; empty fields do not filter."""

    name: str | None = None
    uuid: str | None = None
    in_tree: str | None = None
    resources: dict[str, int] | None = None
    traits: TraitFilter = TraitFilter()
    aggregates: AggregateFilter = AggregateFilter()


def _select_providers():
    return select(
        rp.c.id,
        rp.c.uuid,
        rp.c.name,
        rp.c.generation,
        rp.c.root_provider_id,
        rp.c.parent_provider_id,
        root_provider.c.uuid.label("root_provider_uuid"),
        parent_provider.c.uuid.label("parent_provider_uuid"),
        rp.c.created_at,
        rp.c.updated_at,
    ).select_from(
        rp.join(root_provider, root_provider.c.id == rp.c.root_provider_id).outerjoin(
            parent_provider, parent_provider.c.id == rp.c.parent_provider_id
        )
    )


def get_provider(conn: Connection, uuid: str) -> Provider | None:
    row = conn.execute(_select_providers().where(rp.c.uuid == uuid)).first()
    return Provider(**row._mapping) if row else None


def get_provider_by_name(conn: Connection, name: str) -> Provider | None:
    row = conn.execute(_select_providers().where(rp.c.name == name)).first()
    return Provider(**row._mapping) if row else None


def require_provider_by_id(conn: Connection, provider_id: int) -> Provider:
    row = conn.execute(_select_providers().where(rp.c.id == provider_id)).one()
    return Provider(**row._mapping)


def require_provider(conn: Connection, uuid: str) -> Provider:
    """The provider with ``uuid``, or 404."""
    provider = get_provider(conn, uuid)
    if provider is None:
        raise errors.NotFound(
            f"No resource provider with uuid {uuid} found.",
            code=errors.RESOURCE_PROVIDER_NOT_FOUND,
        )
    return provider


def list_providers(conn: Connection, filters: ProviderFilters) -> list[Provider]:
    # SELECT rp.*, root.uuid, parent.uuid FROM resource_providers rp JOIN ... WHERE
    #   rp.name = :name AND rp.uuid = :uuid AND rp.root_provider_id = <root of :in_tree>
    #   AND EXISTS (inventory of each requested class with room for the amount)
    #   AND EXISTS (a trait of each required any-of set) AND NOT EXISTS (forbidden trait)
    #   AND EXISTS (an aggregate of each member_of set) AND NOT EXISTS (forbidden aggregate)
    query = _select_providers()
    if filters.name is not None:
        query = query.where(rp.c.name == filters.name)
    if filters.uuid is not None:
        query = query.where(rp.c.uuid == filters.uuid)
    if filters.in_tree is not None:
        tree = get_provider(conn, filters.in_tree)
        if tree is None:
            return []
        query = query.where(rp.c.root_provider_id == tree.root_provider_id)
    if filters.resources:
        class_ids = names.resource_class_ids(conn, filters.resources)
        for class_name, amount in filters.resources.items():
            query = query.where(has_capacity(rp.c.id, class_ids[class_name], amount))
    if filters.traits:
        trait_ids = names.trait_ids(conn, filters.traits.names())
        for any_of in filters.traits.required:
            query = query.where(_has_any_trait(rp.c.id, [trait_ids[t] for t in any_of]))
        if filters.traits.forbidden:
            forbidden_ids = [trait_ids[t] for t in filters.traits.forbidden]
            query = query.where(~_has_any_trait(rp.c.id, forbidden_ids))
    for any_of in filters.aggregates.member_of:
        query = query.where(_in_any_aggregate(rp.c.id, any_of))
    if filters.aggregates.forbidden:
        query = query.where(~_in_any_aggregate(rp.c.id, filters.aggregates.forbidden))
    rows = conn.execute(query.order_by(rp.c.id)).all()
    return [Provider(**row._mapping) for row in rows]


def has_capacity(provider_id_column, class_id: int, amount: int):
    """SQL condition: the provider can take ``amount`` more of class ``class_id``."""
    # Correlated to the inventory row of the EXISTS below (its immediately
    # enclosing query), so the usage is that provider's, not everyone's.
    used = (
        select(func.coalesce(func.sum(allocations.c.used), 0))
        .where(
            allocations.c.resource_provider_id == inventories.c.resource_provider_id,
            allocations.c.resource_class_id == class_id,
        )
        .correlate(inventories)
        .scalar_subquery()
    )
    return exists().where(
        inventories.c.resource_provider_id == provider_id_column,
        inventories.c.resource_class_id == class_id,
        inventories.c.min_unit <= amount,
        inventories.c.max_unit >= amount,
        amount % inventories.c.step_size == 0,
        capacity_column(inventories) >= used + amount,
    )


def _has_any_trait(provider_id_column, trait_ids):
    return exists().where(
        resource_provider_traits.c.resource_provider_id == provider_id_column,
        resource_provider_traits.c.trait_id.in_(trait_ids),
    )


def _in_any_aggregate(provider_id_column, aggregate_uuids):
    return exists().where(
        resource_provider_aggregates.c.resource_provider_id == provider_id_column,
        resource_provider_aggregates.c.aggregate_id == placement_aggregates.c.id,
        placement_aggregates.c.uuid.in_(list(aggregate_uuids)),
    )


def create_provider(conn: Connection, uuid: str, name: str, parent_uuid: str | None) -> Provider:
    """Create a provider, under ``parent_uuid`` if given. As upstream, the parent is
    checked before the name and uuid are (400, then 409)."""
    parent = None
    if parent_uuid is not None:
        what = f'Unable to create resource provider "{name}", {uuid}'
        if parent_uuid == uuid:
            raise _refused(
                what,
                "create",
                "parent provider UUID cannot be same as UUID. Please set parent provider "
                "UUID to None if there is no parent.",
            )
        parent = get_provider(conn, parent_uuid)
        if parent is None:
            raise _refused(what, "create", _NO_PARENT)
    _refuse_duplicate(conn, uuid=uuid, name=name)
    inserted = insert_ignoring_conflicts(
        conn,
        rp,
        [
            {
                "uuid": uuid,
                "name": name,
                "generation": 0,
                "parent_provider_id": parent.id if parent else None,
                "root_provider_id": parent.root_provider_id if parent else None,
                "created_at": utcnow(),
            }
        ],
        returning=rp.c.id,
    )
    if not inserted:
        # A concurrent request took the name or uuid between the check and the insert.
        _refuse_duplicate(conn, uuid=uuid, name=name)
        raise errors.Conflict(
            f"Conflicting resource provider name: {name} already exists.",
            code=errors.DUPLICATE_NAME,
        )
    if parent is None:
        conn.execute(update(rp).where(rp.c.id == inserted[0]).values(root_provider_id=rp.c.id))
    return require_provider(conn, uuid)


def _refuse_duplicate(
    conn: Connection, uuid: str | None, name: str, except_id: int | None = None
) -> None:
    for column, value, label in ((rp.c.name, name, "name"), (rp.c.uuid, uuid, "uuid")):
        if value is None:
            continue
        query = select(rp.c.id).where(column == value)
        if except_id is not None:
            query = query.where(rp.c.id != except_id)
        if conn.execute(query).first() is not None:
            # Upstream's words, which Nova matches ("Conflicting resource provider
            # name:" on create); a rename names the provider alone.
            what = value if except_id is not None else f"{label}: {value}"
            raise errors.Conflict(
                f"Conflicting resource provider {what} already exists.",
                code=errors.DUPLICATE_NAME,
            )


def rename_provider(conn: Connection, provider: Provider, name: str) -> None:
    if name == provider.name:
        return
    _refuse_duplicate(conn, uuid=None, name=name, except_id=provider.id)
    # The generation stays, as upstream's; the revision tells the searches' copies.
    conn.execute(
        update(rp).where(rp.c.id == provider.id).values(name=name, revision=rp.c.revision + 1)
    )


def set_parent(
    conn: Connection, provider: Provider, parent_uuid: str | None, allow_reparent: bool
) -> None:
    """Attach ``provider`` (and its subtree) under ``parent_uuid``, or make it a root.

    Before 1.37 (``allow_reparent`` False) only a root may gain a parent. Checked in
    upstream's order and words: the new parent exists, the provider may move, no loop.
    """
    if parent_uuid == provider.parent_provider_uuid:
        return
    what = f"Unable to save resource provider {provider.uuid}"
    if parent_uuid is None:
        if not allow_reparent:
            raise _refused(what, "update", "un-parenting a provider is not currently allowed.")
        new_parent_id, new_root_id = None, provider.id
    else:
        parent = get_provider(conn, parent_uuid)
        if parent is None:
            # Upstream's words name the action "create" here too.
            raise _refused(what, "create", _NO_PARENT)
        if provider.parent_provider_uuid is not None and not allow_reparent:
            raise _refused(what, "update", "re-parenting a provider is not currently allowed.")
        if parent.id == provider.id or provider.id in _ancestor_ids(conn, parent):
            raise _refused(what, "update", "creating loop in the provider tree is not allowed.")
        new_parent_id, new_root_id = parent.id, parent.root_provider_id
    subtree = _subtree_ids(conn, provider)
    conn.execute(update(rp).where(rp.c.id == provider.id).values(parent_provider_id=new_parent_id))
    conn.execute(update(rp).where(rp.c.id.in_(subtree)).values(root_provider_id=new_root_id))


def _ancestor_ids(conn: Connection, provider: Provider) -> set[int]:
    """Ids of ``provider``'s ancestors, read from its tree in one query."""
    parents = dict(
        conn.execute(
            select(rp.c.id, rp.c.parent_provider_id).where(
                rp.c.root_provider_id == provider.root_provider_id
            )
        ).all()
    )
    ancestors: set[int] = set()
    current = parents.get(provider.id)
    while current is not None and current not in ancestors:
        ancestors.add(current)
        current = parents.get(current)
    return ancestors


def _subtree_ids(conn: Connection, provider: Provider) -> list[int]:
    """Ids of ``provider`` and all its descendants, read from its tree in one query."""
    children: dict[int, list[int]] = {}
    for id_, parent_id in conn.execute(
        select(rp.c.id, rp.c.parent_provider_id).where(
            rp.c.root_provider_id == provider.root_provider_id
        )
    ):
        children.setdefault(parent_id, []).append(id_)
    subtree, pending = [], [provider.id]
    while pending:
        current = pending.pop()
        subtree.append(current)
        pending.extend(children.get(current, []))
    return subtree


def delete_provider(conn: Connection, provider: Provider) -> None:
    has_children = conn.scalar(select(exists().where(rp.c.parent_provider_id == provider.id)))
    if has_children:
        raise errors.Conflict(
            f"Unable to delete parent resource provider {provider.uuid}: It has child "
            "resource providers.",
            code=errors.PROVIDER_CANNOT_DELETE_PARENT,
        )
    has_allocations = conn.scalar(
        select(exists().where(allocations.c.resource_provider_id == provider.id))
    )
    if has_allocations:
        raise errors.Conflict(
            f"Unable to delete resource provider {provider.uuid}: Resource provider has "
            "allocations.",
            code=errors.PROVIDER_IN_USE,
        )
    for table in (inventories, resource_provider_traits, resource_provider_aggregates):
        conn.execute(delete(table).where(table.c.resource_provider_id == provider.id))
    if conn.dialect.name == "mysql" and provider.root_provider_id == provider.id:
        # InnoDB checks a foreign key against the row being deleted too: a root, its
        # own root, cannot be deleted while it says so. (The generation guard below
        # still holds: this UPDATE leaves it alone, and waits for any writer of the row.)
        conn.execute(update(rp).where(rp.c.id == provider.id).values(root_provider_id=None))
    deleted = conn.execute(
        delete(rp).where(and_(rp.c.id == provider.id, rp.c.generation == provider.generation))
    )
    if deleted.rowcount != 1:
        raise errors.ConcurrentUpdate(
            f"Resource provider {provider.uuid} was changed while it was being deleted."
        )


def check_generation(provider: Provider, expected: int) -> None:
    """409 concurrent_update when the generation read is not ``expected``: for a
    request's checks to come in upstream's order (generation first); the bump
    that follows still guards against a race."""
    if provider.generation != expected:
        raise _generation_conflict(provider, expected)


def _generation_conflict(provider: Provider, expected: int) -> errors.ConcurrentUpdate:
    return errors.ConcurrentUpdate(
        f"resource provider generation conflict: {provider.uuid} is not at generation "
        f"{expected}. Please retry the request with the current generation."
    )


def bump_generation(conn: Connection, provider: Provider, expected: int | None) -> int:
    """Increment the provider's generation, checking it still is ``expected``.

    ``expected`` None checks against the generation read in ``provider``.
    Returns the new generation; 409 concurrent_update when it moved.
    """
    expected = provider.generation if expected is None else expected
    result = conn.execute(
        update(rp)
        .where(rp.c.id == provider.id, rp.c.generation == expected)
        .values(generation=rp.c.generation + 1, updated_at=utcnow())
    )
    if result.rowcount != 1:
        raise _generation_conflict(provider, expected)
    return expected + 1


def bump_revision(conn: Connection, provider: Provider) -> None:
    """Mark a change a candidate search sees, keeping the generation (migration 0004)."""
    conn.execute(
        update(rp)
        .where(rp.c.id == provider.id)
        .values(revision=rp.c.revision + 1, updated_at=utcnow())
    )


def touch(conn: Connection, provider: Provider) -> None:
    conn.execute(update(rp).where(rp.c.id == provider.id).values(updated_at=utcnow()))
