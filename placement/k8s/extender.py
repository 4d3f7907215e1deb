"""The scheduler extender's four verbs over the device search: one front door per
process (``Services.k8s``), as ``DeviceSearch`` is for the device routes, which it
calls for every search and claim.

- ``filter``: the nodes the device search places the pod on pass; each other node
  fails with the search's own reason, and is *unresolvable* (no eviction can help)
  when the pod would not fit even on the node emptied, or when the node is no
  device node here (unknown, or its tree out of sync with its topology).
- ``prioritize``: the nodes in the device search's ranking (the joint scope, then
  the most tightly linked devices, then the scorer), scored 10 for the best and
  down by rank (``scores``); 0 for a node that cannot take the pod.
- ``preempt``: the nodes where the pod fits once its victims' devices are free,
  decided on a copy of each node (``what_if``), nothing written.
- ``bind``: the best devices on the chosen node claimed for the consumer that is the
  pod's uid, in the request's transaction; then, through the Kubernetes API, the
  pod annotated with them (Koordinator's ``device-allocated``) and bound. When the
  API refuses, the error rolls the transaction back: the claim is never written.
  A pod whose uid already holds devices on the node is bound already (its claim is
  only ever committed with its binding).

In ``Nodes`` mode (a scheduler that is not node-cache capable) each node whose
annotations carry a GPU topology (``node_topology``) is imported, or imported again
when its annotations changed since this process last read them.

A pod of a pod group (``pod_groups``) is limited by filter to its group's reserved
nodes, or to its best gang's before the group has a reservation; prioritize scores
those 10, the others 0; its bind takes a member of the group's gang, reserving the
gang first at the group's first bind. Filter and bind first release the reservations
past their time, whoever the pod.
"""

import json
import threading
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING

from sqlalchemy import Connection

from placement import errors
from placement.claiming import NewConsumer
from placement.config import Config
from placement.data import allocations as allocation_data
from placement.data import consumers as consumer_data
from placement.devices import importing as devices
from placement.devices.bodies import device_allocations
from placement.devices.chooser import Chooser, Unfit
from placement.devices.request import DeviceRequest
from placement.devices.search import kind_rank_key
from placement.devices.service import DeviceSearch
from placement.devices.snapshot import DeviceNode
from placement.gangs.service import GangSearch
from placement.k8s import node_topology, what_if
from placement.k8s.pod_groups import PodGroups
from placement.k8s.pod_requests import pod_device_request
from placement.k8s.protocol import BindingArgs, ExtenderArgs, NodeObject, PreemptionArgs
from placement.nodes.naming import Naming
from placement.schemas.devices import ALLOCATED_ANNOTATION

if TYPE_CHECKING:
    from placement.k8s.cluster import Cluster

POD_CONSUMER_TYPE = "POD"
SCHEDULER_USER = "kube-scheduler"
BEST_SCORE = 10
UNKNOWN_NODE = "not a device node of placement (import its topology first)"
OUT_OF_SYNC = "its device tree no longer matches its topology (import it again)"


class SchedulerExtender:
    def __init__(
        self,
        config: Config,
        search: DeviceSearch,
        gangs: GangSearch | None = None,
        cluster_factory: Callable[[], "Cluster"] | None = None,
    ) -> None:
        self._search = search
        self.pod_groups = PodGroups(config, gangs or GangSearch(search))
        self._prefix = config.k8s_topology_annotation_prefix
        self._cluster_factory = cluster_factory or (lambda: _configured_cluster(config))
        self._cluster: Cluster | None = None  # built on first use: the client loads slowly
        self._cluster_lock = threading.Lock()
        self._imported: dict[str, str] = {}  # node name -> digest of its annotations

    def cluster(self) -> "Cluster":
        with self._cluster_lock:
            if self._cluster is None:
                self._cluster = self._cluster_factory()
            return self._cluster

    def filter(
        self, conn: Connection, args: ExtenderArgs, naming: Naming
    ) -> tuple[list[str], dict[str, str], dict[str, str]]:
        """(passing names, failed node -> reason, unresolvable node -> reason)."""
        self.pod_groups.release_expired(conn)
        request = pod_device_request(args.pod, naming)
        names = args.names()
        unresolvable: dict[str, str] = {}
        if args.nodes is not None:
            unresolvable.update(self._import_annotated(conn, args.nodes, naming))
        if request is None:
            return [n for n in names if n not in unresolvable], {}, unresolvable
        asked = [name for name in names if name not in unresolvable]
        limit = self.pod_groups.limit(conn, self.cluster, args.pod, request, naming, tidy=True)
        if limit is not None and limit.reserved:
            # The group's devices are held for it already: its reserved nodes pass.
            unresolvable.update({name: limit.reason for name in asked if name not in limit.nodes})
            return [name for name in asked if name in limit.nodes], {}, unresolvable
        answer = self._search.find_candidates(conn, request, naming, node_names=asked)
        placed = {candidate.node.name for candidate in answer.candidates}
        failed: dict[str, str] = {}
        chooser = Chooser(request)
        for reason, alike in answer.unfit_nodes:
            hopeless = isinstance(chooser.choose(what_if.emptied(alike[0])), Unfit)
            into = unresolvable if hopeless else failed
            for node in alike:
                into[node.name] = reason
        for name in answer.out_of_sync:
            unresolvable[name] = OUT_OF_SYNC
        for name in asked:
            if name not in placed and name not in failed and name not in unresolvable:
                unresolvable[name] = UNKNOWN_NODE
                # Imported by a transaction that did not commit, or deleted since.
                self._imported.pop(name, None)
        if limit is not None:
            # Outside its best gang: no eviction there helps the group.
            unresolvable.update({name: limit.reason for name in placed - limit.nodes})
            placed &= limit.nodes
        return [name for name in asked if name in placed], failed, unresolvable

    def prioritize(self, conn: Connection, args: ExtenderArgs, naming: Naming) -> dict[str, int]:
        """Node -> 0 to 10 (``scores``)."""
        request = pod_device_request(args.pod, naming)
        names = args.names()
        scores = dict.fromkeys(names, 0)
        if request is None:
            return scores
        limit = self.pod_groups.limit(conn, self.cluster, args.pod, request, naming, tidy=False)
        if limit is not None:
            return {name: BEST_SCORE if name in limit.nodes else 0 for name in names}
        answer = self._search.find_candidates(conn, request, naming, node_names=names)
        ranks = [kind_rank_key(c.pick, c.score) for c in answer.candidates]
        for candidate, score in zip(answer.candidates, rank_scores(ranks), strict=True):
            scores[candidate.node.name] = score
        return scores

    def preempt(self, conn: Connection, args: PreemptionArgs, naming: Naming) -> list[str]:
        """The nodes of ``args`` where the pod fits once its victims there are gone."""
        request = pod_device_request(args.pod, naming)
        if request is None:
            return list(args.victims)
        nodes = {
            node.name: node
            for node in self._search.read_device_nodes(conn, naming, list(args.victims)).by_name()
        }
        chooser = Chooser(request)
        fitting = []
        for name, victims in args.victims.items():
            node = nodes.get(name)
            if node is None:
                continue
            freed = what_if.without(node, self._allocations_of(conn, victims))
            if not isinstance(chooser.choose(freed), Unfit):
                fitting.append(name)
        return fitting

    def bind(self, conn: Connection, args: BindingArgs, naming: Naming) -> None:
        """Claim the pod's devices on its node, annotate the pod, bind it (see above)."""
        consumer_uuid = _pod_consumer(args.pod_uid)
        self.pod_groups.release_expired(conn)
        if self._holds_devices_on(conn, naming, consumer_uuid, args.node):
            return
        cluster = self.cluster()
        pod = cluster.read_pod(args.pod_namespace, args.pod_name)
        found_uid = pod.metadata.uid if pod.metadata else None
        if found_uid != args.pod_uid:
            raise errors.Conflict(
                f"Pod {args.pod_namespace}/{args.pod_name} has uid {found_uid}, not "
                f"{args.pod_uid}: it was deleted and made again."
            )
        request = pod_device_request(pod, naming)
        if request is not None:
            holder = NewConsumer(
                consumer_uuid, args.pod_namespace, SCHEDULER_USER, POD_CONSUMER_TYPE
            )
            annotation = self.pod_groups.take(
                conn, cluster, pod, request, naming, holder, args.node
            )
            if annotation is None:
                annotation = self._claim(conn, request, naming, consumer_uuid, args)
            cluster.annotate_pod(
                args.pod_namespace, args.pod_name, {ALLOCATED_ANNOTATION: annotation}
            )
        if pod.spec is not None and pod.spec.node_name == args.node:
            return  # bound already: a retry after a bind that was answered late
        cluster.bind_pod(args.pod_namespace, args.pod_name, args.pod_uid, args.node)

    def _claim(
        self,
        conn: Connection,
        request: DeviceRequest,
        naming: Naming,
        consumer_uuid: str,
        args: BindingArgs,
    ) -> str:
        candidate = self._search.claim(
            conn,
            request,
            naming,
            consumer_uuid=consumer_uuid,
            project_id=args.pod_namespace,
            user_id=SCHEDULER_USER,
            consumer_type=POD_CONSUMER_TYPE,
            node_names=[args.node],
        )
        return json.dumps(device_allocations(candidate, request), separators=(",", ":"))

    def _holds_devices_on(
        self, conn: Connection, naming: Naming, consumer_uuid: str, node_name: str
    ) -> bool:
        """Whether the consumer already holds devices on the node; Conflict if elsewhere."""
        consumer = consumer_data.get_consumer(conn, consumer_uuid)
        if consumer is None:
            return False
        held = set(allocation_data.allocations_of_consumers(conn, [consumer.id])[consumer.id])
        if not held:
            return False
        nodes = self._search.read_device_nodes(conn, naming, [node_name]).by_name()
        if nodes and held <= _provider_uuids(nodes[0]):
            return True
        raise errors.Conflict(
            f"Pod {consumer_uuid} already holds devices elsewhere than on node {node_name}."
        )

    def _allocations_of(self, conn: Connection, pod_uids: list[str]) -> dict:
        uuids = [_pod_consumer(uid) for uid in pod_uids]
        consumers = consumer_data.get_consumers(conn, uuids)
        ids = [consumer.id for consumer in consumers.values()]
        return what_if.summed(list(allocation_data.allocations_of_consumers(conn, ids).values()))

    def _import_annotated(
        self, conn: Connection, nodes: list[NodeObject], naming: Naming
    ) -> dict[str, str]:
        """Import the nodes whose topology annotations changed; node -> why it cannot be
        placed on, for those whose annotations do not read."""
        refused = {}
        for node in nodes:
            try:
                annotated = node_topology.annotated_topology(node.node, self._prefix)
            except errors.BadRequest as exc:
                refused[node.name] = exc.detail
                continue
            if annotated is None or self._imported.get(node.name) == annotated.digest:
                continue
            devices.import_node(conn, node.name, annotated.topology, naming)
            self._imported[node.name] = annotated.digest
        return refused


def _configured_cluster(config: Config) -> "Cluster":
    from placement.k8s.cluster import Cluster

    return Cluster.configured(config.k8s_kubeconfig, config.k8s_api_timeout_seconds)


def rank_scores(ranks: list[tuple]) -> list[int]:
    """Scores of nodes in the search's order, given each one's rank key: the nodes of
    the best key 10, of the i-th best of L distinct keys ``10 - 9 * i // L`` (from 10
    down to 1, nodes alike scored alike)."""
    distinct = sorted(set(ranks))
    position = {rank: index for index, rank in enumerate(distinct)}
    return [BEST_SCORE - (BEST_SCORE - 1) * position[rank] // len(distinct) for rank in ranks]


def _pod_consumer(pod_uid: str) -> str:
    try:
        return str(uuid.UUID(pod_uid))
    except ValueError:
        raise errors.BadRequest(f"PodUID {pod_uid!r} is not a UUID.") from None


def _provider_uuids(node: DeviceNode) -> set[str]:
    return (
        {node.uuid}
        | {state.uuid for state in node.devices}
        | {switch.uuid for switch in node.switches.values()}
    )
