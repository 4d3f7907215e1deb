"""The allocation-candidate search behind GET /allocation_candidates.

``service.CandidateSearch`` is its front door (one per application). One step
per module:

1. ``request``: the query string -> a frozen ``CandidateRequest`` (request
   groups, group_policy, same_subtree, root_required, limit), refusing
   everything a microversion does not accept.
2. The copy it searches (``placement.replica``, below the features): this
   worker's copy of the providers (trees, inventories with usage, traits,
   aggregates), brought up to date on every request by reading the
   providers logged as changed since its last request (a log written by
   triggers in the writers' transactions) and re-reading those whose
   version changed, in one snapshot of the database. It is exact, not a
   cache that may lag: every write a search can see changes a version (see
   ``placement.replica.world``). It also keeps each tree's *form*: its shape
   as a number, and its free amounts. Its ``Replica`` (one per application)
   is shared with the translator's and the device searches.
3. ``plan`` (with ``slots`` and ``filters``): the request -> a
   ``SearchPlan``. A *slot* is one thing placed on one provider: each class
   of the unsuffixed group, each granular group (all its classes together),
   each resourceless granular group. Each slot has filters checked on one
   provider alone (capacity minus usage, units, traits, aggregates,
   in_tree); root_required is checked on the roots; sharing providers are
   matched once, with the trees each serves.
4. ``walk``: per tree, a depth-first walk over the slots that drops a
   partial placement as soon as it cannot become valid (room on a provider
   exceeded by the sum of what is placed there, isolate broken, the
   unsuffixed group's traits missing, a same_subtree set that can no longer
   have a common top). Identical granular groups ("twins") are placed as
   combinations and their reorderings listed afterwards, lazily, so that 8
   isolated GPU groups cost one combination per host, not 8! walks.
5. ``search``: over the trees. Without sharing providers, a tree's
   placements depend only on its shape and on its free amounts capped at
   what the request asks (``search.tree_key``): each kind of tree is walked
   once and its placements are moved onto the others of its kind. Trees are
   taken round-robin (the first candidate of every tree, then the
   second...) so that ``limit`` answers from as many trees as possible, and
   the search stops as soon as ``limit`` (or ``max_allocation_candidates``)
   is reached: nothing is built that is not returned. Each candidate comes
   with its allocation request written (``bodies.AllocationRequests``:
   one JSON template per way the slots share providers).
   A request with soft preferences (``preferences``: ``prefer$S``,
   ``prefer_member_of$S``, ``utilization``) is *ranked* instead: ``scoring`` says
   each placement's score and bounds, and ``ranked`` finds the best ``limit`` by
   branch and bound (trees best bound first, partial placements pruned); only
   the trees' bounds are kept for the next request like it (``bounds``).
6. ``answers``: without sharing providers, each tree's candidates are kept
   (``CandidateSearch.answers``) for the next request like this one
   (``SearchPlan.signature`` and the microversion), and dropped when the copy
   says the tree changed (``TreeFollower``): a repeated request
   walks and writes only the trees written since, and (once a request with
   the same root filter has looked at every tree) looks only at the trees
   that answer and those written since; asked again before any provider
   changed, it is answered with the body it was last time.
7. ``bodies``: the body of the requested microversion, joined in one go
   from the candidates' allocation requests and the provider summaries,
   which at 1.29+ are JSON kept per tree (``summaries``).

No SQL runs after the plan is built: the copy answers everything. What
a request reads grows with the writes since the last one (on PostgreSQL,
since the oldest write transaction then open), not with the database: the
class names are few, the log names the changed providers, details are read
for those whose version changed.
"""
