"""Device topologies and device allocation on the translator's provider trees: GPUs
and RDMA NICs allocated jointly (Koordinator's device hints), the tightest-linked
GPUs first (as ``nvidia-smi topo -m`` shows the links), fractional GPU resources
and per-device results (Koordinator's fine-grained device scheduling).

One module per step:

- ``topology``: a node's devices (GPUs, RDMA NICs, FPGAs), where each sits
  (NUMA node, PCIe host bridge, PCIe switch) and the NVLinks between GPUs.
- ``topology_matrix`` and ``device_list``: the two ways in, the text of
  ``nvidia-smi topo -m`` or a plain device list.
- ``node_map``: a topology -> the translator's node map (``numa/0/bridge/0/
  pcie/1/gpu/3/core: 100``), with NVLink sets as a level where they nest, and
  the tenancy inventories that make exclusivity hold in placement itself.
- ``request``: Kubernetes resources (``nvidia.com/gpu``, ``kubernetes.io/gpu-core``,
  ``koordinator.sh/rdma``, ...) and Koordinator's two annotations -> what to find;
  ``amounts``: how many devices of one type that asks for, and what each gives.
- ``snapshot``: each device node as read at one moment: devices with what is free;
  ``stored`` reads a stored topology once per process; ``replica_nodes`` builds
  the snapshots from the process's copy of the providers, kept until their trees
  change.
- ``takes``: what one device gives one request (whole, shares, VFs).
- ``device_checks``: what one device must be to serve a type's request, check by
  check; ``chooser``: the best devices of one node (joint scope, link strength, scorer,
  lowest minors), remembered for nodes alike; ``search`` ranks the nodes, within a
  time budget if given; ``explain`` counts the nodes each check leaves.
- ``checkpoints``: the devices kubelet gave pods (its checkpoint), held for them.
- ``importing``: a topology import (the body read, the tree written by the
  translator's ``sync.write_tree``, the document stored) and a device node's delete;
  ``service``: ``DeviceSearch``, the front door of candidates, claims, explanations,
  checkpoints and views, owned by the application, over a request parsed by its
  caller (``request``); ``bodies`` the JSON answers. The ``placement devices`` CLI is
  ``placement.cli.devices``.

SQL lives in ``placement.data.device_topologies`` (the stored topology
documents) and the translator's ``placement.data.group_nodes``; HTTP in
``placement.handlers.devices``. Snapshots kept between requests are rebuilt
whenever their trees change in the process's copy of the providers, which
follows the database on every request, so none is stale; a claim re-checks
capacity as it writes and chooses again if a concurrent claim won.
"""
