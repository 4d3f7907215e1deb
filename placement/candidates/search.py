"""The lazy per-tree search: placements of every slot, with pruning, spread over trees.

``tree_candidates`` walks one tree depth first, one slot at a time, and drops
a partial placement as soon as it breaks something that can only get worse:

* a provider's room for a class (capacity minus usage, max_unit) is exceeded
  by the sum of what the slots placed there take;
* ``group_policy=isolate`` sees two granular groups on one provider;
* before 1.29, two providers of one tree are used;
* the unsuffixed group's required traits are missing from its providers once
  all its classes are placed;
* a ``same_subtree`` set can no longer have one of its providers be an
  ancestor (or itself) of all the others.

min_unit and step_size of the summed amounts are checked on the complete
placement. Twin slots (identical granular groups) are placed in
non-decreasing option order, and each complete placement is then expanded
into the distinct reorderings of the twins' providers, lazily.

``collect`` takes candidates round-robin over the trees: the first of every
tree, then the second of every tree, and so on, so that a ``limit`` answers
from as many trees as possible, and stops as soon as it has enough. Without
sharing providers it searches each kind of tree once (``tree_key``: shape and
free amounts capped at the request) and moves the placements onto the other
trees of that kind; with them, every tree is searched with the sharing
providers that serve it.
"""

from collections.abc import Iterator
from typing import NamedTuple

from placement.candidates.plan import SearchPlan
from placement.candidates.world import TreeForm


class Candidate(NamedTuple):
    root: int  # the tree the candidate is anchored in
    providers: tuple[int, ...]  # one provider per slot, in plan.slots order
    # Candidates with equal template keys place their slots alike (the same placement
    # of one kind of tree); None: not known to be alike any other.
    template_key: tuple | None = None


def collect(plan: SearchPlan, roots: list[int], cap: int | None) -> list[Candidate]:
    """Up to ``cap`` candidates (all when None), round-robin over ``roots``: the first
    of every tree, then the second of every tree, and so on."""
    if plan.sharing:
        return _collect_with_sharing(plan, roots, cap)
    return _collect_by_form(plan, roots, cap)


def _collect_by_form(plan: SearchPlan, roots: list[int], cap: int | None) -> list[Candidate]:
    """Without sharing providers, a tree's placements depend on nothing but its form and
    free amounts (``tree_key``): each kind of tree is searched on its first tree, and its
    placements, kept as positions in that tree, are moved onto the others of its kind."""
    world = plan.world
    demand = plan.demand
    demand_items = tuple(sorted(demand.items()))
    found: list[Candidate] = []
    chains: dict[int, list[int]] = {}
    answers: dict[object, _KindAnswer] = {}
    key_of_tree: dict[int, object] = {}
    live = roots
    rank = 0  # which placement of each tree this round takes
    while live:
        still_live = []
        for root in live:
            tree = world.trees[root]
            if rank == 0:
                form = world.form_of_tree[root]
                key = form.keys.get(demand_items, _UNKNOWN)
                if key is _UNKNOWN:
                    if len(form.keys) >= KEYS_KEPT_PER_FORM:
                        form.keys.clear()
                    key = form.keys[demand_items] = tree_key(form, demand, demand_items)
                if key is None:
                    continue
                key_of_tree[root] = key
                answer = answers.get(key)
                if answer is None:
                    answer = answers[key] = _KindAnswer(
                        tree_candidates(plan, plan.tree_options(root), chains), tree
                    )
            else:
                key = key_of_tree[root]
                answer = answers[key]
            positions = answer.get(rank)
            if positions is None:
                continue
            found.append(Candidate(root, tuple([tree[p] for p in positions]), (key, rank)))
            if cap is not None and len(found) >= cap:
                return found
            still_live.append(root)
        live = still_live
        rank += 1
    return found


_UNKNOWN = object()
KEYS_KEPT_PER_FORM = 16  # distinct demands (flavors, say) whose keys each form keeps


def tree_key(form: TreeForm, demand: dict[int, int], demand_items) -> object:
    """What a search without sharing providers sees of a tree, for a request asking at most
    ``demand`` of each class of one provider: the tree's shape and each inventory's free
    amount, capped at the demand of its class (room beyond it decides nothing; classes
    not asked for, nothing at all). Just the shape when every inventory has room; None
    when no provider of the tree has some class asked for (no placement at all)."""
    least_free = form.least_free
    roomy = True
    for class_id, amount in demand_items:
        free = least_free.get(class_id)
        if free is None:
            return None
        if free < amount:
            roomy = False
    if roomy:
        return form.shape
    capped = []
    for class_id, free in form.frees:
        need = demand.get(class_id)
        if need is not None:
            capped.append(free if free < need else need)
    return (form.shape, *capped)


def _collect_with_sharing(
    plan: SearchPlan, roots: list[int], cap: int | None
) -> list[Candidate]:
    """Each tree searched on its own, with the sharing providers that serve it."""
    found: list[Candidate] = []
    seen_outside_anchor: set[tuple] = set()

    def take(root: int, providers: tuple[int, ...]) -> bool:
        """Keep one placement unless it repeats one from another anchor tree."""
        if all(p in plan.sharing for p in providers):
            # Only sharing providers: the same placement is met again from
            # every tree they serve (and from their own).
            key = _identity(plan, providers)
            if key in seen_outside_anchor:
                return False
            seen_outside_anchor.add(key)
        found.append(Candidate(root, providers))
        return True

    def advance(placements: Iterator[tuple[int, ...]], root: int) -> bool:
        """Take the next kept placement of one tree; False when it has no more."""
        return any(take(root, providers) for providers in placements)

    chains: dict[int, list[int]] = {}
    live: list[tuple[Iterator[tuple[int, ...]], int]] = []
    for root in roots:
        placements = tree_candidates(plan, plan.tree_options(root), chains)
        if advance(placements, root):
            live.append((placements, root))
        if cap is not None and len(found) >= cap:
            return found
    while live:  # the second candidate of every tree, then the third, ...
        still_live = []
        for placements, root in live:
            if advance(placements, root):
                still_live.append((placements, root))
            if cap is not None and len(found) >= cap:
                return found
        live = still_live
    return found


class _KindAnswer:
    """The placements of one kind of tree (``tree_key``), searched on its first tree and
    kept as positions in that tree, as far as any tree of the kind has asked."""

    def __init__(self, placements: Iterator[tuple[int, ...]], tree: list[int]) -> None:
        self._placements = placements
        self._position = {provider: index for index, provider in enumerate(tree)}
        self.found: list[tuple[int, ...]] = []

    def get(self, rank: int) -> tuple[int, ...] | None:
        while len(self.found) <= rank:
            placement = next(self._placements, None)
            if placement is None:
                return None
            self.found.append(tuple(self._position[p] for p in placement))
        return self.found[rank]


def _identity(plan: SearchPlan, providers: tuple[int, ...]) -> tuple:
    """What the answer shows of a placement: who takes what, and each group's providers."""
    taken: dict[tuple[int, int], int] = {}
    for position, provider in enumerate(providers):
        for class_id, amount in plan.slots[position].amounts:
            taken[(provider, class_id)] = taken.get((provider, class_id), 0) + amount
    groups = sorted(
        (plan.slots[position].group.suffix, provider)
        for position, provider in enumerate(providers)
    )
    return (tuple(sorted(taken.items())), tuple(groups))


def tree_candidates(
    plan: SearchPlan, options: list[list[int]], chains: dict[int, list[int]]
) -> Iterator[tuple[int, ...]]:
    """Every valid placement of all slots, each slot on one of its ``options``."""
    if not all(options):
        return
    if all(len(o) == 1 for o in options):
        # One way to place everything (every flat compute node): check it whole.
        placement = tuple(o[0] for o in options)
        if _TreeSearch(plan, options, chains).valid_whole(placement):
            yield placement  # twins all on one provider: no other order exists
        return
    search = _TreeSearch(plan, options, chains)
    if plan.twin_families:
        for placement in search.placements(0):
            yield from _reorder_families(list(placement), plan.twin_families, 0)
    else:
        yield from search.placements(0)


class _TreeSearch:
    """The state of one depth-first walk over one tree."""

    def __init__(
        self, plan: SearchPlan, options: list[list[int]], chains: dict[int, list[int]]
    ) -> None:
        self.plan = plan
        self.options = options
        self.options_after: dict[tuple[tuple[int, ...], int], set[int]] = {}
        self.chosen: list[int] = [0] * len(options)  # option index per slot
        self.providers: list[int] = [0] * len(options)
        self.taken: dict[tuple[int, int], int] = {}
        self.granular_providers: dict[int, int] = {}  # provider -> granular slots on it
        self.tree_use: dict[int, tuple[int, int]] = {}  # root -> (provider, slots on it)
        self.last_unsuffixed = plan.unsuffixed_slots[-1] if plan.unsuffixed_slots else -1
        self.providers_of_world = plan.world.providers
        self.chains = chains  # provider -> itself and its ancestors, shared by all trees

    def placements(self, position: int) -> Iterator[tuple[int, ...]]:
        plan = self.plan
        if position == len(self.options):
            if self._units_fit():
                yield tuple(self.providers)
            return
        slot = plan.slots[position]
        granular = slot.group.granular
        start = 0
        if slot.twin_of is not None:
            start = self.chosen[slot.twin_of] + (1 if plan.isolate else 0)
        for index in range(start, len(self.options[position])):
            provider = self.options[position][index]
            if granular and plan.isolate and provider in self.granular_providers:
                continue
            if not self._room_for(provider, slot.amounts):
                continue
            if plan.one_provider_per_tree and not self._alone_in_tree(provider):
                continue
            self._place(position, index, provider, granular)
            if self._still_possible(position):
                yield from self.placements(position + 1)
            self._unplace(position, provider, granular)

    def valid_whole(self, placement: tuple[int, ...]) -> bool:
        """The checks of ``placements`` for one complete placement at once."""
        plan = self.plan
        granular = [
            p for p, slot in zip(placement, plan.slots, strict=True) if slot.group.granular
        ]
        if plan.isolate and len(set(granular)) != len(granular):
            return False
        if plan.one_provider_per_tree:
            by_tree: dict[int, int] = {}
            for provider in placement:
                root = self.providers_of_world[provider].root_id
                if by_tree.setdefault(root, provider) != provider:
                    return False
        for position, provider in enumerate(placement):
            self.providers[position] = provider
            for class_id, amount in plan.slots[position].amounts:
                key = (provider, class_id)
                self.taken[key] = self.taken.get(key, 0) + amount
        if plan.unsuffixed_traits and not self._unsuffixed_traits_met():
            return False
        last = len(placement) - 1
        if any(not self._subtree_possible(members, last) for members in plan.subtree_sets):
            return False
        return self._units_fit()

    def _room_for(self, provider: int, amounts) -> bool:
        inventories = self.providers_of_world[provider].inventories
        taken = self.taken
        for class_id, amount in amounts:
            key = (provider, class_id)
            if not inventories[class_id].takes(taken.get(key, 0) + amount):
                return False
        return True

    def _alone_in_tree(self, provider: int) -> bool:
        use = self.tree_use.get(self.providers_of_world[provider].root_id)
        return use is None or use[0] == provider

    def _place(self, position: int, index: int, provider: int, granular: bool) -> None:
        self.chosen[position] = index
        self.providers[position] = provider
        for class_id, amount in self.plan.slots[position].amounts:
            key = (provider, class_id)
            self.taken[key] = self.taken.get(key, 0) + amount
        if granular:
            self.granular_providers[provider] = self.granular_providers.get(provider, 0) + 1
        if self.plan.one_provider_per_tree:
            tree = self.providers_of_world[provider].root_id
            _, count = self.tree_use.get(tree, (provider, 0))
            self.tree_use[tree] = (provider, count + 1)

    def _unplace(self, position: int, provider: int, granular: bool) -> None:
        for class_id, amount in self.plan.slots[position].amounts:
            key = (provider, class_id)
            self.taken[key] -= amount
        if granular:
            left = self.granular_providers[provider] - 1
            if left:
                self.granular_providers[provider] = left
            else:
                del self.granular_providers[provider]
        if self.plan.one_provider_per_tree:
            tree = self.providers_of_world[provider].root_id
            _, count = self.tree_use[tree]
            if count == 1:
                del self.tree_use[tree]
            else:
                self.tree_use[tree] = (provider, count - 1)

    def _still_possible(self, position: int) -> bool:
        if position == self.last_unsuffixed and self.plan.unsuffixed_traits:
            if not self._unsuffixed_traits_met():
                return False
        for members in self.plan.subtree_sets_of_slot.get(position, ()):
            if not self._subtree_possible(members, position):
                return False
        return True

    def _unsuffixed_traits_met(self) -> bool:
        have: set[int] = set()
        for position in self.plan.unsuffixed_slots:
            have |= self.providers_of_world[self.providers[position]].traits
        return all(any_of & have for any_of in self.plan.unsuffixed_traits)

    def _subtree_possible(self, members: tuple[int, ...], position: int) -> bool:
        """Can ``members`` still have one provider that is an ancestor-or-self of all?

        That provider is the lowest common ancestor of all of them. With the
        members placed so far at P and their lowest common ancestor l, it must
        be l itself (if l is in P) or an ancestor-or-self of l that a member
        still to be placed can take.
        """
        providers = self.providers
        placed = [providers[m] for m in members if m <= position]
        lowest: int | None = placed[0]
        for provider in placed[1:]:
            lowest = self._common_ancestor(lowest, provider)  # type: ignore[arg-type]
            if lowest is None:
                return False
        if lowest in placed:
            return True
        still_open = self._options_after(members, position)
        return any(a in still_open for a in self._chain(lowest))  # type: ignore[arg-type]

    def _options_after(self, members: tuple[int, ...], position: int) -> set[int]:
        """Every provider the members after ``position`` could still take."""
        key = (members, position)
        found = self.options_after.get(key)
        if found is None:
            found = set()
            for member in members:
                if member > position:
                    found.update(self.options[member])
            self.options_after[key] = found
        return found

    def _chain(self, provider: int) -> list[int]:
        """``provider`` and its ancestors, up to its root."""
        chain = self.chains.get(provider)
        if chain is None:
            chain = [provider]
            providers = self.providers_of_world
            parent = providers[provider].parent_id
            while parent is not None:
                chain.append(parent)
                parent = providers[parent].parent_id
            self.chains[provider] = chain
        return chain

    def _common_ancestor(self, a: int, b: int) -> int | None:
        above_a = self._chain(a)
        for candidate in self._chain(b):
            if candidate in above_a:
                return candidate
        return None

    def _units_fit(self) -> bool:
        providers = self.providers_of_world
        return all(
            providers[provider].inventories[class_id].takes_exactly(amount)
            for (provider, class_id), amount in self.taken.items()
            if amount
        )


def _reorder_families(
    placement: list[int], families: list[list[int]], family: int
) -> Iterator[tuple[int, ...]]:
    if family == len(families):
        yield tuple(placement)
        return
    positions = families[family]
    for arrangement in _distinct_permutations(sorted(placement[p] for p in positions)):
        for position, provider in zip(positions, arrangement, strict=True):
            placement[position] = provider
        yield from _reorder_families(placement, families, family + 1)


def _distinct_permutations(items: list[int]) -> Iterator[tuple[int, ...]]:
    """Distinct permutations of sorted ``items`` in lexicographic order, lazily."""
    current = list(items)
    while True:
        yield tuple(current)
        # The next permutation: rightmost ascent, swap with the next larger, reverse.
        i = len(current) - 2
        while i >= 0 and current[i] >= current[i + 1]:
            i -= 1
        if i < 0:
            return
        j = len(current) - 1
        while current[j] <= current[i]:
            j -= 1
        current[i], current[j] = current[j], current[i]
        current[i + 1:] = reversed(current[i + 1:])
