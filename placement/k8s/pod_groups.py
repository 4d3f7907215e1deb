"""Kubernetes pod groups: the pods of one group get their nodes from one gang
(``placement.gangs``), reserved whole at the first pod's bind.

- **Who is in a group.** The coscheduling plugin's label ``scheduling.x-k8s.io/pod-group``
  (its ``PodGroup``: ``scheduling.x-k8s.io/v1alpha1``, ``podgroups``), else Volcano's
  annotation ``scheduling.k8s.io/group-name`` (``scheduling.volcano.sh/v1beta1``,
  ``podgroups``). The ``PodGroup`` of that name in the pod's namespace gives the gang's
  size, ``spec.minMember``. A group of fewer than 2, and every group while the network
  has no levels, is placed pod by pod, as a pod of no group.
- **The gang** (``GangShape``): minMember copies of the pod's device request, all in
  one domain of the required level (``[k8s] gang_required_level``, else the network's
  broadest), as few domains of the preferred level as can be (``gang_preferred_level``),
  one per node unless ``gang_share_nodes``. The ``PodGroup``'s annotations
  ``<prefix>gang-required-level``, ``<prefix>gang-preferred-level`` and
  ``<prefix>gang-share-nodes`` (the prefix: ``[k8s] topology_annotation_prefix``)
  override them for its group.
- **Filter and prioritize** (``limit``): a group without a reservation may use the nodes
  of its best gang (``GangSearch.find``); a group with one, the nodes of its members no
  pod took yet.
- **Bind** (``take``): the first pod's bind reserves the whole gang (``GangSearch.claim``:
  every member or none), each member held by a placeholder consumer (consumer type
  ``POD_GROUP``); then, as every later pod of the group, the pod takes a member on its
  node: the member's allocations move to the pod's own consumer, in the bind's
  transaction, so a binding the API refuses undoes both. Once every member is taken, the
  group's further pods (beyond minMember) are placed pod by pod, as is a pod that asks
  otherwise than the members hold (``member_request``).
- **Release** (``release_expired``): a reservation older than
  ``[k8s] gang_reservation_timeout`` loses the members no pod took (their allocations
  deleted); the members pods took stay. Done at every filter and bind, and by ``placement
  k8s reconcile`` (``tidy``), which also forgets the reservations none of whose members
  holds anything (the group's pods released): the group's next pod reserves anew.

Every fact is the database's (``data.pod_groups``): every worker and host agrees.
"""

import datetime
import hashlib
import json
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import Connection

from placement import clock, errors
from placement.claiming import NewConsumer
from placement.config import Config
from placement.data import allocations as allocation_data
from placement.data import consumers as consumer_data
from placement.data import pod_groups as data
from placement.devices.bodies import device_allocations
from placement.devices.request import DeviceRequest
from placement.gangs import service as gangs
from placement.gangs.service import GangRequest, GangSearch
from placement.k8s.pod_requests import effective_requests
from placement.nodes.naming import Naming
from placement.schemas.devices import HINT_ANNOTATION, JOINT_ANNOTATION

if TYPE_CHECKING:
    from kubernetes.client import V1Pod

    from placement.k8s.cluster import Cluster

COSCHEDULING_LABEL = "scheduling.x-k8s.io/pod-group"
VOLCANO_ANNOTATION = "scheduling.k8s.io/group-name"
PLACEHOLDER_CONSUMER_TYPE = "POD_GROUP"
# The PodGroup's annotations, after the service's own prefix.
REQUIRED_LEVEL = "gang-required-level"
PREFERRED_LEVEL = "gang-preferred-level"
SHARE_NODES = "gang-share-nodes"
DEVICE_ANNOTATIONS = (JOINT_ANNOTATION, HINT_ANNOTATION)
MAX_MEMBERS = 1024  # as a gang request over HTTP
KEY_LENGTH = 255  # pod_group_reservations.pod_group


@dataclass(frozen=True)
class PodGroupKind:
    group: str
    version: str
    plural: str = "podgroups"


COSCHEDULING = PodGroupKind("scheduling.x-k8s.io", "v1alpha1")
VOLCANO = PodGroupKind("scheduling.volcano.sh", "v1beta1")


@dataclass(frozen=True)
class PodGroupRef:
    kind: PodGroupKind
    namespace: str
    name: str

    @property
    def key(self) -> str:
        """The group's key in the database: its object's kind, namespace and name."""
        key = f"{self.kind.plural}.{self.kind.group}/{self.namespace}/{self.name}"
        if len(key) <= KEY_LENGTH:
            return key
        digest = hashlib.sha256(key.encode()).hexdigest()
        return f"{key[: KEY_LENGTH - len(digest) - 1]}#{digest}"

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class GangShape:
    members: int
    required: str
    preferred: str | None
    share_nodes: bool

    def request(self, member: DeviceRequest) -> GangRequest:
        return GangRequest(member, self.members, self.required, self.preferred, self.share_nodes)


@dataclass(frozen=True)
class NodeLimit:
    """Where a pod of a group may go, and why no other node."""

    nodes: frozenset[str]
    reason: str
    reserved: bool  # the group's reserved members' nodes (else its best gang's)


def pod_group_of(pod: "V1Pod") -> PodGroupRef | None:
    """The pod's group: by the coscheduling label, else by Volcano's annotation."""
    metadata = pod.metadata
    if metadata is None:
        return None
    namespace = metadata.namespace or "default"
    name = (metadata.labels or {}).get(COSCHEDULING_LABEL)
    if name:
        return PodGroupRef(COSCHEDULING, namespace, name)
    name = (metadata.annotations or {}).get(VOLCANO_ANNOTATION)
    if name:
        return PodGroupRef(VOLCANO, namespace, name)
    return None


def member_request(pod: "V1Pod") -> str:
    """What the pod asks of devices, as one text: a member reserved for a group is taken
    only by a pod that asks the same (its effective device requests and its device
    annotations)."""
    metadata = pod.metadata
    annotations = (metadata.annotations if metadata else None) or {}
    return json.dumps(
        {
            "requests": {name: str(amount) for name, amount in effective_requests(pod).items()},
            "annotations": {
                name: annotations[name] for name in DEVICE_ANNOTATIONS if name in annotations
            },
        },
        sort_keys=True,
        separators=(",", ":"),
    )


def gang_shape(
    config: Config, group: PodGroupRef, pod_group: Mapping, levels: tuple[str, ...]
) -> GangShape | None:
    """The gang the group's ``PodGroup`` asks (None: placed pod by pod)."""
    spec = pod_group.get("spec") or {}
    members = spec.get("minMember", 0) if isinstance(spec, Mapping) else None
    if not isinstance(members, int) or isinstance(members, bool) or members > MAX_MEMBERS:
        raise errors.BadRequest(
            f"Pod group {group}: spec.minMember {members!r} is not a whole number up to "
            f"{MAX_MEMBERS}."
        )
    if members < 2 or not levels:
        return None
    metadata = pod_group.get("metadata") or {}
    annotations = (metadata.get("annotations") if isinstance(metadata, Mapping) else None) or {}
    prefix = config.k8s_topology_annotation_prefix
    required = annotations.get(prefix + REQUIRED_LEVEL) or config.k8s_gang_required_level
    required = required or levels[0]
    preferred = annotations.get(prefix + PREFERRED_LEVEL)
    if preferred is None and _narrower(levels, config.k8s_gang_preferred_level, required):
        # The configured preferred level, where the group's required one is not narrower.
        preferred = config.k8s_gang_preferred_level
    share = annotations.get(prefix + SHARE_NODES)
    return GangShape(
        members=members,
        required=required,
        preferred=preferred or None,
        share_nodes=config.k8s_gang_share_nodes if share is None else _flag(group, share),
    )


def _narrower(levels: tuple[str, ...], level: str, than: str) -> bool:
    """Whether ``level`` is at or below ``than`` (either unknown: True, to be refused
    by the search, which names it)."""
    if level not in levels or than not in levels:
        return True
    return levels.index(level) >= levels.index(than)


def _flag(group: PodGroupRef, text: str) -> bool:
    lowered = str(text).strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    raise errors.BadRequest(f"Pod group {group}: {SHARE_NODES} {text!r} is not true or false.")


class PodGroups:
    """The pod groups' door, over the application's gang search (one per process; its
    state is the database's)."""

    def __init__(self, config: Config, gang_search: GangSearch) -> None:
        self._config = config
        self._gangs = gang_search
        self._timeout = datetime.timedelta(seconds=config.k8s_gang_reservation_timeout)

    def limit(
        self,
        conn: Connection,
        cluster: Callable[[], "Cluster"],
        pod: "V1Pod",
        request: DeviceRequest,
        naming: Naming,
        tidy: bool,
    ) -> NodeLimit | None:
        """Where the pod may go (None: anywhere it fits, as a pod of no group). ``tidy``:
        forget its group's reservation if it holds nothing any more (a write)."""
        group = pod_group_of(pod)
        if group is None:
            return None
        reservation, unclaimed = self._standing(conn, group, member_request(pod), tidy)
        if unclaimed:
            nodes = frozenset(member.node for member in unclaimed)
            return NodeLimit(
                nodes,
                f"pod group {group} has reserved nodes {', '.join(sorted(nodes))} for its "
                "pods; not this one",
                reserved=True,
            )
        if reservation is not None:
            return None
        shape = self._shape(conn, cluster(), group)
        if shape is None:
            return None
        answer = _grouped(group, lambda: self._gangs.find(conn, shape.request(request), naming))
        if not answer.gangs:
            return NodeLimit(
                frozenset(), f"pod group {group}: {gangs.unplaceable(answer).detail}", False
            )
        best = answer.gangs[0]
        nodes = frozenset(node.name for node, _ in best.members)
        return NodeLimit(
            nodes,
            f"pod group {group}: not a node of its best gang ({shape.required} {best.domain}: "
            f"{', '.join(sorted(nodes))})",
            reserved=False,
        )

    def take(
        self,
        conn: Connection,
        cluster: "Cluster",
        pod: "V1Pod",
        request: DeviceRequest,
        naming: Naming,
        holder: NewConsumer,
        node: str,
    ) -> str | None:
        """Give the pod (its consumer: ``holder``) a member of its group's gang on
        ``node``, reserving the gang first if the group has none: the member's
        ``device-allocated`` annotation, or None when the pod is placed on its own (see
        the module)."""
        group = pod_group_of(pod)
        if group is None:
            return None
        asks = member_request(pod)
        reservation, unclaimed = self._standing(conn, group, asks, tidy=True)
        if reservation is not None and not unclaimed:
            return None
        if reservation is None:
            shape = self._shape(conn, cluster, group)
            if shape is None:
                return None
            gang_uuid = self._reserve(conn, group, shape, request, asks, naming, holder, node)
            unclaimed = data.unclaimed_members(conn, gang_uuid)
        now = clock.utcnow()
        for member in unclaimed:
            if member.node == node and data.take_member(conn, member, holder.uuid, now):
                _move_allocations(conn, member.consumer_uuid, holder)
                return member.device_allocated
        left = sorted({member.node for member in unclaimed})
        raise errors.Conflict(
            f"Pod group {group}: no member of its gang is left on node {node} (reserved nodes "
            f"left: {', '.join(left) or 'none'}); schedule the pod again.",
            code=errors.CONCURRENT_UPDATE,
        )

    def release_expired(self, conn: Connection) -> list[str]:
        """Release the members no pod took of the reservations past their time; the
        placeholder consumers released."""
        expired = data.expired_members(conn, self._cutoff())
        # Every member row first, then every provider (``data.pod_groups``).
        dropped = [
            member.consumer_uuid for member in expired if data.drop_unclaimed_member(conn, member)
        ]
        _release_consumers(conn, dropped)
        return dropped

    def tidy(self, conn: Connection) -> dict:
        """``release_expired``, and forget the reservations that hold nothing any more."""
        released = self.release_expired(conn)
        forgotten = []
        for reservation in data.reservations_holding_nothing(conn):
            data.delete_reservation(conn, reservation.gang_uuid)
            forgotten.append(reservation.pod_group)
        return {"members_released": released, "reservations_ended": forgotten}

    def _standing(
        self, conn: Connection, group: PodGroupRef, asks: str, tidy: bool
    ) -> tuple[data.Reservation | None, list[data.Member]]:
        """The group's reservation and its members no pod took; (None, []) when it has
        none, or one that holds nothing any more (forgotten when ``tidy``). A pod that
        asks otherwise than the members hold takes none: (reservation, [])."""
        reservation = data.reservation_of(conn, group.key)
        if reservation is None:
            return None, []
        if reservation.member_request != asks and data.gang_holds_anything(
            conn, reservation.gang_uuid
        ):
            return reservation, []
        if reservation.created_at >= self._cutoff():
            unclaimed = data.unclaimed_members(conn, reservation.gang_uuid)
            if unclaimed:
                return reservation, unclaimed
        if data.gang_holds_anything(conn, reservation.gang_uuid):
            return reservation, []
        if tidy:
            data.delete_reservation(conn, reservation.gang_uuid)
        return None, []

    def _shape(self, conn: Connection, cluster: "Cluster", group: PodGroupRef) -> GangShape | None:
        kind = group.kind
        pod_group = cluster.read_custom_object(
            kind.group, kind.version, kind.plural, group.namespace, group.name
        )
        return gang_shape(self._config, group, pod_group, gangs.read_network(conn).levels)

    def _reserve(
        self,
        conn: Connection,
        group: PodGroupRef,
        shape: GangShape,
        request: DeviceRequest,
        asks: str,
        naming: Naming,
        holder: NewConsumer,
        node: str,
    ) -> str:
        """Claim the group's gang for placeholders; its uuid. Conflict when the gang
        chosen now leaves out ``node`` (chosen by the scheduler from an older answer)."""
        gang_uuid = str(uuid.uuid4())
        now = clock.utcnow()
        _grouped(group, lambda: data.insert_reservation(conn, gang_uuid, group.key, asks, now))
        placeholders = [
            NewConsumer(
                str(uuid.uuid4()), holder.project_id, holder.user_id, PLACEHOLDER_CONSUMER_TYPE
            )
            for _ in range(shape.members)
        ]
        gang_request = shape.request(request)
        gang = _grouped(
            group,
            lambda: self._gangs.claim(conn, gang_request, naming, gang_uuid, placeholders),
        )
        nodes = sorted({chosen.name for chosen, _ in gang.members})
        if node not in nodes:
            raise errors.Conflict(
                f"Pod group {group}: its best gang is now on nodes {', '.join(nodes)}, not on "
                f"node {node}; schedule the pod again.",
                code=errors.CONCURRENT_UPDATE,
            )
        data.insert_members(
            conn,
            gang_uuid,
            [
                (chosen.name, _annotation(device_allocations(choice.on(chosen), request)))
                for chosen, choice in gang.members
            ],
            now,
        )
        return gang_uuid

    def _cutoff(self) -> datetime.datetime:
        return clock.utcnow() - self._timeout


def _grouped(group: PodGroupRef, call):
    """``call()``, its refusals saying which pod group they are about."""
    try:
        return call()
    except errors.PlacementError as exc:
        raise type(exc)(
            f"Pod group {group}: {exc.detail}", code=exc.code, headers=exc.headers, extra=exc.extra
        ) from exc


def _annotation(allocations: dict) -> str:
    return json.dumps(allocations, separators=(",", ":"))


def _move_allocations(conn: Connection, placeholder_uuid: str, pod: NewConsumer) -> None:
    """The placeholder's allocations become the pod's, in one write (capacity unchanged)."""
    placeholder = consumer_data.get_consumer(conn, placeholder_uuid)
    held = {}
    if placeholder is not None:
        held = allocation_data.allocations_of_consumers(conn, [placeholder.id])[placeholder.id]
    if not held:
        raise errors.Conflict(
            f"The reserved member held by {placeholder_uuid} holds nothing any more; "
            "schedule the pod again.",
            code=errors.CONCURRENT_UPDATE,
        )
    allocation_data.write_allocations(
        conn,
        [
            allocation_data.ConsumerWrite(placeholder_uuid, None, None, {}),
            allocation_data.ConsumerWrite(
                pod.uuid,
                pod.project_id,
                pod.user_id,
                held,
                generation=None,
                consumer_type=pod.consumer_type,
            ),
        ],
    )


def _release_consumers(conn: Connection, consumer_uuids: list[str]) -> None:
    """Delete the consumers' allocations, their providers locked first in one id order
    (as a gang's release)."""
    if not consumer_uuids:
        return
    held = allocation_data.providers_of_consumer_uuids(conn, consumer_uuids)
    allocation_data.lock_providers(conn, held, keep_generation_of=held)
    for consumer in consumer_data.get_consumers(conn, consumer_uuids).values():
        allocation_data.delete_consumer_allocations(conn, consumer)
