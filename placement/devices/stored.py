"""A stored topology document as the search uses it: read once per worker.

``shape`` numbers what the search's choice depends on (positions, memory,
VFs, labels, NVLinks) without the devices' identities: real nodes of one
model differ only by their GPUs' UUIDs, and the chooser then searches one
of them for all (``Chooser`` remembers by shape and state).
"""

import functools
import itertools
import json
import threading
from typing import NamedTuple

from placement.devices.node_map import Layout, device_layout
from placement.devices.topology import Topology

MAX_SHAPES = 100_000  # beyond, numbering starts afresh (only memo hits are lost)


class StoredTopology(NamedTuple):
    topology: Topology
    layout: Layout
    shape: int


@functools.lru_cache(maxsize=1024)
def read_stored(document: str) -> StoredTopology:
    """Remembered by the document's own text, so it can never be stale: a changed
    topology is another text."""
    topology = Topology.from_document(json.loads(document))
    return StoredTopology(topology, device_layout(topology), _shape_number(topology))


_shapes: dict[tuple, int] = {}
_numbers = itertools.count()
_lock = threading.Lock()


def _shape_number(topology: Topology) -> int:
    shape = (
        tuple(
            (d.type, d.minor, d.numa, d.bridge, d.switch, d.memory_mb, d.vfs,
             tuple(sorted(d.labels.items())), tuple(sorted(d.vf_labels.items())))
            for d in topology.devices
        ),
        tuple(sorted(topology.nvlinks.items())),
    )
    with _lock:
        if len(_shapes) >= MAX_SHAPES:
            _shapes.clear()
        if shape not in _shapes:
            _shapes[shape] = next(_numbers)
        return _shapes[shape]
