"""Bodies of the device endpoints (/group_resources/device_nodes, ..._candidates, ..._claims),
and the two Koordinator annotations they accept as they are written on a Pod.

The device list itself (``devices``, ``nvlinks``) is checked by
``placement.schemas.device_topology`` when it is imported.
"""

import json

from marshmallow import ValidationError, fields, validate, validates_schema

from placement.nodes.device_types import MAX_DEVICES
from placement.nodes.scorers import SCORER_NAMES
from placement.nodes.search_budget import MAX_BUDGET_MS
from placement.schemas import ExtensionSchema
from placement.schemas.fields import (
    StrictBoolean,
    StrictInteger,
    StrictList,
    StrictNested,
    StrictString,
    UuidString,
)
from placement.schemas.group_resources import CONSUMER_TYPE_PATTERN

JOINT_ANNOTATION = "scheduling.koordinator.sh/device-joint-allocate"
HINT_ANNOTATION = "scheduling.koordinator.sh/device-allocate-hint"
# Written on a Pod with what was chosen (Koordinator's DeviceAllocations: device type ->
# the devices given): answered on request (``device_allocated``), for a client to set on
# its Pod.
ALLOCATED_ANNOTATION = "scheduling.koordinator.sh/device-allocated"

SAME_PCIE = "SamePCIe"
APPLY_FOR_ALL = "ApplyForAll"
REQUESTS_AS_COUNT = "RequestsAsCount"
DEVICE_LEVEL = "DeviceLevel"
PCIE_LEVEL = "PCIeLevel"
SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
EMPTY_MATRIX = (
    "the matrix is empty. Send what 'nvidia-smi topo -m' prints on the GPU node (on a "
    "machine without a GPU it prints nothing)."
)

_labels = fields.Dict(
    keys=StrictString(max_length=253), values=StrictString(min_length=0, max_length=255)
)


class GpuDetails(ExtensionSchema):
    """What a topology matrix does not say about the GPUs."""

    memory = fields.Raw(required=True)  # a quantity, checked when read
    ids = fields.List(StrictString(max_length=255), validate=validate.Length(max=256))
    labels = _labels


class RdmaDetails(ExtensionSchema):
    vfs = StrictInteger(maximum=4096)
    labels = _labels
    vfLabels = _labels  # noqa: N815 (the Koordinator spelling)


class ImportNode(ExtensionSchema):
    """PUT /group_resources/device_nodes/{name}: a matrix, or a device list."""

    # An empty matrix gets its own sentence: it is what a machine without a GPU prints.
    matrix = StrictString(min_length=0, max_length=200_000)
    gpu = fields.Nested(GpuDetails)
    rdma = fields.Nested(RdmaDetails)
    devices = fields.Raw()
    nvlinks = fields.Raw()
    resources = fields.Dict()
    uuid = UuidString()

    @validates_schema
    def _one_source(self, data, **kwargs):
        if ("matrix" in data) == ("devices" in data):
            raise ValidationError("give either 'matrix' (nvidia-smi topo -m) or 'devices'.")
        if "matrix" in data:
            if not data["matrix"].strip():
                raise ValidationError(EMPTY_MATRIX, field_name="matrix")
            if "gpu" not in data:
                raise ValidationError(
                    "a matrix needs 'gpu' with the memory of each GPU (the matrix does not say)."
                )
            if "nvlinks" in data:
                raise ValidationError("'nvlinks' goes with 'devices'; a matrix shows its links.")
        elif "gpu" in data or "rdma" in data:
            raise ValidationError("'gpu' and 'rdma' go with 'matrix'; a device list says it all.")


class SelectorRequirement(ExtensionSchema):
    key = StrictString(required=True, max_length=253)
    operator = StrictString(required=True, validate=validate.OneOf(SELECTOR_OPERATORS))
    values = fields.List(StrictString(min_length=0, max_length=255))

    @validates_schema
    def _values_fit_operator(self, data, **kwargs):
        has_values = bool(data.get("values"))
        if data["operator"] in ("In", "NotIn") and not has_values:
            raise ValidationError(f"operator {data['operator']} needs values.")
        if data["operator"] in ("Exists", "DoesNotExist") and has_values:
            raise ValidationError(f"operator {data['operator']} takes no values.")


class LabelSelector(ExtensionSchema):
    """A Kubernetes label selector over device labels; ``{}`` selects every device."""

    matchLabels = _labels  # noqa: N815
    matchExpressions = fields.List(fields.Nested(SelectorRequirement))  # noqa: N815


class JointAllocate(ExtensionSchema):
    """``scheduling.koordinator.sh/device-joint-allocate``."""

    deviceTypes = fields.List(StrictString(max_length=64), required=True)  # noqa: N815
    requiredScope = StrictString(validate=validate.OneOf([SAME_PCIE]))  # noqa: N815


class DeviceHint(ExtensionSchema):
    """One device type's entry of ``scheduling.koordinator.sh/device-allocate-hint``."""

    selector = fields.Nested(LabelSelector)
    vfSelector = fields.Nested(LabelSelector)  # noqa: N815
    allocateStrategy = StrictString(  # noqa: N815
        validate=validate.OneOf([APPLY_FOR_ALL, REQUESTS_AS_COUNT])
    )
    exclusivePolicy = StrictString(  # noqa: N815
        validate=validate.OneOf([DEVICE_LEVEL, PCIE_LEVEL])
    )


class CheckpointEntry(ExtensionSchema):
    """One entry of kubelet's device checkpoint as a node agent reports it (kubelet's
    ``PodDevicesEntry``): the devices kubelet gave one container of a pod."""

    pod_uid = StrictString(required=True, data_key="podUID")
    container_name = StrictString(min_length=0, max_length=253, data_key="containerName")
    resource_name = StrictString(required=True, max_length=317, data_key="resourceName")
    device_ids = StrictList(
        StrictString(), data_key="deviceIDs", validate=validate.Length(max=MAX_DEVICES)
    )
    # The device plugin's answer to kubelet (bytes, base64 in JSON): accepted, not read.
    alloc_resp = StrictString(min_length=0, max_length=1_000_000, data_key="allocResp")


class CheckpointList(StrictList):
    """The entries as a JSON array, or as the JSON text of one (the annotation's value,
    as the device reporter writes it on its ``Device``)."""

    def _deserialize(self, value, attr, data, **kwargs):
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError as exc:
                raise ValidationError(f"the text is not JSON: {exc}.") from exc
            except RecursionError:
                raise ValidationError("the text is not JSON: nested too deeply.") from None
        return super()._deserialize(value, attr, data, **kwargs)


# Entries in one node's checkpoint, at most: a device is held by one entry at most.
MAX_CHECKPOINT_ENTRIES = 4 * MAX_DEVICES


class ImportCheckpoints(ExtensionSchema):
    """PUT /group_resources/device_nodes/{name}/checkpoints: the node's whole checkpoint."""

    checkpoints = CheckpointList(
        StrictNested(CheckpointEntry),
        required=True,
        validate=validate.Length(max=MAX_CHECKPOINT_ENTRIES),
    )
    # The owner recorded on the pods' consumers (default: placement's unknown owner).
    project_id = StrictString()
    user_id = StrictString()


_scorer = StrictString(validate=validate.OneOf(sorted(SCORER_NAMES)))
_node_names = fields.List(StrictString(max_length=200), validate=validate.Length(min=1))


class MemberRequest(ExtensionSchema):
    """What is asked: resources and annotations, or a whole Pod (also a gang's member)."""

    resources = fields.Dict()
    annotations = fields.Dict(keys=StrictString(max_length=317))
    pod = fields.Dict()

    @validates_schema
    def _one_request(self, data, **kwargs):
        if "pod" in data and ("resources" in data or "annotations" in data):
            raise ValidationError("give either 'pod' or 'resources' (with 'annotations').")
        if "pod" not in data and "resources" not in data:
            raise ValidationError("give 'resources' (with 'annotations'), or a whole 'pod'.")


class DeviceRequestBody(MemberRequest):
    """A device request: resources and annotations, or a whole Pod."""

    nodes = _node_names
    scorer = _scorer
    # Also answer each candidate as the value of ALLOCATED_ANNOTATION (default false)
    device_allocated = StrictBoolean()
    # The search's time budget in milliseconds (``placement.nodes.search_budget``)
    budget_ms = StrictInteger(minimum=1, maximum=MAX_BUDGET_MS)


class DeviceQuery(DeviceRequestBody):
    """POST /group_resources/device_candidates."""

    limit = StrictInteger(minimum=1)


class DeviceClaim(DeviceRequestBody):
    """POST /group_resources/device_claims."""

    consumer_uuid = UuidString(required=True)
    project_id = StrictString(required=True)
    user_id = StrictString(required=True)
    consumer_type = StrictString(pattern=CONSUMER_TYPE_PATTERN)


class KoordinatorDevice(ExtensionSchema):
    """Koordinator's ``Device`` object (``scheduling.koordinator.sh/v1alpha1``), read by
    ``placement.k8s.koordinator_devices``; other members (``status``) are ignored."""

    class Meta:
        unknown = "include"

    apiVersion = StrictString()
    kind = StrictString()
    metadata = fields.Dict(required=True)
    spec = fields.Dict(required=True)
