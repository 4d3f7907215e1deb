"""The best candidates by score (``scoring``), found without listing them all.

A ranked request's answer is its candidates best score first, ties in a fixed
order: by anchor tree (root id order, or a random order of the trees when
``randomize_allocation_candidates`` is set), then in the tree's own walk order.
With a cap k it is the first k of that order, exactly, found by branch and bound:

* each tree gets a bound, the most a placement in it can score (per slot the best
  value among its options, plus the most the unsuffixed group's liking can give);
* trees are walked best bound first, and the search stops at the first tree whose
  bound cannot beat the k-th best found so far (nor can any after it);
* inside a tree, the walk (``walk.tree_candidates``) drops a partial placement as
  soon as its score so far plus the best values of the slots still open cannot beat
  the k-th best.

Without a cap every candidate is listed and sorted. With a deadline the search
stops as ``search.collect`` does and answers the best it found. Sharing providers
are handled as ``search`` does: a placement on sharing providers alone is met from
every tree they serve and kept once.
"""

import heapq
import random
from collections.abc import Iterator
from itertools import count

from placement.candidates.plan import SearchPlan
from placement.candidates.scoring import Scorer, total
from placement.candidates.search import (
    Candidate,
    Deadline,
    Render,
    SearchCounts,
    identity,
    kind_of,
)
from placement.candidates.walk import reorderings, tree_candidates

# How many partial placements a walk prunes between two looks at the deadline.
DEADLINE_EVERY = 256


def best(
    plan: SearchPlan, scorer: Scorer, cap: int | None, render: Render, shuffle: bool = False,
    counts: SearchCounts | None = None, deadline: float | None = None,
) -> list[tuple[float, Candidate]]:
    """Up to ``cap`` candidates (all when None) with their scores, best first."""
    counts = counts if counts is not None else SearchCounts()
    search = _Ranking(plan, scorer, cap, Deadline(deadline, counts))
    roots = plan.candidate_roots()
    counts.trees = len(roots)
    if shuffle:
        random.shuffle(roots)
    search.walk_trees(roots, counts)
    return [
        (score, Candidate(root, providers, render(providers, None)))
        for score, root, providers in search.answer()
    ]


class _Ranking:
    """The k best placements found so far, and the walks that find them."""

    def __init__(self, plan: SearchPlan, scorer: Scorer, cap: int | None, stop: Deadline):
        self.plan = plan
        self.scorer = scorer
        self.cap = cap
        self.stop = stop
        self.options = _TreeOptions(plan, scorer)
        # The kept placements, the worst on top: (score, -tree rank, -order, root, providers).
        self.kept: list[tuple[float, int, int, int, tuple[int, ...]]] = []
        self.order = count()  # the walk order, over all trees
        self.seen_sharing: set[tuple] = set()
        self.chains: dict[int, list[int]] = {}
        self.steps = 0  # partial placements the walks were told of
        self.expired = False  # a walk saw the deadline pass

    def walk_trees(self, roots: list[int], counts: SearchCounts) -> None:
        bounded = []
        for rank, root in enumerate(roots):
            options = self.options.of(root)
            if options is not None:
                bounded.append((-self.options.bound(root, options), rank, root, options))
        bounded.sort(key=lambda entry: (entry[0], entry[1]))
        timed = self.stop.timed
        families = self.plan.twin_families
        for negative_bound, rank, root, options in bounded:
            if timed and self.stop.passed():
                return
            if not self._could_enter(-negative_bound, rank):
                return  # nor can any tree after it: bounds only fall, ranks rise
            counts.trees_looked_at += 1
            for combination in self._combinations(root, rank, options):
                score = self.scorer.score(combination)
                # The twins' reorderings score alike and come later: keep them while
                # they can enter.
                placements = reorderings(combination, families) if families else (combination,)
                for placement in placements:
                    if not self._could_enter(score, rank):
                        break
                    if self._new(placement):
                        self._keep(score, rank, root, placement)
                if timed and self.stop.passed():
                    return
                if not self._could_enter(-negative_bound, rank):
                    break  # nothing left in this tree can enter

    def answer(self) -> list[tuple[float, int, tuple[int, ...]]]:
        """The kept placements, best first: (score, root, providers)."""
        ordered = sorted(self.kept, key=lambda k: (-k[0], -k[1], -k[2]))
        return [(score, root, providers) for score, _, _, root, providers in ordered]

    def _could_enter(self, bound: float, rank: int) -> bool:
        """Whether a placement of the tree of ``rank`` scoring at most ``bound``, met
        after every one kept of that tree, could be kept."""
        if self.cap is None or len(self.kept) < self.cap:
            return True
        worst_score, worst_rank, _, _, _ = self.kept[0]
        return bound > worst_score or (bound == worst_score and rank < -worst_rank)

    def _combinations(
        self, root: int, rank: int, options: list[list[int]]
    ) -> Iterator[tuple[int, ...]]:
        """The tree's placements the walk does not prune, one per combination of the
        twins' providers."""
        plan, scorer = self.plan, self.scorer
        bests = self.options.bests(root, options)
        group_position = scorer.group_position
        group_most = scorer.group_most(options) if group_position >= 0 else 0
        slots = len(options)
        timed = self.stop.timed

        def prune(position: int, providers: list[int]) -> bool:
            if timed:  # past the deadline, the walk drops everything left
                if self.expired:
                    return True
                self.steps += 1
                if self.steps % DEADLINE_EVERY == 0 and self.stop.passed():
                    self.expired = True
                    return True
            if self.cap is None or len(self.kept) < self.cap:
                return False
            terms = [scorer.value(p, providers[p]) for p in range(position + 1)]
            terms.extend(bests[position + 1:slots])
            if group_position >= 0:
                placed = position >= group_position
                terms.append(scorer.group_value(providers) if placed else group_most)
            return not self._could_enter(total(terms), rank)

        return tree_candidates(plan, options, self.chains, prune, reordered=False)

    def _new(self, placement: tuple[int, ...]) -> bool:
        """False for a placement on sharing providers alone met before from another tree."""
        sharing = self.plan.sharing
        if sharing and all(p in sharing for p in placement):
            key = identity(self.plan, placement)
            if key in self.seen_sharing:
                return False
            self.seen_sharing.add(key)
        return True

    def _keep(self, score: float, rank: int, root: int, placement: tuple[int, ...]) -> None:
        entry = (score, -rank, -next(self.order), root, placement)
        if self.cap is None or len(self.kept) < self.cap:
            heapq.heappush(self.kept, entry)
        else:
            heapq.heapreplace(self.kept, entry)  # _could_enter said it beats the worst


class _TreeOptions:
    """Each tree's options (``SearchPlan.tree_options``) and the best value of each slot
    among them. Without sharing providers a tree's options, as positions in the tree,
    are those of its kind (``search.kind_of``), found once per kind; so are its bounds
    when nothing is scored by usage (which differs from tree to tree)."""

    def __init__(self, plan: SearchPlan, scorer: Scorer) -> None:
        self.plan = plan
        self.scorer = scorer
        self.by_kind = not plan.sharing
        self.demand_items = tuple(sorted(plan.demand.items()))
        self.positions: dict[object, list[list[int]] | None] = {}  # kind -> options
        self.bounds: dict[object, tuple[list[float], float]] = {}  # kind -> bests, bound
        self.kind: dict[int, object] = {}  # root -> kind, for the trees asked of
        # Which slot's bests are another's: twins have the same options and values.
        self.same_as = [
            slot.twin_of if slot.twin_of is not None else position
            for position, slot in enumerate(plan.slots)
        ]

    def of(self, root: int) -> list[list[int]] | None:
        """The tree's options, None when some slot has none."""
        plan = self.plan
        if not self.by_kind:
            options = plan.tree_options(root)
            return options if all(options) else None
        kind = kind_of(plan, root, self.demand_items)
        if kind is None:
            return None
        self.kind[root] = kind
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
        """Per slot, the most its value can be among its ``options``."""
        kind = self.kind.get(root)
        if kind is not None and not self.scorer.utilization and kind in self.bounds:
            return self.bounds[kind][0]
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
        return bests

    def bound(self, root: int, options: list[list[int]]) -> float:
        """The most a placement of the tree can score."""
        kind = self.kind.get(root)
        if kind is not None and not self.scorer.utilization:
            known = self.bounds.get(kind)
            if known is not None:
                return known[1]
        bests = self.bests(root, options)
        terms = list(bests)
        if self.scorer.group_position >= 0:
            terms.append(self.scorer.group_most(options))
        bound = total(terms)
        if kind is not None and not self.scorer.utilization:
            self.bounds[kind] = (bests, bound)
        return bound
