"""Differential tests: the same request sequences against upstream openstack-placement
16.0.0 and against this service, compared step by step.

The rule they hold (see api-ref/differences.md for where we may differ): a request
upstream answers 2xx gets here the same status, body fields and effect on every
provider and consumer generation; a 4xx upstream is a 4xx here with the same error
code (from 1.23, where codes exist).

- ``scenario.py``: the scenario language (frozen steps whose bodies may refer to
  earlier answers on the same side) and the fixed UUIDs every scenario uses;
- ``builders.py``: steps scenarios repeat (providers, inventories, allocations);
- ``scenarios/``: the scenarios, one module per concern;
- ``runner.py``: runs a scenario against a target (``HttpTarget`` for upstream,
  ``FlaskTarget`` for this service), reading every generation back after each step,
  and records a normalized transcript;
- ``compare.py``: the first step where two transcripts differ, as a report;
- ``oracle.py`` and ``upstream_forkserver.py``: a fresh upstream server per scenario;
- ``expected.py``: the scenarios that differ today and why, strict both ways.

Run: ``.venv/bin/pytest tests/differential`` (both backends; ``-k sqlite`` for one).
Upstream must be installed in ``.venv-upstream`` (``make test`` does it); without it
these tests are skipped, or fail with ``CI=true``.
"""
