"""Each provider's uuid as the allocation requests write it, read in place after a fork.

Writing a candidate's allocation request reads the uuids of its providers. Read
from the copy's ``Provider`` objects, each read writes the reference counts of the
object and of its string: after a fork (gunicorn's arbiter, ``Services.prepare_to_fork``)
an answer over every tree makes a page of each the worker's own, tree after tree.
So a process about to fork the workers writes every provider's uuid first
(``write_every_provider``) into one table of ``UUID_BYTES`` bytes per provider id,
which the workers read in place; the providers of a tree changed since (a provider
added, moved, gone, or an id handed to a new provider) are read from the copy.
"""

from placement.candidates.summaries import dense_enough
from placement.replica.replica import TreeFollower
from placement.replica.world import ProviderWorld

UUID_BYTES = 36  # as placement writes a uuid: 8-4-4-4-12 hex digits
# Beyond this many ids per provider (``summaries.dense_enough``), the table would cost
# more than the uuids: they are read from the copy then, as without a fork.
_IDS_PER_PROVIDER_AT_MOST = 8


class ProviderUuids:
    def __init__(self) -> None:
        # Provider id ``p``'s uuid at ``p * UUID_BYTES``; a first byte 0: not written, or
        # its tree changed since.
        self._table: bytearray | None = None
        self._follower = TreeFollower()

    def follow(self, world: ProviderWorld) -> None:
        """Forget the uuids of the providers of the trees changed since the last call."""
        changed = self._follower.changed(world)
        table = self._table
        if changed is None:
            self._table = None
        elif table is not None:
            for root_id in changed:
                for provider_id in world.trees.get(root_id, ()):
                    if (provider_id + 1) * UUID_BYTES <= len(table):
                        table[provider_id * UUID_BYTES] = 0

    def write_every_provider(self, world: ProviderWorld) -> int:
        """Every provider's uuid written into the table (before forking workers that will
        read it in place), unless it is already (as ``TreeSummaries.write_every_tree``:
        a provider added or changed since is read from the copy); its size in bytes (0:
        ids too sparse, no table)."""
        self.follow(world)
        if self._table is not None:
            return len(self._table)
        providers = world.providers
        if not providers:
            return 0
        highest = max(providers)
        if not dense_enough(highest, len(providers), _IDS_PER_PROVIDER_AT_MOST):
            return 0
        table = bytearray((highest + 1) * UUID_BYTES)
        for provider_id, provider in providers.items():
            uuid = provider.uuid.encode()
            if len(uuid) == UUID_BYTES:
                table[provider_id * UUID_BYTES : (provider_id + 1) * UUID_BYTES] = uuid
        self._table = table
        return len(table)

    def uuid_of(self, world: ProviderWorld, provider_id: int) -> bytes | bytearray:
        """The provider's uuid, as bytes (``follow`` the world first)."""
        table = self._table
        if table is not None:
            start = provider_id * UUID_BYTES
            if start + UUID_BYTES <= len(table) and table[start]:
                return table[start : start + UUID_BYTES]
        return world.providers[provider_id].uuid.encode()
