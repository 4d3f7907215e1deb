"""``placement group-resources ...``: the translator for admin scripts.

The commands talk to the configured database directly (the same one the
service uses), each in one transaction, and print JSON. A FILE holds the key
map in YAML or JSON, either bare or under a ``resources`` key; ``-`` reads it
from standard input.
"""

import argparse
from typing import Any

from placement.cli.common import (
    add_request_command,
    checked_arguments,
    claim_fields,
    read_document,
    run_in_transaction,
    search_budget,
    with_cut,
)
from placement.config import Config
from placement.devices import importing as device_importing
from placement.group_resources import bodies, sync
from placement.group_resources.request_tree import parse_request
from placement.group_resources.service import GroupResourceSearch
from placement.nodes.group_options import CHOICES, GroupOptions
from placement.nodes.kinds import NodeKind
from placement.replica.replica import Replica
from placement.schemas import group_resources as schemas


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
        command = add_request_command(
            sub, name, run, text, "YAML or JSON key map of the requested resources (- for stdin)"
        )
        for option, values in CHOICES.items():
            command.add_argument(
                f"--{option.replace('_', '-')}",
                dest=option,
                choices=values,
                help=f"options.{option} (default: the configuration's)",
            )


def _options(args: argparse.Namespace) -> dict | None:
    """The body's ``options`` from the command's arguments (None: the configuration's)."""
    chosen = {
        option: getattr(args, option) for option in CHOICES if getattr(args, option) is not None
    }
    return chosen or None


def _search_options(config: Config, body: dict) -> GroupOptions:
    return config.group_options().overridden(body.get("options"))


def read_key_map(path: str) -> Any:
    data = read_document(path)
    if isinstance(data, dict) and set(data) == {"resources"}:
        return data["resources"]
    return data


def _sync(config: Config, args: argparse.Namespace) -> int:
    def work(conn, naming):
        result = sync.sync_node(conn, args.node, read_key_map(args.file), naming, args.uuid)
        return {**GroupResourceSearch(Replica()).show(conn, args.node), "changed": result.changed}

    return run_in_transaction(config, work)


def _show(config: Config, args: argparse.Namespace) -> int:
    search = GroupResourceSearch(Replica())
    return run_in_transaction(config, lambda conn, naming: search.show(conn, args.node))


def _delete(config: Config, args: argparse.Namespace) -> int:
    """A device node is deleted with its topology, as ``placement devices delete`` does."""

    def work(conn, naming):
        if sync.node_kind(conn, args.node) is NodeKind.DEVICE:
            device_importing.delete_node(conn, args.node)
        else:
            sync.delete_node(conn, args.node)

    return run_in_transaction(config, work)


def _candidates(config: Config, args: argparse.Namespace) -> int:
    def work(conn, naming):
        body = checked_arguments(
            schemas.FindCandidates(),
            resources=read_key_map(args.file),
            scorer=args.scorer,
            limit=args.limit,
            nodes=args.nodes,
            options=_options(args),
            budget_ms=args.budget_ms,
        )
        budget = search_budget(config, body)
        options = _search_options(config, body)
        answer = GroupResourceSearch(Replica()).find(
            conn,
            parse_request(body["resources"], naming),
            scorer=body["scorer"],
            limit=body.get("limit"),
            node_names=body.get("nodes"),
            options=options,
            budget=budget,
        )
        return with_cut(bodies.candidates_body(answer, body["resources"]), budget)

    return run_in_transaction(config, work)


def _claim(config: Config, args: argparse.Namespace) -> int:
    def work(conn, naming):
        body = checked_arguments(
            schemas.Claim(),
            resources=read_key_map(args.file),
            **claim_fields(args),
            options=_options(args),
            budget_ms=args.budget_ms,
        )
        budget = search_budget(config, body)
        options = _search_options(config, body)
        placement = GroupResourceSearch(Replica()).claim(
            conn,
            parse_request(body["resources"], naming),
            consumer_uuid=body["consumer_uuid"],
            project_id=body["project_id"],
            user_id=body["user_id"],
            consumer_type=body.get("consumer_type"),
            scorer=body["scorer"],
            node_names=body.get("nodes"),
            options=options,
            budget=budget,
        )
        return with_cut(
            {
                "consumer_uuid": body["consumer_uuid"],
                **bodies.placement_body(placement, body["resources"]),
            },
            budget,
        )

    return run_in_transaction(config, work)


def _query(config: Config, args: argparse.Namespace) -> int:
    def work(conn, naming):
        body = checked_arguments(
            schemas.Translate(),
            resources=read_key_map(args.file),
            nodes=args.nodes,
            options=_options(args),
        )
        options = _search_options(config, body)
        translations = GroupResourceSearch(Replica()).translate(
            conn, parse_request(body["resources"], naming), body.get("nodes"), options
        )
        return bodies.translations_body(translations)

    return run_in_transaction(config, work)
