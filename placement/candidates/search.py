"""The search over trees: every tree's placements, round-robin, stopped at the cap.

One tree's placements come from its depth-first walk (``placement.candidates.walk``).
``collect`` takes candidates round-robin over the trees: the first of every
tree, then the second of every tree, and so on, so that a ``limit`` answers
from as many trees as possible, and stops as soon as it has enough. Without
sharing providers it walks each kind of tree once (``tree_key``: shape and
free amounts capped at the request) and moves the placements onto the other
trees of that kind; with them, every tree is walked with the sharing
providers that serve it.

Each candidate comes with its allocation request already written (``Render``,
from ``placement.candidates.bodies``), and without sharing providers each
tree's candidates are kept for the next request like this one
(``placement.candidates.answers``): a repeated request walks only the trees
that changed since, and writes only their candidates; the trees known to
answer nothing (once a request with the same root filter looked at every
tree) it does not look at. What one search did (``SearchCounts``) is counted for
the service's metrics.

A search may have a ``deadline`` (``time.monotonic``): once it has passed, the search
stops after the candidate or tree it is on and answers what it found, each candidate
valid, and says it was cut (``SearchCounts.cut``). One tree's next candidate is not
interrupted: the budget is kept to within one walk step of a tree.
"""

import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import NamedTuple

from placement.candidates.answers import NO_ANSWERS, KeptAnswers, TreeAnswers
from placement.candidates.per_tree import PerTreeByKey
from placement.candidates.plan import SearchPlan
from placement.candidates.walk import tree_candidates
from placement.replica.forms import TreeForm
from placement.replica.world import ProviderWorld


class Candidate(NamedTuple):
    root: int  # the tree the candidate is anchored in
    providers: tuple[int, ...]  # one provider per slot, in plan.slots order
    request: bytes  # its allocation request, as JSON text


# Writes a placement's allocation request: (providers, template key) -> JSON text. Two
# placements with equal template keys (not None) place their slots alike: one kind of
# tree, the same rank.
Render = Callable[[tuple[int, ...], tuple | None], bytes]


@dataclass
class SearchCounts:
    """What one search did."""

    trees_looked_at: int = 0  # trees whose first candidate was looked for
    trees_reused: int = 0  # of those, answered from the answers kept for the request
    trees: int = 0  # the trees the search could have looked at
    cut: bool = False  # the deadline passed before the search was done


class Deadline:
    """When a search must stop (never, without one)."""

    def __init__(self, at: float | None, counts: SearchCounts) -> None:
        self._at = at
        self._counts = counts
        # Whether there is a deadline at all: the loops test this local flag first, so that
        # a search without a budget pays no call per candidate.
        self.timed = at is not None

    def passed(self) -> bool:
        if self._at is not None and time.monotonic() >= self._at:
            self._counts.cut = True
            return True
        return False


def collect(
    plan: SearchPlan,
    cap: int | None,
    render: Render,
    kept: KeptAnswers | None = None,
    shuffle: bool = False,
    counts: SearchCounts | None = None,
    deadline: float | None = None,
    kinds: "TreeKinds | None" = None,
) -> list[Candidate]:
    """Up to ``cap`` candidates (all when None), round-robin over the trees a candidate
    may be anchored in (``SearchPlan.candidate_roots``), in root id order: the first of
    every tree, then the second of every tree, and so on. With ``shuffle``, the trees
    are taken in random order and the candidates shuffled. Without sharing providers,
    the answers ``kept`` from an earlier request like this one are taken as they are
    (they are the same: see ``placement.candidates.answers``), what is found is added
    to them, and the trees they tell need no look are not looked at. ``counts``, when
    given, is told what the search did; past the ``deadline`` it stops. ``kinds``: the
    trees' kinds kept from earlier requests (none: found for this one alone)."""
    counts = counts if counts is not None else SearchCounts()
    stop = Deadline(deadline, counts)
    if plan.sharing:
        roots = plan.candidate_roots()
        counts.trees = len(roots)
        if shuffle:
            random.shuffle(roots)
        found = _collect_with_sharing(plan, roots, cap, render, counts, stop)
    else:
        if kept is None:
            kept = KeptAnswers()
        to_look_at = kept.to_look_at
        roots = plan.candidate_roots(among=to_look_at.for_request(plan.root_filter))
        counts.trees = len(roots)
        if shuffle:
            random.shuffle(roots)
        found, looked = _collect_by_form(
            roots, cap, _KindSearch(plan, render, kinds), kept, counts, stop
        )
        to_look_at.looked_at(plan.root_filter, roots[:looked], every_one=looked == len(roots))
        counts.trees_looked_at += looked
    if shuffle:
        random.shuffle(found)
    return found


def _collect_by_form(
    roots: list[int],
    cap: int | None,
    kinds: "_KindSearch",
    kept: KeptAnswers,
    counts: SearchCounts,
    stop: Deadline,
) -> tuple[list[Candidate], int]:
    """Without sharing providers: each tree's answers are those kept, or else those of
    its kind (``_KindSearch``), added to the kept ones as they are found. Also how many
    of ``roots`` the first round looked at (fewer than all when the cap or the deadline
    stopped it)."""
    trees = kept.trees
    timed = stop.timed
    found: list[Candidate] = []
    # The trees that may have more: root, answers, and kind (None when all are kept).
    live: list[tuple[int, TreeAnswers, object]] = []
    for index, root in enumerate(roots):  # the first candidate of every tree
        if timed and stop.passed():
            return found, index
        answers = trees.get(root)
        key = None
        if answers is None:
            key = kinds.key_of(root)
            if key is None:  # lacks a class asked for: nothing to keep
                continue
            first = kinds.candidate(root, key, 0)
            if first is None:
                kept.add_tree(root, NO_ANSWERS)
                continue
            answers = TreeAnswers()
            answers.candidates.append(first)
            kept.add_tree(root, answers)
        else:
            counts.trees_reused += 1
            if not answers.candidates:
                continue
        found.append(answers.candidates[0])
        if cap is not None and len(found) >= cap:
            return found, index + 1
        if not answers.complete:  # its kind is looked up once, for every later rank
            live.append((root, answers, key if key is not None else kinds.key_of(root)))
        elif len(answers.candidates) > 1:
            live.append((root, answers, None))
    rank = 1  # which candidate of each tree left this round takes
    while live:
        still_live = []
        for entry in live:
            if timed and stop.passed():
                return found, len(roots)
            root, answers, key = entry
            known = answers.candidates
            if rank < len(known):
                candidate = known[rank]
            elif answers.complete:
                continue
            else:
                found_now = kinds.candidate(root, key, rank)
                if found_now is None:
                    answers.complete = True
                    continue
                candidate = found_now
                kept.add_candidate(answers, candidate)
            found.append(candidate)
            if cap is not None and len(found) >= cap:
                return found, len(roots)
            still_live.append(entry)
        live = still_live
        rank += 1
    return found, len(roots)


class _KindSearch:
    """One request's search by kind of tree: a tree's placements depend on nothing but
    its form and free amounts (``tree_key``), so each kind of tree is walked on the first
    tree of it asked for, and its placements, kept as positions in that tree, are moved
    onto the others of its kind."""

    def __init__(self, plan: SearchPlan, render: Render, kinds: "TreeKinds | None") -> None:
        self.plan = plan
        self.render = render
        self.demand_items = tuple(sorted(plan.demand.items()))
        self.kinds = (kinds or TreeKinds()).for_demand(plan.world, self.demand_items)
        self.answers: dict[object, _KindAnswer] = {}  # by tree_key
        self.chains: dict[int, list[int]] = {}  # shared by the walks

    def key_of(self, root: int) -> object:
        """The tree's kind (``kind_of``)."""
        return kind_of(self.plan, root, self.demand_items, self.kinds)

    def candidate(self, root: int, key: object, rank: int) -> Candidate | None:
        """The candidate of ``rank`` (the first is 0) of the tree ``root`` of kind ``key``
        (not None: a tree lacking a class asked for has none),
        or None when it has fewer."""
        plan = self.plan
        tree = plan.world.trees[root]
        answer = self.answers.get(key)
        if answer is None:
            answer = self.answers[key] = _KindAnswer(
                tree_candidates(plan, plan.tree_options(root), self.chains), tree
            )
        positions = answer.get(rank)
        if positions is None:
            return None
        providers = tuple([tree[p] for p in positions])
        return Candidate(root, providers, self.render(providers, (key, rank)))


# A tree's kind for one demand, with the form it was found for: by root id.
KindsOfTrees = dict[int, tuple[TreeForm, object]]
DEMANDS_KEPT = 16  # distinct demands (flavors, say) whose trees' kinds are kept


class TreeKinds:
    """The trees' kinds (``tree_key``) for the demands asked lately, kept by the
    candidates' front door (``CandidateSearch``) from one request to the next: each with
    the form of the tree it was found for, so that a tree changed since (a changed tree
    has a new form, and so has every tree when the forms are numbered again) has its kind
    found again; the front door also drops the kinds of the trees the copy says changed
    (``drop_trees``). At most ``DEMANDS_KEPT`` demands, the least recently asked dropped
    first; the kinds of trees gone are dropped as they pile up."""

    def __init__(self) -> None:
        self._by_demand: PerTreeByKey[tuple[TreeForm, object]] = PerTreeByKey(DEMANDS_KEPT)

    def for_demand(self, world: ProviderWorld, demand_items: tuple) -> KindsOfTrees:
        """The kinds kept for ``demand_items`` (a plan's demand, sorted), now the most
        recently asked."""
        kept = self._by_demand.kept_for(demand_items)
        if len(kept) > 2 * len(world.trees) + 100:
            kept = {root: kind for root, kind in kept.items() if root in world.trees}
            self._by_demand.replace(demand_items, kept)
        return kept

    def drop_trees(self, roots) -> None:
        """Forget the kinds of these trees (changed: they would be found again anyway)."""
        self._by_demand.drop_trees(roots)

    def clear(self) -> None:
        self._by_demand.clear()


def kind_of(plan: SearchPlan, root: int, demand_items: tuple, kinds: KindsOfTrees) -> object:
    """The tree's kind (``tree_key``; ``demand_items``: the plan's demand, sorted), None
    when it lacks a class asked for; kept in ``kinds`` (``TreeKinds.for_demand``) while
    the tree keeps its form."""
    form = plan.world.form_of_tree[root]
    kept = kinds.get(root)
    if kept is not None and kept[0] is form:
        return kept[1]
    key = tree_key(form, plan.demand, demand_items)
    kinds[root] = (form, key)
    return key


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
    plan: SearchPlan,
    roots: list[int],
    cap: int | None,
    render: Render,
    counts: SearchCounts,
    stop: Deadline,
) -> list[Candidate]:
    """Each tree searched on its own, with the sharing providers that serve it."""
    timed = stop.timed
    found: list[Candidate] = []
    seen_outside_anchor: set[tuple] = set()

    def take(root: int, providers: tuple[int, ...]) -> bool:
        """Keep one placement unless it repeats one from another anchor tree."""
        if all(p in plan.sharing for p in providers):
            # Only sharing providers: the same placement is met again from
            # every tree they serve (and from their own).
            key = identity(plan, providers)
            if key in seen_outside_anchor:
                return False
            seen_outside_anchor.add(key)
        found.append(Candidate(root, providers, render(providers, None)))
        return True

    def advance(placements: Iterator[tuple[int, ...]], root: int) -> bool:
        """Take the next kept placement of one tree; False when it has no more."""
        return any(take(root, providers) for providers in placements)

    chains: dict[int, list[int]] = {}
    live: list[tuple[Iterator[tuple[int, ...]], int]] = []
    for root in roots:
        if timed and stop.passed():
            return found
        counts.trees_looked_at += 1
        placements = tree_candidates(plan, plan.tree_options(root), chains)
        if advance(placements, root):
            live.append((placements, root))
        if cap is not None and len(found) >= cap:
            return found
    while live:  # the second candidate of every tree, then the third, ...
        still_live = []
        for placements, root in live:
            if timed and stop.passed():
                return found
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
        self.exhausted = False  # all found

    def get(self, rank: int) -> tuple[int, ...] | None:
        while len(self.found) <= rank:
            placement = None if self.exhausted else next(self._placements, None)
            if placement is None:
                self.exhausted = True
                return None
            self.found.append(tuple(self._position[p] for p in placement))
        return self.found[rank]


def identity(plan: SearchPlan, providers: tuple[int, ...]) -> tuple:
    """What the answer shows of a placement: who takes what, and each group's providers."""
    taken: dict[tuple[int, int], int] = {}
    for position, provider in enumerate(providers):
        for class_id, amount in plan.slots[position].amounts:
            taken[(provider, class_id)] = taken.get((provider, class_id), 0) + amount
    groups = sorted(
        (plan.slots[position].group.suffix, provider) for position, provider in enumerate(providers)
    )
    return (tuple(sorted(taken.items())), tuple(groups))
