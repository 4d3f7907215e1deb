"""``placement devices ...``: device nodes, candidates and claims for admin scripts.

Like ``placement group-resources``, the commands talk to the configured
database in one transaction each and print JSON. Requests are read from a
YAML or JSON file: a Pod manifest as Kubernetes holds it (``kind: Pod``), or
``resources`` with optional ``annotations``; ``-`` reads it from standard input.

Each command is a process of its own, so each builds its own ``DeviceSearch``
(nothing kept is worth keeping for one request).

``--gpu-memory`` takes binary units only (``80Gi``, ``81920Mi``): ``80GB`` or
``80G`` is decimal (80 * 10**9 bytes, 76293 MiB), rarely what a GPU's
datasheet means, so the command refuses it rather than guess.
"""

import argparse

from placement import errors
from placement.cli.common import (
    add_request_command,
    checked_arguments,
    claim_fields,
    read_document,
    read_text,
    run_in_transaction,
    search_budget,
    with_cut,
)
from placement.config import Config
from placement.data.consumers import INCOMPLETE_CONSUMER_ID
from placement.devices import bodies, checkpoints, importing
from placement.devices.request import DeviceRequest, parse_device_request, parse_pod
from placement.devices.service import DeviceSearch
from placement.replica.replica import Replica
from placement.schemas import devices as schemas


def add_commands(commands) -> None:
    """Register the ``devices`` subcommands on the ``placement`` parser."""
    parser = commands.add_parser(
        "devices", help="device topologies (nvidia-smi topo -m), device candidates and claims"
    )
    sub = parser.add_subparsers(title="devices commands")

    load = sub.add_parser("import", help="make a node's provider tree match its topology")
    load.add_argument("node", help="the node's name (its root provider's name)")
    load.add_argument(
        "file",
        help="YAML or JSON import body (a device list, or 'matrix' with 'gpu'), or with "
        "--gpu-memory the text of nvidia-smi topo -m; - for stdin",
    )
    load.add_argument(
        "--gpu-memory",
        help="each GPU's memory in binary units: 80Gi (80 GiB = 81920 MiB) or 81920Mi; decimal "
        "units (80GB, 80G) are refused. FILE is then a matrix",
    )
    load.add_argument("--rdma-vfs", type=int, help="SR-IOV VFs per NIC, with --gpu-memory")
    load.add_argument("--uuid", help="uuid for the node's root provider when it is created")
    load.set_defaults(run=_import)

    show = sub.add_parser("show", help="print a device node with inventories and usage")
    show.add_argument("node")
    show.set_defaults(run=_show)

    delete = sub.add_parser("delete", help="delete a device node without allocations")
    delete.add_argument("node")
    delete.set_defaults(run=_delete)

    hold = sub.add_parser(
        "checkpoints", help="hold the devices kubelet gave pods (its checkpoint); release the rest"
    )
    hold.add_argument("node")
    hold.add_argument(
        "file",
        help="YAML or JSON: the checkpoint entries (podUID, containerName, resourceName, "
        "deviceIDs) as a list, or the PUT body with 'checkpoints'; - for stdin",
    )
    hold.add_argument("--project", help="project of the pods' consumers (default: unknown)")
    hold.add_argument("--user", help="user of the pods' consumers (default: unknown)")
    hold.set_defaults(run=_checkpoints)

    for name, run, text in (
        ("candidates", _candidates, "the best devices per node, best node first"),
        ("claim", _claim, "allocate the best devices to a new consumer"),
    ):
        add_request_command(
            sub,
            name,
            run,
            text,
            "YAML or JSON Pod manifest, or resources+annotations; - for stdin",
        )


SAMPLE_MATRIX = "tests/data/topologies/dgx_a100.txt"


def gpu_memory(value: str) -> str:
    """``--gpu-memory`` as given, once it is sure to be in binary units (see the docstring)."""
    importing.refuse_decimal_memory(value, "--gpu-memory")
    return value


def _matrix_text(path: str) -> str:
    text = read_text(path)
    if not text.strip():
        source = "standard input" if path == "-" else path
        raise errors.BadRequest(
            f"{source} is empty: the matrix is what 'nvidia-smi topo -m' prints on the GPU node "
            f"(a machine without a GPU prints nothing). {SAMPLE_MATRIX} is a sample."
        )
    return text


def _import(config: Config, args: argparse.Namespace) -> int:
    def work(conn, naming):
        if args.gpu_memory is not None:
            document: dict = {
                "matrix": _matrix_text(args.file),
                "gpu": {"memory": gpu_memory(args.gpu_memory)},
            }
            if args.rdma_vfs is not None:
                document["rdma"] = {"vfs": args.rdma_vfs}
        elif args.rdma_vfs is not None:
            raise errors.BadRequest("--rdma-vfs goes with --gpu-memory (a matrix file).")
        else:
            document = read_document(args.file)
        body = checked_arguments(schemas.ImportNode(), **document, uuid=args.uuid)
        topology = importing.topology_from_body(body)
        result = importing.import_node(conn, args.node, topology, naming, body.get("uuid"))
        view = DeviceSearch(Replica()).node_view(conn, naming, args.node)
        return {**view, "changed": result.changed}

    return run_in_transaction(config, work)


def _show(config: Config, args: argparse.Namespace) -> int:
    search = DeviceSearch(Replica())
    return run_in_transaction(
        config, lambda conn, naming: search.node_view(conn, naming, args.node)
    )


def _delete(config: Config, args: argparse.Namespace) -> int:
    return run_in_transaction(config, lambda conn, naming: importing.delete_node(conn, args.node))


def _checkpoints(config: Config, args: argparse.Namespace) -> int:
    def work(conn, naming):
        document = read_document(args.file)
        if isinstance(document, dict) and "checkpoints" in document:
            document = document["checkpoints"]
        body = checked_arguments(
            schemas.ImportCheckpoints(),
            checkpoints=document,
            project_id=args.project,
            user_id=args.user,
        )
        result = DeviceSearch(Replica()).hold_checkpoints(
            conn,
            naming,
            args.node,
            checkpoints.checkpoints_from_body(body["checkpoints"]),
            project_id=body.get("project_id", INCOMPLETE_CONSUMER_ID),
            user_id=body.get("user_id", INCOMPLETE_CONSUMER_ID),
        )
        return bodies.checkpoints_body(result)

    return run_in_transaction(config, work)


def _request_fields(path: str) -> dict:
    document = read_document(path)
    if isinstance(document, dict) and (document.get("kind") == "Pod" or "spec" in document):
        return {"pod": document}
    if not isinstance(document, dict):
        raise errors.BadRequest(f"{path}: expected a Pod manifest or 'resources'.")
    return {key: document[key] for key in ("resources", "annotations") if key in document}


def _request(body: dict, naming) -> DeviceRequest:
    if "pod" in body:
        return parse_pod(body["pod"], naming)
    return parse_device_request(body["resources"], body.get("annotations", {}), naming)


def _candidates(config: Config, args: argparse.Namespace) -> int:
    def work(conn, naming):
        body = checked_arguments(
            schemas.DeviceQuery(),
            **_request_fields(args.file),
            scorer=args.scorer,
            limit=args.limit,
            nodes=args.nodes,
            budget_ms=args.budget_ms,
        )
        request = _request(body, naming)
        budget = search_budget(config, body)
        answer = DeviceSearch(Replica()).find_candidates(
            conn,
            request,
            naming,
            scorer=body["scorer"],
            limit=body.get("limit"),
            node_names=body.get("nodes"),
            budget=budget,
        )
        return with_cut(bodies.candidates_body(answer, request), budget)

    return run_in_transaction(config, work)


def _claim(config: Config, args: argparse.Namespace) -> int:
    def work(conn, naming):
        body = checked_arguments(
            schemas.DeviceClaim(),
            **_request_fields(args.file),
            **claim_fields(args),
            budget_ms=args.budget_ms,
        )
        request = _request(body, naming)
        budget = search_budget(config, body)
        candidate = DeviceSearch(Replica()).claim(
            conn,
            request,
            naming,
            consumer_uuid=body["consumer_uuid"],
            project_id=body["project_id"],
            user_id=body["user_id"],
            consumer_type=body.get("consumer_type"),
            scorer=body["scorer"],
            node_names=body.get("nodes"),
            budget=budget,
        )
        claimed = bodies.candidate_body(candidate, request)
        return with_cut({"consumer_uuid": body["consumer_uuid"], **claimed}, budget)

    return run_in_transaction(config, work)
