"""The translator's front door (``GroupResourceSearch``): what the HTTP views and the
CLI call to search, claim, explain and show, with a request they parsed
(``request_tree.parse_request``).

Each method takes an open connection inside a transaction and leaves the commit to
its caller, so one call is one transaction. Every one reads the nodes from the
process's copy of the providers, brought up to date as it starts; the translator's
nodes are those of its kind (``nodes.kinds``). Writing a node's tree and deleting it
is ``sync``'s.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from sqlalchemy import Connection

from placement import errors
from placement.claiming import Claimant, ClaimRecorder, NewConsumer, NotRecorded, claim_best
from placement.collector import collector_paused
from placement.group_resources import explain
from placement.group_resources.allocator import Placement
from placement.group_resources.candidate_query import CandidateQuery, candidate_query
from placement.group_resources.replica_nodes import NodesKept, ReplicaNodes, stored_view
from placement.group_resources.request_tree import GroupRequest, Unplaced, fit_to_levels
from placement.group_resources.scoring import scorer_for
from placement.group_resources.search import CandidateAnswer, Ranking, bounded_ranking
from placement.group_resources.snapshot import Node
from placement.nodes.group_options import DEFAULT_OPTIONS, GroupOptions
from placement.nodes.kinds import node_roots
from placement.nodes.search_budget import Cut, SearchBudget
from placement.replica.replica import Replica

__all__ = ["CandidateAnswer", "GroupResourceSearch", "Translation"]


@dataclass(frozen=True)
class Translation:
    nodes: list[str]  # the nodes with these levels
    query: CandidateQuery | None
    unplaced: Unplaced | None


class GroupResourceSearch:
    """The front door of the translator's searches, claims and views, one per
    application: they read the nodes from its copy of the providers (``Replica``),
    brought up to date at the start of each call; what they build of each tree is
    kept until the tree changes (``replica_nodes.NodesKept``). Claims are told to
    ``recorder`` (the application's metrics)."""

    def __init__(self, replica: Replica, recorder: ClaimRecorder | None = None) -> None:
        self._replica = replica
        self._kept = NodesKept()
        self._recorder = recorder or NotRecorded()

    @contextmanager
    def _nodes(self, conn: Connection, node_names: list[str] | None) -> Iterator[ReplicaNodes]:
        """The translator's nodes (only the named ones when given), from the copy brought up
        to date and held for the caller's reads."""
        with collector_paused(), self._replica.current(conn) as world:
            yield ReplicaNodes(world, node_names, self._kept)

    def build_nodes(self, conn: Connection) -> int:
        """Every translator node built from the copy brought up to date, and kept (the
        arbiter's, before it forks the workers: ``Services.prepare_to_fork``); how many."""
        with self._nodes(conn, None) as nodes:
            return len(nodes.nodes())

    def find(
        self,
        conn: Connection,
        request: GroupRequest,
        scorer: str = "pack",
        limit: int | None = None,
        node_names: list[str] | None = None,
        options: GroupOptions = DEFAULT_OPTIONS,
        budget: SearchBudget | None = None,
    ) -> CandidateAnswer:
        """Every node's best placement of ``request``, best node first, read as
        ``options`` say.

        Without ``limit`` every node is placed. With ``limit`` the nodes are visited
        best bound first (``search.bounded_ranking``) and the search stops as soon as
        no node left can beat the ``limit`` found. With a ``budget`` the nodes are
        visited best bound first too, and a search its deadline stops answers the best
        found so far (``budget.cut`` then says how far it got).
        """
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
        with self._nodes(conn, node_names) as source:
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
        request: GroupRequest,
        node_names: list[str] | None = None,
        options: GroupOptions = DEFAULT_OPTIONS,
    ) -> explain.Explanation:
        """Why ``request`` finds the candidates it finds, or none (``explain``): the
        candidates search's checks counted over every node, in its order."""
        ranking = _ranking(request, "pack", options)
        with self._nodes(conn, node_names) as source:
            return explain.explain(source, ranking, list(request.written))

    def claim(
        self,
        conn: Connection,
        request: GroupRequest,
        consumer_uuid: str,
        project_id: str,
        user_id: str,
        consumer_type: str | None = None,
        scorer: str = "pack",
        node_names: list[str] | None = None,
        options: GroupOptions = DEFAULT_OPTIONS,
        budget: SearchBudget | None = None,
    ) -> Placement:
        """Place ``request`` on the best node and allocate it to a new consumer.

        Another claim committing first may take what was chosen: the write then
        fails its capacity check (PostgreSQL: after waiting for the other's
        provider locks), and the choice is made again from fresh data, at random
        among the nodes that score as well as the best, so that claimers racing
        for one node spread out. A ``budget`` bounds the whole claim: past it, each
        choice is the best of the nodes looked at (``budget.cut`` says how many, of
        the last search).
        """
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

    def translate(
        self,
        conn: Connection,
        request: GroupRequest,
        node_names: list[str] | None = None,
        options: GroupOptions = DEFAULT_OPTIONS,
    ) -> list[Translation]:
        """The candidate query per kind of node (nodes with the same levels ask the same),
        as ``options`` read the request (the query is unscored: ``node_ranking`` changes
        nothing)."""
        with self._nodes(conn, node_names) as source:
            nodes = source.nodes()
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

    def show(self, conn: Connection, node: str) -> dict:
        """The node's groups as stored: key path, provider, inventories with usage (a node
        of either kind: a device node's tree is shown as the translator wrote it)."""
        with self._replica.current(conn) as world:
            roots = node_roots(world, names=[node])
            if not roots:
                raise errors.NotFound(f"No group-resource node named {node}.")
            return stored_view(world, roots[0])


def _ranking(request: GroupRequest, scorer: str, options: GroupOptions) -> Ranking:
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
