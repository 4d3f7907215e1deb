"""What a pod asks of a node's devices: its effective requests, as Kubernetes computes
them, of the device resources, read as the device routes read a request.

A container asks its ``requests``, or its ``limits`` for a resource it gives only a
limit for (as the API server defaults them). The pod asks the larger of its
containers' sum and each init container's own request (a restartable init container,
a sidecar, runs beside the others: it adds to every later init container and to the
containers), plus its ``overhead``.

Only the device resources count: ``nvidia.com/gpu`` and ``aliyun.com/gpu`` (whole
GPUs, one name for the other), and ``kubernetes.io/`` or ``koordinator.sh/`` followed
by ``gpu``, ``gpu-core``, ``gpu-memory``, ``gpu-memory-ratio``, ``rdma`` or ``fpga``.
The scheduler itself checks cpu, memory and the rest. A pod that asks for none of
them asks nothing here (``None``).
"""

from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import TYPE_CHECKING

from placement import errors
from placement.devices.amounts import WHOLE_GPUS
from placement.devices.request import (
    DEVICE_RESOURCES,
    PREFIXES,
    DeviceRequest,
    parse_device_request,
)
from placement.nodes.naming import Naming
from placement.nodes.quantities import parse_quantity

if TYPE_CHECKING:  # the client is imported when a pod is first read (``protocol``)
    from kubernetes.client import V1Container, V1Pod

# Whole GPUs under the name GPU topology schedulers manage (as nvidia.com/gpu).
ALIYUN_GPUS = "aliyun.com/gpu"
WHOLE_GPU_NAMES = (WHOLE_GPUS, ALIYUN_GPUS)
DEVICE_NAMES = frozenset(
    {*WHOLE_GPU_NAMES, *(prefix + name for prefix in PREFIXES for name in DEVICE_RESOURCES)}
)


def pod_device_request(pod: "V1Pod", naming: Naming) -> DeviceRequest | None:
    """The device request of ``pod``, or None when it asks for no device."""
    amounts = effective_requests(pod)
    if not amounts:
        return None
    metadata = pod.metadata
    annotations = (metadata.annotations if metadata else None) or {}
    return parse_device_request(_as_request(amounts), annotations, naming)


def effective_requests(pod: "V1Pod") -> dict[str, Fraction]:
    """Device resource name -> what the pod asks of it (none: not listed)."""
    spec = pod.spec
    if spec is None:
        raise errors.BadRequest("Pod.spec: a pod needs a spec.")
    containers = _sum(_asked(c) for c in spec.containers or [])
    sidecars: dict[str, Fraction] = {}
    largest_init: dict[str, Fraction] = {}
    for container in spec.init_containers or []:
        asked = _asked(container)
        if container.restart_policy == "Always":
            sidecars = _sum([sidecars, asked])
            largest_init = _larger(largest_init, sidecars)
        else:
            largest_init = _larger(largest_init, _sum([sidecars, asked]))
    total = _larger(_sum([containers, sidecars]), largest_init)
    total = _sum([total, _device_amounts(spec.overhead or {}, "Pod.spec.overhead")])
    return {name: amount for name, amount in total.items() if amount}


def _asked(container: "V1Container") -> dict[str, Fraction]:
    resources = container.resources
    if resources is None:
        return {}
    where = f"container {container.name}"
    limits = _device_amounts(resources.limits or {}, f"{where} limits")
    requests = _device_amounts(resources.requests or {}, f"{where} requests")
    return {**limits, **requests}


def _device_amounts(resources: Mapping[str, str], where: str) -> dict[str, Fraction]:
    amounts: dict[str, Fraction] = {}
    for name, value in resources.items():
        if name not in DEVICE_NAMES:
            continue
        amount = parse_quantity(value, f"{where}: {name}")
        if amount < 0:
            raise errors.BadRequest(f"{where}: {name}: {value!r} is negative.")
        # aliyun.com/gpu is nvidia.com/gpu, whichever the pod names.
        key = WHOLE_GPUS if name in WHOLE_GPU_NAMES else name
        amounts[key] = amounts.get(key, Fraction(0)) + amount
    return amounts


def _sum(parts: Iterable[Mapping[str, Fraction]]) -> dict[str, Fraction]:
    total: dict[str, Fraction] = {}
    for part in parts:
        for name, amount in part.items():
            total[name] = total.get(name, Fraction(0)) + amount
    return total


def _larger(a: Mapping[str, Fraction], b: Mapping[str, Fraction]) -> dict[str, Fraction]:
    return {name: max(a.get(name, Fraction(0)), b.get(name, Fraction(0))) for name in {*a, *b}}


def _as_request(amounts: Mapping[str, Fraction]) -> dict[str, int]:
    """Amounts as the device routes' ``resources`` take them: whole numbers (bytes for
    memory); a fraction of a device or of a byte is not a request."""
    request = {}
    for name, amount in sorted(amounts.items()):
        if amount.denominator != 1:
            raise errors.BadRequest(f"{name}: {float(amount)} is not a whole amount.")
        request[name] = int(amount)
    return request
