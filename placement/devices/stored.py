"""Stored topology documents as the search uses them, each read once per process.

``shape`` numbers what the search's choice depends on (positions, memory,
VFs, labels, health, NVLinks) without the devices' identities: real nodes of one
model differ only by their GPUs' UUIDs, and the chooser then searches one
of them for all (``Chooser`` remembers by shape and state).
"""

import itertools
import json
import threading
from collections import OrderedDict
from typing import NamedTuple

from placement.devices.node_map import Layout, device_layout
from placement.devices.topology import Topology
from placement.interning import Interned

MAX_DOCUMENTS = 1024  # documents kept read; beyond, the least recently read goes
MAX_SHAPES = 100_000  # beyond, numbering starts afresh (only memo hits are lost)


class StoredTopology(NamedTuple):
    topology: Topology
    layout: Layout
    shape: int


class StoredTopologies:
    """The documents read lately, remembered by their own text (so never stale: a
    changed topology is another text), and the shape numbers given so far."""

    def __init__(self, max_documents: int = MAX_DOCUMENTS) -> None:
        self._max_documents = max_documents
        self._read: OrderedDict[str, StoredTopology] = OrderedDict()
        self._shapes: dict[tuple, int] = {}
        self._numbers = itertools.count()
        # A layout depends on the shape and the node's resources alone: nodes of one
        # model share one (and it is built once).
        self._layouts: dict[tuple, Layout] = {}
        self._tables = Interned()  # the topologies' tables equal in content, as one object
        self._lock = threading.Lock()

    def read(self, document: str) -> StoredTopology:
        with self._lock:
            stored = self._read.get(document)
            if stored is not None:
                self._read.move_to_end(document)
                return stored
        self._tables.trim(MAX_SHAPES)
        topology = Topology.from_document(json.loads(document), self._tables)
        shape = self._shape_number(topology)
        layout_key = (shape, tuple(sorted(topology.node_resources.items())))
        with self._lock:
            layout = self._layouts.get(layout_key)
        if layout is None:
            layout = device_layout(topology)
            with self._lock:
                self._layouts[layout_key] = layout
        stored = StoredTopology(topology, layout, shape)
        with self._lock:
            self._read[document] = stored
            while len(self._read) > self._max_documents:
                self._read.popitem(last=False)
        return stored

    def _shape_number(self, topology: Topology) -> int:
        shape = (
            tuple(
                (
                    d.type,
                    d.minor,
                    d.numa,
                    d.bridge,
                    d.switch,
                    d.switch_group,
                    d.board,
                    d.memory_kib,
                    d.vfs,
                    tuple(sorted(d.labels.items())),
                    tuple(sorted(d.vf_labels.items())),
                    d.healthy,
                    tuple((vf.minor, tuple(sorted(vf.labels.items()))) for vf in d.vf_list),
                )
                for d in topology.devices
            ),
            tuple(sorted(topology.nvlinks.items())),
        )
        with self._lock:
            if len(self._shapes) >= MAX_SHAPES:
                self._shapes.clear()
                self._layouts.clear()
            if shape not in self._shapes:
                self._shapes[shape] = next(self._numbers)
            return self._shapes[shape]
