"""A resource placement service, API-compatible with OpenStack Placement 1.0-1.39.

Layout (each layer only calls the one below it):

* ``app`` builds the Flask application; ``routes`` is the one table of URLs
  and methods; ``handlers`` hold one thin view module per noun.
* ``microversion``, ``auth``, ``errors`` and ``http`` are the request
  plumbing: version negotiation, authentication and policy, error codes and
  the single error format, JSON in and out.
* ``query`` is the only parser of the query-string grammar (``resources``,
  ``required``, ``member_of``); ``schemas`` validate JSON bodies (marshmallow).
* ``data`` is the data layer: functions taking a connection first; all SQL is
  there. ``db`` holds the schema (``db.tables``), engines and migrations.
* ``candidates`` is the allocation-candidate search; ``group_resources`` the
  group-resource key translator (an extension under /group_resources).
* ``capacity``, at the bottom (it imports nothing of placement), is the one
  definition of an inventory's capacity, free amount and unit rule, which
  every layer above calls.

One request is one transaction (see ``routes``). Provider generations guard
every read-modify-write: the UPDATE that bumps a generation checks the value
the client saw, and on PostgreSQL also locks the provider row until commit.
"""
