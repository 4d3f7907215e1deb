"""Every scenario, one module per concern:

- ``routes``: every route and method at its first and last microversion (and the one before);
- ``writes``: every write that may change a generation, and the writes that change nothing;
- ``claims``: Nova's claim loop at 1.34-1.39 through PUT, POST /allocations and the reshaper;
- ``clients``: the requests openstacksdk and the ``openstack`` CLI send;
- ``errors``: what upstream refuses (and some things it accepts that one might not expect);
- ``queries``: allocation candidates and listing filters at the versions that introduced them.
"""

from tests.differential.scenarios import claims, clients, errors, queries, routes, writes

SCENARIOS = (
    routes.SCENARIOS
    + writes.SCENARIOS
    + claims.SCENARIOS
    + clients.SCENARIOS
    + errors.SCENARIOS
    + queries.SCENARIOS
)
BY_NAME = {scenario.name: scenario for scenario in SCENARIOS}
