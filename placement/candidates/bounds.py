"""The bounds of a ranked search (``ranked``): what each tree's placements can score at most.

A tree's *bests* are, per slot, the best value (``scoring.Scorer.value``) among the
providers that can take it (``SearchPlan.tree_options``); its *bound* is their sum
plus the most the unsuffixed group's liking can give. ``TreeBounds`` works them out
for one request. Without sharing providers a tree's options, as positions in the
tree, are those of its kind (``search.kind_of``), found once per kind; so are its
bests when nothing is scored by usage (which differs from tree to tree).

``KeptBounds`` keeps each tree's bests and bound between requests, per kind of
ranked request (``CandidateSearch`` keys them by the plan's signature, the
utilization asked and the preferred traits' ids), for the requests without sharing
providers or ``in_tree``: they depend on nothing but the tree, so a tree's are
dropped when the copy says it changed, and a repeated request works out only those
of the trees written since. At most ``MAX_REQUESTS_KEPT`` kinds of request are
kept, and no more than their share of ``allocation_candidates_cache_mib`` (about
``BYTES_PER_TREE`` a tree), the least recently asked dropped first.
"""

from placement.candidates.per_tree import PerTreeByKey
from placement.candidates.plan import SearchPlan
from placement.candidates.scoring import Scorer, total
from placement.candidates.search import TreeKinds, kind_of

MAX_REQUESTS_KEPT = 16
BYTES_PER_TREE = 320  # a tree's bests and bound as kept, with its dict entry (measured: 3 slots)

# A tree's bests and bound, or None when some slot has no provider in it.
Bounded = tuple[list[float], float] | None
# The trees' bounds of one kind of request, by root id.
TreeBoundsKept = dict[int, Bounded]


class KeptBounds:
    """The trees' bounds of the ranked requests asked lately."""

    def __init__(self) -> None:
        self._by_request: PerTreeByKey[Bounded] = PerTreeByKey(MAX_REQUESTS_KEPT)

    def __len__(self) -> int:
        return len(self._by_request)

    def kept_for(self, key: tuple) -> TreeBoundsKept:
        """The bounds kept for requests of ``key`` (made empty when new), now the most
        recently asked."""
        return self._by_request.kept_for(key)

    def bytes_kept(self) -> int:
        """An estimate of what the kept bounds take."""
        return BYTES_PER_TREE * sum(self._by_request.tree_counts())

    def keep_within(self, budget_bytes: int) -> None:
        """Drop the least recently asked kinds of request (the last one too, when it alone
        is over) until what is kept is within ``budget_bytes``."""
        while len(self._by_request) and self.bytes_kept() > budget_bytes:
            self._by_request.drop_oldest()

    def drop_trees(self, roots) -> None:
        self._by_request.drop_trees(roots)

    def clear(self) -> None:
        self._by_request.clear()


class TreeBounds:
    """Each tree's options and bounds for one ranked request."""

    def __init__(
        self,
        plan: SearchPlan,
        scorer: Scorer,
        kept: TreeBoundsKept | None,
        kinds: TreeKinds | None = None,
    ) -> None:
        self.plan = plan
        self.scorer = scorer
        self.kept = kept if kept is not None else {}
        self.by_kind = not plan.sharing
        self.demand_items = tuple(sorted(plan.demand.items()))
        # (kept from earlier requests when given: ``search.TreeKinds``)
        self.kinds = (kinds or TreeKinds()).for_demand(plan.world, self.demand_items)
        self.positions: dict[object, list[list[int]] | None] = {}  # kind -> options
        self.kind_bests: dict[object, list[float]] = {}  # without utilization
        # Which slot's bests are another's: twins have the same options and values.
        self.same_as = [
            slot.twin_of if slot.twin_of is not None else position
            for position, slot in enumerate(plan.slots)
        ]

    def bound(self, root: int) -> float | None:
        """The most a placement of the tree can score, None when it has none."""
        kept = self.kept
        if root in kept:
            found = kept[root]
            return None if found is None else found[1]
        options = self.options(root)
        if options is None:
            kept[root] = None
            return None
        bests = self.bests(root, options)
        terms = list(bests)
        if self.scorer.group_position >= 0:
            terms.append(self.scorer.group_most(options))
        bound = total(terms)
        kept[root] = (bests, bound)
        return bound

    def options(self, root: int) -> list[list[int]] | None:
        """The tree's options, None when some slot has none."""
        plan = self.plan
        if not self.by_kind:
            options = plan.tree_options(root)
            return options if all(options) else None
        kind = kind_of(plan, root, self.demand_items, self.kinds)
        if kind is None:
            return None
        tree = plan.world.trees[root]
        if kind not in self.positions:
            options = plan.tree_options(root)
            where = {provider: index for index, provider in enumerate(tree)}
            self.positions[kind] = (
                [[where[p] for p in slot] for slot in options] if all(options) else None
            )
            return options if all(options) else None
        positions = self.positions[kind]
        if positions is None:
            return None
        options = []
        for position, slot in enumerate(positions):
            same = self.same_as[position]  # a twin's options are its twin's
            options.append(options[same] if same != position else [tree[p] for p in slot])
        return options

    def bests(self, root: int, options: list[list[int]]) -> list[float]:
        """Per slot, the most its value can be among the tree's ``options``."""
        found = self.kept.get(root)
        if found is not None:
            return found[0]
        kind = None
        if self.by_kind and not self.scorer.utilization:
            kind = kind_of(self.plan, root, self.demand_items, self.kinds)
            if kind in self.kind_bests:
                return self.kind_bests[kind]
        values, new_value = self.scorer.values, self.scorer.new_value
        bests: list[float] = []
        for position, choices in enumerate(options):
            same = self.same_as[position]
            if same != position:
                bests.append(bests[same])
                continue
            known = values[position]
            best = None
            for provider in choices:
                value = known.get(provider)
                if value is None:
                    value = known[provider] = new_value(position, provider)
                if best is None or value > best:
                    best = value
            bests.append(best)  # type: ignore[arg-type]  # every slot has an option
        if kind is not None:
            self.kind_bests[kind] = bests
        return bests
