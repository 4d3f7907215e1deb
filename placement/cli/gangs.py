"""``placement network ...`` and ``placement gangs ...``: the network as levels, and
gangs found, explained, claimed, shown and released, for admin scripts.

Like ``placement devices``, each command talks to the configured database in one
transaction and prints JSON, through the functions the HTTP views call
(``placement.gangs.service``) and the answers they give (``placement.gangs.bodies``).
FILE holds a body as the HTTP route takes it, in YAML or JSON (``-``: standard input):
the network (``levels`` and ``nodes``) for ``network set``, a gang request (``members``
and ``member``, or ``members`` as a list of ``{count, member}``; ``required``,
``preferred``, ``share_nodes``) for ``gangs candidates|explain|claim``. The options
given as arguments take the place of the file's.
"""

import argparse
import uuid

from placement import errors
from placement.cli.common import (
    add_budget_argument,
    checked_arguments,
    read_document,
    run_in_transaction,
    search_budget,
    with_cut,
)
from placement.config import Config
from placement.devices.service import DeviceSearch
from placement.gangs import answers, service
from placement.gangs.request import members_of
from placement.nodes.scorers import SCORER_NAMES
from placement.replica.replica import Replica
from placement.schemas import gangs as schemas

GANG_FILE = (
    "YAML or JSON gang request: members and member (or members as a list of "
    "{count, member}), required, preferred, share_nodes; - for stdin"
)


def add_commands(commands) -> None:
    """Register the ``network`` and ``gangs`` subcommands on the ``placement`` parser."""
    _add_network_commands(commands)
    _add_gang_commands(commands)


def _add_network_commands(commands) -> None:
    parser = commands.add_parser(
        "network", help="the network as levels (spine, leaf, ...): every node's domains"
    )
    sub = parser.add_subparsers(title="network commands")
    show = sub.add_parser("show", help="print the levels and every node's domains")
    show.set_defaults(run=_show_network)
    replace = sub.add_parser("set", help="replace the whole network (levels and nodes)")
    replace.add_argument(
        "file", help="YAML or JSON: levels (broad to narrow) and nodes; - for stdin"
    )
    replace.set_defaults(run=_set_network)
    node = sub.add_parser("set-node", help="set one node's domains, checked with the others'")
    node.add_argument("name", help="the node's name (its root provider's name)")
    node.add_argument(
        "--domain",
        action="append",
        required=True,
        metavar="LEVEL=DOMAIN",
        help="the node's domain at a level (one per level, repeated)",
    )
    node.set_defaults(run=_set_node)
    delete = sub.add_parser("delete-node", help="take a node out of the network")
    delete.add_argument("name")
    delete.set_defaults(run=_delete_node)


def _add_gang_commands(commands) -> None:
    parser = commands.add_parser(
        "gangs", help="gangs of device requests in one network domain, claimed all or nothing"
    )
    sub = parser.add_subparsers(title="gangs commands")
    for name, run, text in (
        ("candidates", _candidates, "the best gang of each domain of the required level"),
        ("explain", _explain, "the domains that came closest, and what they lacked"),
        ("claim", _claim, "claim the best gang: a new consumer per member, all or nothing"),
    ):
        command = sub.add_parser(name, help=text)
        command.add_argument("file", help=GANG_FILE)
        add_budget_argument(command)
        if name != "explain":
            command.add_argument("--scorer", choices=sorted(SCORER_NAMES))
        if name == "candidates":
            command.add_argument("--limit", type=int, help="at most this many gangs")
        if name == "claim":
            command.add_argument("--gang", help="the new gang's uuid (default: a new one)")
            command.add_argument(
                "--consumer",
                action="append",
                dest="consumers",
                help="a member's new consumer uuid, in member order (repeated; default: new)",
            )
            command.add_argument("--project", required=True)
            command.add_argument("--user", required=True)
            command.add_argument("--consumer-type", help="e.g. INSTANCE")
        command.set_defaults(run=run)
    show = sub.add_parser("show", help="print a gang's members and their allocations")
    show.add_argument("gang_uuid")
    show.set_defaults(run=_show_gang)
    release = sub.add_parser("release", help="release every member of a gang")
    release.add_argument("gang_uuid")
    release.set_defaults(run=_release_gang)


def _gang_search() -> service.GangSearch:
    """Each command is a process of its own: nothing kept is worth keeping."""
    return service.GangSearch(DeviceSearch(Replica()))


def _show_network(config: Config, args: argparse.Namespace) -> int:
    return run_in_transaction(config, lambda conn, naming: service.read_network(conn).body())


def _set_network(config: Config, args: argparse.Namespace) -> int:
    def work(conn, naming):
        document = read_document(args.file)
        if not isinstance(document, dict):
            raise errors.BadRequest(f"{args.file}: expected 'levels' and 'nodes'.")
        body = checked_arguments(schemas.Network(), **document)
        return service.set_network(conn, body["levels"], body["nodes"]).body()

    return run_in_transaction(config, work)


def _set_node(config: Config, args: argparse.Namespace) -> int:
    def work(conn, naming):
        domains = {}
        for given in args.domain:
            level, equals, domain = given.partition("=")
            if not equals or not level or not domain:
                raise errors.BadRequest(f"--domain {given}: give LEVEL=DOMAIN.")
            if level in domains:
                raise errors.BadRequest(f"--domain: level {level} is given twice.")
            domains[level] = domain
        body = checked_arguments(schemas.NetworkNode(), domains=domains)
        created = service.set_node(conn, args.name, body["domains"])
        network = service.read_network(conn)
        return {"name": args.name, "domains": network.node_body(args.name), "created": created}

    return run_in_transaction(config, work)


def _delete_node(config: Config, args: argparse.Namespace) -> int:
    return run_in_transaction(config, lambda conn, naming: service.delete_node(conn, args.name))


def _gang_body(schema, path: str, **options) -> dict:
    """The gang request in ``path``, with the command's options, checked as over HTTP."""
    document = read_document(path)
    if not isinstance(document, dict):
        raise errors.BadRequest(f"{path}: expected a gang request (members, required, ...).")
    return checked_arguments(schema, **{**document, **_given(options)})


def _given(options: dict) -> dict:
    return {name: value for name, value in options.items() if value is not None}


def _candidates(config: Config, args: argparse.Namespace) -> int:
    return _answer(
        config,
        answers.candidates,
        lambda: _gang_body(
            schemas.GangQuery(),
            args.file,
            scorer=args.scorer,
            limit=args.limit,
            budget_ms=args.budget_ms,
        ),
    )


def _explain(config: Config, args: argparse.Namespace) -> int:
    return _answer(
        config,
        answers.explain,
        lambda: _gang_body(schemas.GangQuery(), args.file, budget_ms=args.budget_ms),
    )


def _claim(config: Config, args: argparse.Namespace) -> int:
    def body() -> dict:
        document = read_document(args.file)
        if not isinstance(document, dict):
            raise errors.BadRequest(f"{args.file}: expected a gang request.")
        consumers = args.consumers
        if consumers is None and "consumer_uuids" not in document:
            consumers = [str(uuid.uuid4()) for _ in range(_members_given(document))]
        options = {
            "gang_uuid": args.gang or document.get("gang_uuid") or str(uuid.uuid4()),
            "consumer_uuids": consumers,
            "project_id": args.project,
            "user_id": args.user,
            "consumer_type": args.consumer_type,
            "scorer": args.scorer,
            "budget_ms": args.budget_ms,
        }
        return checked_arguments(schemas.GangClaim(), **{**document, **_given(options)})

    return _answer(config, answers.claim, body)


def _answer(config: Config, answer, body) -> int:
    """``answer`` to the command's ``body()`` (checked as over HTTP), within its budget."""

    def work(conn, naming):
        data = body()
        budget = search_budget(config, data)
        return with_cut(answer(_gang_search(), conn, data, naming, budget), budget)

    return run_in_transaction(config, work)


def _members_given(document: dict) -> int:
    """How many members the file asks for, before it is checked (0: none it can say)."""
    try:
        members = members_of(document)
    except (KeyError, TypeError):
        return 0
    return members if 0 < members <= schemas.MAX_MEMBERS else 0


def _show_gang(config: Config, args: argparse.Namespace) -> int:
    return run_in_transaction(
        config, lambda conn, naming: _gang_search().show(conn, args.gang_uuid)
    )


def _release_gang(config: Config, args: argparse.Namespace) -> int:
    return run_in_transaction(
        config, lambda conn, naming: _gang_search().release(conn, args.gang_uuid)
    )
