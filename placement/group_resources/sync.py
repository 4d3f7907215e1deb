"""Node sync and delete: make a node's provider tree exactly what its key map says, or
delete it.

``sync_node`` and ``delete_node`` are the translator's own, for its kind of node
(``nodes.kinds``): a device node is the device feature's, so they refuse it (409);
that feature writes and deletes its nodes' trees through ``write_tree`` and
``delete_tree``, which take a node of either kind.

Idempotent: a map equal to the last one changes no row and no generation.
A changed map adds, updates and removes group providers and inventories in
the request's one transaction. Removing groups that have allocations is
refused before anything is written; an inventory change that would leave
allocations without room is refused when it is reached. Either way the 409
names the group, and the transaction rolls back: nothing changes.

Syncs and deletes of one node run one after the other
(``group_nodes.lock_node``, taken before the tree is read): each reads the
tree as the one before committed it, so concurrent syncs never write from a
stale read, and the node ends as one of them asked.

Providers that others added to a node's tree (names not under
``<node>/``) are left alone.
"""

import uuid as uuid_lib
from dataclasses import dataclass

from sqlalchemy import Connection

from placement import errors
from placement.data import group_nodes, provider_traits
from placement.data import inventories as inventory_data
from placement.data import providers as provider_data
from placement.data.inventories import Inventory
from placement.group_resources.node_tree import DesiredProvider, desired_tree
from placement.nodes.kinds import NodeKind, kind_of
from placement.nodes.naming import (
    NODE_TRAIT,
    Naming,
    level_trait,
    path_of,
    provider_name,
)

MAX_NAME = 200  # resource provider names


@dataclass(frozen=True)
class SyncResult:
    created: bool  # the node did not exist before
    changed: bool  # something was written


def sync_node(
    conn: Connection, node: str, resources: object, naming: Naming, node_uuid: str | None = None
) -> SyncResult:
    """Make the translator node's tree match its key map; a device node is refused."""
    group_nodes.lock_node(conn, node)  # before reading anything of the node
    if node_kind(conn, node) is NodeKind.DEVICE:
        raise errors.Conflict(
            f"Node {node} is a device node: import its topology through "
            f"/group_resources/device_nodes/{node}.",
            code=errors.GROUP_DEVICE_NODE,
        )
    return write_tree(conn, node, resources, naming, node_uuid)


def delete_node(conn: Connection, node: str) -> None:
    """Delete a translator node without allocations; a device node is refused (the device
    feature deletes it, with what it keeps beside the tree)."""
    group_nodes.lock_node(conn, node)
    if node_kind(conn, node) is NodeKind.DEVICE:
        raise errors.Conflict(
            f"Node {node} is a device node: delete it through "
            f"/group_resources/device_nodes/{node}.",
            code=errors.GROUP_DEVICE_NODE,
        )
    delete_tree(conn, node)


def node_kind(conn: Connection, node: str) -> NodeKind | None:
    """The kind of the node named ``node`` (None: no such node)."""
    provider = provider_data.get_provider_by_name(conn, node)
    if provider is None or provider.parent_provider_id is not None:
        return None
    return kind_of(provider_traits.get_provider_traits(conn, provider))


def write_tree(
    conn: Connection, node: str, resources: object, naming: Naming, node_uuid: str | None = None
) -> SyncResult:
    """Make the node's tree (of either kind) match ``resources``."""
    if not node or "/" in node or len(node) > MAX_NAME or not node.isprintable():
        raise errors.BadRequest(f"A node name is 1 to {MAX_NAME} printable characters without '/'.")
    desired = desired_tree(resources, naming)
    group_nodes.lock_node(conn, node)
    for wanted in desired.providers:
        if len(provider_name(node, wanted.path)) > MAX_NAME:
            raise errors.BadRequest(
                f"Group {'/'.join(wanted.path)}: its provider name "
                f"'{provider_name(node, wanted.path)}' is longer than {MAX_NAME} characters."
            )
    group_nodes.ensure_custom_names(
        conn,
        {c for p in desired.providers for c in p.inventories},
        {NODE_TRAIT} | {level_trait(p.level) for p in desired.providers if p.level},
    )
    root, created = _root(conn, node, node_uuid)
    existing = {
        path: provider_id
        for name, provider_id in group_nodes.tree_provider_ids_by_name(conn, root.id).items()
        if (path := path_of(node, name)) is not None
    }
    wanted_paths = {p.path for p in desired.providers}
    removed = sorted((path for path in existing if path not in wanted_paths), key=len, reverse=True)
    _refuse_removing_allocated(conn, node, [existing[p] for p in removed], removed)
    new_groups = [wanted for wanted in desired.providers if wanted.path not in existing]
    group_nodes.create_groups(
        conn,
        root.id,
        [
            group_nodes.NewGroup(
                name=provider_name(node, wanted.path),
                parent_name=provider_name(node, wanted.parent_path or ()),
                trait=level_trait(wanted.level or ""),
                inventories=_owned_inventories(wanted),
            )
            for wanted in new_groups
        ],
    )
    changed = created or bool(new_groups)
    for wanted in desired.providers:
        if wanted.path and wanted.path not in existing:
            continue  # created just now, complete
        provider = _provider(conn, root, wanted, existing)
        if wanted.path:
            changed |= _restore_parent(conn, root, provider, wanted, existing)
            provider = _provider(conn, root, wanted, existing)
        changed |= _sync_provider(conn, node, provider, wanted)
    for path in removed:
        provider = provider_data.require_provider_by_id(conn, existing[path])
        provider_data.delete_provider(conn, provider)
        changed = True
    return SyncResult(created=created, changed=changed)


def delete_tree(conn: Connection, node: str) -> None:
    """Delete the node's tree (of either kind) when nothing is allocated on it."""
    group_nodes.lock_node(conn, node)
    root = require_node(conn, node)
    by_name = group_nodes.tree_provider_ids_by_name(conn, root.id)
    foreign = sorted(name for name in by_name if path_of(node, name) is None)
    if foreign:
        raise errors.Conflict(
            f"Node {node} holds providers the translator did not create: "
            f"{', '.join(foreign)}. Delete or move them first.",
            code=errors.PROVIDER_CANNOT_DELETE_PARENT,
        )
    ordered = sorted(by_name.items(), key=lambda item: item[0].count("/"), reverse=True)
    in_use = group_nodes.providers_with_allocations(conn, list(by_name.values()))
    if in_use:
        held = sorted(name for name, provider_id in by_name.items() if provider_id in in_use)
        raise errors.Conflict(
            f"Node {node} still has allocations on: {', '.join(held)}.",
            code=errors.PROVIDER_IN_USE,
        )
    for _name, provider_id in ordered:
        provider_data.delete_provider(conn, provider_data.require_provider_by_id(conn, provider_id))


def require_node(conn: Connection, node: str) -> provider_data.Provider:
    provider = provider_data.get_provider_by_name(conn, node)
    if provider is None or not group_nodes.is_managed(conn, provider.id):
        raise errors.NotFound(f"No group-resource node named {node}.")
    return provider


def _root(conn, node: str, node_uuid: str | None) -> tuple[provider_data.Provider, bool]:
    provider = provider_data.get_provider_by_name(conn, node)
    if provider is None:
        provider = provider_data.create_provider(
            conn, node_uuid or str(uuid_lib.uuid4()), node, None
        )
        provider_traits.set_provider_traits(conn, provider, [NODE_TRAIT], provider.generation)
        return provider_data.require_provider(conn, provider.uuid), True
    if provider.parent_provider_id is not None or not group_nodes.is_managed(conn, provider.id):
        raise errors.Conflict(
            f"A resource provider named {node} exists and is not a group-resource node.",
            code=errors.DUPLICATE_NAME,
        )
    if node_uuid is not None and node_uuid != provider.uuid:
        raise errors.Conflict(
            f"Node {node} exists with uuid {provider.uuid}, not {node_uuid}.",
            code=errors.DUPLICATE_NAME,
        )
    return provider, False


def _refuse_removing_allocated(conn, node: str, provider_ids: list[int], paths) -> None:
    in_use = group_nodes.providers_with_allocations(conn, provider_ids)
    held = [
        path for path, provider_id in zip(paths, provider_ids, strict=True) if provider_id in in_use
    ]
    if held:
        keys = ", ".join("/".join(path) for path in sorted(held))
        raise errors.Conflict(
            f"Node {node}: cannot remove groups that still have allocations: {keys}.",
            code=errors.PROVIDER_IN_USE,
        )


def _restore_parent(conn, root, provider, wanted: DesiredProvider, existing) -> bool:
    """Put a group back under the group its path names, if it was moved; True if it was."""
    parent_id = existing[wanted.parent_path] if wanted.parent_path else root.id
    if provider.parent_provider_id == parent_id:
        return False
    parent = provider_data.require_provider_by_id(conn, parent_id)
    provider_data.bump_generation(conn, provider, provider.generation)
    provider_data.set_parent(conn, provider, parent.uuid, allow_reparent=True)
    return True


def _owned_inventories(wanted: DesiredProvider) -> dict[str, Inventory]:
    """The inventories the map gives a group: the translator owns every field."""
    return {
        resource_class: Inventory(
            resource_class=resource_class,
            total=total,
            reserved=0,
            min_unit=1,
            max_unit=total,
            step_size=1,
            allocation_ratio=1.0,
        )
        for resource_class, total in wanted.inventories.items()
    }


def _provider(conn, root, wanted: DesiredProvider, existing) -> provider_data.Provider:
    if not wanted.path:
        return provider_data.require_provider(conn, root.uuid)
    return provider_data.require_provider_by_id(conn, existing[wanted.path])


def _sync_provider(conn, node: str, provider, wanted: DesiredProvider) -> bool:
    changed = False
    if wanted.level is not None:
        trait = level_trait(wanted.level)
        current_traits = provider_traits.get_provider_traits(conn, provider)
        if trait not in current_traits:
            provider_traits.set_provider_traits(
                conn, provider, [*current_traits, trait], provider.generation
            )
            provider = provider_data.require_provider(conn, provider.uuid)
            changed = True
    current = inventory_data.get_inventories(conn, provider)
    target = _owned_inventories(wanted)
    if {c: i.fields() for c, i in current.items()} != {c: i.fields() for c, i in target.items()}:
        try:
            inventory_data.replace_inventories(
                conn, provider, target, provider.generation, refuse_below_usage=True
            )
        except errors.Conflict as exc:
            where = f"group {'/'.join(wanted.path)}" if wanted.path else "node resources"
            raise errors.Conflict(f"Node {node}, {where}: {exc.detail}", code=exc.code) from exc
        changed = True
    return changed
