"""A node's GPU topology from its annotations, for the extender's ``Nodes`` mode.

One annotation per pair of GPUs, as a GPU topology device plugin publishes them:
the key is the prefix (``[k8s] topology_annotation_prefix``, by default
``gpu-topology.placement/``), the link's abbreviation as ``nvidia-smi topo -m``
prints it, and the two GPU indices, joined by ``_``:
``gpu-topology.placement/NV2_0_1``, ``gpu-topology.placement/PIX_2_3``,
``gpu-topology.placement/SYS_0_4``. The value is free text (the link's description);
one of the two orders of a pair is enough. Every pair of GPUs needs its annotation;
``<prefix>memory`` gives each GPU's memory in binary units (``80Gi``), which the links
do not say. The links are read as the rows of ``nvidia-smi topo -m`` are
(``placement.devices.topology_matrix``): the same abbreviations, the same tree.

The node's ``status.allocatable`` count of whole GPUs (``nvidia.com/gpu`` or
``aliyun.com/gpu``), when it gives one, must be the number of GPUs the annotations
describe; a node whose annotations say otherwise cannot be placed on.
"""

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from placement import errors
from placement.devices import importing as devices
from placement.devices.topology import Topology
from placement.k8s.pod_requests import WHOLE_GPU_NAMES
from placement.nodes.quantities import parse_quantity

if TYPE_CHECKING:
    from kubernetes.client import V1Node

MEMORY_KEY = "memory"
GPU_INDEX = r"0|[1-9][0-9]{0,2}"
PAIR = re.compile(rf"(?P<link>[A-Z][A-Z0-9-]{{0,7}})_(?P<a>{GPU_INDEX})_(?P<b>{GPU_INDEX})")


@dataclass(frozen=True)
class AnnotatedTopology:
    """What a node's annotations say: the topology, and a digest of everything it was read
    from (to import it again only when that changed)."""

    topology: Topology
    digest: str


def annotated_topology(node: "V1Node", prefix: str) -> AnnotatedTopology | None:
    """The node's GPU topology, or None when no annotation has the prefix; a
    ``BadRequest`` saying what is wrong with the annotations otherwise."""
    name = (node.metadata.name if node.metadata else None) or "?"
    annotations = (node.metadata.annotations if node.metadata else None) or {}
    ours = {
        key[len(prefix) :]: value for key, value in annotations.items() if key.startswith(prefix)
    }
    if not ours:
        return None
    allocatable = (node.status.allocatable if node.status else None) or {}
    digest = hashlib.sha256(
        json.dumps(
            [sorted(ours.items()), sorted((k, allocatable.get(k)) for k in WHOLE_GPU_NAMES)]
        ).encode()
    ).hexdigest()
    memory = ours.pop(MEMORY_KEY, None)
    if memory is None:
        raise errors.BadRequest(f"Node {name}: no {prefix}{MEMORY_KEY} annotation (GPU memory).")
    links = _links(ours, prefix, name)
    gpus = 1 + max((max(pair) for pair in links), default=0)
    _check_allocatable(allocatable, gpus, name)
    matrix = _matrix(links, gpus, prefix, name)
    topology = devices.topology_from_body({"matrix": matrix, "gpu": {"memory": memory}})
    return AnnotatedTopology(topology, digest)


def _links(annotations: Mapping[str, str], prefix: str, node: str) -> dict[tuple[int, int], str]:
    links: dict[tuple[int, int], str] = {}
    for key in annotations:
        pair = PAIR.fullmatch(key)
        if pair is None:
            raise errors.BadRequest(
                f"Node {node}: annotation {prefix}{key} is not {prefix}<LINK>_<GPU>_<GPU> "
                f"(e.g. {prefix}NV2_0_1) nor {prefix}{MEMORY_KEY}."
            )
        a, b = sorted((int(pair["a"]), int(pair["b"])))
        if a == b:
            raise errors.BadRequest(
                f"Node {node}: annotation {prefix}{key} links GPU {a} to itself."
            )
        if links.setdefault((a, b), pair["link"]) != pair["link"]:
            raise errors.BadRequest(
                f"Node {node}: GPUs {a} and {b} are given two links "
                f"({links[(a, b)]} and {pair['link']})."
            )
    return links


def _check_allocatable(allocatable: Mapping[str, str], gpus: int, node: str) -> None:
    for resource in WHOLE_GPU_NAMES:
        if resource in allocatable:
            count = parse_quantity(allocatable[resource], f"Node {node} allocatable {resource}")
            if count != gpus:
                raise errors.BadRequest(
                    f"Node {node}: status.allocatable gives {count} {resource}, its topology "
                    f"annotations describe {gpus} GPU(s)."
                )


def _matrix(links: Mapping[tuple[int, int], str], gpus: int, prefix: str, node: str) -> str:
    """The links as the text ``nvidia-smi topo -m`` prints."""
    names = [f"GPU{i}" for i in range(gpus)]
    lines = ["\t" + "\t".join(names) + "\tCPU Affinity"]
    for a in range(gpus):
        cells = []
        for b in range(gpus):
            if a == b:
                cells.append("X")
                continue
            link = links.get((min(a, b), max(a, b)))
            if link is None:
                raise errors.BadRequest(
                    f"Node {node}: no annotation links GPUs {min(a, b)} and {max(a, b)} "
                    f"({prefix}<LINK>_{min(a, b)}_{max(a, b)})."
                )
            cells.append(link)
        lines.append("\t".join([names[a], *cells, "N/A"]))
    return "\n".join(lines) + "\n"
