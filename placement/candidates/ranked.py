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
stops as ``search.collect`` does (also while it works out the bounds) and answers
the best it found. A placement on sharing providers alone is met from every tree
they all serve; it is kept from one, its anchor: the first of them in rank order.
"""

import heapq
import random
from collections.abc import Iterator
from itertools import count

from placement.candidates.bounds import TreeBounds, TreeBoundsKept
from placement.candidates.plan import SearchPlan
from placement.candidates.scoring import Scorer, total
from placement.candidates.search import (
    Candidate,
    Deadline,
    Render,
    SearchCounts,
    TreeKinds,
)
from placement.candidates.walk import reorderings, tree_candidates

# How many partial placements a walk prunes between two looks at the deadline.
DEADLINE_EVERY = 256


def best(
    plan: SearchPlan,
    scorer: Scorer,
    cap: int | None,
    render: Render,
    shuffle: bool = False,
    counts: SearchCounts | None = None,
    deadline: float | None = None,
    kept: TreeBoundsKept | None = None,
    kinds: TreeKinds | None = None,
) -> list[tuple[float, Candidate]]:
    """Up to ``cap`` candidates (all when None) with their scores, best first. ``kept``:
    the trees' bounds found by earlier requests like this one (``bounds.KeptBounds``), and
    where this one keeps those it finds; ``kinds``, the trees' kinds (``search.TreeKinds``)."""
    counts = counts if counts is not None else SearchCounts()
    search = _Ranking(plan, scorer, cap, Deadline(deadline, counts), kept, kinds)
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

    def __init__(
        self,
        plan: SearchPlan,
        scorer: Scorer,
        cap: int | None,
        stop: Deadline,
        kept: TreeBoundsKept | None,
        kinds: TreeKinds | None,
    ) -> None:
        self.plan = plan
        self.scorer = scorer
        self.cap = cap
        self.stop = stop
        self.bounds = TreeBounds(plan, scorer, kept, kinds)
        # The kept placements, the worst on top: (score, -tree rank, -order, root, providers).
        self.kept: list[tuple[float, int, int, int, tuple[int, ...]]] = []
        self.order = count()  # the walk order, over all trees
        self.rank_of: dict[int, int] = {}  # root -> its rank (a placement's anchor order)
        self.chains: dict[int, list[int]] = {}
        self.steps = 0  # partial placements the walks were told of
        self.expired = False  # a walk saw the deadline pass

    def walk_trees(self, roots: list[int], counts: SearchCounts) -> None:
        timed = self.stop.timed
        self.rank_of = {root: rank for rank, root in enumerate(roots)}
        bounded = []
        for rank, root in enumerate(roots):
            if timed and rank % DEADLINE_EVERY == 0 and self.stop.passed():
                return  # not even every bound worked out: nothing found
            bound = self.bounds.bound(root)
            if bound is not None:
                bounded.append((-bound, rank, root))
        bounded.sort()
        families = self.plan.twin_families
        for negative_bound, rank, root in bounded:
            if timed and self.stop.passed():
                return
            if not self._could_enter(-negative_bound, rank):
                return  # nor can any tree after it: bounds only fall, ranks rise
            counts.trees_looked_at += 1
            options = self.bounds.options(root)
            assert options is not None  # it has a bound
            for combination in self._combinations(root, rank, options):
                score = self.scorer.score(combination)
                # The twins' reorderings score alike and come later: keep them while
                # they can enter.
                placements = reorderings(combination, families) if families else (combination,)
                for placement in placements:
                    if not self._could_enter(score, rank):
                        break
                    if self._anchored_in(rank, placement):
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
        bests = self.bounds.bests(root, options)
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
            terms.extend(bests[position + 1 : slots])
            if group_position >= 0:
                placed = position >= group_position
                terms.append(scorer.group_value(providers) if placed else group_most)
            return not self._could_enter(total(terms), rank)

        return tree_candidates(plan, options, self.chains, prune, reordered=False)

    def _anchored_in(self, rank: int, placement: tuple[int, ...]) -> bool:
        """Whether the tree of ``rank`` is the placement's anchor. A placement on sharing
        providers alone is met from every tree they all serve (and from their own): its
        anchor is the first of those in rank order, whose bound is at least its score, so
        it is kept once, and in the place ties give it, whichever tree meets it first."""
        plan = self.plan
        sharing = plan.sharing
        if not sharing or not all(p in sharing for p in placement):
            return True
        providers = plan.world.providers
        serving: set[int] | None = None
        for provider in set(placement):
            trees = plan.anchors[provider] | {providers[provider].root_id}
            serving = trees if serving is None else serving & trees
        ranks = [self.rank_of[r] for r in serving or () if r in self.rank_of]
        return min(ranks, default=rank) == rank

    def _keep(self, score: float, rank: int, root: int, placement: tuple[int, ...]) -> None:
        entry = (score, -rank, -next(self.order), root, placement)
        if self.cap is None or len(self.kept) < self.cap:
            heapq.heappush(self.kept, entry)
        else:
            heapq.heapreplace(self.kept, entry)  # _could_enter said it beats the worst
