"""Bodies of the scheduler extender routes: the messages of kube-scheduler's extender
protocol (``k8s.io/kube-scheduler/extender/v1``), once their keys are spelled as the Go
field names (``placement.k8s.protocol`` matches them without regard to case, as Go's
JSON decoder does).

Pods and nodes are only checked to be objects here: the official Kubernetes client's
models read them (``placement.k8s.protocol``).
"""

from marshmallow import fields

from placement.schemas import ExtensionSchema
from placement.schemas.fields import StrictDict, StrictInteger, StrictList, StrictString


class NodeNameList(StrictList):
    """A list of node names: kube-scheduler sends hundreds with every call, so a list of
    strings is taken as it is, without a field per name (anything else is checked, and
    refused, as any list)."""

    def __init__(self, **kwargs):
        super().__init__(StrictString(), **kwargs)

    def _deserialize(self, value, attr, data, **kwargs):
        if isinstance(value, list) and all(type(name) is str for name in value):
            return value
        return super()._deserialize(value, attr, data, **kwargs)


class ExtenderArgs(ExtensionSchema):
    """What ``filter`` and ``prioritize`` are sent: the pod, and the nodes by name
    (``nodeCacheCapable``) or as a ``v1.NodeList``."""

    Pod = StrictDict(required=True)
    Nodes = StrictDict(allow_none=True)
    NodeNames = NodeNameList(allow_none=True)


class MetaPod(ExtensionSchema):
    UID = StrictString(required=True)


class MetaVictims(ExtensionSchema):
    Pods = StrictList(StrictDict(), allow_none=True)  # each a MetaPod (keys folded first)
    NumPDBViolations = StrictInteger(allow_none=True)


class Victims(ExtensionSchema):
    Pods = StrictList(StrictDict(), allow_none=True)
    NumPDBViolations = StrictInteger(allow_none=True)


class ExtenderPreemptionArgs(ExtensionSchema):
    Pod = StrictDict(required=True)
    NodeNameToVictims = StrictDict(
        keys=StrictString(), values=fields.Raw(allow_none=True), allow_none=True
    )
    NodeNameToMetaVictims = StrictDict(
        keys=StrictString(), values=fields.Raw(allow_none=True), allow_none=True
    )


class ExtenderBindingArgs(ExtensionSchema):
    PodName = StrictString(required=True, min_length=1)
    PodNamespace = StrictString(required=True, min_length=1)
    PodUID = StrictString(required=True, min_length=1)
    Node = StrictString(required=True, min_length=1)
