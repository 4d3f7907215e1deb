"""From a parsed request to a SearchPlan: slots, their providers per tree, and room.

``build_plan`` turns names into ids (400 for an unknown class or trait) and
builds the slots (``placement.candidates.slots``). The providers of each slot
come from ``placement.data.candidate_options``, kept per tree (root id), with
sharing providers per slot and the set of trees each serves. Only trees with
an option for every slot are searched. Two ways to get there:

* **eager** (no ``limit``, or sharing providers exist): one statement reads
  every slot's providers; the candidate trees are those reached by every slot.
* **lazy** (a ``limit`` and no sharing provider anywhere): one statement
  intersects, in SQL, the trees each slot can be served in; the providers of a
  batch of those trees are read only when the search reaches them
  (``read_trees``), so that ``limit=10`` over 10,000 trees reads about 10.
"""

from collections.abc import Iterator, Set
from dataclasses import dataclass, field
from typing import NamedTuple

from sqlalchemy import Connection

from placement.candidates.request import CandidateRequest
from placement.candidates.slots import Slot, aggregate_uuids, ordered_slots, slot_filters
from placement.data import candidate_options as sql
from placement.data import names

SHARING_TRAIT = "MISC_SHARES_VIA_AGGREGATE"
# Plans without a list of trees look at roots a window at a time, doubling; after this
# many windows, the rest is listed in one statement.
FIRST_SCAN_WINDOW = 32
MAX_SCAN_WINDOW = 1024
SCANS_BEFORE_LISTING = 3


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
    conn: Connection
    slots: list[Slot]
    filters: list[sql.SlotFilter]  # each distinct SQL filter once (twins share theirs)
    filters_of_slot: list[list[int]]  # per slot: its filters (one per class)
    root_filter: sql.RootFilter
    isolate: bool
    subtree_sets: list[tuple[int, ...]]  # slot positions tied by each same_subtree
    unsuffixed_slots: tuple[int, ...]
    class_names: dict[int, str]
    one_provider_per_tree: bool  # before 1.29: no nested candidates
    unsuffixed_traits: tuple[frozenset[int], ...] = ()  # any-of sets over its providers
    # The options, filled by add_rows / link_sharing:
    tree_options: list[dict[int, list[int]]] = field(default_factory=list)
    sharing_options: list[list[int]] = field(default_factory=list)
    anchors: dict[int, set[int]] = field(default_factory=dict)  # sharing id -> roots served
    room: dict[tuple[int, int], Room] = field(default_factory=dict)  # (provider, class)
    root_of: dict[int, int] = field(default_factory=dict)
    sharing: set[int] = field(default_factory=set)  # the sharing providers among the options
    # The trees to search, in order; None: found as the search goes (``matching_roots``).
    candidate_roots: list[int] | None = field(default_factory=list)
    options_read_lazily: bool = False
    traits_of: dict[int, set[int]] = field(default_factory=dict)
    parents: dict[int, int | None] = field(default_factory=dict)
    subtree_sets_of_slot: dict[int, list[tuple[int, ...]]] = field(default_factory=dict)
    twin_families: list[list[int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.tree_options = [{} for _ in self.slots]
        self.sharing_options = [[] for _ in self.slots]
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

    def options(self, position: int, root: int) -> list[int]:
        """Providers that can serve slot ``position`` in the tree of ``root``."""
        local = self.tree_options[position].get(root, [])
        if not self.sharing_options[position]:
            return local
        shared = [s for s in self.sharing_options[position] if root in self.anchors[s]]
        return local + shared if shared else local

    def providers_needed(self) -> list[int]:
        """Per filter, the distinct providers a tree needs: isolated granular
        groups sharing a filter (twins) each need their own."""
        needed = [1] * len(self.filters)
        if self.isolate:
            granular_uses = [0] * len(self.filters)
            for position, slot in enumerate(self.slots):
                if slot.group.granular:
                    for number in self.filters_of_slot[position]:
                        granular_uses[number] += 1
            needed = [max(1, uses) for uses in granular_uses]
        return needed

    @property
    def needs_tree_reads(self) -> bool:
        return bool(self.options_read_lazily or self.subtree_sets or self.unsuffixed_traits)

    def read_trees(self, roots: list[int]) -> None:
        """Read what the search needs of these trees: their options when read
        lazily, the parents of their providers (for same_subtree) and the
        unsuffixed group's required traits on them. The search calls this just
        before it visits them, a batch at a time."""
        if self.options_read_lazily:
            self.add_rows(
                sql.slot_options(self.conn, self.filters, self.root_filter, set(), roots)
            )
        if self.subtree_sets:
            self.parents.update(sql.tree_parents(self.conn, roots))
        if self.unsuffixed_traits:
            wanted = set().union(*self.unsuffixed_traits)
            for provider, traits in sql.requested_traits(self.conn, wanted, roots).items():
                self.traits_of.setdefault(provider, set()).update(traits)

    def matching_roots(self) -> Iterator[int]:
        """The trees to search, in root id order, found as they are asked for (plans
        without a list of them).

        Roots are looked at a window at a time (``scan_candidate_roots``), so that a
        search whose first trees answer it reads no others. After SCANS_BEFORE_LISTING
        windows (the search wants many trees, or the query matches few) the rest are
        listed in one statement, as for a plan with a list.
        """
        needed = self.providers_needed()
        after, window = 0, FIRST_SCAN_WINDOW
        for _ in range(SCANS_BEFORE_LISTING):
            matches, last = sql.scan_candidate_roots(
                self.conn, self.filters, self.root_filter, needed, after, window
            )
            yield from matches
            if last is None:
                return
            after, window = last, min(window * 2, MAX_SCAN_WINDOW)
        yield from sql.candidate_roots(self.conn, self.filters, self.root_filter, needed, after)

    def add_rows(self, rows: list[tuple], sharing_ids: Set[int] = frozenset()) -> None:
        """File option rows (sql.OPTION_COLUMNS) by slot and tree, with their room."""
        per_filter: list[dict[int, tuple]] = [{} for _ in self.filters]
        for row in rows:
            capacity, used = row[4], row[5]
            if capacity is None or int(capacity) - used >= self.filters[row[0]].amount:
                per_filter[row[0]][row[1]] = row
        for position, slot in enumerate(self.slots):
            numbers = self.filters_of_slot[position]
            candidates = per_filter[numbers[0]]
            if len(numbers) > 1:  # a granular group: one provider with every class
                others = [per_filter[n] for n in numbers[1:]]
                candidates = {p: r for p, r in candidates.items() if all(p in o for o in others)}
            local = self.tree_options[position]
            for provider_id in sorted(candidates):
                _, _, root_id, root_ok, *_ = candidates[provider_id]
                self.root_of[provider_id] = root_id
                for number, (class_id, _) in zip(numbers, slot.amounts, strict=False):
                    # (a resourceless slot has one filter and no amounts: no room)
                    _, _, _, _, capacity, used, min_unit, max_unit, step = per_filter[number][
                        provider_id
                    ]
                    self.room[(provider_id, class_id)] = Room(
                        int(capacity) - used, min_unit, max_unit, step
                    )
                if provider_id in sharing_ids:
                    self.sharing_options[position].append(provider_id)
                    self.sharing.add(provider_id)
                if provider_id not in sharing_ids or root_ok:
                    # (a sharing provider is also a member of its own tree)
                    local.setdefault(root_id, []).append(provider_id)

    def link_sharing(self) -> None:
        """Find the trees each sharing provider serves (besides its own)."""
        if not self.sharing:
            return
        self.anchors = sql.sharing_anchors(self.conn, self.sharing, self.root_filter)
        for sharing_id in self.sharing:
            self.anchors.setdefault(sharing_id, set()).discard(self.root_of[sharing_id])

    def roots_with_every_slot(self) -> list[int]:
        roots: set[int] | None = None
        for position in range(len(self.slots)):
            reachable = set(self.tree_options[position])
            for sharing_id in self.sharing_options[position]:
                reachable |= self.anchors[sharing_id]
            roots = reachable if roots is None else roots & reachable
        return sorted(roots or ())


def build_plan(
    conn: Connection,
    request: CandidateRequest,
    nested_aware: bool,
    lazy: bool,
    in_order: bool = True,
) -> SearchPlan | None:
    """The plan for ``request``, or None when some slot cannot match anything.

    ``lazy``: the caller will stop early (a limit), so read options per tree
    batch when no sharing provider exists. ``in_order``: the caller searches the
    trees in root id order (it does not shuffle them), so a lazy plan does not
    list them up front either: the search reads them a page at a time
    (``candidate_roots`` None, ``matching_roots``).
    """
    class_ids = names.resource_class_ids(conn, request.resource_class_names())
    trait_ids = names.ids_by_name(conn, names.traits, request.trait_names() | {SHARING_TRAIT})
    names.refuse_unknown(request.trait_names(), trait_ids, "No such trait(s)")
    sharing_ids = sql.providers_with_trait(conn, trait_ids.get(SHARING_TRAIT))
    aggregate_ids = sql.aggregate_ids(
        conn, {uuid for group in request.groups for uuid in aggregate_uuids(group)}
    )
    tree_roots = sql.tree_root_ids(conn, {g.in_tree for g in request.groups if g.in_tree})

    slots = ordered_slots(request, class_ids)
    # Twins have the same filters: each distinct filter is asked for once.
    filter_numbers: dict[sql.SlotFilter, int] = {}
    filters_of_slot: list[list[int]] = []
    for slot in slots:
        filters = slot_filters(slot, trait_ids, aggregate_ids, tree_roots)
        if filters is None:
            return None
        filters_of_slot.append(
            [filter_numbers.setdefault(f, len(filter_numbers)) for f in filters]
        )
    plan = SearchPlan(
        conn=conn,
        slots=slots,
        filters=list(filter_numbers),
        filters_of_slot=filters_of_slot,
        root_filter=sql.RootFilter(
            required=tuple(
                frozenset(trait_ids[t] for t in s) for s in request.root_traits.required
            ),
            forbidden=frozenset(trait_ids[t] for t in request.root_traits.forbidden),
        ),
        isolate=request.group_policy == "isolate",
        subtree_sets=[
            tuple(p for p, slot in enumerate(slots) if slot.group.suffix in suffixes)
            for suffixes in request.same_subtree
        ],
        unsuffixed_slots=tuple(p for p, slot in enumerate(slots) if not slot.group.granular),
        class_names={id_: name for name, id_ in class_ids.items()},
        one_provider_per_tree=not nested_aware,
    )
    if lazy and not sharing_ids:
        plan.options_read_lazily = True
        plan.candidate_roots = None if in_order else sql.candidate_roots(
            conn, plan.filters, plan.root_filter, plan.providers_needed()
        )
    else:
        rows = sql.slot_options(conn, plan.filters, plan.root_filter, sharing_ids)
        plan.add_rows(rows, sharing_ids)
        plan.link_sharing()
        plan.candidate_roots = plan.roots_with_every_slot()

    unsuffixed = next((g for g in request.groups if not g.granular), None)
    if unsuffixed and len(plan.unsuffixed_slots) > 1 and unsuffixed.traits.required:
        plan.unsuffixed_traits = tuple(
            frozenset(trait_ids[t] for t in any_of) for any_of in unsuffixed.traits.required
        )
        # Sharing providers live in other trees: their traits are read now,
        # those of each tree's own providers when the search gets to it.
        plan.traits_of = sql.requested_traits(
            conn, set().union(*plan.unsuffixed_traits), provider_ids=plan.sharing
        )
    return plan
