"""From a parsed request to a SearchPlan: slots, their providers per tree, and room.

``build_plan`` turns names into ids (400 for an unknown class or trait), asks
``placement.data.candidate_options`` for every slot's providers in one
statement, and arranges the answer for the search:

* a **slot** is one thing placed on one provider: each resource class of the
  unsuffixed group, each granular group (all its classes together), each
  resourceless granular group;
* providers are kept per tree (root id), and sharing providers per slot with
  the set of trees they serve;
* only trees that have an option for every slot are candidate trees;
* **twins** are granular groups with identical constraints (and the same
  same_subtree membership): the search places them in non-decreasing option
  order and lists their reorderings afterwards, so that 8 identical GPU groups
  cost one combination per host instead of 8! searches.

Slots are ordered for early pruning: the unsuffixed group's classes first
(its trait check needs all of them), then each same_subtree set with its
resourceless groups first (they are usually the subtree's top), then the rest.
"""

from dataclasses import dataclass, field
from typing import NamedTuple

from sqlalchemy import Connection

from placement.candidates.request import CandidateRequest, RequestGroup
from placement.data import candidate_options as sql
from placement.data import names

SHARING_TRAIT = "MISC_SHARES_VIA_AGGREGATE"


@dataclass(frozen=True)
class Slot:
    group: RequestGroup
    amounts: tuple[tuple[int, int], ...]  # (class id, amount); empty when resourceless
    twin_of: int | None = None  # position of the previous interchangeable slot


class Room(NamedTuple):
    """What one provider's inventory of one class still takes."""

    free: int  # capacity minus usage
    min_unit: int
    max_unit: int
    step_size: int

    def takes(self, amount: int) -> bool:
        return amount <= self.free and amount <= self.max_unit

    def takes_exactly(self, amount: int) -> bool:
        return (
            amount <= self.free
            and self.min_unit <= amount <= self.max_unit
            and amount % self.step_size == 0
        )


@dataclass
class SearchPlan:
    slots: list[Slot]
    tree_options: list[dict[int, list[int]]]  # per slot: root id -> provider ids
    sharing_options: list[list[int]]  # per slot: sharing provider ids
    anchors: dict[int, set[int]]  # sharing provider id -> roots of the trees it serves
    room: dict[tuple[int, int], Room]  # (provider id, class id) -> room
    root_of: dict[int, int]
    isolate: bool
    subtree_sets: list[tuple[int, ...]]  # slot positions tied by each same_subtree
    unsuffixed_slots: tuple[int, ...]
    unsuffixed_traits: tuple[frozenset[int], ...]  # any-of sets over the group's providers
    traits_of: dict[int, set[int]] = field(default_factory=dict)
    parents: dict[int, int | None] = field(default_factory=dict)
    one_provider_per_tree: bool = False  # before 1.29: no nested candidates
    candidate_roots: list[int] = field(default_factory=list)
    sharing: set[int] = field(default_factory=set)  # the sharing providers among the options
    class_names: dict[int, str] = field(default_factory=dict)
    # Derived once from the above for the search (see ``derive``):
    subtree_sets_of_slot: dict[int, list[tuple[int, ...]]] = field(default_factory=dict)
    twin_families: list[list[int]] = field(default_factory=list)

    def options(self, position: int, root: int) -> list[int]:
        """Providers that can serve slot ``position`` in the tree of ``root``."""
        local = self.tree_options[position].get(root, [])
        if not self.sharing_options[position]:
            return local
        shared = [s for s in self.sharing_options[position] if root in self.anchors[s]]
        return local + shared if shared else local

    def derive(self) -> None:
        """Index the same_subtree sets by slot and gather the twins into families."""
        for members in self.subtree_sets:
            for position in members:
                self.subtree_sets_of_slot.setdefault(position, []).append(members)
        families: dict[int, list[int]] = {}
        for position, slot in enumerate(self.slots):
            if slot.twin_of is not None:
                head = slot.twin_of
                while self.slots[head].twin_of is not None:
                    head = self.slots[head].twin_of  # type: ignore[assignment]
                families.setdefault(head, [head]).append(position)
        self.twin_families = list(families.values())


def build_plan(
    conn: Connection, request: CandidateRequest, nested_aware: bool
) -> SearchPlan | None:
    """The plan for ``request``, or None when no provider can serve some slot."""
    class_ids = names.resource_class_ids(conn, request.resource_class_names())
    trait_ids = names.ids_by_name(conn, names.traits, request.trait_names() | {SHARING_TRAIT})
    names.refuse_unknown(request.trait_names(), trait_ids, "No such trait(s)")
    sharing_ids = sql.providers_with_trait(conn, trait_ids.get(SHARING_TRAIT))
    aggregate_ids = sql.aggregate_ids(
        conn,
        {
            uuid
            for group in request.groups
            for uuid in _aggregate_uuids(group)
        },
    )
    tree_roots = sql.tree_root_ids(conn, {g.in_tree for g in request.groups if g.in_tree})

    slots = _ordered_slots(request, class_ids)
    filters: list[sql.SlotFilter] = []
    filter_slot: list[int] = []
    for position, slot in enumerate(slots):
        slot_filters = _slot_filters(slot, trait_ids, aggregate_ids, tree_roots)
        if slot_filters is None:
            return None
        filters.extend(slot_filters)
        filter_slot.extend([position] * len(slot_filters))
    root_filter = sql.RootFilter(
        required=tuple(frozenset(trait_ids[t] for t in s) for s in request.root_traits.required),
        forbidden=frozenset(trait_ids[t] for t in request.root_traits.forbidden),
    )
    rows = sql.slot_options(conn, filters, root_filter, sharing_ids)

    plan = _arrange(slots, filter_slot, rows, sharing_ids, root_filter, conn, request)
    plan.one_provider_per_tree = not nested_aware
    plan.derive()
    plan.class_names = {id_: name for name, id_ in class_ids.items()}
    if not plan.candidate_roots:
        return plan
    unsuffixed = _unsuffixed_group(request)
    if unsuffixed and len(plan.unsuffixed_slots) > 1 and unsuffixed.traits.required:
        plan.unsuffixed_traits = tuple(
            frozenset(trait_ids[t] for t in any_of) for any_of in unsuffixed.traits.required
        )
        providers = {
            p
            for position in plan.unsuffixed_slots
            for p in _all_options(plan, position)
        }
        plan.traits_of = sql.provider_traits(
            conn, providers, set().union(*plan.unsuffixed_traits)
        )
    if plan.subtree_sets:
        plan.parents = sql.tree_parents(conn, plan.candidate_roots)
    return plan


def _aggregate_uuids(group: RequestGroup) -> set[str]:
    uuids = set(group.aggregates.forbidden)
    for any_of in group.aggregates.member_of:
        uuids |= any_of
    return uuids


def _unsuffixed_group(request: CandidateRequest) -> RequestGroup | None:
    return next((group for group in request.groups if not group.granular), None)


def _ordered_slots(request: CandidateRequest, class_ids: dict[str, int]) -> list[Slot]:
    slots: list[Slot] = []
    for group in request.groups:
        if not group.granular:
            slots.extend(
                Slot(group, ((class_ids[name], amount),)) for name, amount in group.resources
            )
    placed = {group.suffix for group in request.groups if not group.granular}
    by_suffix = {group.suffix: group for group in request.groups}
    ordered_groups: list[RequestGroup] = []
    for suffixes in request.same_subtree:
        members = [by_suffix[s] for s in suffixes if s not in placed]
        members.sort(key=lambda g: bool(g.resources))  # resourceless first
        ordered_groups.extend(members)
        placed.update(g.suffix for g in members)
    ordered_groups.extend(g for g in request.groups if g.suffix not in placed)

    membership = {
        group.suffix: frozenset(i for i, s in enumerate(request.same_subtree) if group.suffix in s)
        for group in request.groups
    }
    last_with_key: dict[tuple, int] = {}
    for group in ordered_groups:
        key = (group.constraints(), membership[group.suffix])
        slots.append(
            Slot(
                group,
                tuple((class_ids[name], amount) for name, amount in group.resources),
                twin_of=last_with_key.get(key),
            )
        )
        last_with_key[key] = len(slots) - 1
    return slots


def _slot_filters(slot, trait_ids, aggregate_ids, tree_roots) -> list[sql.SlotFilter] | None:
    """The SQL filters of one slot (one per class), or None when it cannot match."""
    group = slot.group
    member_of = []
    for any_of in group.aggregates.member_of:
        known = frozenset(aggregate_ids[u] for u in any_of if u in aggregate_ids)
        if not known:
            return None
        member_of.append(known)
    tree_root = None
    if group.in_tree is not None:
        tree_root = tree_roots.get(group.in_tree)
        if tree_root is None:
            return None
    required = tuple(frozenset(trait_ids[t] for t in s) for s in group.traits.required)
    if not group.granular and len(group.resources) > 1:
        # The unsuffixed group's traits may be spread over its providers:
        # only a single-class unsuffixed group can demand them of its provider.
        required = ()
    base = sql.SlotFilter(
        required_traits=required,
        forbidden_traits=frozenset(trait_ids[t] for t in group.traits.forbidden),
        member_of=tuple(member_of),
        forbidden_aggregates=frozenset(
            aggregate_ids[u] for u in group.aggregates.forbidden if u in aggregate_ids
        ),
        aggregates_span_root=not group.granular,
        tree_root_id=tree_root,
    )
    if not slot.amounts:
        return [base]
    return [
        sql.SlotFilter(**{**base.__dict__, "class_id": class_id, "amount": amount})
        for class_id, amount in slot.amounts
    ]


def _arrange(slots, filter_slot, rows, sharing_ids, root_filter, conn, request) -> SearchPlan:
    """Group the option rows by slot and tree; find the sharing providers' trees."""
    # Row columns: see sql.OPTION_COLUMNS.
    per_filter: list[dict[int, tuple]] = [{} for _ in filter_slot]
    for row in rows:
        per_filter[row[0]][row[1]] = row
    filters_of_slot: list[list[int]] = [[] for _ in slots]
    for number, position in enumerate(filter_slot):
        filters_of_slot[position].append(number)
    room: dict[tuple[int, int], Room] = {}
    root_of: dict[int, int] = {}
    tree_options: list[dict[int, list[int]]] = [{} for _ in slots]
    sharing_options: list[list[int]] = [[] for _ in slots]
    own_tree_allowed: dict[int, bool] = {}
    for position, slot in enumerate(slots):
        numbers = filters_of_slot[position]
        candidates = per_filter[numbers[0]]
        if len(numbers) > 1:
            others = [per_filter[n] for n in numbers[1:]]
            candidates = {p: r for p, r in candidates.items() if all(p in o for o in others)}
        local = tree_options[position]
        for provider_id in sorted(candidates):
            _, _, root_id, root_ok, *_ = candidates[provider_id]
            root_of[provider_id] = root_id
            for number, (class_id, _) in zip(numbers, slot.amounts, strict=False):
                # (a resourceless slot has one filter and no amounts: no room)
                _, _, _, _, capacity, used, min_unit, max_unit, step = per_filter[number][
                    provider_id
                ]
                room[(provider_id, class_id)] = Room(
                    int(capacity) - used, min_unit, max_unit, step
                )
            if provider_id in sharing_ids:
                sharing_options[position].append(provider_id)
                own_tree_allowed[provider_id] = bool(root_ok)
            else:
                local.setdefault(root_id, []).append(provider_id)

    anchors: dict[int, set[int]] = {}
    if own_tree_allowed:
        anchors = sql.sharing_anchors(conn, own_tree_allowed, root_filter)
        for sharing_id in own_tree_allowed:
            served = anchors.setdefault(sharing_id, set())
            served.discard(root_of[sharing_id])
        # A sharing provider is also a plain member of its own tree.
        for position in range(len(slots)):
            for sharing_id in sharing_options[position]:
                if own_tree_allowed[sharing_id]:
                    tree = tree_options[position].setdefault(root_of[sharing_id], [])
                    tree.append(sharing_id)

    roots: set[int] | None = None
    for position in range(len(slots)):
        reachable = set(tree_options[position])
        for sharing_id in sharing_options[position]:
            reachable |= anchors[sharing_id]
        roots = reachable if roots is None else roots & reachable
    subtree_sets = [
        tuple(p for p, slot in enumerate(slots) if slot.group.suffix in suffixes)
        for suffixes in request.same_subtree
    ]
    return SearchPlan(
        slots=slots,
        tree_options=tree_options,
        sharing_options=sharing_options,
        anchors=anchors,
        room=room,
        root_of=root_of,
        isolate=request.group_policy == "isolate",
        subtree_sets=subtree_sets,
        unsuffixed_slots=tuple(p for p, slot in enumerate(slots) if not slot.group.granular),
        unsuffixed_traits=(),
        candidate_roots=sorted(roots or ()),
        sharing=set(own_tree_allowed),
    )


def _all_options(plan: SearchPlan, position: int) -> set[int]:
    found = set(plan.sharing_options[position])
    for providers in plan.tree_options[position].values():
        found.update(providers)
    return found
