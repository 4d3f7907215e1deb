"""provider_summaries as JSON text: each tree's entries written once and kept.

A tree's entries at 1.29 and later (every inventory, traits, parent and root)
depend on nothing but the tree and the class names, so a worker keeps them per
tree until the copy says the tree changed (``TreeFollower``; a renamed class
changes every tree). Before 1.29 an answer shows only the providers it uses:
``resources`` writes one provider's entry.

A process that forks the workers (gunicorn's arbiter, ``Services.prepare_to_fork``)
writes every tree's entries first (``write_every_tree``), into one buffer with the
place of each tree in two arrays indexed by root id. A worker reads them in place:
Python writes an object's reference count whenever it reads it, so texts kept as
one object per tree would become the worker's own page by page as its answers used
them (at 350,000 providers about 140 MiB per worker for an answer over every tree);
the buffer and the arrays are three objects, whatever their size. A tree changed
since is written again in the worker, as any tree of a worker that was not forked so.
The buffer is written once: written again before a later fork, the old one would stay
with the workers forked before, each page of it theirs alone.
"""

from array import array

import orjson

from placement.replica.replica import TreeFollower
from placement.replica.world import Provider, ProviderWorld

# Beyond this many root ids per tree (``dense_enough``), the arrays would cost more than
# the texts they place: every tree is then written when first asked for, as without a fork.
_IDS_PER_TREE_AT_MOST = 64
# Ids up to this many are placed in a table by id however few the items (1.6 MB of the
# summaries' arrays, 3.6 MB of the uuids' table).
IDS_ALWAYS_PLACED = 100_000


def dense_enough(highest_id: int, items: int, ids_per_item: int) -> bool:
    """Whether a table indexed by id up to ``highest_id`` is worth its size for ``items``
    (ids sparse: deleted providers of a long-lived database, a sequence moved on)."""
    return highest_id + 1 <= max(ids_per_item * items, IDS_ALWAYS_PLACED)


class _WrittenAtOnce:
    """Every tree's entries in one buffer: tree ``r``'s are ``text[start[r]:end[r]]``,
    none when ``start[r]`` is -1 (no such tree then, or changed since)."""

    def __init__(self, text: bytearray, start: array, end: array) -> None:
        self.text = memoryview(text)
        self.start = start
        self.end = end

    def of_tree(self, root_id: int) -> memoryview | None:
        if root_id >= len(self.start):
            return None
        start = self.start[root_id]
        return None if start < 0 else self.text[start : self.end[root_id]]

    def forget(self, root_id: int) -> None:
        if root_id < len(self.start):
            self.start[root_id] = -1


class TreeSummaries:
    def __init__(self) -> None:
        self._text: dict[int, bytes] = {}  # root id -> JSON text (written since the fork)
        self._written: _WrittenAtOnce | None = None
        self._follower = TreeFollower()

    def follow(self, world: ProviderWorld) -> None:
        """Drop the text of the trees changed since the last call."""
        changed = self._follower.changed(world)
        if changed is None:
            self._text.clear()
            self._written = None
        else:
            for root_id in changed:
                self._text.pop(root_id, None)
                if self._written is not None:
                    self._written.forget(root_id)

    def write_every_tree(self, world: ProviderWorld) -> int:
        """Every tree's entries written into one buffer (before forking workers that will
        read them in place), unless they are already: the workers forked before share
        that buffer, and one written anew would be this process's own, the old one
        theirs; a tree changed since is written again where it is asked for. How many
        bytes the buffer takes (0: the root ids are too sparse for arrays indexed by
        them, each tree is written when asked for)."""
        self.follow(world)
        if self._written is not None:
            return len(self._written.text)
        roots = world.roots_in_order()
        if not roots or not dense_enough(roots[-1], len(roots), _IDS_PER_TREE_AT_MOST):
            return 0
        start = array("q", [-1]) * (roots[-1] + 1)
        end = array("q", [0]) * (roots[-1] + 1)
        text = bytearray()
        for root_id in roots:
            start[root_id] = len(text)
            kept = self._text.pop(root_id, None)
            text += kept if kept is not None else _entries(world, root_id)
            end[root_id] = len(text)
        self._written = _WrittenAtOnce(text, start, end)
        return len(text)

    def of_tree(self, world: ProviderWorld, root_id: int) -> bytes | memoryview:
        """The tree's entries, ``"uuid":{...},...`` (``follow`` the world first)."""
        text = self._text.get(root_id)
        if text is None:
            written = self._written.of_tree(root_id) if self._written is not None else None
            if written is not None:
                return written
            text = self._text[root_id] = _entries(world, root_id)
        return text


def _entries(world: ProviderWorld, root_id: int) -> bytes:
    providers = world.providers
    root_uuid = providers[root_id].uuid
    entries = []
    for provider in (providers[p] for p in world.trees[root_id]):
        parent = providers[provider.parent_id] if provider.parent_id else None
        entries.append(
            orjson.dumps(provider.uuid)
            + b":"
            + orjson.dumps(
                {
                    "resources": resources(world, provider, None),
                    "traits": provider.trait_names(),
                    "parent_provider_uuid": parent.uuid if parent else None,
                    "root_provider_uuid": root_uuid,
                }
            )
        )
    return b",".join(entries)


def resources(world: ProviderWorld, provider: Provider, class_ids: set[int] | None) -> dict:
    """capacity and used of its inventories (only of ``class_ids`` unless None)."""
    return {
        world.class_names[class_id]: {"capacity": inventory.capacity, "used": inventory.used}
        for class_id, inventory in provider.inventories.items()
        if class_ids is None or class_id in class_ids
    }
