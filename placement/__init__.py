"""A resource placement service, API-compatible with OpenStack Placement 1.0-1.39.

Layout, from the top down (a module imports only from the layers below it):

* Entry points: ``cli`` (the ``placement`` command: ``main``, and the admin
  commands of the node features), ``server`` (how ``placement serve`` runs
  gunicorn) and ``wsgi`` (the WSGI application).
* ``app`` builds the Flask application (``keystone`` puts keystonemiddleware in
  front of it); ``endpoints`` runs each route's view in its transaction;
  ``openapi`` builds the OpenAPI document from ``routes`` and ``schemas``;
  ``routes`` is the one table of URLs and methods, each declared once with its
  view, how it runs, its policy rule, its body and its answers; ``handlers``
  hold one thin view module per noun: parse, call one front door, render.
* ``http`` (JSON in and out), ``context`` (what a view is handed) and
  ``services`` (what the application owns: its engine, authenticator, policy,
  metrics and the front doors of its searches, with the state they keep
  between requests); ``observability`` (metrics, request ids and log lines);
  ``policy`` (the rules' defaults, enforced with oslo.policy).
* The features: ``devices`` (device topologies: GPUs and NICs as wired), built
  on ``group_resources`` (the group-resource key translator), and
  ``candidates`` (GET /allocation_candidates). ``claiming`` is the claim loop
  the two node features share.
* ``replica``: the one copy of the providers every search reads, brought up to
  date from the change log on each request; the features keep their own values
  of its trees.
* ``schemas`` validate JSON bodies (marshmallow); ``data`` is the data layer:
  functions taking a connection first, all the SQL.
* ``query`` is the only parser of the query-string grammar (``query_schema``:
  upstream's JSON Schemas of query strings, and their refusals); ``config`` (with its
  ``config_options``) every option; ``microversion`` and ``auth`` negotiate versions
  and check who asks.
* ``nodes``: what the node features share with the layers below them (names,
  quantities, scorer names, device types).
* At the bottom: ``capacity`` (the one definition of an inventory's capacity,
  free amount and unit rule), ``errors`` (codes and the error classes),
  ``db`` (the schema, engines, migrations), ``clock``, ``collector``,
  ``interning`` (equal values as one object in the long-lived copies) and
  ``explaining`` (what the three searches' explanations share).

One request is one transaction (see ``endpoints``; a search's snapshot,
``db.snapshots``). Provider generations guard every read-modify-write: the
UPDATE that bumps a generation checks the value the client saw, and on
PostgreSQL also locks the provider row until commit.
"""
