"""What a route is: one method of one URL, with its view and the facts about it."""

import enum
from collections.abc import Callable
from dataclasses import dataclass, field

import marshmallow


class Runs(enum.Flag):
    """How a route's view runs, besides in one transaction of its own."""

    WRITES = 0  # a write transaction (every method but GET and HEAD, unless READS_ONLY)
    # A POST that only reads (a body too rich for a query string): a read transaction,
    # which on SQLite does not take the database's one write lock.
    READS_ONLY = enum.auto()
    # Several reads that must see one snapshot of the database. SQLite's transactions
    # always do; PostgreSQL's at READ COMMITTED see each statement's own. The reads of
    # the copy of the providers: what they answer is what the database held at their start.
    ONE_SNAPSHOT = enum.auto()
    # A GET answered 406 for an ``Accept`` without JSON, before policy, as upstream's
    # (its root, GET /traits/{name} and every write ignore ``Accept``).
    CHECKS_ACCEPT = enum.auto()
    # Reads nothing from the database (the version document): runs without a connection
    # and without a transaction.
    WITHOUT_DATABASE = enum.auto()


class Empty(str):
    """The description of an answer without a body."""


# A write that reads no body (at the latest microversion).
NO_BODY = marshmallow.Schema()


@dataclass(frozen=True, eq=False)
class Route:
    """One method of one URL.

    - ``view``: the function that answers it;
    - ``runs``: how the view runs (``Runs``);
    - ``rule``: the policy rule a token must pass (``policy.API_RULES``); None for the
      requests answered without a token;
    - ``body``: what a write reads, at the latest microversion (the views' own dispatch
      chooses it where it changed); ``NO_BODY`` for a write that reads none;
    - ``answers``: the view's own answers by status, as api-ref/ documents them. Those of
      the request's way to the view (the microversion header, the token, policy, the
      version a route needs, a body that is not JSON) are the OpenAPI document's to add.
    """

    view: Callable
    runs: Runs = Runs.WRITES
    rule: str | None = None
    body: marshmallow.Schema | marshmallow.fields.Field | None = None
    answers: dict[int, str] = field(default_factory=dict)


READ = Runs.CHECKS_ACCEPT
SNAPSHOT_READ = Runs.CHECKS_ACCEPT | Runs.ONE_SNAPSHOT
SEARCH = Runs.READS_ONLY | Runs.ONE_SNAPSHOT  # a POST that searches
