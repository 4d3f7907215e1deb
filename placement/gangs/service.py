"""The gangs' Python API: what the HTTP views call (the network, gang searches,
claims and releases).

Each function takes an open connection inside a transaction and leaves the commit to
its caller, so one call is one transaction. The network is read from the database by
each search, in its request's snapshot; the device nodes from the copy of the
providers every device search reads (``DeviceSearch.over_nodes``). A gang claim is
the device claims' loop (``claiming.claim_all``) over every member at once: all the
members' allocations are written together or not at all, chosen again from fresh data
when a concurrent claim took something first.
"""

from collections.abc import Mapping
from dataclasses import dataclass

from sqlalchemy import Connection

from placement import errors
from placement.claiming import Claimant, ClaimRecorder, NewConsumer, NotRecorded, claim_all
from placement.data import allocations as allocation_data
from placement.data import consumers as consumer_data
from placement.data import network as network_data
from placement.devices.service import DeviceSearch
from placement.devices.snapshot import DeviceNodes
from placement.gangs import explain
from placement.gangs.network import Network, check, network_from_body, node_domains
from placement.gangs.request import GangRequest, MemberKind, request_from_body
from placement.gangs.search import DomainFit, Gang, best_gangs
from placement.gangs.slots import NodeSlots, node_slots
from placement.nodes.naming import Naming
from placement.nodes.search_budget import Cut, SearchBudget

__all__ = ["GangAnswer", "GangRequest", "GangSearch", "MemberKind", "request_from_body"]


@dataclass(frozen=True)
class GangAnswer:
    request: GangRequest
    gangs: list[Gang]
    fits: list[DomainFit]  # every domain of the required level, the fullest first
    slots: list[NodeSlots]  # every device node's, by name
    network: Network

    def closest(self, most: int = explain.MOST_DOMAINS) -> list[dict]:
        return explain.closest(self, most)


def read_network(conn: Connection) -> Network:
    return network_data.read_network(conn)


def set_network(conn: Connection, levels: list[str], nodes: Mapping) -> Network:
    """Replace the network: levels and every node's domains, checked whole."""
    network = network_from_body(levels, nodes)
    network_data.lock_network(conn)
    network_data.replace_network(conn, network)
    return network


def set_node(conn: Connection, node: str, domains: Mapping[str, str]) -> bool:
    """Set one node's domains, checked with every other node's; True if it is new."""
    network_data.lock_network(conn)
    network = network_data.read_network(conn)
    if not network.levels:
        raise errors.BadRequest("The network has no levels: PUT /group_resources/network first.")
    path = node_domains(network.levels, domains, "domains")
    check(Network(network.levels, {**network.domains, node: path}))
    network_data.replace_node(conn, node, path)
    return node not in network.domains


def delete_node(conn: Connection, node: str) -> None:
    network_data.lock_network(conn)
    if node not in network_data.read_network(conn).domains:
        raise errors.NotFound(f"No node named {node} in the network.")
    network_data.replace_node(conn, node, None)


class GangSearch:
    """The front door of gang searches and claims, over the application's device search."""

    def __init__(self, devices: DeviceSearch, recorder: ClaimRecorder | None = None) -> None:
        self._devices = devices
        self._recorder = recorder or NotRecorded()

    def find(
        self,
        conn: Connection,
        request: GangRequest,
        naming: Naming,
        scorer: str = "pack",
        budget: SearchBudget | None = None,
    ) -> GangAnswer:
        """The best gang of each domain of the required level, best first. A ``budget``
        that runs out stops the search over the nodes: the gangs are then the best of
        the nodes looked at, and ``budget.cut`` says how many."""
        budget = budget or SearchBudget()
        counts = request.counts()
        network = network_data.read_network(conn)
        required = network.position(request.required, "required")
        preferred = None
        if request.preferred is not None:
            preferred = network.position(request.preferred, "preferred")
            if preferred < required:
                raise errors.BadRequest(
                    f"preferred: {request.preferred} is broader than the required level "
                    f"{request.required}; give a level at or below it."
                )

        def search(nodes: DeviceNodes) -> GangAnswer:
            budget.start()  # as the device search's: the nodes are up to date
            requests = [kind.request for kind in request.kinds]
            slots = node_slots(nodes, requests, scorer, counts, request.share_nodes, budget)
            gangs, fits = best_gangs(
                network, slots, counts, required, preferred, request.share_nodes
            )
            return GangAnswer(request, gangs, fits, slots, network)

        answer = self._devices.over_nodes(conn, naming, search)
        if budget.cut is not None:
            self._recorder.search_cut("gangs")
        return answer

    def claim(
        self,
        conn: Connection,
        request: GangRequest,
        naming: Naming,
        gang_uuid: str,
        consumers: list[NewConsumer],
        scorer: str = "pack",
        budget: SearchBudget | None = None,
    ) -> Gang:
        """Claim the best gang for ``consumers`` (one per member, in member order). A
        ``budget`` bounds the whole claim, as the device claims' does."""
        budget = budget or SearchBudget()
        if network_data.gang_consumers(conn, gang_uuid):
            raise errors.Conflict(
                f"Gang {gang_uuid} exists; a claim makes a new gang.", code=errors.GANG_EXISTS
            )

        def choose(limit: int) -> list[Gang] | errors.PlacementError:
            answer = self.find(conn, request, naming, scorer, budget)
            return answer.gangs[:limit] or unplaceable(answer, budget.cut)

        def confirm(gang: Gang) -> None:
            self._devices.still_healthy(conn, *(choice.on(node) for node, choice in gang.members))

        claimant = Claimant(
            kind="gangs",
            choose=choose,
            standing=lambda gang: gang.rank,
            allocations=lambda gang: [
                choice.on(node).allocations(request.request_of(choice.kind))
                for node, choice in gang.members
            ],
            confirm=confirm,
        )
        try:
            gang = claim_all(conn, claimant, consumers, self._recorder)
        except errors.Conflict as exc:
            if exc.code != errors.CONCURRENT_UPDATE:
                raise
            raise errors.Conflict(
                f"No gang of {request.members} member(s) could be held in one "
                f"{request.required} domain: {exc.detail}",
                code=errors.CONCURRENT_UPDATE,
            ) from exc
        network_data.record_gang(conn, gang_uuid, [consumer.uuid for consumer in consumers])
        return gang

    def release(self, conn: Connection, gang_uuid: str) -> None:
        """Delete every member's allocations, and the gang."""
        consumer_uuids = _members(conn, gang_uuid)
        # Every member's providers locked first, in one id order, as a claim locks them.
        held = allocation_data.providers_of_consumer_uuids(conn, consumer_uuids)
        allocation_data.lock_providers(conn, held, keep_generation_of=held)
        for consumer in consumer_data.get_consumers(conn, consumer_uuids).values():
            allocation_data.delete_consumer_allocations(conn, consumer)
        network_data.delete_gang(conn, gang_uuid)

    def show(self, conn: Connection, gang_uuid: str) -> dict:
        """The gang's consumers, each with its allocations (provider uuid -> class -> n)."""
        consumer_uuids = _members(conn, gang_uuid)
        found = consumer_data.get_consumers(conn, consumer_uuids)
        held = allocation_data.allocations_of_consumers(conn, [c.id for c in found.values()])
        return {
            "gang_uuid": gang_uuid,
            "members": [
                {
                    "consumer_uuid": uuid,
                    "allocations": {
                        provider: {"resources": resources}
                        for provider, resources in held.get(found[uuid].id, {}).items()
                    }
                    if uuid in found
                    else {},
                }
                for uuid in consumer_uuids
            ],
        }


def _members(conn: Connection, gang_uuid: str) -> list[str]:
    consumer_uuids = network_data.gang_consumers(conn, gang_uuid)
    if not consumer_uuids:
        raise errors.NotFound(f"No gang {gang_uuid}.")
    return consumer_uuids


def unplaceable(answer: GangAnswer, cut: Cut | None = None) -> errors.Conflict:
    request = answer.request
    return errors.Conflict(
        f"No gang of {request.members} member(s) fits in one {request.required} domain: "
        f"{explain.sentence(answer)}{Cut.sentence_of(cut)}",
        code=errors.GROUP_UNPLACEABLE,
    )
