"""From a parsed request to a SearchPlan over the worker's copy of the providers.

``build_plan`` turns names into ids (no plan for an unknown class or trait),
builds the slots and the filter of each (``placement.candidates.slots`` and
``filters``), and finds the sharing providers that can serve some slot, with
the trees each of them serves. The plan then answers, for any tree, which of
its providers (and which sharing providers) can serve each slot
(``tree_options``), and which trees a candidate may be anchored in
(``candidate_roots``). Everything is read from the ``ProviderWorld``, already
brought up to date for this request; no SQL runs after ``build_plan``.
"""

from dataclasses import dataclass, field

from sqlalchemy import Connection

from placement import errors
from placement.candidates.filters import RootFilter, SlotFilter
from placement.candidates.request import CandidateRequest
from placement.candidates.slots import Slot, ordered_slots, slot_filter
from placement.data import names
from placement.replica.world import ProviderWorld

SHARING_TRAIT = "MISC_SHARES_VIA_AGGREGATE"


@dataclass
class SearchPlan:
    world: ProviderWorld
    slots: list[Slot]
    filter_of_slot: list[SlotFilter]
    root_filter: RootFilter
    isolate: bool
    subtree_sets: list[tuple[int, ...]]  # slot positions tied by each same_subtree
    unsuffixed_slots: tuple[int, ...]
    class_names: dict[int, str]  # of the requested classes
    one_provider_per_tree: bool  # before 1.29: no nested candidates
    unsuffixed_traits: tuple[frozenset[int], ...] = ()  # any-of sets over its providers
    # The trees every in_tree names (None: no in_tree), for a plan without sharing.
    in_tree_roots: set[int] | None = None
    # Per slot, the sharing providers that can serve it; the trees each serves.
    sharing_options: list[list[int]] = field(default_factory=list)
    anchors: dict[int, set[int]] = field(default_factory=dict)
    sharing: set[int] = field(default_factory=set)  # the sharing providers among the options
    subtree_sets_of_slot: dict[int, list[tuple[int, ...]]] = field(default_factory=dict)
    twin_families: list[list[int]] = field(default_factory=list)
    # class id -> the most one provider can be asked for: the sum over the slots
    demand: dict[int, int] = field(default_factory=dict)
    # The ids of the traits the groups prefer or avoid (``preferences``), by name.
    preferred_trait_ids: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for slot in self.slots:
            for class_id, amount in slot.amounts:
                self.demand[class_id] = self.demand.get(class_id, 0) + amount
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

    def signature(self) -> tuple:
        """What decides a tree's candidates and how they are written, but the tree itself
        and the sharing providers: two plans of one signature find the same candidates in
        one tree (the answers kept between requests, ``placement.candidates.answers``).
        Traits, aggregates and classes are in it by name (the slots' groups) and by id
        (the filters), so an id given to another name makes another signature. Not in it:
        ``root_filter`` and ``in_tree_roots`` only choose the trees; the sharing fields
        name no provider whenever answers are kept; the rest follows from these."""
        return (
            tuple(self.slots),
            tuple(self.filter_of_slot),
            self.isolate,
            tuple(self.subtree_sets),
            self.unsuffixed_slots,
            self.unsuffixed_traits,
            self.one_provider_per_tree,
            tuple(sorted(self.class_names.items())),
        )

    def candidate_roots(self, among: set[int] | None = None) -> list[int]:
        """The trees a candidate may be anchored in, in root id order: those whose root
        passes root_required (and, when nothing is shared, the trees in_tree names), of
        the trees ``among`` (when None: the world's, and without sharing providers only
        those with an inventory of every class asked for)."""
        world = self.world
        if among is None:
            among = self.in_tree_roots
        elif self.in_tree_roots is not None:
            among = among & self.in_tree_roots
        if among is None and not self.sharing and self.demand:
            # Without sharing providers, a tree lacking a class asked for has no candidate.
            roots = world.roots_having(frozenset(self.demand))
        elif among is None:
            roots = world.roots_in_order()
        else:
            roots = sorted(root for root in among if root in world.trees)
        if not self.root_filter.required and not self.root_filter.forbidden:
            return roots
        return [root for root in roots if self.root_filter.matches(world.providers[root])]

    def tree_options(self, root_id: int) -> list[list[int]]:
        """Per slot, the providers that can serve it in the tree of ``root_id``: its own,
        in id order, then the sharing providers that serve the tree."""
        providers = self.world.providers
        root = providers[root_id]
        tree = [providers[p] for p in self.world.trees[root_id]]
        known: dict[SlotFilter, list[int]] = {}  # twins have the same filter
        options = []
        for position, wanted in enumerate(self.filter_of_slot):
            local = known.get(wanted)
            if local is None:
                local = known[wanted] = [p.id for p in tree if wanted.matches(p, root)]
            shared = [s for s in self.sharing_options[position] if root_id in self.anchors[s]]
            options.append(local + shared if shared else local)
        return options


def build_plan(
    conn: Connection, world: ProviderWorld, request: CandidateRequest, nested_aware: bool
) -> SearchPlan | None:
    """The plan for ``request`` over ``world``, or None when some slot cannot match
    anything (an unknown aggregate or in_tree provider) or a class or trait does not
    exist (what upstream answers then: ``placement.candidates.unknown_names``). 400 for
    a trait a group prefers or avoids that does not exist."""
    preferred_traits = request.preferred_trait_names()
    preferred_trait_ids = known_trait_ids(conn, world, preferred_traits)
    if len(preferred_trait_ids) < len(preferred_traits):
        unknown = sorted(preferred_traits - set(preferred_trait_ids))
        raise errors.BadRequest(f"No such trait(s): {', '.join(unknown)}.")
    wanted_classes = request.resource_class_names()
    class_ids = known_class_ids(world, wanted_classes)
    wanted_traits = request.trait_names()
    trait_ids = known_trait_ids(conn, world, wanted_traits)
    if len(class_ids) < len(wanted_classes) or len(trait_ids) < len(wanted_traits):
        return None
    # An aggregate no provider is in matches nothing, as one that does not exist.
    aggregate_ids = world.aggregate_id_of_uuid
    tree_roots = {
        uuid: world.providers[world.id_of_uuid[uuid]].root_id
        for uuid in {g.in_tree for g in request.groups if g.in_tree}
        if uuid in world.id_of_uuid
    }

    slots = ordered_slots(request, class_ids)
    filter_of_slot = []
    for slot in slots:
        found = slot_filter(slot, trait_ids, aggregate_ids, tree_roots)
        if found is None:
            return None
        filter_of_slot.append(found)
    plan = SearchPlan(
        world=world,
        slots=slots,
        filter_of_slot=filter_of_slot,
        root_filter=RootFilter(
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
        preferred_trait_ids=preferred_trait_ids,
    )
    sharing_trait = world.trait_id_of_name.get(SHARING_TRAIT)
    _add_sharing(plan, world.with_trait.get(sharing_trait, set()) if sharing_trait else set())
    in_trees = {f.tree_root_id for f in filter_of_slot if f.tree_root_id}
    if in_trees and not plan.sharing:
        # Every provider of a candidate is in its tree: only a tree every in_tree names.
        plan.in_tree_roots = in_trees if len(in_trees) == 1 else set()

    unsuffixed = next((g for g in request.groups if not g.granular), None)
    if unsuffixed and len(plan.unsuffixed_slots) > 1 and unsuffixed.traits.required:
        plan.unsuffixed_traits = tuple(
            frozenset(trait_ids[t] for t in any_of) for any_of in unsuffixed.traits.required
        )
    return plan


def known_class_ids(world: ProviderWorld, wanted: set[str]) -> dict[str, int]:
    """Ids of the classes among ``wanted`` that exist."""
    return {name: id_ for id_, name in world.class_names.items() if name in wanted}


def known_trait_ids(conn: Connection, world: ProviderWorld, wanted: set[str]) -> dict[str, int]:
    """Ids of the traits among ``wanted`` that exist: from the world for the traits some
    provider has, from the database for the others (which no provider has)."""
    known = world.trait_id_of_name
    found = {name: known[name] for name in wanted if name in known}
    if len(found) < len(wanted):
        found |= names.ids_by_name(conn, names.traits, wanted - set(found))
    return found


def _add_sharing(plan: SearchPlan, sharing_ids: set[int]) -> None:
    """The sharing providers that can serve each slot, and the trees each serves: those
    with a provider in one of its aggregates, besides its own."""
    providers = plan.world.providers
    plan.sharing_options = [[] for _ in plan.slots]
    for sharing_id in sorted(sharing_ids):
        provider = providers[sharing_id]
        root = providers[provider.root_id]
        for position, wanted in enumerate(plan.filter_of_slot):
            if wanted.matches(provider, root):
                plan.sharing_options[position].append(sharing_id)
                plan.sharing.add(sharing_id)
    for sharing_id in plan.sharing:
        served = {
            providers[member].root_id
            for aggregate_id in providers[sharing_id].aggregates
            for member in plan.world.in_aggregate.get(aggregate_id, ())
        }
        served.discard(providers[sharing_id].root_id)
        plan.anchors[sharing_id] = served
