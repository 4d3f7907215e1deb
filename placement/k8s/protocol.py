"""The scheduler extender's messages (``k8s.io/kube-scheduler/extender/v1``) in and out.

The Go types have no JSON tags: their keys are the field names (``Pod``,
``NodeNames``), and Go's decoder matches each key to a field without regard to case
(the last of two keys for one field wins); unknown keys are ignored. The same here.
Pods and nodes are ``k8s.io/api/core/v1`` objects, read by the official client's
models; a body that does not read is a ``BadRequest`` (answered in the ``Error``
field by the views).
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import marshmallow

from placement import errors
from placement.schemas import k8s_scheduler as schemas
from placement.schemas import validate

if TYPE_CHECKING:
    from kubernetes.client import V1Node, V1Pod


@dataclass(frozen=True)
class NodeObject:
    """One node of a ``v1.NodeList``: read by the client, and as sent (to be answered
    back unchanged)."""

    node: "V1Node"
    sent: Mapping

    @property
    def name(self) -> str:
        return (self.node.metadata.name if self.node.metadata else None) or ""


@dataclass(frozen=True)
class ExtenderArgs:
    pod: "V1Pod"
    node_names: list[str] | None  # nodeCacheCapable: the nodes by name
    nodes: list[NodeObject] | None  # otherwise: the whole nodes

    def names(self) -> list[str]:
        if self.node_names is not None:
            return self.node_names
        return [node.name for node in self.nodes or []]


@dataclass(frozen=True)
class BindingArgs:
    pod_name: str
    pod_namespace: str
    pod_uid: str
    node: str


@dataclass(frozen=True)
class PreemptionArgs:
    pod: "V1Pod"
    # node name -> the uids of the pods the scheduler would evict there
    victims: dict[str, list[str]]
    # node name -> NumPDBViolations, answered back
    pdb_violations: dict[str, int]


def read_extender_args(data: Any) -> ExtenderArgs:
    loaded = _load(schemas.ExtenderArgs(), data)
    pod = read_pod(loaded["Pod"], "Pod")
    nodes = None
    if loaded.get("Nodes") is not None:
        items = _folded(loaded["Nodes"], ("items",), "Nodes").get("items") or []
        if not isinstance(items, list):
            raise errors.BadRequest("Nodes.items: expected a list of nodes.")
        nodes = [
            NodeObject(read_node(item, f"Nodes.items[{i}]"), item) for i, item in enumerate(items)
        ]
    node_names = loaded.get("NodeNames")
    if nodes is None and node_names is None:
        raise errors.BadRequest("The body has neither NodeNames nor Nodes.")
    return ExtenderArgs(pod=pod, node_names=node_names, nodes=nodes)


def read_binding_args(data: Any) -> BindingArgs:
    loaded = _load(schemas.ExtenderBindingArgs(), data)
    return BindingArgs(loaded["PodName"], loaded["PodNamespace"], loaded["PodUID"], loaded["Node"])


def read_preemption_args(data: Any) -> PreemptionArgs:
    loaded = _load(schemas.ExtenderPreemptionArgs(), data)
    pod = read_pod(loaded["Pod"], "Pod")
    victims: dict[str, list[str]] = {}
    violations: dict[str, int] = {}
    for node, value in (loaded.get("NodeNameToMetaVictims") or {}).items():
        meta = _load(schemas.MetaVictims(), value or {}, f"NodeNameToMetaVictims.{node}")
        victims[node] = [
            _load(schemas.MetaPod(), p, f"NodeNameToMetaVictims.{node}.Pods")["UID"]
            for p in meta.get("Pods") or []
        ]
        violations[node] = meta.get("NumPDBViolations") or 0
    for node, value in (loaded.get("NodeNameToVictims") or {}).items():
        whole = _load(schemas.Victims(), value or {}, f"NodeNameToVictims.{node}")
        pods = [read_pod(p, f"NodeNameToVictims.{node}.Pods") for p in whole.get("Pods") or []]
        victims[node] = [pod.metadata.uid for pod in pods if pod.metadata and pod.metadata.uid]
        violations[node] = whole.get("NumPDBViolations") or 0
    return PreemptionArgs(pod=pod, victims=victims, pdb_violations=violations)


def read_pod(data: Any, where: str) -> "V1Pod":
    # The client is imported when first used: it takes a good part of a second.
    from kubernetes.client import V1Pod

    return _model(V1Pod, data, where)


def read_node(data: Any, where: str) -> "V1Node":
    from kubernetes.client import V1Node

    return _model(V1Node, data, where)


def filter_result(
    args: ExtenderArgs, passing: list[str], failed: dict[str, str], unresolvable: dict[str, str]
) -> dict:
    """``ExtenderFilterResult``: the nodes that pass, in the form they were sent."""
    result: dict[str, Any] = {
        "FailedNodes": failed,
        "FailedAndUnresolvableNodes": unresolvable,
        "Error": "",
    }
    if args.node_names is not None:
        result["NodeNames"] = passing
    if args.nodes is not None:
        keep = set(passing)
        result["Nodes"] = {"items": [dict(n.sent) for n in args.nodes if n.name in keep]}
    return result


def host_priority_list(scores: dict[str, int]) -> list[dict]:
    return [{"Host": host, "Score": score} for host, score in scores.items()]


def preemption_result(args: PreemptionArgs, nodes: list[str]) -> dict:
    """``ExtenderPreemptionResult``: the nodes kept, with their victims by uid."""
    return {
        "NodeNameToMetaVictims": {
            node: {
                "Pods": [{"UID": uid} for uid in args.victims[node]],
                "NumPDBViolations": args.pdb_violations.get(node, 0),
            }
            for node in nodes
        }
    }


def error_result(detail: str) -> dict:
    """The ``Error`` of a filter, bind or preempt answer (each result type has one)."""
    return {"Error": detail}


def _load(schema: marshmallow.Schema, data: Any, where: str = "") -> dict:
    if not isinstance(data, Mapping):
        raise errors.BadRequest(f"{where or 'The body'}: expected a JSON object.")
    folded = _folded(data, tuple(schema.fields), where)
    try:
        return validate(schema, folded)
    except errors.BadRequest as exc:
        if not where:
            raise
        raise errors.BadRequest(f"{where}: {exc.detail}") from exc


def _folded(data: Mapping, names: tuple[str, ...], where: str) -> dict:
    """``data``'s keys that name one of ``names`` without regard to case, spelled as in
    ``names``; the last of two keys for one name wins; others are dropped."""
    if not isinstance(data, Mapping):
        raise errors.BadRequest(f"{where}: expected a JSON object.")
    by_fold = {name.casefold(): name for name in names}
    folded = {}
    for key, value in data.items():
        name = by_fold.get(key.casefold()) if isinstance(key, str) else None
        if name is not None:
            folded[name] = value
    return folded


def _model(model, data: Any, where: str):
    if not isinstance(data, Mapping):
        raise errors.BadRequest(f"{where}: expected a JSON object.")
    try:
        return model.from_dict(data)
    except (ValueError, TypeError, AttributeError) as exc:
        first = str(exc).splitlines()
        reason = " ".join(line.strip() for line in first[:3])
        raise errors.BadRequest(f"{where} is not a valid {model.__name__[2:]}: {reason}") from exc
