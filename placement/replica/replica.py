"""This process's one copy of the providers, and how the features keep their own
values of its trees.

``Replica`` holds the copy (``world.ProviderWorld``) and brings it up to date for
each search, telling its ``RefreshRecorder`` (the application's metrics) what each
refresh took; ``TreeFollower`` tells a keeper which trees changed since it last
looked; ``KeptPerTree`` keeps a value per tree while the tree has the form it was
made from.
"""

import gc
import itertools
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Generic, Protocol, TypeVar

from sqlalchemy import Connection

from placement.db.engine import WRITE_TRANSACTION_OPTION
from placement.replica.forms import TreeForm
from placement.replica.world import ProviderWorld

Kept = TypeVar("Kept")


class RefreshRecorder(Protocol):
    def replica_refreshed(
        self, seconds: float, providers_read: int, providers: int, trees: int
    ) -> None:
        """One refresh took ``seconds`` and read ``providers_read`` providers again (how
        far the copy was behind the database); the copy now holds ``providers`` in
        ``trees``."""


class _NotRecorded:
    def replica_refreshed(
        self, seconds: float, providers_read: int, providers: int, trees: int
    ) -> None:
        pass


class Replica:
    """This process's one copy of the providers, shared by every search of its
    application (candidates, the translator's nodes): ``current`` holds the copy's
    lock and brings it up to date for one search.

    The copy must never keep what did not commit. A write transaction may read it after
    its own writes (a node's view answered after its import): the copy then holds them
    until the transaction ends, and ``write_ended`` drops the copy if the transaction
    rolled back after the copy read something in it (the next search reads every
    provider again; a write that fails after reading the copy is rare).

    A search that read ``freeze_after`` providers or more (a new worker's first, one
    after the log was lost) ends by moving every object of the process out of the
    cyclic collector's sight (``gc.freeze``): the copy is millions of long-lived
    objects without cycles, which every full collection would walk again (seconds
    at 350,000 providers, a pause for whichever request triggers it). The price is
    that the cyclic garbage of that one request, if any, is never freed."""

    def __init__(self, freeze_after: int = 10_000, recorder: RefreshRecorder | None = None) -> None:
        self.world = ProviderWorld()
        self._freeze_after = freeze_after
        self._recorder = recorder or _NotRecorded()
        # Whether a write transaction not ended yet brought the copy up to date.
        self._read_in_a_write = False

    @contextmanager
    def current(self, conn: Connection) -> Iterator[ProviderWorld]:
        world = self.world
        with world.lock:
            started = time.perf_counter()
            read = world.refresh(conn)
            if read and conn.get_execution_options().get(WRITE_TRANSACTION_OPTION):
                self._read_in_a_write = True
            self._recorder.replica_refreshed(
                time.perf_counter() - started, read, len(world.providers), len(world.trees)
            )
            yield world
            if read >= self._freeze_after:
                gc.freeze()

    @contextmanager
    def unrecorded(self) -> Iterator[None]:
        """Refreshes not told to the recorder meanwhile: those of a process that serves
        no request (gunicorn's arbiter, ``Services.prepare_to_fork``)."""
        recorder, self._recorder = self._recorder, _NotRecorded()
        try:
            yield
        finally:
            self._recorder = recorder

    def write_ended(self, committed: bool) -> None:
        """A write transaction of this process ended: if it rolled back after the copy read
        something in it, drop the copy (it may hold what was never committed)."""
        if self._read_in_a_write and not committed:
            self.forget()
        self._read_in_a_write = False

    def forget(self) -> None:
        """Drop the copy: the next search reads every provider, as a new worker's first
        request does, and what the features keep per tree is dropped as they follow the
        new copy (``TreeFollower``)."""
        self.world = ProviderWorld()


class TreeFollower:
    """Where one keeper of per-tree values stands in the copy's tree changes."""

    def __init__(self) -> None:
        self._incarnation: object | None = None
        self._revision = 0

    def changed(self, world: ProviderWorld) -> set[int] | None:
        """The roots of the trees changed since the last call (None: every tree may
        have: the first call, a copy started over, changes no longer known)."""
        changed = None
        if world.incarnation is self._incarnation:
            changed = world.trees_changed_since(self._revision)
        self._incarnation, self._revision = world.incarnation, world.tree_revision
        return changed


class KeptPerTree(Generic[Kept]):
    """What a search keeps of each tree, while the tree has the form it was made from: a
    changed tree has a new ``TreeForm``, so a value is found only until its tree changes.
    Values of trees gone are forgotten as they pile up; beyond ``max_trees`` the ones
    kept longest go."""

    def __init__(self, max_trees: int | None = None) -> None:
        self._max_trees = max_trees
        self._kept: dict[int, tuple[TreeForm, Kept]] = {}

    def get(self, world: ProviderWorld, root_id: int) -> Kept | None:
        kept = self._kept.get(root_id)
        if kept is None or kept[0] is not world.form_of_tree[root_id]:
            return None
        return kept[1]

    def put(self, world: ProviderWorld, root_id: int, value: Kept) -> None:
        self._kept.pop(root_id, None)
        self._kept[root_id] = (world.form_of_tree[root_id], value)
        if len(self._kept) > 2 * len(world.trees) + 100:
            self._kept = {r: k for r, k in self._kept.items() if r in world.trees}
        if self._max_trees is not None:
            excess = max(len(self._kept) - self._max_trees, 0)
            for oldest in list(itertools.islice(self._kept, excess)):
                del self._kept[oldest]

    def clear(self) -> None:
        self._kept.clear()
