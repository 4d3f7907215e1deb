"""The group-resource key translator: hierarchical resource keys over provider trees.

Nodes and requests are flat maps of hierarchical keys
(``Gpugrp1/0/Gpugrp0/1/gpu/dev2/cards: 1``). One module per step:

- ``keys`` and ``levels``: reading keys, a node's group levels (amounts are
  ``placement.nodes.quantities``; the classes, traits and provider names keys
  become, ``placement.nodes.naming``).
- ``node_tree`` and ``sync``: a node's map -> the provider tree it should
  have -> that tree written (idempotent, refusing to drop what is allocated),
  and a node deleted; both refuse device nodes (``placement.nodes.kinds``).
- ``request_tree``: a request map -> request groups, fitted to a node's
  levels (levels the request skips are filled in, one per request group).
- ``snapshot``: the managed trees as read in one moment, each group with a
  signature so that equal groups are searched once.
- ``allocator``, ``assignment`` and ``scoring``: the exact best placement per
  node (a recursive assignment, pack or spread), and the score bounds that let
  a search with ``limit`` read only the nodes that can win; ``exact``: the
  arithmetic that keeps those comparisons exact at float speed.
- ``search``: ranking the nodes of one request, over every node or best
  bound first (within a time budget if given), with the requested key that kept
  the others out; ``explain``: the nodes each of the search's checks leaves.
- ``service``: the front door (``GroupResourceSearch``: candidates, claims,
  explanations, queries, a node's view) over a request parsed by its caller
  (``request_tree.parse_request``); ``candidate_query`` gives the equivalent GET
  /allocation_candidates query; ``bodies`` the JSON answers. Every read of the
  nodes is of the process's copy of the providers (``replica_nodes``); SQL (the
  writes) lives in ``placement.data.group_nodes``; HTTP in
  ``placement.handlers.group_resources``; the ``placement group-resources`` CLI in
  ``placement.cli.group_resources``.

A request may choose the group allocator's own readings where ours differ
(``placement.nodes.group_options``: filled-in levels for flat requests, nodes
ranked by the sum, request groups sharing node groups); the configuration
gives the defaults.

The nodes built from the copy are kept between requests, each while its tree keeps
the form it was built from (``replica_nodes``); a claim (``placement.claiming``)
re-checks capacity as it writes and chooses again when a concurrent claim took its
choice.
"""
