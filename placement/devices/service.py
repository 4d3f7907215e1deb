"""The device feature's front door (``DeviceSearch``): what the HTTP views, the CLI and
the features above (gangs, the scheduler extender) call to search, claim, explain and
show, with a request they parsed (``request``).

Each method takes an open connection inside a transaction and leaves the commit to
its caller, so one call is one transaction. Importing a topology and deleting a
device node is ``importing``'s; the JSON answers are ``bodies``'.
"""

from collections.abc import Callable
from typing import TypeVar

from sqlalchemy import Connection

from placement import errors
from placement.claiming import Claimant, ClaimRecorder, NewConsumer, NotRecorded, claim_best
from placement.collector import collector_paused
from placement.data import consumers as consumer_data
from placement.data import device_topologies, group_nodes
from placement.devices import bodies, checkpoints, explain
from placement.devices.node_map import (
    device_naming,
)
from placement.devices.replica_nodes import DeviceNodesKept
from placement.devices.request import DeviceRequest
from placement.devices.search import DeviceAnswer, DeviceCandidate, rank
from placement.devices.snapshot import DeviceNodes
from placement.devices.stored import StoredTopologies
from placement.group_resources import sync as group_sync
from placement.nodes.naming import Naming
from placement.nodes.search_budget import Cut, SearchBudget
from placement.replica.replica import Replica

MIB = 2**20
T = TypeVar("T")


class DeviceSearch:
    """The front door of device searches and claims, one per application (process):
    it reads the device nodes from the application's copy of the providers
    (``Replica``), and owns the stored topologies read so far and the nodes built
    from them, kept until their trees change (``replica_nodes``). Claims are told to
    ``claims`` (the application's metrics)."""

    def __init__(self, replica: Replica, recorder: ClaimRecorder | None = None) -> None:
        self._replica = replica
        self._recorder = recorder or NotRecorded()
        self._stored = StoredTopologies()
        self._nodes = DeviceNodesKept(self._stored)

    def node_view(self, conn: Connection, naming: Naming, node: str) -> dict:
        """The node's topology, and each device's provider and inventories with usage."""
        documents = device_topologies.read_documents(conn, [node])
        if node not in documents:
            raise errors.NotFound(f"No device node named {node}.")
        root = group_sync.require_node(conn, node)
        topology = self._stored.read(documents[node]).topology
        nodes = self.read_device_nodes(conn, naming, [node]).by_name()
        return bodies.node_body(node, root.uuid, topology, nodes[0] if nodes else None)

    def read_device_nodes(
        self, conn: Connection, naming: Naming, node_names: list[str] | None = None
    ) -> DeviceNodes:
        """The device nodes as they are now, and the names of those whose trees no longer
        match their topologies (left out until imported again)."""
        with self._replica.current(conn) as world:
            return self._nodes.read(conn, world, device_naming(naming), node_names)

    def hold_checkpoints(
        self,
        conn: Connection,
        naming: Naming,
        node: str,
        entries: list[checkpoints.Checkpoint],
        project_id: str = consumer_data.INCOMPLETE_CONSUMER_ID,
        user_id: str = consumer_data.INCOMPLETE_CONSUMER_ID,
    ) -> checkpoints.HoldResult:
        """Hold the devices the node's kubelet checkpoint says pods hold, and release
        those of pods it no longer lists (``checkpoints``); idempotent."""
        group_nodes.lock_node(conn, node)  # one report of a node at a time, after imports
        if node not in device_topologies.read_documents(conn, [node]):
            raise errors.NotFound(f"No device node named {node}.")
        root = group_sync.require_node(conn, node)
        found = self.read_device_nodes(conn, naming, [node])
        nodes = found.by_name()
        if not nodes:
            raise errors.Conflict(
                f"Node {node}'s tree no longer matches its topology; import it again "
                "before its checkpoint."
            )
        return checkpoints.hold(conn, nodes[0], root.id, entries, project_id, user_id)

    def find_candidates(
        self,
        conn: Connection,
        request: DeviceRequest,
        naming: Naming,
        scorer: str = "pack",
        limit: int | None = None,
        node_names: list[str] | None = None,
        budget: SearchBudget | None = None,
    ) -> DeviceAnswer:
        """The device nodes ranked for ``request``; a ``budget`` that runs out stops the
        search and says how far it got (``budget.cut``; ``search.rank``)."""
        budget = budget or SearchBudget()
        # As the other searches: many small objects, no cycles. The nodes are ranked
        # while the copy is held: they are kept in it from one search to the next.
        with collector_paused(), self._replica.current(conn) as world:
            nodes = self._nodes.read(conn, world, device_naming(naming), node_names)
            budget.start()  # the search's, as the translator's: the nodes are up to date
            answer = rank(nodes, request, scorer, limit, budget)
        if budget.cut is not None:
            self._recorder.search_cut("devices")
        return answer

    def over_nodes(self, conn: Connection, naming: Naming, search: Callable[[DeviceNodes], T]) -> T:
        """``search`` over every device node as it is now, while the copy of the providers
        is held (the gangs' searches: ``placement.gangs``)."""
        with collector_paused(), self._replica.current(conn) as world:
            return search(self._nodes.read(conn, world, device_naming(naming), None))

    def explain(
        self,
        conn: Connection,
        request: DeviceRequest,
        naming: Naming,
        node_names: list[str] | None = None,
    ) -> explain.Explanation:
        """Why ``request`` finds the candidates it finds, or none (``explain``): the
        search's checks counted over every device node, in its order."""
        with collector_paused(), self._replica.current(conn) as world:
            nodes = self._nodes.read(conn, world, device_naming(naming), node_names)
            return explain.explain(nodes, request)

    def claim(
        self,
        conn: Connection,
        request: DeviceRequest,
        naming: Naming,
        consumer_uuid: str,
        project_id: str,
        user_id: str,
        consumer_type: str | None = None,
        scorer: str = "pack",
        node_names: list[str] | None = None,
        budget: SearchBudget | None = None,
    ) -> DeviceCandidate:
        """Choose the best devices and allocate them to a new consumer.

        A concurrent claim committing first may take what was chosen: the write
        then fails placement's capacity check and the choice is made again from
        fresh data, at random among the nodes ranked as well as the best. A
        ``budget`` bounds the whole claim, as the translator's
        (``group_resources.service``).
        """
        budget = budget or SearchBudget()

        def choose(limit: int) -> list[DeviceCandidate] | errors.PlacementError:
            answer = self.find_candidates(
                conn, request, naming, scorer, limit, node_names, budget=budget
            )
            return answer.candidates or unplaceable(answer, budget.cut)

        claimant = Claimant(
            kind="devices",
            choose=choose,
            standing=_standing,
            allocations=lambda candidate: candidate.allocations(request),
            confirm=lambda candidate: self.still_healthy(conn, candidate),
        )
        return claim_best(
            conn,
            claimant,
            NewConsumer(consumer_uuid, project_id, user_id, consumer_type),
            self._recorder,
        )

    def still_healthy(self, conn: Connection, *candidates: DeviceCandidate) -> None:
        """Conflict (choose again) when an import committed since the choice marked a
        chosen device unhealthy. Read once the claim holds its devices' rows, which such
        an import locks too: whichever commits first, the other sees it. (Several
        candidates: a gang's members, their nodes' documents read at once.)"""
        names = sorted({candidate.node.name for candidate in candidates})
        documents = device_topologies.read_documents(conn, names)
        for candidate in candidates:
            node = candidate.node
            document = documents.get(node.name)
            topology = self._stored.read(document).topology if document is not None else None
            for index, _amounts in candidate.pick.takes:
                device = node.devices[index].device
                now = topology.device(device.type, device.minor) if topology else None
                if now is None or not now.healthy:
                    raise errors.Conflict(
                        f"Device {device.name} of node {node.name} was found unhealthy (or "
                        "removed) since it was chosen.",
                        code=errors.CONCURRENT_UPDATE,
                    )


def _standing(candidate: DeviceCandidate) -> tuple:
    pick = candidate.pick
    return (pick.scope, pick.strength, round(candidate.score, 9))


def unplaceable(answer: DeviceAnswer, cut: Cut | None = None) -> errors.Conflict:
    if not answer.nodes_considered:
        stale = (
            f" ({len(answer.out_of_sync)} device node(s) have trees that no longer match "
            f"their topologies: {', '.join(answer.out_of_sync[:5])}; import them again)"
            if answer.out_of_sync
            else ""
        )
        return errors.Conflict(
            f"No device node exists to place the request on{stale}.",
            code=errors.GROUP_UNPLACEABLE,
        )
    reason, count = answer.unfit[0]
    return errors.Conflict(
        f"No device node can take the request: {reason} ({count} of "
        f"{answer.nodes_considered} node(s)).{Cut.sentence_of(cut)}",
        code=errors.GROUP_UNPLACEABLE,
    )
