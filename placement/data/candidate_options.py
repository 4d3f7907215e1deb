"""SQL for the allocation-candidate search: which providers can serve each slot.

A *slot* is one thing the search must place on one provider: one resource
class of the unsuffixed group, one whole granular group, or one resourceless
granular group. ``slot_options`` answers every slot of a request in ONE
statement (a UNION ALL with the slot number as its first column), already
filtered by everything that can be checked on one provider alone: the amount
against capacity minus usage, min_unit, max_unit and step_size, traits,
aggregates, the in_tree tree, and root_required on the provider's root. What
needs several providers at once (sums on one provider, traits spread over the
unsuffixed group's providers, group_policy, same_subtree) is left to the
search in ``placement.candidates``.

The other functions read the little the search needs besides: which trees
a sharing provider serves, the parents of the providers of some trees, and the
requested traits of some providers.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from sqlalchemy import (
    Connection,
    Integer,
    Select,
    and_,
    case,
    cast,
    exists,
    func,
    intersect,
    literal,
    null,
    or_,
    select,
    union_all,
)

from placement.data.sql import id_conditions
from placement.db.aliases import root_provider
from placement.db.tables import (
    allocations,
    inventories,
    placement_aggregates,
    resource_provider_aggregates,
    resource_provider_traits,
    resource_providers,
)

rp = resource_providers
inv = inventories
rpt = resource_provider_traits
rpa = resource_provider_aggregates

@dataclass(frozen=True)
class SlotFilter:
    """What one provider must satisfy to serve a slot (ids, not names).

    ``aggregates_span_root``: the unsuffixed group counts an aggregate of the
    provider's root as the provider's own (an aggregate on a root spans its
    tree); granular groups look at the provider only.
    """

    class_id: int | None = None
    amount: int = 0
    required_traits: tuple[frozenset[int], ...] = ()
    forbidden_traits: frozenset[int] = field(default_factory=frozenset)
    member_of: tuple[frozenset[int], ...] = ()
    forbidden_aggregates: frozenset[int] = field(default_factory=frozenset)
    aggregates_span_root: bool = False
    tree_root_id: int | None = None


@dataclass(frozen=True)
class RootFilter:
    """root_required: traits the root of the provider's tree must have / lack."""

    required: tuple[frozenset[int], ...] = ()
    forbidden: frozenset[int] = field(default_factory=frozenset)


# One row of slot_options: which slot (filter), which provider, and its room.
OPTION_COLUMNS = (
    "slot", "provider_id", "root_id", "root_ok",
    "capacity", "used", "min_unit", "max_unit", "step_size",
)


def slot_options(
    conn: Connection,
    filters: Sequence[SlotFilter],
    root_filter: RootFilter,
    sharing_ids: set[int],
    root_ids: Sequence[int] | None = None,
) -> list[tuple]:
    """Every provider that can serve each slot, as OPTION_COLUMNS tuples (one statement).

    ``capacity`` and the rest are None for a resourceless slot.

    Sharing providers (``sharing_ids``) are returned whatever their root's
    traits (root_required applies to the tree they serve, not to theirs);
    ``root_ok`` says whether their own tree passes. ``root_ids`` limits the
    answer to the providers of those trees.
    """
    # Per slot with resources, roughly:
    #   SELECT :slot, rp.id, rp.root_provider_id, <root_ok>,
    #          (i.total - i.reserved) * i.allocation_ratio,
    #          (SELECT COALESCE(SUM(a.used), 0) FROM allocations a
    #           WHERE a.resource_provider_id = i.resource_provider_id
    #             AND a.resource_class_id = i.resource_class_id),
    #          i.min_unit, i.max_unit, i.step_size
    #   FROM inventories i JOIN resource_providers rp ON rp.id = i.resource_provider_id
    #   WHERE i.resource_class_id = :class AND i.min_unit <= :amount <= i.max_unit
    #     AND :amount % i.step_size = 0 AND <trait, aggregate, tree filters>
    #     [AND (<root_ok> OR rp.id IN (:sharing_ids))]
    # and per resourceless slot the same filters over resource_providers alone.
    # All slots are joined with UNION ALL.
    root_ok = _root_ok_expr(root_filter)
    tree_conditions = (
        [None] if root_ids is None else id_conditions(conn, rp.c.root_provider_id, root_ids)
    )
    rows: list[tuple] = []
    for in_trees in tree_conditions:
        selects = [
            _slot_select(number, slot_filter, root_ok, sorted(sharing_ids), in_trees)
            for number, slot_filter in enumerate(filters)
        ]
        statement = selects[0] if len(selects) == 1 else union_all(*selects)
        rows.extend(tuple(row) for row in conn.execute(statement).all())
    return rows


def candidate_roots(
    conn: Connection,
    filters: Sequence[SlotFilter],
    root_filter: RootFilter,
    providers_needed: Sequence[int],
    after: int = 0,
) -> list[int]:
    """Roots of the trees where every filter has enough providers with room (no sharing);
    only those above root id ``after``.

    ``providers_needed[n]``: how many distinct providers filter ``n`` needs in
    one tree (the number of isolated twins sharing it; 1 otherwise). A
    superset of the trees with candidates: the search still checks what needs
    several providers at once.
    """
    # SELECT rp.root_provider_id FROM inventories i JOIN resource_providers rp ...
    #   WHERE <filter 1> AND (total - reserved) * allocation_ratio >= <usage> + :amount
    #   GROUP BY rp.root_provider_id HAVING COUNT(*) >= :providers_needed
    # INTERSECT SELECT ... <filter 2> ... INTERSECT ...
    root_ok = _root_ok_expr(root_filter)
    selects = []
    for f, needed in zip(filters, providers_needed, strict=True):
        conditions = [] if root_ok is None else [root_ok == 1]
        if after:
            conditions.append(rp.c.root_provider_id > after)
        roots = _with_room(f, rp.c.root_provider_id, conditions)
        roots = roots.group_by(rp.c.root_provider_id)
        if needed > 1:
            roots = roots.having(func.count() >= needed)
        selects.append(roots)
    statement = selects[0] if len(selects) == 1 else intersect(*selects)
    return sorted(conn.scalars(statement).all())


def scan_candidate_roots(
    conn: Connection,
    filters: Sequence[SlotFilter],
    root_filter: RootFilter,
    providers_needed: Sequence[int],
    after: int,
    window: int,
) -> tuple[list[int], int | None]:
    """Of the next ``window`` roots above ``after`` (in id order), those of the trees where
    every filter has enough providers with room (no sharing); and the last root looked at
    (None: there was none). ``candidate_roots`` for a few trees at a time: a search with a
    limit that finds its answer in the first trees reads no others."""
    # SELECT scanned.id, (SELECT rp.id FROM inventories i JOIN resource_providers rp ...
    #                     WHERE rp.root_provider_id = scanned.id AND <filter 1> AND <room>
    #                     LIMIT 1) IS NOT NULL AND ... per filter
    #                    [or (SELECT COUNT(*) FROM (... LIMIT :needed)) >= :needed]
    #   FROM (SELECT id FROM resource_providers WHERE parent_provider_id IS NULL
    #         AND id > :after ORDER BY id LIMIT :window) scanned
    #  ORDER BY scanned.id
    scanned = (
        select(root_provider.c.id)
        .where(root_provider.c.parent_provider_id.is_(None), root_provider.c.id > after)
        .order_by(root_provider.c.id)
        .limit(window)
        .subquery("scanned")
    )
    root_ok = _root_ok_expr(root_filter)
    checks = []
    for f, needed in zip(filters, providers_needed, strict=True):
        inner = [rp.c.root_provider_id == scanned.c.id]
        if root_ok is not None:
            inner.append(root_ok == 1)
        matching = _with_room(f, rp.c.id, inner)
        if needed > 1:
            counted = select(func.count()).select_from(
                matching.limit(needed).subquery()
            ).scalar_subquery()
            checks.append(counted >= needed)
        else:
            checks.append(matching.limit(1).scalar_subquery().is_not(None))
    statement = select(scanned.c.id, case((and_(*checks), 1), else_=0)).order_by(scanned.c.id)
    rows = conn.execute(statement).all()
    if not rows:
        return [], None
    return [root for root, ok in rows if ok], rows[-1][0]


def _with_room(f: SlotFilter, column, conditions: list) -> Select:
    """``column`` of the providers the filter lets serve its slot (traits, aggregates,
    in_tree) that, for a slot with resources, have room for its amount; and ``conditions``."""
    conditions = _provider_conditions(f) + conditions
    if f.class_id is None:
        return select(column).where(*conditions)
    return (
        select(column)
        .select_from(inv.join(rp, rp.c.id == inv.c.resource_provider_id))
        .where(
            *_inventory_conditions(f),
            (inv.c.total - inv.c.reserved) * inv.c.allocation_ratio
            >= _usage_of_inventory() + f.amount,
            *conditions,
        )
    )


def _slot_select(
    number: int, f: SlotFilter, root_ok, sharing_ids: list[int], in_trees
) -> Select:
    conditions = _provider_conditions(f)
    if in_trees is not None:
        conditions.append(in_trees)
    if root_ok is not None:
        allowed = rp.c.id.in_(sharing_ids) if sharing_ids else None
        conditions.append(root_ok == 1 if allowed is None else or_(root_ok == 1, allowed))
        root_ok_column = root_ok
    else:
        root_ok_column = literal(1, Integer)
    if f.class_id is None:
        return select(
            literal(number, Integer),
            rp.c.id,
            rp.c.root_provider_id,
            root_ok_column,
            cast(null(), Integer),
            cast(null(), Integer),
            cast(null(), Integer),
            cast(null(), Integer),
            cast(null(), Integer),
        ).where(*conditions)
    return (
        select(
            literal(number, Integer),
            rp.c.id,
            rp.c.root_provider_id,
            root_ok_column,
            (inv.c.total - inv.c.reserved) * inv.c.allocation_ratio,
            _usage_of_inventory(),
            inv.c.min_unit,
            inv.c.max_unit,
            inv.c.step_size,
        )
        .select_from(inv.join(rp, rp.c.id == inv.c.resource_provider_id))
        .where(*_inventory_conditions(f), *conditions)
    )


def _inventory_conditions(f: SlotFilter) -> list:
    """The inventory of the filter's class takes its amount in one allocation."""
    return [
        inv.c.resource_class_id == f.class_id,
        inv.c.min_unit <= f.amount,
        inv.c.max_unit >= f.amount,
        literal(f.amount, Integer) % inv.c.step_size == 0,
    ]


def _usage_of_inventory():
    """The amount allocated of the inventory row's class on its provider."""
    return (
        select(func.coalesce(func.sum(allocations.c.used), 0))
        .where(
            allocations.c.resource_provider_id == inv.c.resource_provider_id,
            allocations.c.resource_class_id == inv.c.resource_class_id,
        )
        .correlate(inv)
        .scalar_subquery()
    )


def _provider_conditions(f: SlotFilter) -> list:
    conditions = []
    if f.tree_root_id is not None:
        conditions.append(rp.c.root_provider_id == f.tree_root_id)
    for any_of in f.required_traits:
        conditions.append(_has_any_trait(rp.c.id, any_of))
    if f.forbidden_traits:
        conditions.append(~_has_any_trait(rp.c.id, f.forbidden_traits))
    for any_of in f.member_of:
        conditions.append(_in_any_aggregate(any_of, f.aggregates_span_root))
    if f.forbidden_aggregates:
        conditions.append(~_in_any_aggregate(f.forbidden_aggregates, f.aggregates_span_root))
    return conditions


def _has_any_trait(provider_id_column, trait_ids: Iterable[int]):
    return exists().where(
        rpt.c.resource_provider_id == provider_id_column, rpt.c.trait_id.in_(list(trait_ids))
    )


def _in_any_aggregate(aggregate_ids: Iterable[int], span_root: bool):
    members = select(rpa.c.resource_provider_id).where(
        rpa.c.aggregate_id.in_(list(aggregate_ids))
    )
    if span_root:
        return or_(rp.c.id.in_(members), rp.c.root_provider_id.in_(members))
    return rp.c.id.in_(members)


def _root_ok_expr(root_filter: RootFilter):
    """1 when the provider's root passes root_required, else 0; None without one."""
    if not root_filter.required and not root_filter.forbidden:
        return None
    conditions = [_has_any_trait(rp.c.root_provider_id, any_of) for any_of in root_filter.required]
    if root_filter.forbidden:
        conditions.append(~_has_any_trait(rp.c.root_provider_id, root_filter.forbidden))
    return case((and_(*conditions), 1), else_=0)


def sharing_anchors(
    conn: Connection, sharing_ids: Iterable[int], root_filter: RootFilter
) -> dict[int, set[int]]:
    """For each sharing provider, the roots of the trees it serves.

    A sharing provider serves every tree with a provider in one of its
    aggregates; trees whose root fails root_required are left out.
    """
    # SELECT s.resource_provider_id, rp.root_provider_id
    # FROM resource_provider_aggregates s
    # JOIN resource_provider_aggregates o ON o.aggregate_id = s.aggregate_id
    # JOIN resource_providers rp ON rp.id = o.resource_provider_id
    # WHERE s.resource_provider_id IN (:sharing) AND <root_required on rp's root>
    shared = rpa.alias("shared")
    other = rpa.alias("other")
    anchors: dict[int, set[int]] = {}
    root_ok = _root_ok_expr(root_filter)
    for condition in id_conditions(conn, shared.c.resource_provider_id, sharing_ids):
        conditions = [condition] if root_ok is None else [condition, root_ok == 1]
        statement = (
            select(shared.c.resource_provider_id, rp.c.root_provider_id)
            .distinct()
            .select_from(
                shared.join(other, other.c.aggregate_id == shared.c.aggregate_id).join(
                    rp, rp.c.id == other.c.resource_provider_id
                )
            )
            .where(*conditions)
        )
        for sharing_id, root_id in conn.execute(statement).all():
            anchors.setdefault(sharing_id, set()).add(root_id)
    return anchors


def providers_with_trait(conn: Connection, trait_id: int | None) -> set[int]:
    """Ids of the providers that have the trait (none for an unknown trait)."""
    if trait_id is None:
        return set()
    statement = select(rpt.c.resource_provider_id).where(rpt.c.trait_id == trait_id)
    return set(conn.scalars(statement).all())


def tree_parents(conn: Connection, root_ids: Iterable[int]) -> dict[int, int | None]:
    """provider id -> parent id, for every provider of the given trees."""
    parents: dict[int, int | None] = {}
    for condition in id_conditions(conn, rp.c.root_provider_id, root_ids):
        statement = select(rp.c.id, rp.c.parent_provider_id).where(condition)
        parents.update(conn.execute(statement).all())
    return parents


def requested_traits(
    conn: Connection,
    trait_ids: Iterable[int],
    root_ids: Iterable[int] = (),
    provider_ids: Iterable[int] = (),
) -> dict[int, set[int]]:
    """provider id -> which of ``trait_ids`` it has, for the providers of the
    trees ``root_ids`` and for ``provider_ids`` (providers with none are absent)."""
    found: dict[int, set[int]] = {}
    wanted = sorted(set(trait_ids))
    for column, ids in ((rp.c.root_provider_id, root_ids), (rp.c.id, provider_ids)):
        for condition in id_conditions(conn, column, ids):
            statement = (
                select(rpt.c.resource_provider_id, rpt.c.trait_id)
                .join(rp, rp.c.id == rpt.c.resource_provider_id)
                .where(condition, rpt.c.trait_id.in_(wanted))
            )
            for provider_id, trait_id in conn.execute(statement).all():
                found.setdefault(provider_id, set()).add(trait_id)
    return found


def aggregate_ids(conn: Connection, uuids: Iterable[str]) -> dict[str, int]:
    """Internal ids of the aggregates that exist among ``uuids``."""
    wanted = sorted(set(uuids))
    if not wanted:
        return {}
    statement = select(placement_aggregates.c.uuid, placement_aggregates.c.id).where(
        placement_aggregates.c.uuid.in_(wanted)
    )
    return dict(conn.execute(statement).all())


def tree_root_ids(conn: Connection, uuids: Iterable[str]) -> dict[str, int]:
    """uuid -> id of the root of its tree, for the providers that exist among ``uuids``."""
    wanted = sorted(set(uuids))
    if not wanted:
        return {}
    statement = select(rp.c.uuid, rp.c.root_provider_id).where(rp.c.uuid.in_(wanted))
    return dict(conn.execute(statement).all())
