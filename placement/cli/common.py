"""What every ``placement`` command shares: one transaction on the configured database,
its result printed as JSON, files read (``-``: standard input), and arguments checked
by the HTTP body's schema."""

import contextlib
import json
import sys
from collections.abc import Iterator
from typing import Any

import yaml
from sqlalchemy import Connection, Engine

from placement import errors
from placement.config import Config
from placement.data.names import sync_standard_names
from placement.db import migrate
from placement.db.engine import WRITE_TRANSACTION_OPTION, is_sqlite, make_engine
from placement.nodes.scorers import PACK, SCORER_NAMES
from placement.nodes.search_budget import SearchBudget
from placement.schemas import validate


def add_request_command(sub, name: str, run, help_text: str, file_help: str):
    """A command reading a request from FILE: ``candidates`` (with ``--limit``),
    ``claim`` (with the new consumer) or ``query`` (neither, and no scorer). Returns
    the command's parser, for arguments of its own."""
    command = sub.add_parser(name, help=help_text)
    command.add_argument("file", help=file_help)
    command.add_argument(
        "--node", action="append", dest="nodes", help="only this node (repeatable)"
    )
    if name != "query":
        command.add_argument("--scorer", choices=sorted(SCORER_NAMES), default=PACK)
    if name == "candidates":
        command.add_argument("--limit", type=int, help="at most this many nodes")
    if name != "query":
        add_budget_argument(command)
    if name == "claim":
        command.add_argument("--consumer", required=True, help="the new consumer's uuid")
        command.add_argument("--project", required=True)
        command.add_argument("--user", required=True)
        command.add_argument("--consumer-type", help="e.g. INSTANCE")
    command.set_defaults(run=run)
    return command


def add_budget_argument(command) -> None:
    """``--budget-ms``: the body's ``budget_ms``."""
    command.add_argument(
        "--budget-ms",
        type=int,
        dest="budget_ms",
        help="a time budget for the search, in milliseconds: past it, the best found so "
        "far (default: the configuration's [group_resources] candidates_budget_ms)",
    )


def command_engine(url: str, config: Config) -> Engine:
    """A command's engine, which opens a new connection for each use and keeps none
    (``placement.db.engine``): a command may wait between two (``k8s reconcile`` asks
    the cluster, ``db copy`` reads a table while the other database waits), and a
    connection kept meanwhile could be closed under it."""
    return make_engine(url, config.database(), reuse_connections=False)


def run_in_transaction(config: Config, work) -> int:
    """Run ``work(conn, naming)`` in one transaction; print its result as JSON."""
    return run_with_database(
        config, lambda transaction: _in_one(transaction, work, config.group_naming())
    )


def _in_one(transaction, work, naming):
    with transaction() as conn:
        return work(conn, naming)


def run_with_database(config: Config, work) -> int:
    """Run ``work(transaction)``, where ``with transaction() as conn`` is one transaction
    on the configured database (migrated first on SQLite); print its result as JSON."""
    engine = command_engine(config.database_url, config)

    @contextlib.contextmanager
    def transaction() -> Iterator[Connection]:
        with engine.connect().execution_options(**{WRITE_TRANSACTION_OPTION: True}) as conn:
            with conn.begin():
                sync_standard_names(conn)
                yield conn

    try:
        if is_sqlite(config.database_url):
            migrate.upgrade(engine)
        else:
            migrate.require_current(engine)
        result = work(transaction)
    except errors.PlacementError as exc:
        print(f"placement: {describe_error(exc)}", file=sys.stderr)
        return 1
    except migrate.SchemaOutOfDate as exc:
        print(f"placement: {exc}", file=sys.stderr)
        return 2
    finally:
        engine.dispose()
    if result is not None:
        print(json.dumps(result, indent=2))
    return 0


def describe_error(exc: errors.PlacementError) -> str:
    """The error's detail, and its code only when it names something more than 'undefined'."""
    return exc.detail if exc.code == errors.DEFAULT else f"{exc.detail} ({exc.code})"


def read_text(path: str) -> str:
    """The text of the file at ``path``; ``-`` is standard input."""
    try:
        if path == "-":
            return sys.stdin.read()
        with open(path, encoding="utf-8") as stream:
            return stream.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise errors.BadRequest(f"Cannot read {_file_name(path)}: {exc}") from exc


def read_document(path: str) -> Any:
    """The YAML or JSON document in the file at ``path``; ``-`` is standard input."""
    try:
        return yaml.safe_load(read_text(path))
    except yaml.YAMLError as exc:
        raise errors.BadRequest(f"Cannot read {_file_name(path)}: {exc}") from exc


def _file_name(path: str) -> str:
    return "standard input" if path == "-" else path


def search_budget(config: Config, body: dict) -> SearchBudget:
    """The time budget the command gives (``--budget-ms``), the configuration's else."""
    return SearchBudget(body.get("budget_ms") or config.group_candidates_budget_ms)


def with_cut(answer: dict, budget: SearchBudget) -> dict:
    """``answer``, with the ``cut`` field (as over HTTP) when the budget cut its search."""
    return answer if budget.cut is None else {**answer, "cut": budget.cut.body()}


def claim_fields(args) -> dict:
    """What every claim command takes besides its request: who claims, how it is scored,
    on which nodes (as the claim routes' bodies name them)."""
    return {
        "consumer_uuid": args.consumer,
        "project_id": args.project,
        "user_id": args.user,
        "consumer_type": args.consumer_type,
        "scorer": args.scorer,
        "nodes": args.nodes,
    }


def checked_arguments(schema, **fields) -> dict:
    """The command's arguments checked by the HTTP body's schema: one set of rules."""
    return validate(schema, {name: value for name, value in fields.items() if value is not None})
