"""The translator's Python API: what the HTTP views and the CLI call.

Each function takes an open connection inside a transaction and leaves the
commit to its caller, so one call is one transaction.
"""

from dataclasses import dataclass

from sqlalchemy import Connection

from placement import errors
from placement.claiming import Claimant, ClaimRecorder, NewConsumer, NotRecorded, claim_best
from placement.collector import collector_paused
from placement.data import device_topologies, group_nodes
from placement.group_resources import explain, sync
from placement.group_resources.allocator import Placement
from placement.group_resources.candidate_query import CandidateQuery, candidate_query
from placement.group_resources.replica_nodes import NodesKept, ReplicaNodes
from placement.group_resources.request_tree import Unplaced, fit_to_levels, parse_request
from placement.group_resources.scoring import scorer_for
from placement.group_resources.search import CandidateAnswer, Ranking, bounded_ranking
from placement.group_resources.snapshot import Node, build_nodes, rooms_of
from placement.group_resources.sync import SyncResult, require_node
from placement.nodes.group_options import DEFAULT_OPTIONS, GroupOptions
from placement.nodes.naming import Naming, path_of
from placement.nodes.search_budget import Cut, SearchBudget
from placement.replica.replica import Replica

__all__ = [
    "CandidateAnswer",
    "SyncResult",
    "GroupResourceSearch",
    "delete_node",
    "node_view",
    "sync_node",
    "translate",
]


def sync_node(
    conn: Connection, node: str, resources: object, naming: Naming, node_uuid: str | None = None
) -> SyncResult:
    """Make the node's tree match its key map. A device node's tree is its topology's
    (``placement.devices``): it is refused here rather than taken out of the device search."""
    group_nodes.lock_node(conn, node)  # before reading anything of the node
    if device_topologies.read_documents(conn, [node]):
        raise errors.Conflict(
            f"Node {node} is a device node: import its topology through "
            f"/group_resources/device_nodes/{node}.",
            code=errors.GROUP_DEVICE_NODE,
        )
    return sync.sync_node(conn, node, resources, naming, node_uuid)


def delete_node(conn: Connection, node: str) -> None:
    """Delete a node without allocations; a device node's stored topology goes with it."""
    sync.delete_node(conn, node)
    device_topologies.delete_document(conn, node)


class GroupResourceSearch:
    """The front door of the translator's searches and claims, one per application:
    they read the nodes from its copy of the providers (``Replica``), brought up to
    date at the start of each search; what they build of each tree is kept until the
    tree changes (``replica_nodes.NodesKept``). Claims are told to ``claims`` (the
    application's metrics)."""

    def __init__(self, replica: Replica, recorder: ClaimRecorder | None = None) -> None:
        self._replica = replica
        self._kept = NodesKept()
        self._recorder = recorder or NotRecorded()

    def find_candidates(
        self,
        conn: Connection,
        resources: object,
        naming: Naming,
        scorer: str = "pack",
        limit: int | None = None,
        node_names: list[str] | None = None,
        options: GroupOptions = DEFAULT_OPTIONS,
        budget: SearchBudget | None = None,
    ) -> CandidateAnswer:
        """Every node's best placement of ``resources``, best node first, read as
        ``options`` say.

        Without ``limit`` every node is placed. With ``limit`` the nodes are visited
        best bound first (``search.bounded_ranking``) and the search stops as soon as
        no node left can beat the ``limit`` found. With a ``budget`` the nodes are
        visited best bound first too, and a search its deadline stops answers the best
        found so far (``budget.cut`` then says how far it got).
        """
        request = parse_request(resources, naming)
        return self._rank(
            conn, _ranking(request, scorer, options), limit, node_names, budget or SearchBudget()
        )

    def _rank(
        self,
        conn: Connection,
        ranking: Ranking,
        limit: int | None,
        node_names: list[str] | None,
        budget: SearchBudget,
    ) -> CandidateAnswer:
        with collector_paused(), self._replica.current(conn) as world:
            source = ReplicaNodes(world, node_names, self._kept)
            budget.start()
            if limit is None and not budget.timed:
                ranking.consider_all(source)
                return ranking.answer(None, complete=True)
            answer = bounded_ranking(source, ranking, limit, budget)
        if budget.cut is not None:
            self._recorder.search_cut("group_resources")
        return answer

    def explain(
        self,
        conn: Connection,
        resources: dict,
        naming: Naming,
        node_names: list[str] | None = None,
        options: GroupOptions = DEFAULT_OPTIONS,
    ) -> explain.Explanation:
        """Why ``resources`` find the candidates they find, or none (``explain``): the
        candidates search's checks counted over every node, in its order."""
        request = parse_request(resources, naming)
        ranking = _ranking(request, "pack", options)
        with collector_paused(), self._replica.current(conn) as world:
            source = ReplicaNodes(world, node_names, self._kept)
            return explain.explain(source, ranking, list(resources))

    def claim(
        self,
        conn: Connection,
        resources: object,
        naming: Naming,
        consumer_uuid: str,
        project_id: str,
        user_id: str,
        consumer_type: str | None = None,
        scorer: str = "pack",
        node_names: list[str] | None = None,
        options: GroupOptions = DEFAULT_OPTIONS,
        budget: SearchBudget | None = None,
    ) -> Placement:
        """Place ``resources`` on the best node and allocate them to a new consumer.

        Another claim committing first may take what was chosen: the write then
        fails its capacity check (PostgreSQL: after waiting for the other's
        provider locks), and the choice is made again from fresh data, at random
        among the nodes that score as well as the best, so that claimers racing
        for one node spread out. A ``budget`` bounds the whole claim: past it, each
        choice is the best of the nodes looked at (``budget.cut`` says how many, of
        the last search).
        """
        request = parse_request(resources, naming)
        budget = budget or SearchBudget()

        def choose(limit: int) -> list[Placement] | errors.PlacementError:
            ranking = _ranking(request, scorer, options)
            answer = self._rank(conn, ranking, limit, node_names, budget)
            return answer.placements or unplaceable(answer, budget.cut)

        claimant = Claimant(
            kind="group_resources",
            choose=choose,
            standing=lambda placement: placement.score_key,
            allocations=lambda placement: placement.allocations,
        )
        return claim_best(
            conn,
            claimant,
            NewConsumer(consumer_uuid, project_id, user_id, consumer_type),
            self._recorder,
        )


def _ranking(request, scorer: str, options: GroupOptions) -> Ranking:
    return Ranking(request, scorer_for(scorer, options.node_ranking), options)


def unplaceable(answer: CandidateAnswer, cut: Cut | None = None) -> errors.Conflict:
    if not answer.blocking:
        return errors.Conflict(
            "No group-resource node exists to place the request on.",
            code=errors.GROUP_UNPLACEABLE,
        )
    first = answer.blocking[0]
    return errors.Conflict(
        f"No node can take the request: {first.key} could not be placed on {first.nodes} "
        f"node(s) ({first.reason}).{Cut.sentence_of(cut)}",
        code=errors.GROUP_UNPLACEABLE,
    )


@dataclass(frozen=True)
class Translation:
    nodes: list[str]  # the nodes with these levels
    query: CandidateQuery | None
    unplaced: Unplaced | None


def translate(
    conn: Connection,
    resources: object,
    naming: Naming,
    node_names: list[str] | None = None,
    options: GroupOptions = DEFAULT_OPTIONS,
) -> list[Translation]:
    """The candidate query per kind of node (nodes with the same levels ask the same), as
    ``options`` read the request (the query is unscored: ``node_ranking`` changes
    nothing)."""
    request = parse_request(resources, naming)
    providers, inventories = group_nodes.read_nodes(conn, node_names, without_device_nodes=True)
    nodes = build_nodes(providers, rooms_of(inventories))
    by_shape: dict[tuple, list[Node]] = {}
    for node in nodes:
        by_shape.setdefault(node.levels.shape(), []).append(node)
    translations = []
    for same_levels in by_shape.values():
        fitted = fit_to_levels(request, same_levels[0].levels, not options.fills_flat_requests)
        names = [node.name for node in same_levels]
        if isinstance(fitted, Unplaced):
            translations.append(Translation(nodes=names, query=None, unplaced=fitted))
            continue
        in_tree = same_levels[0].root.uuid if len(nodes) == 1 else None
        translations.append(
            Translation(
                nodes=names,
                query=candidate_query(fitted, in_tree, isolate=not options.shares_groups),
                unplaced=None,
            )
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
            {
                "key": "/".join(path),
                "uuid": provider.uuid,
                "inventories": rooms.get(provider.id, {}),
            }
        )
    groups.sort(key=lambda group: str(group["key"]))
    return {
        "name": node,
        "uuid": root.uuid,
        "generation": root.generation,
        "inventories": rooms.get(root.id, {}),
        "groups": groups,
    }
