"""Each worker's copy of the providers: exact on every request, read again only where changed.

A candidate search looks at every provider's place in its tree, inventories
and usage, traits and aggregates. Reading all of that for every request is
most of what a large answer costs, and it hardly changes between two
requests. So each worker keeps a ``ProviderWorld`` (its application's
``Replica`` owns it, and every search reads it) and, on every request,
reads the **versions** (``placement.data.provider_world``: id, generation,
parent, root) of the providers logged as changed since its last request, and
reads again the details of those whose version changed, and only those. (The
log, ``provider_changes``, is written by triggers on every insert, update and
delete of a provider row, in the writer's transaction; migration 0003 says
how a reader keeps its place in it. Its first request, and one that finds
the log pruned past its place, reads every provider's version instead.)

The copy is exact because every change a search can see changes a version:

* every write of a provider's inventories, traits or aggregates bumps its
  generation, and so does every allocation written or deleted on it (the
  data layer does so on every path: it is how placement guards concurrent
  writers, and what clients rely on);
* a move changes the parent of the provider and the root of its whole
  subtree; a new provider is a new row, a deleted one a missing row;
* a renamed resource class changes no provider: the class names are read
  on every request too and every kept summary and answer is dropped when one
  changes.

The log, the versions, the details and the class names are read in one snapshot of
the database (the request runs at REPEATABLE READ on PostgreSQL; a SQLite
transaction is one snapshot), so they always agree. So with any number of
workers on any number of hosts, each answer reflects the database as of its
request, as if nothing were kept. (A log that starts over, or a position that
goes back, drops the copy: see ``refresh``; entries deleted before every reader
read them start the log over, migration 0005. What it cannot see is a database
put in place of the one it follows under the same URL whose log has already
moved past the copy's position: restart the service after such a swap.)

The world also keeps each tree's **form** (``TreeForm``): its shape
(parents, traits, aggregates, inventories without amounts) as a number, and
its free amounts. To a search without sharing providers, two trees of one
shape whose free amounts are alike up to what the request asks are
indistinguishable, so the search answers one tree of each kind and maps the
answer onto the others (``placement.candidates.search``): hosts of one
hardware model are searched once however busy they are, as long as each has
room for the request or lacks it in the same places.

What a feature keeps per tree (the candidates' answers and summaries, the device
nodes) it keeps itself, and drops what changed: each refresh that changes trees
is numbered (``tree_revision``), and ``TreeFollower`` tells a keeper which trees
changed since it last looked.

At 350,000 providers the copy is what a worker's memory holds. Providers alike
share their inventories, traits and aggregates as one object
(``placement.interning``), a full read goes ``read_chunk`` providers at a time
(its rows would otherwise outweigh the copy), and a search that read many
providers moves them out of the cyclic collector's sight (``Replica``).
"""

import sys
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field

from sqlalchemy import Connection

from placement import capacity
from placement.data import provider_world as data
from placement.db import snapshots
from placement.interning import Interned
from placement.replica.forms import TreeForm, tree_form


@dataclass(frozen=True, slots=True)
class Inventory:
    """One class of one provider: what the search and the summaries look at."""

    capacity: int  # placement.capacity.capacity
    used: int
    free: int  # placement.capacity.free
    min_unit: int
    max_unit: int
    step_size: int
    unrounded: float  # placement.capacity.unrounded: what the node features' scorers divide by
    total: int  # as stored, with reserved and allocation_ratio (the node features' views)
    reserved: int
    allocation_ratio: float

    def takes(self, amount: int) -> bool:
        """``amount`` fits, leaving aside min_unit and step_size."""
        return amount <= self.free and amount <= self.max_unit

    def takes_exactly(self, amount: int) -> bool:
        """``amount`` is an allocation this inventory accepts."""
        return amount <= self.free and capacity.units_allow(
            amount, self.min_unit, self.max_unit, self.step_size
        )


@dataclass(slots=True)
class Provider:
    id: int
    version: tuple  # as ``data.provider_versions`` reads it: the copy is read again when it changes
    uuid: str
    name: str
    parent_id: int | None
    root_id: int
    inventories: dict[int, Inventory]
    traits: frozenset[int]
    aggregates: frozenset[int]
    trait_ids_by_name: tuple[tuple[str, int], ...]  # (name, id) of its traits, by id
    aggregate_uuids: tuple[tuple[str, int], ...]  # (uuid, id) of its aggregates

    def trait_names(self) -> list[str]:
        return [name for name, _ in self.trait_ids_by_name]

    @property
    def generation(self) -> int:
        return self.version[1]  # (id, generation, ...), as ``data.provider_versions`` reads it


@dataclass
class ProviderWorld:
    providers: dict[int, Provider] = field(default_factory=dict)
    trees: dict[int, list[int]] = field(default_factory=dict)  # root id -> ids, in id order
    with_trait: dict[int, set[int]] = field(default_factory=dict)  # trait id -> providers
    in_aggregate: dict[int, set[int]] = field(default_factory=dict)  # aggregate -> providers
    id_of_uuid: dict[str, int] = field(default_factory=dict)
    id_of_name: dict[str, int] = field(default_factory=dict)
    # Of the traits and aggregates some provider has (so they exist, under that name):
    trait_id_of_name: dict[str, int] = field(default_factory=dict)
    aggregate_id_of_uuid: dict[str, int] = field(default_factory=dict)
    form_of_tree: dict[int, TreeForm] = field(default_factory=dict)  # by root id
    class_names: dict[int, str] = field(default_factory=dict)
    read_chunk: int = 20_000  # providers whose details are read at once
    # Which trees each refresh touched, numbered (``trees_changed_since``); a new
    # ``incarnation`` when the copy starts over.
    tree_revision: int = 0
    incarnation: object = field(default_factory=object)
    _tree_changes: list[tuple[int, frozenset[int] | None]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    # Inventories, traits and aggregates equal in content are one object (never
    # changed in place): most providers of a large cloud are alike.
    _shared: Interned = field(default_factory=Interned)
    _log: data.LogPosition | None = None  # where the copy stands in the change log
    _form_numbers: dict[tuple, int] = field(default_factory=dict)
    _roots_in_order: list[int] | None = None  # of trees, sorted (None: sort them again)
    _roots_having: dict[frozenset[int], list[int]] = field(default_factory=dict)

    def roots_with_trait(
        self, trait: str, without: str | None = None, names: list[str] | None = None
    ) -> list[int]:
        """The roots carrying ``trait`` and not ``without`` (only those named ``names``
        when given), by id."""
        trait_id = self.trait_id_of_name.get(trait)
        if trait_id is None:
            return []
        without_id = self.trait_id_of_name.get(without) if without is not None else None
        excluded = self.with_trait.get(without_id, set()) if without_id is not None else set()
        carrying = self.with_trait.get(trait_id, set())
        if names is None:
            candidates: Iterable[int] = carrying
        else:  # (by name: a few of many nodes, as a scheduler asks, need not walk them all)
            found = (self.id_of_name.get(name) for name in set(names))
            candidates = [provider_id for provider_id in found if provider_id in carrying]
        roots = [
            provider_id
            for provider_id in candidates
            if self.providers[provider_id].parent_id is None and provider_id not in excluded
        ]
        roots.sort()
        return roots

    def refresh(self, conn: Connection) -> int:
        """Bring the copy up to date with what ``conn`` sees (hold ``lock``): read what
        changed, then apply it. Should applying fail half-way, the copy is dropped and
        the next request reads it all. Returns how many providers were read again.

        On a connection whose snapshot is deferred (``placement.db.snapshots``), the check
        of what changed runs first on its own; the snapshot is opened (and the check run
        again in it) only when there is something to read."""
        if snapshots.is_deferred(conn):
            changes = data.changes_since(conn, self._log)
            if self._holds(changes):
                self._log = changes.log
                snapshots.verify_when_opened(conn, self._still_holds)
                return 0
            snapshots.open_snapshot(conn)
        changes = data.changes_since(conn, self._log)
        class_names, log = changes.class_names, changes.log
        if self._log is not None and (
            log.incarnation != self._log.incarnation or log.position < self._log.position
        ):
            # The log started over (re-created, truncated) or went back (a backup
            # restored): ids and generations may repeat, so nothing kept is trusted.
            self._forget_everything()
        if not self._versions_logged(changes):
            seen: dict[int, tuple | None] = dict.fromkeys(self.providers)
            seen.update((version[0], version) for version in data.provider_versions(conn))
        else:
            seen = changes.changed  # type: ignore[assignment]
        providers = self.providers
        changed = [
            version
            for provider_id, version in seen.items()
            if version is not None
            and (provider_id not in providers or providers[provider_id].version != version)
        ]
        removed = {
            provider_id
            for provider_id, version in seen.items()
            if version is None and provider_id in providers
        }
        if changed or removed or class_names != self.class_names:
            changed.sort(key=lambda version: version[0])
            reading_all = not providers

            def read_details(chunk: list[tuple]) -> dict[int, data.ProviderDetails]:
                if not reading_all:
                    details = data.provider_details(conn, [version[0] for version in chunk])
                elif len(chunk) == len(changed):
                    details = data.provider_details(conn, None)
                else:
                    details = data.provider_details(conn, range(chunk[0][0], chunk[-1][0] + 1))
                if any(
                    class_id not in class_names
                    for found in details.values()
                    for class_id in found.inventories
                ):
                    # A class created since the names were read (READ COMMITTED).
                    class_names.update(data.class_names(conn))
                return details

            try:
                self._apply(class_names, changed, removed, read_details)
            except BaseException:
                self._forget_everything()
                raise
        self._log = log
        return len(changed)

    def _versions_logged(self, changes: data.Changes) -> bool:
        """Whether ``changes`` names every provider changed since the copy's last read
        (else every version is read again: a first read, a log pruned past the copy)."""
        log = changes.log
        return not (
            changes.changed is None
            or self._log is None
            or log.pruned_below is None
            or self._log.position < log.pruned_below
        )

    def _holds(self, changes: data.Changes) -> bool:
        """Whether the copy already holds what ``changes`` says the database holds: the
        same log, every provider logged since at the version the copy has, the same class
        names."""
        log = changes.log
        if (
            not self._versions_logged(changes)
            or log.incarnation != self._log.incarnation  # type: ignore[union-attr]
            or log.position < self._log.position  # type: ignore[union-attr]
            or changes.class_names != self.class_names
        ):
            return False
        providers = self.providers
        for provider_id, version in changes.changed.items():  # type: ignore[union-attr]
            held = providers.get(provider_id)
            if (held is None) != (version is None) or (held and held.version != version):
                return False
        return True

    def _still_holds(self, conn: Connection) -> bool:
        return self._holds(data.changes_since(conn, self._log))

    def trees_changed_since(self, revision: int) -> set[int] | None:
        """The roots of the trees added, changed or gone after ``tree_revision`` was
        ``revision``; None when that is no longer known (long ago, or every tree may
        look different since: a class renamed, the forms numbered again)."""
        if revision == self.tree_revision:
            return set()
        if not self._tree_changes or self._tree_changes[0][0] > revision + 1:
            return None
        changed: set[int] = set()
        for number, roots in self._tree_changes:
            if number > revision:
                if roots is None:
                    return None
                changed |= roots
        return changed

    def _trees_changed(self, roots: frozenset[int] | None) -> None:
        self.tree_revision += 1
        self._tree_changes.append((self.tree_revision, roots))
        if len(self._tree_changes) > 1024:
            del self._tree_changes[:512]

    def _apply(self, class_names, changed, removed, read_details) -> None:
        # A class renamed or deleted (new ones change none): what is kept names it.
        renamed = any(class_names.get(id_) != name for id_, name in self.class_names.items())
        self.class_names = class_names
        touched_trees: set[int] = set()
        # Everything old out first, then the new in: a trait or aggregate may have
        # passed from one provider to another under a new id (or, on SQLite, an id
        # to a new name) between two refreshes.
        for provider_id in removed.union(version[0] for version in changed):
            self._forget(provider_id, touched_trees)
        # The details a chunk at a time: read whole, a large copy's rows and their
        # parse would take more memory at once than the copy itself.
        for start in range(0, len(changed), self.read_chunk):
            chunk = changed[start : start + self.read_chunk]
            details = read_details(chunk)
            for version in chunk:
                found = details.get(version[0])
                # None: deleted since its version was read. A write request reads at
                # READ COMMITTED on PostgreSQL, each statement seeing what committed
                # before it; the deletion is logged after the position kept, so the next
                # refresh reads it again. (So is any change the details show that
                # their version does not: the copy is never behind the log.)
                if found is not None:
                    self._add(version, found, touched_trees)
        for root_id in touched_trees:
            tree = self.trees.get(root_id)
            if tree:
                tree.sort()
                before = self.form_of_tree.get(root_id)
                form = self.form_of_tree[root_id] = self._form(tree)
                if before is None or before.least_free.keys() != form.least_free.keys():
                    self._roots_having.clear()  # a tree gained or lost a class
            else:
                self.trees.pop(root_id, None)
                self.form_of_tree.pop(root_id, None)
                self._roots_having.clear()
                self._roots_in_order = None
        self._shared.trim(len(self.providers))
        renumbered = len(self._form_numbers) > 4 * len(self.trees) + 1024
        if renumbered:
            self._renumber_forms()
        if renamed or renumbered:
            self._trees_changed(None)
        elif touched_trees:
            self._trees_changed(frozenset(touched_trees))

    def roots_in_order(self) -> list[int]:
        """The root ids of every tree, in order (a new list: the caller's own)."""
        return list(self._sorted_roots())

    def roots_having(self, classes: frozenset[int]) -> list[int]:
        """The root ids of the trees with an inventory of every class of ``classes``, in
        order (a new list: the caller's own). Kept for the sets asked lately while no
        tree gains or loses a class: a write of usage changes nothing here, so a search
        after it does not pass over every tree that could never answer it."""
        roots = self._roots_having.get(classes)
        if roots is None:
            if len(self._roots_having) >= 64:
                self._roots_having.clear()
            form_of_tree = self.form_of_tree
            roots = self._roots_having[classes] = [
                root_id
                for root_id in self._sorted_roots()
                if classes <= form_of_tree[root_id].least_free.keys()
            ]
        return list(roots)

    def _sorted_roots(self) -> list[int]:
        if self._roots_in_order is None:
            self._roots_in_order = sorted(self.trees)
        return self._roots_in_order

    def _forget(self, provider_id: int, touched_trees: set[int]) -> None:
        provider = self.providers.pop(provider_id, None)
        if provider is None:
            return
        self.trees[provider.root_id].remove(provider_id)
        touched_trees.add(provider.root_id)
        if self.id_of_uuid.get(provider.uuid) == provider_id:
            del self.id_of_uuid[provider.uuid]
        if self.id_of_name.get(provider.name) == provider_id:
            del self.id_of_name[provider.name]
        for name, trait_id in provider.trait_ids_by_name:
            _leave(self.with_trait, self.trait_id_of_name, name, trait_id, provider_id)
        for uuid, aggregate_id in provider.aggregate_uuids:
            _leave(self.in_aggregate, self.aggregate_id_of_uuid, uuid, aggregate_id, provider_id)

    def _add(self, version: tuple, details: data.ProviderDetails, touched_trees) -> None:
        provider_id, _generation, _revision, parent_id, root_id = version[:5]
        traits = tuple(sorted(details.traits.items()))
        aggregates = tuple(sorted(details.aggregates.items()))
        inventories = tuple(sorted(details.inventories.items()))
        shared = self._shared.get
        self.providers[provider_id] = Provider(
            id=provider_id,
            version=version,
            uuid=details.uuid,
            name=sys.intern(details.name),
            parent_id=parent_id,
            root_id=root_id,
            inventories=shared(("inventories", inventories), lambda: _inventories(inventories)),
            traits=shared(("trait ids", traits), lambda: _ids(traits)),
            aggregates=shared(("aggregate ids", aggregates), lambda: _ids(aggregates)),
            # Upstream's order for summaries: the traits' ids.
            trait_ids_by_name=shared(("trait names", traits), lambda: _names_and_ids(traits)),
            aggregate_uuids=shared(
                ("aggregate uuids", aggregates), lambda: _names_and_ids(aggregates)
            ),
        )
        if root_id not in self.trees:
            self._roots_in_order = None
        self.trees.setdefault(root_id, []).append(provider_id)
        touched_trees.add(root_id)
        self.id_of_uuid[details.uuid] = provider_id
        self.id_of_name[self.providers[provider_id].name] = provider_id
        for trait_id, name in details.traits.items():
            self.with_trait.setdefault(trait_id, set()).add(provider_id)
            self.trait_id_of_name[name] = trait_id
        for aggregate_id, uuid in details.aggregates.items():
            self.in_aggregate.setdefault(aggregate_id, set()).add(provider_id)
            self.aggregate_id_of_uuid[uuid] = aggregate_id

    def _forget_everything(self) -> None:
        for name, value in vars(ProviderWorld()).items():
            if name not in ("lock", "read_chunk"):  # (the lock is held by the caller)
                setattr(self, name, value)

    def _form(self, tree: list[int]) -> TreeForm:
        return tree_form(self.providers, tree, self._form_numbers, self._shared)

    def _renumber_forms(self) -> None:
        """Forget the forms no tree has any more."""
        self._form_numbers = {}
        for root_id, tree in self.trees.items():
            self.form_of_tree[root_id] = self._form(tree)


def _inventories(rows: tuple) -> dict[int, Inventory]:
    """class id -> Inventory, by class id, of (class id, inventory row) pairs as
    ``data.provider_details`` reads them."""
    inventories = {}
    for class_id, (total, reserved, ratio, min_unit, max_unit, step_size, used) in rows:
        used = int(used)
        inventories[class_id] = Inventory(
            capacity.capacity(total, reserved, ratio),
            used,
            capacity.free(total, reserved, ratio, used),
            min_unit,
            max_unit,
            step_size,
            capacity.unrounded(total, reserved, ratio),
            total,
            reserved,
            float(ratio),
        )
    return inventories


def _ids(pairs: tuple) -> frozenset[int]:
    return frozenset(id_ for id_, _name in pairs)


def _names_and_ids(pairs: tuple) -> tuple[tuple[str, int], ...]:
    return tuple((sys.intern(name), id_) for id_, name in pairs)


def _leave(members_of: dict, id_of_name: dict, name: str, id_: int, provider_id: int) -> None:
    """Take a provider out of the members of a trait or aggregate; forget the trait or
    aggregate (and its name, unless it now names another) when it has none left."""
    members = members_of[id_]
    members.discard(provider_id)
    if not members:
        del members_of[id_]
        if id_of_name.get(name) == id_:
            del id_of_name[name]
