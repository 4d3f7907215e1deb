"""Values kept per tree for each of the kinds of request asked lately (``PerTreeByKey``):
what the candidates' front door keeps between requests beside the copy of the providers
(the trees' bounds per ranked request, ``bounds.KeptBounds``; the trees' kinds per
demand, ``search.TreeKinds``)."""

from collections.abc import Iterable
from typing import Generic, TypeVar

Value = TypeVar("Value")


class PerTreeByKey(Generic[Value]):
    """A dict by root id for each key asked lately: at most ``max_keys``, the least
    recently asked dropped first; a changed tree's values are dropped (``drop_trees``)."""

    def __init__(self, max_keys: int) -> None:
        self._max_keys = max_keys
        self._by_key: dict[tuple, dict[int, Value]] = {}

    def __len__(self) -> int:
        return len(self._by_key)

    def kept_for(self, key: tuple) -> dict[int, Value]:
        """The values kept for ``key`` (made empty when new), now the most recently asked."""
        kept = self._by_key.pop(key, None)
        if kept is None:
            kept = {}
            while len(self._by_key) >= self._max_keys:
                del self._by_key[next(iter(self._by_key))]
        self._by_key[key] = kept
        return kept

    def replace(self, key: tuple, kept: dict[int, Value]) -> None:
        self._by_key[key] = kept

    def tree_counts(self) -> Iterable[int]:
        """How many trees each key keeps values of."""
        return (len(kept) for kept in self._by_key.values())

    def drop_oldest(self) -> None:
        del self._by_key[next(iter(self._by_key))]

    def drop_trees(self, roots: Iterable[int]) -> None:
        for kept in self._by_key.values():
            for root in roots:
                kept.pop(root, None)

    def clear(self) -> None:
        self._by_key.clear()
