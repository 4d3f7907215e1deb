"""The allocation-candidate search behind GET /allocation_candidates.

Four small steps, one module each:

1. ``request``: the query string -> a frozen ``CandidateRequest`` (request
   groups, group_policy, same_subtree, root_required, limit), refusing
   everything a microversion does not accept.
2. ``plan``: the request -> a ``SearchPlan``. A *slot* is one thing placed on
   one provider: each class of the unsuffixed group, each granular group (all
   its classes together), each resourceless granular group. ONE SQL statement
   (``placement.data.candidate_options``) answers every slot with the
   providers that can serve it alone (capacity minus usage, units, traits,
   aggregates, in_tree, root_required); the plan keeps them per tree, with
   the trees each sharing provider serves. Only trees with an option for
   every slot are searched. Under a ``limit`` (no sharing provider), the
   options are read per batch of trees as the search reaches them, and the
   trees themselves are found a window of roots at a time
   (``SearchPlan.matching_roots``), so that a query most trees match reads only
   the first ones.
3. ``search``: per tree, a depth-first walk over the slots that drops a
   partial placement as soon as it cannot become valid (room on a provider
   exceeded by the sum of what is placed there, isolate broken, the
   unsuffixed group's traits missing, a same_subtree set that can no longer
   have a common top). Identical granular groups ("twins") are placed as
   combinations and their reorderings listed afterwards, lazily, so that 8
   isolated GPU groups cost one combination per host, not 8! walks. Trees are
   taken round-robin (the first candidate of every tree, then the second...)
   so that ``limit`` answers from as many trees as possible, and the walk
   stops as soon as ``limit`` (or ``max_allocation_candidates``) is reached:
   nothing is built that is not returned.
4. ``response``: candidates and provider summaries (read by
   ``placement.data.provider_summaries`` for the returned trees only) as the
   body of the requested microversion.

Nothing is cached between requests: every answer reflects the database at the
time of the request, whichever worker or host answers it.
"""
