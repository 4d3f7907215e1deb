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
from placement.group_resources.naming import Naming, path_of
from placement.group_resources.query_text import CandidateQuery, candidate_query
from placement.group_resources.request_tree import (
    GroupRequest,
    RequestGroup,
    Unplaced,
    fit_to_levels,
    parse_request,
)
from placement.group_resources.scoring import SCORERS, Scorer, bound_key, score_key
from placement.group_resources.snapshot import (
    InventoryRow,
    Location,
    Node,
    ProviderRow,
    build_nodes,
)
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
RETRY_CHOICES = 16  # nodes a retried claim chooses among, if they score as well as the best


@dataclass(frozen=True)
class BlockingKey:
    """A requested key that kept the request off ``nodes`` nodes, and why (on the first)."""

    key: str
    reason: str
    nodes: int


@dataclass(frozen=True)
class CandidateAnswer:
    placements: list[Placement]  # best first
    feasible_nodes: int | None  # None when a limit stopped the search early
    blocking: list[BlockingKey]  # when nothing fits: the keys that blocked, most first


def find_candidates(
    conn: Connection,
    resources: object,
    naming: Naming,
    scorer: str = "pack",
    limit: int | None = None,
    node_names: list[str] | None = None,
) -> CandidateAnswer:
    """Every node's best placement of ``resources``, best node first.

    Without ``limit`` every node is read and placed. With ``limit`` the nodes
    are visited best bound first (``_bounded_ranking``) and the search stops
    as soon as no node left can beat the ``limit`` found.
    """
    request = parse_request(resources, naming)
    ranking = Ranking(request, SCORERS[scorer])
    if limit is None:
        ranking.consider_all(group_nodes.read_nodes(conn, node_names))
        return ranking.answer(None, complete=True)
    return _bounded_ranking(conn, ranking, limit, node_names)


FIRST_BATCH = 32  # nodes read at once by the bounded search; doubles each time


def _bounded_ranking(conn, ranking: "Ranking", limit: int, node_names) -> CandidateAnswer:
    """The ``limit`` best nodes, reading nodes in batches in order of their bound.

    A node's bound is the best score it could reach (``Scorer.bound``): its
    current use plus the request placed on the smallest (pack) or largest
    (spread) inventories of each class anywhere. A node whose bound is below
    the ``limit``-th best score found (or equal, and after it by name) cannot
    enter the answer, nor can any node after it, so the search stops there.
    """
    classes = {d.resource_class for g in ranking.request.top.walk() for d in g.demands}
    ranges = group_nodes.capacity_ranges(conn, classes)
    bounded = [
        (ranking.scorer.bound(s.utilisation, s.inventory_count, ranking.request, ranges), s)
        for s in group_nodes.node_summaries(conn, node_names)
    ]
    bounded.sort(key=lambda pair: (-bound_key(pair[0]), pair[1].name))
    position, batch = 0, FIRST_BATCH
    while position < len(bounded):
        bound, summary = bounded[position]
        if not ranking.could_enter(bound, summary.name, limit):
            return ranking.answer(limit, complete=False)
        chunk = bounded[position : position + batch]
        position, batch = position + batch, batch * 2
        root_ids = [s.root_id for _bound, s in chunk]
        ranking.consider_all(group_nodes.read_nodes(conn, root_ids=root_ids))
    return ranking.answer(limit, complete=True)


class Ranking:
    """The nodes placed so far for one request, and why the others were not."""

    def __init__(self, request: GroupRequest, scorer: Scorer) -> None:
        self.request = request
        self.scorer = scorer
        self.allocator = Allocator(scorer)
        self.placements: list[Placement] = []
        self._fitted: dict[tuple, RequestGroup | Unplaced] = {}
        self._blocked: Counter[str] = Counter()
        self._reasons: dict[str, tuple[str, str]] = {}  # key -> (node, reason)
        # One numbering of groups for all the nodes of this search: the
        # allocator remembers fits by these numbers.
        self._signatures: dict[tuple, int] = {}

    def consider_all(self, rows: tuple[list[ProviderRow], list[InventoryRow]]) -> None:
        """Place the request on every node of ``rows`` (from ``group_nodes.read_nodes``)."""
        for node in build_nodes(*rows, signatures=self._signatures):
            self.consider(node)

    def consider(self, node: Node) -> None:
        shape = node.levels.shape()
        if shape not in self._fitted:
            self._fitted[shape] = fit_to_levels(self.request, node.levels)
        fitted = self._fitted[shape]
        if isinstance(fitted, Unplaced):
            self._block(node, fitted)
            return
        placement = self.allocator.place(node, fitted, self.request.flat)
        if placement is None:
            self._block(node, _explain(self.allocator, node, fitted, self.request.flat))
            return
        self.placements.append(placement)

    def _block(self, node: Node, unplaced: Unplaced) -> None:
        """Count the node against the key; the reason shown is the first node's by name."""
        self._blocked[unplaced.key] += 1
        known = self._reasons.get(unplaced.key)
        if known is None or node.name < known[0]:
            self._reasons[unplaced.key] = (node.name, unplaced.reason)

    def could_enter(self, bound: float, name: str, limit: int) -> bool:
        """Whether a node with this bound and name could still be among the ``limit`` best."""
        if len(self.placements) < limit:
            return True
        last = sorted(self.placements, key=_rank_key)[limit - 1]
        return (-bound_key(bound), name) < _rank_key(last)

    def answer(self, limit: int | None, complete: bool) -> CandidateAnswer:
        ranked = sorted(self.placements, key=_rank_key)
        blocking = [
            BlockingKey(key=key, reason=": ".join(self._reasons[key]), nodes=count)
            for key, count in sorted(self._blocked.items(), key=lambda kv: (-kv[1], kv[0]))
        ]
        return CandidateAnswer(
            placements=ranked if limit is None else ranked[:limit],
            feasible_nodes=len(ranked) if complete else None,
            blocking=blocking if not ranked else [],
        )


def _rank_key(placement: Placement) -> tuple:
    return (-score_key(placement.score), placement.node.name)


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
                child.first_key(), f"no {child.written_level!r} group has room for {label}"
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
            code=errors.GROUP_CONSUMER_EXISTS,
        )
    request = parse_request(resources, naming)
    last_conflict = None
    for attempt in range(CLAIM_ATTEMPTS):
        ranking = Ranking(request, SCORERS[scorer])
        # A retry looks at a few more nodes, to spread over those as good as the best.
        answer = _bounded_ranking(conn, ranking, RETRY_CHOICES if attempt else 1, node_names)
        if not answer.placements:
            raise unplaceable(answer)
        best = answer.placements[0]
        if attempt:
            # Others chose the same best node; spread the retries over its equals.
            top = score_key(best.score)
            best = random.choice([p for p in answer.placements if score_key(p.score) == top])
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
            "No group-resource node exists to place the request on.",
            code=errors.GROUP_UNPLACEABLE,
        )
    first = answer.blocking[0]
    return errors.Conflict(
        f"No node can take the request: {first.key} could not be placed on {first.nodes} "
        f"node(s) ({first.reason}).",
        code=errors.GROUP_UNPLACEABLE,
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
        path = path_of(node, provider.name)
        if not path:
            continue  # the node itself, or a provider the translator does not own
        groups.append(
            {"key": "/".join(path), "uuid": provider.uuid,
             "inventories": rooms.get(provider.id, {})}
        )
    groups.sort(key=lambda group: str(group["key"]))
    return {
        "name": node,
        "uuid": root.uuid,
        "generation": root.generation,
        "inventories": rooms.get(root.id, {}),
        "groups": groups,
    }
