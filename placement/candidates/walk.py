"""One tree's depth-first walk: every valid placement of all slots, with pruning.

``tree_candidates`` walks the slots one at a time, each over its options (the
providers able to serve it alone), and drops a partial placement as soon as it
breaks something that can only get worse:

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
"""

from collections.abc import Callable, Iterator

from placement.candidates.plan import SearchPlan

# Told a partial placement (the slot just placed, and the providers of the slots so far),
# says whether to drop it: how a ranked search (``ranked``) cuts what cannot enter its answer.
Prune = Callable[[int, list[int]], bool]


def tree_candidates(
    plan: SearchPlan,
    options: list[list[int]],
    chains: dict[int, list[int]],
    prune: Prune | None = None,
    reordered: bool = True,
) -> Iterator[tuple[int, ...]]:
    """Every valid placement of all slots, each slot on one of its ``options``; with
    ``prune``, not those of a partial placement it drops. Without ``reordered``, one
    placement of each combination of the twins' providers (``reorderings`` gives the
    others)."""
    if not all(options):
        return
    if all(len(o) == 1 for o in options):
        # One way to place everything (every flat compute node): check it whole.
        placement = tuple(o[0] for o in options)
        if _TreeSearch(plan, options, chains).valid_whole(placement):
            yield placement  # twins all on one provider: no other order exists
        return
    search = _TreeSearch(plan, options, chains, prune)
    if plan.twin_families and reordered:
        for placement in search.placements(0):
            yield from reorderings(placement, plan.twin_families)
    else:
        yield from search.placements(0)


def reorderings(placement: tuple[int, ...], families: list[list[int]]) -> Iterator[tuple[int, ...]]:
    """The distinct reorderings of the twins' providers in ``placement`` (itself among
    them), lazily."""
    return _reorder_families(list(placement), families, 0)


class _TreeSearch:
    """The state of one depth-first walk over one tree."""

    def __init__(
        self,
        plan: SearchPlan,
        options: list[list[int]],
        chains: dict[int, list[int]],
        prune: Prune | None = None,
    ) -> None:
        self.plan = plan
        self.prune = prune
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
            if self._still_possible(position) and (
                self.prune is None or not self.prune(position, self.providers)
            ):
                yield from self.placements(position + 1)
            self._unplace(position, provider, granular)

    def valid_whole(self, placement: tuple[int, ...]) -> bool:
        """The checks of ``placements`` for one complete placement at once."""
        plan = self.plan
        granular = [p for p, slot in zip(placement, plan.slots, strict=True) if slot.group.granular]
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
        current[i + 1 :] = reversed(current[i + 1 :])
