"""A device request: Kubernetes resources and Koordinator annotations -> what to find.

Resource names (Koordinator's fine-grained device resources), with
``kubernetes.io/`` or ``koordinator.sh/``:

- ``nvidia.com/gpu: N``: N whole GPUs.
- ``gpu: P``: P percent of one GPU's core and memory; 100 or more, a
  multiple of 100: that many whole GPUs.
- ``gpu-core`` with ``gpu-memory-ratio`` or with ``gpu-memory`` (bytes, rounded
  up to whole KiB, the unit GPU memory is kept in): a share of one GPU (core 100
  with ratio 100 is the whole GPU); over 100, multiples of 100 asking the same
  number of whole GPUs (a memory given with them is what each must have at least).
- ``rdma: A``, ``fpga: A``: A percent of one device; 100 or more, whole
  devices. With a ``vfSelector`` hint, ``rdma: A`` is A virtual functions of
  one NIC.
- Any other plain name is a resource of the node itself, named as the
  translator names it (``cpu`` is VCPU, ``memory`` MEMORY_MB,
  ``hugepages-2Mi`` CUSTOM_HUGEPAGES_2MI), rounded up to placement's units
  (``500m`` of cpu is 1 VCPU). Unknown domain-qualified names are refused.

Hints (``scheduling.koordinator.sh/device-allocate-hint``, per device type):
``selector`` over device labels; ``vfSelector`` (rdma: allocate VFs, from NICs
whose VF labels match); ``allocateStrategy`` ``ApplyForAll`` (every matching
device of the node, each giving the amount) or ``RequestsAsCount`` (the amount
is a number of devices, each whole, or one VF each with ``vfSelector``);
``exclusivePolicy`` ``DeviceLevel`` or ``PCIeLevel``. ``RequestsAsCount`` holds for GPUs too
(it is not limited to one type): ``kubernetes.io/gpu: 2`` is then two whole GPUs.

Joint allocation (``scheduling.koordinator.sh/device-joint-allocate``):
``deviceTypes``, in any order (the list is a set): the primary type, whose
devices are chosen first, is the one asked for the most devices (on a tie, the
first of ``gpu``, ``rdma``, ``fpga``: NICs are placed beside the GPUs they
serve); each other type's request is then made beside them: once per PCIe switch
they touch, else once on the one NUMA node holding them all, else once
on the node (``chooser``); ``requiredScope: SamePCIe`` allows the switch only.
"""

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction

from placement import errors
from placement.db.tables import MAX_INT
from placement.devices.amounts import (
    WHOLE_GPUS,
    PerDevice,
    gpu_asked,
    gpus_counted,
    shared_device_asked,
)
from placement.devices.topology import DEVICE_TYPES
from placement.group_resources.keys import SEGMENT
from placement.nodes.naming import Naming
from placement.nodes.quantities import UNIT_SIZES, parse_quantity
from placement.schemas import devices as schemas
from placement.schemas import validate

PREFIXES = ("kubernetes.io/", "koordinator.sh/")
DEVICE_RESOURCES = ("gpu", "gpu-core", "gpu-memory", "gpu-memory-ratio", "rdma", "fpga")


@dataclass(frozen=True)
class Selector:
    """A Kubernetes label selector."""

    match_labels: Mapping[str, str] = field(default_factory=dict)
    expressions: tuple[tuple[str, str, tuple[str, ...]], ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        if any(labels.get(key) != value for key, value in self.match_labels.items()):
            return False
        for key, operator, values in self.expressions:
            present = key in labels
            if operator == "In" and not (present and labels[key] in values):
                return False
            if operator == "NotIn" and present and labels[key] in values:
                return False
            if operator == "Exists" and not present:
                return False
            if operator == "DoesNotExist" and present:
                return False
        return True


@dataclass(frozen=True)
class TypeRequest:
    type: str
    count: int | None  # devices; None: every matching device (ApplyForAll)
    per_device: PerDevice
    selector: Selector | None = None
    vf_selector: Selector | None = None
    exclusive: str | None = None  # DeviceLevel, PCIeLevel
    prefix: str = "kubernetes.io/"  # how the request spelled its resources

    def selects(self, labels: Mapping[str, str], vf_labels: Mapping[str, str]) -> bool:
        if self.selector is not None and not self.selector.matches(labels):
            return False
        return self.vf_selector is None or self.vf_selector.matches(vf_labels)


@dataclass(frozen=True)
class Joint:
    types: tuple[str, ...]  # the primary first (``_joint``), whatever the list's order
    required_scope: str | None  # SamePCIe, or None: the closest scope that works


@dataclass(frozen=True)
class DeviceRequest:
    types: dict[str, TypeRequest]
    joint: Joint | None
    node_resources: dict[str, int]  # resource class of the node -> amount


def parse_device_request(resources: Mapping, annotations: Mapping, naming: Naming) -> DeviceRequest:
    amounts = {name: _amount(name, value) for name, value in resources.items()}
    return _request({n: a for n, a in amounts.items() if a}, annotations, naming)


def parse_pod(pod: Mapping, naming: Naming) -> DeviceRequest:
    """A Pod manifest: its annotations, and the sum of its containers' requests
    (a resource given only as a limit is requested at its limit, as Kubernetes does)."""
    metadata = expect_object(pod.get("metadata", {}), "pod.metadata")
    annotations = expect_object(metadata.get("annotations", {}), "pod.metadata.annotations")
    spec = expect_object(pod.get("spec", {}), "pod.spec")
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        raise errors.BadRequest("pod.spec.containers: a Pod needs a list of containers.")
    totals: dict[str, Fraction] = {}
    for index, container in enumerate(containers):
        where = f"pod.spec.containers[{index}].resources"
        resources = expect_object(container, where).get("resources", {})
        container_resources = expect_object(resources, where)
        limits = expect_object(container_resources.get("limits", {}), f"{where}.limits")
        requests = expect_object(container_resources.get("requests", {}), f"{where}.requests")
        for name, value in {**limits, **requests}.items():
            totals[name] = totals.get(name, Fraction(0)) + _amount(name, value)
    return _request({n: a for n, a in totals.items() if a}, annotations, naming)


def _request(amounts: dict[str, Fraction], annotations: Mapping, naming: Naming):
    if not amounts:
        raise errors.BadRequest("The request asks for no resource.")
    joint_document = _annotation(annotations, schemas.JOINT_ANNOTATION, schemas.JointAllocate())
    hint_document = _annotation(annotations, schemas.HINT_ANNOTATION, None)
    hints = _hints(hint_document)
    by_type: dict[str, dict[str, Fraction]] = {}
    prefixes: dict[str, str] = {}
    node_resources: dict[str, int] = {}
    for name, amount in amounts.items():
        device_resource, prefix = _device_resource(name)
        if device_resource is None:
            resource_class, value = _node_resource(name, amount, naming)
            node_resources[resource_class] = node_resources.get(resource_class, 0) + value
            continue
        is_gpu = device_resource == WHOLE_GPUS or device_resource.startswith("gpu")
        device_type = "gpu" if is_gpu else device_resource
        asked = by_type.setdefault(device_type, {})
        if device_resource in asked:
            raise errors.BadRequest(
                f"{name}: {device_resource} is asked twice, under two prefixes."
            )
        if device_resource != WHOLE_GPUS and prefixes.setdefault(device_type, prefix) != prefix:
            raise errors.BadRequest(
                f"{name}: the {device_type} resources of one request use one prefix "
                f"({prefixes[device_type]})."
            )
        asked[device_resource] = amount
    for device_type in hints:
        if device_type not in by_type:
            raise errors.BadRequest(
                f"{schemas.HINT_ANNOTATION} gives a hint for {device_type}, "
                f"but the request asks for no {device_type} resource."
            )
    types = {
        device_type: _type_request(
            device_type, asked, hints.get(device_type, {}), prefixes.get(device_type, PREFIXES[0])
        )
        for device_type, asked in by_type.items()
    }
    joint = _joint(joint_document, types) if joint_document is not None else None
    return DeviceRequest(types=types, joint=joint, node_resources=node_resources)


def _amount(name: object, value: object) -> Fraction:
    if not isinstance(name, str) or not name:
        raise errors.BadRequest(f"Resource name {name!r} is not a string.")
    amount = parse_quantity(value, name)
    if amount < 0:
        raise errors.BadRequest(f"{name}: {value!r} is negative.")
    return amount


def expect_object(value: object, where: str) -> Mapping:
    """``value``, or a 400 saying that ``where`` must be an object."""
    if not isinstance(value, Mapping):
        raise errors.BadRequest(f"{where}: expected an object.")
    return value


def _device_resource(name: str) -> tuple[str | None, str]:
    if name == WHOLE_GPUS:
        return WHOLE_GPUS, "kubernetes.io/"
    for prefix in PREFIXES:
        if name.startswith(prefix) and name[len(prefix) :] in DEVICE_RESOURCES:
            return name[len(prefix) :], prefix
    return None, ""


def _node_resource(name: str, amount: Fraction, naming: Naming) -> tuple[str, int]:
    """A resource of the node itself: a plain name, as the translator names it (``cpu`` is
    VCPU, ``hugepages-2Mi`` CUSTOM_HUGEPAGES_2MI); a domain-qualified name it does not know
    (``example.com/foo``) is refused."""
    if name in DEVICE_RESOURCES:
        raise errors.BadRequest(
            f"Resource {name!r} needs its prefix: {' or '.join(p + name for p in PREFIXES)}."
        )
    if "/" in name or not SEGMENT.fullmatch(name):
        raise errors.BadRequest(
            f"Unknown resource {name!r}: known resources are {WHOLE_GPUS}; "
            f"{' or '.join(PREFIXES)} followed by {', '.join(DEVICE_RESOURCES)}; and the "
            "node's own resources by plain name (cpu, memory, ...)."
        )
    resource_class = naming.resource_class(None, name)
    value = math.ceil(amount / UNIT_SIZES[naming.unit(name)])
    if value > MAX_INT:
        raise errors.BadRequest(f"{name}: out of range.")
    return resource_class, value


def _annotation(annotations: Mapping, key: str, schema) -> dict | None:
    if key not in annotations:
        return None
    value = annotations[key]
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise errors.BadRequest(f"Annotation {key} is not JSON: {exc}.") from exc
        except RecursionError:
            raise errors.BadRequest(f"Annotation {key} is not JSON: nested too deeply.") from None
    if not isinstance(value, dict):
        raise errors.BadRequest(f"Annotation {key} must be a JSON object.")
    if schema is None:
        return value
    return _checked(schema, value, key)


def _checked(schema, value: dict, where: str) -> dict:
    try:
        return validate(schema, value)
    except errors.BadRequest as exc:
        raise errors.BadRequest(f"Annotation {where}: {exc.detail}") from exc


def _hints(document: dict | None) -> dict[str, dict]:
    if document is None:
        return {}
    hints = {}
    for device_type, hint in document.items():
        _known_type(device_type, schemas.HINT_ANNOTATION)
        if not isinstance(hint, dict):
            raise errors.BadRequest(
                f"Annotation {schemas.HINT_ANNOTATION}: the hint for {device_type} must be an "
                "object."
            )
        hints[device_type] = _checked(
            schemas.DeviceHint(), hint, f"{schemas.HINT_ANNOTATION} ({device_type})"
        )
        if "vfSelector" in hints[device_type] and device_type != "rdma":
            raise errors.BadRequest(
                f"Annotation {schemas.HINT_ANNOTATION}: vfSelector is for rdma devices, "
                f"not {device_type}."
            )
    return hints


def _known_type(device_type: str, where: str) -> None:
    if device_type not in DEVICE_TYPES:
        raise errors.BadRequest(
            f"{where}: unknown device type {device_type!r}; known types are "
            f"{', '.join(DEVICE_TYPES)}."
        )


def _selector(document: dict | None) -> Selector | None:
    if document is None:
        return None
    return Selector(
        match_labels=document.get("matchLabels", {}),
        expressions=tuple(
            (e["key"], e["operator"], tuple(e.get("values", ())))
            for e in document.get("matchExpressions", [])
        ),
    )


def _type_request(device_type: str, asked: dict[str, Fraction], hint: dict, prefix: str):
    strategy = hint.get("allocateStrategy")
    count: int | None
    if device_type == "gpu" and strategy == schemas.REQUESTS_AS_COUNT:
        count, per_device = gpus_counted(asked, prefix)
    elif device_type == "gpu":
        count, per_device = gpu_asked(asked, prefix)
    else:
        count, per_device = shared_device_asked(
            device_type, asked[device_type], prefix, strategy, "vfSelector" in hint
        )
    if strategy == schemas.APPLY_FOR_ALL:
        if count != 1:
            raise errors.BadRequest(
                f"{device_type}: with ApplyForAll the amount is what each device gives: "
                "at most 100 (a whole device), or 1 of nvidia.com/gpu."
            )
        count = None
    return TypeRequest(
        type=device_type,
        count=count,
        per_device=per_device,
        selector=_selector(hint.get("selector")),
        vf_selector=_selector(hint.get("vfSelector")),
        exclusive=hint.get("exclusivePolicy"),
        prefix=prefix,
    )


def _joint(document: dict, types: dict[str, TypeRequest]) -> Joint:
    where = schemas.JOINT_ANNOTATION
    joint_types = tuple(document["deviceTypes"])
    for device_type in joint_types:
        _known_type(device_type, where)
        if device_type not in types:
            raise errors.BadRequest(
                f"{where} lists {device_type}, but the request asks for no {device_type} resource."
            )
    if len(set(joint_types)) != len(joint_types) or len(joint_types) < 2:
        raise errors.BadRequest(f"{where}: deviceTypes needs two or more distinct types.")
    for device_type in joint_types:
        if types[device_type].count is None:
            raise errors.BadRequest(
                f"{where}: {device_type} cannot be allocated jointly with ApplyForAll."
            )
    # The primary first: the most devices, then the type order (not the list's order).
    ordered = tuple(
        sorted(
            joint_types,
            key=lambda device_type: (
                -(types[device_type].count or 0),
                DEVICE_TYPES.index(device_type),
            ),
        )
    )
    return Joint(types=ordered, required_scope=document.get("requiredScope"))
