"""Answers kept between requests: each tree's candidates for each recent request.

A scheduler asks the same few requests again and again (one per flavor, say),
and between two of them only the trees it claimed on, or that were otherwise
written, change. So each worker's ``ProviderWorld`` keeps, per request
(``SearchPlan.signature`` and the microversion), each tree's candidates in the
order the search finds them, with their allocation requests already written as
JSON: a repeated request takes them as they are and searches only the trees
that changed since (``placement.candidates.search``).

A tree's answers are exact as long as the tree is: the world drops them
whenever it reads any provider of the tree again (``ProviderWorld._apply``:
every write a search can see changes a provider's version), drops them all
when a class is renamed, and forgets them with everything else. A tree's
answers are kept only as far as some request asked (the first ten with
``limit=10``), so that ``complete`` says whether there are more.

Requests with sharing providers are not kept: their trees' answers depend on
providers outside the tree. What is kept is bounded by an estimate of its
size (``ANSWER_BYTES``, ``TREE_ENTRY_BYTES``): the requests least recently
asked are dropped first (``AnswerMemo.keep_within``).
"""

from collections import OrderedDict
from typing import Any

TREE_ENTRY_BYTES = 120  # a tree's entry in one request's answers (key, object, list)
ANSWER_BYTES = 200  # one candidate (tuple, providers), besides its text


class TreeAnswers:
    """One tree's candidates for one request, in search order, as far as asked."""

    __slots__ = ("candidates", "complete")

    def __init__(self) -> None:
        self.candidates: list[Any] = []  # search.Candidate
        self.complete = False  # True: the tree has no more than these


class _NoAnswers(TreeAnswers):
    """A tree that answers nothing: one object shared by every such tree."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__()
        self.complete = True


NO_ANSWERS: TreeAnswers = _NoAnswers()


class KeptAnswers:
    """One request's answers, by root id, and an estimate of their size in bytes."""

    __slots__ = ("trees", "size")

    def __init__(self) -> None:
        self.trees: dict[int, TreeAnswers] = {}
        self.size = 0

    def add_tree(self, root_id: int, answers: TreeAnswers) -> None:
        self.trees[root_id] = answers
        self.size += TREE_ENTRY_BYTES

    def add_candidate(self, answers: TreeAnswers, candidate) -> None:
        answers.candidates.append(candidate)
        self.size += ANSWER_BYTES + len(candidate.request)

    def drop_tree(self, root_id: int) -> None:
        answers = self.trees.pop(root_id, None)
        if answers is not None:
            self.size -= TREE_ENTRY_BYTES + sum(
                ANSWER_BYTES + len(candidate.request) for candidate in answers.candidates
            )


class AnswerMemo:
    """The kept answers of the requests asked lately, least recently asked first."""

    def __init__(self) -> None:
        self._by_request: OrderedDict[tuple, KeptAnswers] = OrderedDict()

    def kept_for(self, request_key: tuple) -> KeptAnswers:
        """The answers kept for ``request_key`` (new and empty the first time)."""
        kept = self._by_request.get(request_key)
        if kept is None:
            kept = self._by_request[request_key] = KeptAnswers()
        else:
            self._by_request.move_to_end(request_key)
        return kept

    def drop_trees(self, root_ids) -> None:
        """Forget what every request found in these trees (they changed)."""
        for kept in self._by_request.values():
            for root_id in root_ids:
                kept.drop_tree(root_id)

    def clear(self) -> None:
        self._by_request.clear()

    def keep_within(self, budget_bytes: int) -> None:
        """Drop the least recently asked requests until the rest fit ``budget_bytes``."""
        total = sum(kept.size for kept in self._by_request.values())
        while total > budget_bytes and self._by_request:
            _, dropped = self._by_request.popitem(last=False)
            total -= dropped.size

    def __len__(self) -> int:
        return len(self._by_request)

    def __iter__(self):
        """The kept requests' answers, least recently asked first."""
        return iter(list(self._by_request.values()))
