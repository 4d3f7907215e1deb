"""Keeping the device nodes and the pods' allocations in step with the cluster.

- What pods hold: a pod's devices (the consumer that is its uid, written by the
  extender's ``bind``) are released once the pod is gone or finished (``Succeeded``,
  ``Failed``). The pods' consumers are read *before* the pods are listed, and only
  those are judged: a consumer is written by a bind, of a pod that existed before the
  bind, so a pod missing from a later list is gone, never not yet listed.
- What the nodes are: each Koordinator ``Device`` object is imported as its node's
  device list, and its checkpoint annotation held (``koordinator_devices``).
- Pod groups' reservations (``pod_groups.PodGroups.tidy``): the members no pod took
  of those past their time are released, and those that hold nothing any more (their
  pods released above) are forgotten.

Each step is its own transaction; the Kubernetes API is called between them, never
inside one.
"""

from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sqlalchemy import Connection

from placement import errors
from placement.data import allocations as allocation_data
from placement.data import consumers as consumer_data
from placement.devices import checkpoints
from placement.devices import importing as devices
from placement.devices.service import DeviceSearch
from placement.k8s.extender import POD_CONSUMER_TYPE
from placement.k8s.koordinator_devices import DeviceObject, read_device_object
from placement.nodes.naming import Naming
from placement.schemas import devices as device_schemas
from placement.schemas import validate

if TYPE_CHECKING:
    from kubernetes.client import V1Pod

    from placement.k8s.cluster import Cluster
    from placement.k8s.pod_groups import PodGroups

FINISHED = frozenset({"Succeeded", "Failed"})

# A transaction: ``with transaction() as conn`` commits when the block ends.
Transaction = Callable[[], AbstractContextManager[Connection]]


@dataclass
class Reconciled:
    released: list[str] = field(default_factory=list)  # pod uids whose devices were freed
    nodes: list[str] = field(default_factory=list)  # device nodes imported from Device objects
    refused: dict[str, str] = field(default_factory=dict)  # Device object -> why not imported
    # Pod groups' members released and reservations ended (``PodGroups.tidy``)
    pod_groups: dict = field(default_factory=dict)

    def body(self) -> dict:
        body = {"released": self.released, "nodes": self.nodes, "refused": self.refused}
        if any(self.pod_groups.values()):
            body["pod_groups"] = self.pod_groups
        return body


def reconcile(
    transaction: Transaction,
    cluster: "Cluster",
    search: DeviceSearch,
    naming: Naming,
    devices_too: bool = True,
    pod_groups: "PodGroups | None" = None,
) -> Reconciled:
    done = Reconciled()
    if devices_too:
        for document in cluster.devices():
            name = str((document.get("metadata") or {}).get("name"))
            try:
                with transaction() as conn:
                    apply_device_object(conn, search, naming, read_device_object(document))
                done.nodes.append(name)
            except errors.PlacementError as exc:
                done.refused[name] = exc.detail
    with transaction() as conn:
        held = [c.uuid for c in consumer_data.consumers_of_type(conn, POD_CONSUMER_TYPE)]
    live = live_pod_uids(cluster.pods())
    with transaction() as conn:
        done.released = release_pods(conn, [uid for uid in held if uid not in live])
    if pod_groups is not None:
        with transaction() as conn:
            done.pod_groups = pod_groups.tidy(conn)
    return done


def live_pod_uids(pods: Iterable["V1Pod"]) -> set[str]:
    """The uids of the pods that are neither gone nor finished."""
    return {
        pod.metadata.uid.lower()
        for pod in pods
        if pod.metadata
        and pod.metadata.uid
        and (pod.status is None or pod.status.phase not in FINISHED)
    }


def release_pods(conn: Connection, pod_uids: list[str]) -> list[str]:
    """Release what each pod's consumer holds; the uids of those that held something."""
    released = []
    for uid, consumer in sorted(consumer_data.get_consumers(conn, pod_uids).items()):
        allocation_data.delete_consumer_allocations(conn, consumer)
        released.append(uid)
    return released


def apply_device_object(
    conn: Connection, search: DeviceSearch, naming: Naming, device: DeviceObject
) -> dict:
    """Import the Device object's node, then hold its checkpoint when it has one."""
    topology = devices.topology_from_body(device.device_list)
    result = devices.import_node(conn, device.node, topology, naming)
    answer: dict = {"name": device.node, "changed": result.changed}
    if device.checkpoints is not None:
        entries = validate(device_schemas.ImportCheckpoints(), {"checkpoints": device.checkpoints})[
            "checkpoints"
        ]
        held = search.hold_checkpoints(
            conn, naming, device.node, checkpoints.checkpoints_from_body(entries)
        )
        answer["changed"] = answer["changed"] or held.changed
    return answer
