"""``placement k8s ...``: keeping the device nodes and the pods' allocations in step with a
Kubernetes cluster, through its API (``[k8s] kubeconfig``, or in-cluster).

- ``reconcile``: import every Koordinator ``Device`` object as its node, hold its
  checkpoint, release the devices of pods that are gone or finished, and release the
  pod groups' reserved members past ``[k8s] gang_reservation_timeout``; once, or
  every ``--interval`` seconds until interrupted.
- ``device FILE``: one ``Device`` object from a file (no cluster needed).
- ``release POD_UID...``: release what pods hold (as ``DELETE /allocations/{uid}``).
"""

import argparse
import json
import logging
import time

from placement.cli.common import read_document, run_in_transaction, run_with_database
from placement.config import Config
from placement.devices.service import DeviceSearch
from placement.gangs.service import GangSearch
from placement.k8s import reconcile
from placement.k8s.koordinator_devices import read_device_object
from placement.k8s.pod_groups import PodGroups
from placement.replica.replica import Replica

LOG = logging.getLogger(__name__)


def add_commands(commands) -> None:
    """Register the ``k8s`` subcommands on the ``placement`` parser."""
    parser = commands.add_parser(
        "k8s", help="Kubernetes: reconcile pods' devices, Koordinator Device objects"
    )
    sub = parser.add_subparsers(title="k8s commands")

    again = sub.add_parser(
        "reconcile",
        help="import the cluster's Device objects, release the devices of pods gone or "
        "finished and pod groups' reservations past their time",
    )
    again.add_argument(
        "--interval",
        type=float,
        help="run again every INTERVAL seconds until interrupted (default: once)",
    )
    again.add_argument(
        "--no-devices",
        action="store_true",
        help="leave Device objects alone: only release pods' devices",
    )
    again.set_defaults(run=_reconcile)

    device = sub.add_parser("device", help="import a Koordinator Device object (YAML or JSON)")
    device.add_argument("file", help="the Device object; - for stdin")
    device.set_defaults(run=_device)

    release = sub.add_parser("release", help="release what pods hold, by pod uid")
    release.add_argument("pod_uids", nargs="+", metavar="POD_UID")
    release.set_defaults(run=_release)


def _reconcile(config: Config, args: argparse.Namespace) -> int:
    search = DeviceSearch(Replica())
    pod_groups = PodGroups(config, GangSearch(search))

    def once(transaction):
        from placement.k8s.cluster import Cluster  # the client loads slowly: when used

        cluster = Cluster.configured(config.k8s_kubeconfig, config.k8s_api_timeout_seconds)
        return reconcile.reconcile(
            transaction,
            cluster,
            search,
            config.group_naming(),
            devices_too=not args.no_devices,
            pod_groups=pod_groups,
        ).body()

    if args.interval is None:
        return run_with_database(config, once)
    while True:
        status = run_with_database(config, lambda transaction: _logged(once(transaction)))
        if status == 2:
            return status
        time.sleep(args.interval)


def _logged(result: dict) -> None:
    LOG.info("Reconciled with the cluster: %s", json.dumps(result))


def _device(config: Config, args: argparse.Namespace) -> int:
    def work(conn, naming):
        device = read_device_object(read_document(args.file))
        return reconcile.apply_device_object(conn, DeviceSearch(Replica()), naming, device)

    return run_in_transaction(config, work)


def _release(config: Config, args: argparse.Namespace) -> int:
    uids = [uid.lower() for uid in args.pod_uids]
    return run_in_transaction(
        config, lambda conn, naming: {"released": reconcile.release_pods(conn, uids)}
    )
