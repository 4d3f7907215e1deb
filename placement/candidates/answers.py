"""Answers kept between requests: each tree's candidates for each recent request.

A scheduler asks the same few requests again and again (one per flavor, say),
and between two of them only the trees it claimed on, or that were otherwise
written, change. So each worker's ``ProviderWorld`` keeps, per request
(``SearchPlan.signature`` and the microversion), each tree's candidates in the
order the search finds them, with their allocation requests already written as
JSON: a repeated request takes them as they are, and searches only the trees
that have none kept (``placement.candidates.search``). It does not even look
at the trees that answered nothing: once a request has looked at every tree,
its answers know which trees answer and which changed since (told by the
world with the dropped trees), and a request with the same root filter looks
at those only (``TreesToLookAt``). And a request asked again before any tree
changed (the same cap and root filter, not randomized) is answered with the
body written last time, kept with its answers and dropped as soon as any tree
changes (any: a new or written tree may answer too).

A tree's answers are exact as long as the tree is: the world drops them
whenever it reads any provider of the tree again (``ProviderWorld._apply``:
every write a search can see changes a provider's version), drops them all
when a class is renamed or deleted, and forgets them with everything else. A
tree's answers are kept only as far as some request asked (with ``limit``,
the first candidate of the first trees), so ``complete`` says whether there
are more; a request that asks further searches the tree again.

Not kept: requests with sharing providers (their trees' answers depend on
providers outside the tree) and requests with ``in_tree`` (one tree: nothing
to gain); trees that lack a class the request asks for (found again at once).
What is kept is bounded by an estimate of its size in bytes (``KEY_BYTES``,
``TREE_ENTRY_BYTES``, ``ANSWER_BYTES``, the body's length; a body that would
take a request over the budget is not kept) and by ``MAX_REQUESTS_KEPT``: the
requests least recently asked are dropped first (``AnswerMemo.keep_within``).
"""

from collections import OrderedDict
from typing import Any

KEY_BYTES = 2048  # one request's key (its plan's signature) and its dict of trees
# A tree's entry in one request's answers (key, object, list; and in the sets of trees
# to look at, whose trees changed since are at most as many as the trees kept).
TREE_ENTRY_BYTES = 192
ANSWER_BYTES = 250  # one candidate (tuple, providers), besides its text
# Every refresh that reads a tree again drops its answers under every request kept.
MAX_REQUESTS_KEPT = 256


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


class TreesToLookAt:
    """Which trees a request must look at for their first candidate. Once a request has
    looked at every tree (with some root filter), a request with the same root filter
    looks only at those that answer and those changed since: every other tree answers
    nothing, lacks a class asked for or fails that root filter, as it did then."""

    __slots__ = ("answering", "complete_look_filter", "changed_since")

    def __init__(self) -> None:
        self.answering: set[int] = set()  # the trees whose kept candidates are not none
        # The root filter of the last request that looked at every tree (None: no
        # request did since), and the trees written, added or gone since it did.
        self.complete_look_filter: object | None = None
        self.changed_since: set[int] = set()

    def for_request(self, root_filter: object) -> set[int] | None:
        """The trees a request with ``root_filter`` must look at (None: every tree)."""
        if self.complete_look_filter is None or self.complete_look_filter != root_filter:
            return None
        return self.answering | self.changed_since

    def looked_at(self, root_filter: object, roots: list[int], every_one: bool) -> None:
        """A request with ``root_filter`` looked at the trees ``roots`` (``every_one``:
        at every tree it had to look at; else a cap stopped it)."""
        if every_one:
            self.complete_look_filter, self.changed_since = root_filter, set()
        elif self.complete_look_filter == root_filter:
            self.changed_since.difference_update(roots)

    def trees_changed(self, root_ids: set[int], trees_kept: int) -> None:
        """These trees were written, added or removed: look at them again. The trees
        changed since are kept up to as many as the trees kept (so that their size is
        bounded by what ``KeptAnswers.size`` counts); past that, every tree is looked at
        again, which costs about as much and is always exact."""
        if self.complete_look_filter is None:
            return
        if len(self.changed_since) + len(root_ids) > trees_kept:
            self.complete_look_filter, self.changed_since = None, set()
        else:
            self.changed_since.update(root_ids)


class KeptAnswers:
    """One request's answers: each tree's, by root id; which trees to look at; the last
    body answered; and an estimate of their size in bytes."""

    __slots__ = ("trees", "to_look_at", "body", "body_key", "size")

    def __init__(self) -> None:
        self.trees: dict[int, TreeAnswers] = {}
        self.to_look_at = TreesToLookAt()
        # The last body answered, and what besides the request it answers (its cap and
        # root filter): until any tree changes, the same request answers the same body.
        self.body: bytes | None = None
        self.body_key: object | None = None
        self.size = KEY_BYTES

    def add_tree(self, root_id: int, answers: TreeAnswers) -> None:
        """Keep a tree's answers (with the candidates they already have)."""
        self.trees[root_id] = answers
        if answers.candidates:
            self.to_look_at.answering.add(root_id)
        self.size += TREE_ENTRY_BYTES + _bytes_of(answers.candidates)

    def add_candidate(self, answers: TreeAnswers, candidate) -> None:
        """One more candidate of a tree kept here."""
        answers.candidates.append(candidate)
        self.size += _candidate_bytes(candidate)

    def trees_changed(self, root_ids: set[int]) -> None:
        """These trees were written, added or removed: their answers and the body go."""
        if root_ids:
            self.drop_body()
        self.to_look_at.trees_changed(root_ids, len(self.trees))
        if len(root_ids) > len(self.trees):  # (whichever is fewer is looked through)
            dropped = [root_id for root_id in self.trees if root_id in root_ids]
        else:
            dropped = [root_id for root_id in root_ids if root_id in self.trees]
        for root_id in dropped:
            answers = self.trees.pop(root_id)
            self.to_look_at.answering.discard(root_id)
            self.size -= TREE_ENTRY_BYTES + _bytes_of(answers.candidates)

    def body_for(self, body_key: object) -> bytes | None:
        """The body kept for ``body_key`` (a request's cap and root filter), if any."""
        return self.body if self.body is not None and self.body_key == body_key else None

    def keep_body(self, body_key: object, body: bytes, budget_bytes: int) -> None:
        """Keep the body answered for ``body_key`` in place of the last one, if with it
        the answers kept for this request stay within ``budget_bytes``."""
        self.drop_body()
        if self.size + len(body) <= budget_bytes:
            self.body, self.body_key = body, body_key
            self.size += len(body)

    def drop_body(self) -> None:
        if self.body is not None:
            self.size -= len(self.body)
            self.body = self.body_key = None


def _candidate_bytes(candidate) -> int:
    return ANSWER_BYTES + len(candidate.request)


def _bytes_of(candidates) -> int:
    return sum(_candidate_bytes(candidate) for candidate in candidates)


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

    def drop_trees(self, root_ids: set[int]) -> None:
        """Forget what every request found in these trees (they changed), and the
        requests left with no tree."""
        emptied = []
        for request_key, kept in self._by_request.items():
            kept.trees_changed(root_ids)
            if not kept.trees:
                emptied.append(request_key)
        for request_key in emptied:
            del self._by_request[request_key]

    def clear(self) -> None:
        self._by_request.clear()

    def keep_within(self, budget_bytes: int) -> None:
        """Keep at most ``budget_bytes`` (estimated) and ``MAX_REQUESTS_KEPT`` requests: a
        request asked last whose answers alone are over the budget is dropped; else the
        bodies of the requests least recently asked (cheap to write again from their
        answers), then those requests themselves, until the rest fit."""
        if self._by_request:
            last_key = next(reversed(self._by_request))
            if self._by_request[last_key].size > budget_bytes:
                del self._by_request[last_key]
        total = sum(kept.size for kept in self._by_request.values())
        if total > budget_bytes:
            for kept in self._by_request.values():  # least recently asked first
                if kept.body is not None:
                    total -= len(kept.body)
                    kept.drop_body()
                    if total <= budget_bytes:
                        break
        while self._by_request and (
            total > budget_bytes or len(self._by_request) > MAX_REQUESTS_KEPT
        ):
            _, dropped = self._by_request.popitem(last=False)
            total -= dropped.size

    def bytes_kept(self) -> int:
        """The estimated size of everything kept (``KeptAnswers.size``)."""
        return sum(kept.size for kept in self._by_request.values())

    def __len__(self) -> int:
        return len(self._by_request)

    def __iter__(self):
        """The kept requests' answers, least recently asked first."""
        return iter(list(self._by_request.values()))
