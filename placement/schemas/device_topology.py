"""The device list document: a node's devices, their NVLinks, its node-level resources.

``placement.devices.device_list`` loads it and turns it into a ``Topology``;
amounts (a GPU's ``memory``, the ``resources``) are read there, as quantities.
"""

from marshmallow import ValidationError, fields, validate, validates_schema

from placement.nodes.device_types import DEVICE_TYPES, MAX_DEVICES, MAX_LISTED_VFS, MAX_NVLINKS
from placement.schemas import ExtensionSchema
from placement.schemas.fields import StrictBoolean, StrictInteger, StrictString

# Every pair of a node's devices, at most: bounds the work a document can ask for.
MAX_NVLINK_PAIRS = MAX_DEVICES * (MAX_DEVICES - 1) // 2


def _known_type(value: str) -> None:
    if value not in DEVICE_TYPES:
        raise ValidationError(
            f"Unknown device type {value!r}: known types are {', '.join(DEVICE_TYPES)}."
        )


def _labels(**kwargs) -> fields.Dict:
    # A Kubernetes label value may be empty.
    return fields.Dict(
        keys=StrictString(max_length=255), values=StrictString(min_length=0), **kwargs
    )


class VirtualFunctionEntry(ExtensionSchema):
    minor = StrictInteger(required=True)
    bus_id = StrictString(required=True, data_key="busID")


class VirtualFunctionGroup(ExtensionSchema):
    """VFs of one NIC that share labels (``vfSelector`` matches them)."""

    labels = _labels()
    vfs = fields.List(
        fields.Nested(VirtualFunctionEntry),
        required=True,
        validate=validate.Length(min=1, max=MAX_LISTED_VFS),
    )


class DeviceEntry(ExtensionSchema):
    type = StrictString(required=True, validate=_known_type)
    minor = StrictInteger(required=True)
    id = StrictString()  # default: "<type><minor>"
    numa = StrictInteger(required=True)
    pcie = StrictInteger(required=True)  # the PCIe switch
    bridge = StrictInteger()  # the PCIe host bridge; default: its switch's, or one of its own
    # The upstream switch the PCIe switch hangs from (PXB between switches of one group)
    switch_group = StrictInteger(data_key="switchGroup")
    # The board the device shares with others behind its on-board switch (PSB between them)
    board = StrictInteger()
    memory = fields.Raw()  # gpu: a quantity ("16Gi") or a number of bytes
    vfs = StrictInteger()
    labels = _labels()
    vf_labels = _labels(data_key="vfLabels")
    # The device's health; false: never offered or claimed (default true)
    health = StrictBoolean()
    # rdma: its VFs one by one, in groups of equal labels (instead of vfs and vfLabels)
    vf_groups = fields.List(
        fields.Nested(VirtualFunctionGroup),
        data_key="vfGroups",
        validate=validate.Length(min=1, max=MAX_LISTED_VFS),
    )

    @validates_schema
    def _fields_of_its_type(self, data: dict, **kwargs) -> None:
        kind = data.get("type")
        if kind == "gpu" and "memory" not in data:
            raise ValidationError("a GPU needs its memory.", "memory")
        if kind != "gpu" and "memory" in data:
            raise ValidationError("only GPUs have memory.", "memory")
        for attribute, key in (
            ("vfs", "vfs"),
            ("vf_labels", "vfLabels"),
            ("vf_groups", "vfGroups"),
        ):
            if kind != "rdma" and attribute in data:
                raise ValidationError("only rdma devices have VFs.", key)
        if "vf_groups" in data and ("vfs" in data or "vf_labels" in data):
            raise ValidationError("give vfGroups, or vfs with vfLabels, not both.", "vfGroups")


class NvLinkEntry(ExtensionSchema):
    gpus = fields.List(StrictInteger(), required=True, validate=validate.Length(equal=2))
    links = StrictInteger(required=True, minimum=1, maximum=MAX_NVLINKS)


class DeviceTopology(ExtensionSchema):
    devices = fields.List(
        fields.Nested(DeviceEntry), required=True, validate=validate.Length(min=1, max=MAX_DEVICES)
    )
    nvlinks = fields.List(
        fields.Nested(NvLinkEntry), validate=validate.Length(max=MAX_NVLINK_PAIRS)
    )
    resources = fields.Dict(keys=StrictString(max_length=255))  # translator keys, read later
