"""What the group-resource translator and the device topologies share, below both (and
below the configuration, the schemas and the data layer, which need it too):

* ``naming``: how node-level names and group keys become resource classes, traits
  and provider names;
* ``quantities``: amounts as Kubernetes quantities (``"2Gi"``, ``"500m"``);
* ``scorers``: the names of the ways a node's fit is scored;
* ``device_types``: the device types a topology may hold, and its bounds;
* ``search_budget``: a search's time budget, and how far a search it stopped got.

Nothing here imports a feature or the data layer (only ``errors``, and the
largest amount a column holds, ``db.tables.MAX_INT``).
"""
