"""The translator's Python API: what the HTTP views and the CLI call.

Each function takes an open connection inside a transaction and leaves the
commit to its caller, so one call is one transaction.
"""

import random
from collections import Counter
from dataclasses import dataclass

from sqlalchemy import Connection

from placement import errors
from placement.data import allocations as allocation_data
from placement.data import consumers as consumer_data
from placement.data import group_nodes
from placement.group_resources.allocator import Allocator, Placement
from placement.group_resources.naming import Naming
from placement.group_resources.query_text import CandidateQuery, candidate_query
from placement.group_resources.request_tree import (
    GroupRequest,
    RequestGroup,
    Unplaced,
    fit_to_levels,
    parse_request,
)
from placement.group_resources.scoring import SCORERS
from placement.group_resources.snapshot import Location, Node, build_nodes
from placement.group_resources.sync import SyncResult, delete_node, require_node, sync_node

__all__ = [
    "CandidateAnswer",
    "SyncResult",
    "claim",
    "delete_node",
    "find_candidates",
    "node_view",
    "sync_node",
    "translate",
]

CLAIM_ATTEMPTS = 10
GROUP_UNPLACEABLE = "placement.group_resources.unplaceable"
CONSUMER_EXISTS = "placement.group_resources.consumer_exists"


@dataclass(frozen=True)
class BlockingKey:
    """A requested key that kept the request off ``nodes`` nodes, and why (on the first)."""

    key: str
    reason: str
    nodes: int


@dataclass(frozen=True)
class CandidateAnswer:
    placements: list[Placement]  # best first
    feasible_nodes: int
    blocking: list[BlockingKey]  # most blocking first; empty when every node fits


def find_candidates(
    conn: Connection,
    resources: object,
    naming: Naming,
    scorer: str = "pack",
    limit: int | None = None,
    node_names: list[str] | None = None,
) -> CandidateAnswer:
    """Every node's best placement of ``resources``, best node first."""
    request = parse_request(resources, naming)
    nodes = build_nodes(*group_nodes.read_nodes(conn, node_names))
    return _rank(request, nodes, scorer, limit)


def _rank(request: GroupRequest, nodes: list[Node], scorer: str, limit: int | None):
    allocator = Allocator(SCORERS[scorer])
    fitted_by_shape: dict[tuple, RequestGroup | Unplaced] = {}
    placements: list[Placement] = []
    blocked: Counter[str] = Counter()
    reasons: dict[str, str] = {}
    for node in nodes:
        shape = node.levels.shape()
        if shape not in fitted_by_shape:
            fitted_by_shape[shape] = fit_to_levels(request, node.levels)
        fitted = fitted_by_shape[shape]
        placement = None
        if not isinstance(fitted, Unplaced):
            placement = allocator.place(node, fitted, request.flat)
            if placement is None:
                fitted_reason = _explain(allocator, node, fitted, request.flat)
        else:
            fitted_reason = fitted
        if placement is not None:
            placements.append(placement)
            continue
        blocked[fitted_reason.key] += 1
        reasons.setdefault(fitted_reason.key, f"{node.name}: {fitted_reason.reason}")
    placements.sort(key=lambda p: (-p.score, p.node.name))
    feasible = len(placements)
    if limit is not None:
        placements = placements[:limit]
    blocking = [
        BlockingKey(key=key, reason=reasons[key], nodes=count)
        for key, count in blocked.most_common()
    ]
    return CandidateAnswer(placements=placements, feasible_nodes=feasible, blocking=blocking)


def _explain(allocator: Allocator, node: Node, top: RequestGroup, flat: bool) -> Unplaced:
    """The first requested key that keeps ``top`` off ``node``."""
    return _explain_group(allocator, node, top, node.root, flat)


def _explain_group(allocator, node, group: RequestGroup, location: Location, flat: bool):
    for demand in group.demands:
        room = location.rooms.get(demand.resource_class)
        where = "the node" if not location.path else "/".join(location.path)
        if room is None:
            return Unplaced(demand.key, f"{where} has no {demand.resource_class}")
        if not room.fits(demand.amount):
            free = room.capacity - room.used
            return Unplaced(
                demand.key,
                f"{where} has {free:g} {demand.resource_class} free, {demand.amount} requested",
            )
    for child in group.children:
        assert child.level is not None
        slots = (node.by_level if flat else location.children).get(child.level, [])
        fitting = [slot for slot in slots if allocator.fits_alone(child, slot)]
        if not fitting:
            if len(slots) == 1:
                return _explain_group(allocator, node, child, slots[0], False)
            label = "/".join(child.path)
            return Unplaced(
                child.first_key(), f"no {child.level!r} group has room for {label}"
            )
    label = ", ".join("/".join(child.path) for child in group.children)
    return Unplaced(
        group.children[0].first_key() if group.children else group.first_key(),
        f"not enough distinct groups with room for all of {label} together",
    )


def claim(
    conn: Connection,
    resources: object,
    naming: Naming,
    consumer_uuid: str,
    project_id: str,
    user_id: str,
    consumer_type: str | None = None,
    scorer: str = "pack",
    node_names: list[str] | None = None,
) -> Placement:
    """Place ``resources`` on the best node and allocate them to a new consumer.

    Another claim committing first may take what was chosen: the write then
    fails its capacity check (PostgreSQL: after waiting for the other's
    provider locks), and the choice is made again from fresh data, at random
    among the nodes that score as well as the best, so that claimers racing
    for one node spread out.
    """
    if consumer_data.get_consumer(conn, consumer_uuid) is not None:
        raise errors.Conflict(
            f"Consumer {consumer_uuid} already has allocations; a claim allocates for a new "
            "consumer.",
            code=CONSUMER_EXISTS,
        )
    request = parse_request(resources, naming)
    last_conflict = None
    for attempt in range(CLAIM_ATTEMPTS):
        nodes = build_nodes(*group_nodes.read_nodes(conn, node_names))
        answer = _rank(request, nodes, scorer, limit=None if attempt else 1)
        if not answer.placements:
            raise unplaceable(answer)
        best = answer.placements[0]
        if attempt:
            # Others chose the same best node; spread the retries over its equals.
            equals = [p for p in answer.placements if p.score >= best.score - 1e-9]
            best = random.choice(equals)
        write = allocation_data.ConsumerWrite(
            consumer_uuid=consumer_uuid,
            project_id=project_id,
            user_id=user_id,
            allocations=best.allocations,
            generation=None,
            consumer_type=consumer_type,
        )
        try:
            with conn.begin_nested():
                allocation_data.write_allocations(conn, [write])
        except errors.ConcurrentUpdate:
            raise
        except errors.Conflict as exc:
            last_conflict = exc
            continue
        return best
    raise errors.Conflict(
        f"Concurrent claims took every choice {CLAIM_ATTEMPTS} times in a row; retry. "
        f"Last: {last_conflict.detail if last_conflict else ''}",
        code=errors.CONCURRENT_UPDATE,
    )


def unplaceable(answer: CandidateAnswer) -> errors.Conflict:
    if not answer.blocking:
        return errors.Conflict(
            "No group-resource node exists to place the request on.", code=GROUP_UNPLACEABLE
        )
    first = answer.blocking[0]
    return errors.Conflict(
        f"No node can take the request: {first.key} could not be placed on {first.nodes} "
        f"node(s) ({first.reason}).",
        code=GROUP_UNPLACEABLE,
    )


@dataclass(frozen=True)
class Translation:
    nodes: list[str]  # the nodes with these levels
    query: CandidateQuery | None
    unplaced: Unplaced | None


def translate(
    conn: Connection, resources: object, naming: Naming, node_names: list[str] | None = None
) -> list[Translation]:
    """The candidate query per kind of node (nodes with the same levels ask the same)."""
    request = parse_request(resources, naming)
    nodes = build_nodes(*group_nodes.read_nodes(conn, node_names))
    by_shape: dict[tuple, list[Node]] = {}
    for node in nodes:
        by_shape.setdefault(node.levels.shape(), []).append(node)
    translations = []
    for same_levels in by_shape.values():
        fitted = fit_to_levels(request, same_levels[0].levels)
        names = [node.name for node in same_levels]
        if isinstance(fitted, Unplaced):
            translations.append(Translation(nodes=names, query=None, unplaced=fitted))
            continue
        in_tree = same_levels[0].root.uuid if len(nodes) == 1 else None
        translations.append(
            Translation(nodes=names, query=candidate_query(fitted, in_tree), unplaced=None)
        )
    return translations


def node_view(conn: Connection, node: str) -> dict:
    """The node's groups as stored: key path, provider, inventories with usage."""
    root = require_node(conn, node)
    providers, inventories = group_nodes.read_nodes(conn, [node])
    rooms: dict[int, dict] = {}
    for inventory in inventories:
        rooms.setdefault(inventory.provider_id, {})[inventory.resource_class] = {
            "total": inventory.total,
            "reserved": inventory.reserved,
            "allocation_ratio": inventory.allocation_ratio,
            "used": inventory.used,
        }
    groups = []
    for provider in providers:
        if provider.id == root.id:
            continue
        path = provider.name[len(node) + 1 :]
        groups.append(
            {"key": path, "uuid": provider.uuid, "inventories": rooms.get(provider.id, {})}
        )
    groups.sort(key=lambda group: str(group["key"]))
    return {
        "name": node,
        "uuid": root.uuid,
        "generation": root.generation,
        "inventories": rooms.get(root.id, {}),
        "groups": groups,
    }
