"""``placement group-resources ...``: the translator for admin scripts.

The commands talk to the configured database directly (the same one the
service uses), each in one transaction, and print JSON. A FILE holds the key
map in YAML or JSON, either bare or under a ``resources`` key; ``-`` reads it
from standard input.
"""

import argparse
import json
import sys
from typing import Any

import yaml

from placement import errors
from placement.config import Config
from placement.data.names import sync_standard_names
from placement.db import migrate
from placement.db.engine import WRITE_TRANSACTION_OPTION, is_sqlite, make_engine
from placement.group_resources import bodies, service
from placement.group_resources.scoring import SCORERS
from placement.schemas import group_resources as schemas
from placement.schemas import validate


def add_commands(commands) -> None:
    """Register the ``group-resources`` subcommands on the ``placement`` parser."""
    parser = commands.add_parser(
        "group-resources", help="the group-resource key translator (GPU/device affinity)"
    )
    sub = parser.add_subparsers(title="group-resources commands")

    sync = sub.add_parser("sync", help="make a node's provider tree match a key map")
    sync.add_argument("node", help="the node's name (its root provider's name)")
    sync.add_argument("file", help="YAML or JSON key map of the node's resources (- for stdin)")
    sync.add_argument("--uuid", help="uuid for the node's root provider when it is created")
    sync.set_defaults(run=_sync)

    show = sub.add_parser("show", help="print a node's groups with inventories and usage")
    show.add_argument("node")
    show.set_defaults(run=_show)

    delete = sub.add_parser("delete", help="delete a node without allocations")
    delete.add_argument("node")
    delete.set_defaults(run=_delete)

    for name, run, text in (
        ("candidates", _candidates, "the best placement per node, best first"),
        ("claim", _claim, "allocate the best placement to a new consumer"),
        ("query", _query, "the GET /allocation_candidates query a request becomes"),
    ):
        command = sub.add_parser(name, help=text)
        command.add_argument(
            "file", help="YAML or JSON key map of the requested resources (- for stdin)"
        )
        command.add_argument(
            "--node", action="append", dest="nodes", help="only this node (repeatable)"
        )
        if name != "query":
            command.add_argument("--scorer", choices=sorted(SCORERS), default="pack")
        if name == "candidates":
            command.add_argument("--limit", type=int, help="at most this many nodes")
        if name == "claim":
            command.add_argument("--consumer", required=True, help="the new consumer's uuid")
            command.add_argument("--project", required=True)
            command.add_argument("--user", required=True)
            command.add_argument("--consumer-type", help="e.g. INSTANCE")
        command.set_defaults(run=run)


def run_in_transaction(config: Config, work) -> int:
    """Run ``work(conn, naming)`` in one transaction; print its result as JSON."""
    engine = make_engine(config.database_url)
    try:
        if is_sqlite(config.database_url):
            migrate.upgrade(engine)
        else:
            migrate.require_current(engine)
        with engine.connect().execution_options(**{WRITE_TRANSACTION_OPTION: True}) as conn:
            with conn.begin():
                sync_standard_names(conn)
                result = work(conn, config.group_naming())
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


def read_key_map(path: str) -> Any:
    data = read_document(path)
    if isinstance(data, dict) and set(data) == {"resources"}:
        return data["resources"]
    return data


def _sync(config: Config, args: argparse.Namespace) -> int:
    def work(conn, naming):
        result = service.sync_node(conn, args.node, read_key_map(args.file), naming, args.uuid)
        return {**service.node_view(conn, args.node), "changed": result.changed}

    return run_in_transaction(config, work)


def _show(config: Config, args: argparse.Namespace) -> int:
    return run_in_transaction(config, lambda conn, naming: service.node_view(conn, args.node))


def _delete(config: Config, args: argparse.Namespace) -> int:
    return run_in_transaction(config, lambda conn, naming: service.delete_node(conn, args.node))


def _candidates(config: Config, args: argparse.Namespace) -> int:
    def work(conn, naming):
        body = checked_arguments(schemas.FindCandidates(), args, resources=read_key_map(args.file),
                        scorer=args.scorer, limit=args.limit, nodes=args.nodes)
        answer = service.find_candidates(
            conn, body["resources"], naming, scorer=body["scorer"], limit=body.get("limit"),
            node_names=body.get("nodes"),
        )
        return bodies.candidates_body(answer, body["resources"])

    return run_in_transaction(config, work)


def _claim(config: Config, args: argparse.Namespace) -> int:
    def work(conn, naming):
        body = checked_arguments(
            schemas.Claim(), args, resources=read_key_map(args.file), consumer_uuid=args.consumer,
            project_id=args.project, user_id=args.user, consumer_type=args.consumer_type,
            scorer=args.scorer, nodes=args.nodes,
        )
        placement = service.claim(
            conn,
            body["resources"],
            naming,
            consumer_uuid=body["consumer_uuid"],
            project_id=body["project_id"],
            user_id=body["user_id"],
            consumer_type=body.get("consumer_type"),
            scorer=body["scorer"],
            node_names=body.get("nodes"),
        )
        return {
            "consumer_uuid": body["consumer_uuid"],
            **bodies.placement_body(placement, body["resources"]),
        }

    return run_in_transaction(config, work)


def _query(config: Config, args: argparse.Namespace) -> int:
    def work(conn, naming):
        body = checked_arguments(schemas.Translate(), args, resources=read_key_map(args.file),
                        nodes=args.nodes)
        translations = service.translate(conn, body["resources"], naming, body.get("nodes"))
        return bodies.translations_body(translations)

    return run_in_transaction(config, work)


def checked_arguments(schema, args: argparse.Namespace, **fields) -> dict:
    """The command's arguments checked by the HTTP body's schema: one set of rules."""
    return validate(schema, {name: value for name, value in fields.items() if value is not None})
