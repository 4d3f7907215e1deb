"""What the views need from the application: built once by ``create_app``, owned by it.

The state a process keeps between requests hangs off this object, never off a
module: the copy of the providers every search reads (``replica``), and what
each search keeps beside it, and the metrics they all count in
(``observability.metrics``). A test that wants a fresh
process's behaviour builds a new application or asks the copy to forget
(``Replica.forget``).
"""

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError

from placement import auth
from placement.candidates.service import CandidateSearch
from placement.config import Config
from placement.db.snapshots import reading_one_snapshot
from placement.devices.service import DeviceSearch
from placement.gangs.service import GangSearch
from placement.group_resources.service import GroupResourceSearch
from placement.k8s.extender import SchedulerExtender
from placement.policy import Policy
from placement.replica.replica import Replica

if TYPE_CHECKING:
    from placement.observability.metrics import Metrics


@dataclass(frozen=True)
class Services:
    """``serving_lock``: the views of one application (one process) run one at a time,
    each once its request's body is read in full (``routes``). Under a threaded
    server, threads then only wait on slow clients, never on each other's work: the
    per-process copies the searches keep see their requests' snapshots in order, as
    under one-thread workers, and a client slow to send its body holds nothing but
    its own thread."""

    config: Config
    engine: Engine
    authenticator: auth.NoAuth2 | auth.KeystoneAuth | auth.TokenAuth
    policy: Policy
    replica: Replica
    candidates: CandidateSearch
    group_resources: GroupResourceSearch
    devices: DeviceSearch
    metrics: "Metrics"
    gangs: GangSearch  # gangs of device requests in one network domain, on ``devices``
    k8s: SchedulerExtender  # kube-scheduler's extender verbs, on ``devices`` and ``gangs``
    serving_lock: threading.Lock = field(default_factory=threading.Lock)

    def check_ready(self) -> dict:
        """Whether this process can serve now, for a readiness probe: in its turn, the
        database answers and the copy of the providers is brought up to date from it.
        The database's error when it cannot (the API's 503). It writes nothing: when its
        pooled connection turns out to be lost, it runs once more on a new one, as a
        request does (``placement.endpoints``)."""
        with self.serving_lock:
            return self._once_more_on_a_lost_connection(self._bring_the_copy_up_to_date)

    def prepare_to_fork(self) -> dict:
        """In the process that forks the workers with this application loaded in it
        (gunicorn's arbiter with ``preload_app``), before each fork: the copy brought up
        to date (read whole the first time, again whole when the change log was pruned
        past it), every device and translator node built from it (``DeviceSearch`` and
        ``GroupResourceSearch`` keep them) and every tree's provider summaries and every
        provider's uuid written (``CandidateSearch``), so that the new worker starts
        from them, nearly current, and shares their memory; then this process's
        connections closed, whatever happened, so that no worker inherits one (two
        processes on one connection mix their conversations; an open SQLite file must
        not cross a fork). What the copy holds, as ``check_ready``, how many nodes of
        each kind and bytes of text; nothing is counted in the metrics (this process
        serves no request)."""
        try:
            with self.replica.unrecorded():
                return self._once_more_on_a_lost_connection(self._build_for_the_workers)
        finally:
            self.engine.dispose()

    @staticmethod
    def _once_more_on_a_lost_connection(read: Callable[[], dict]) -> dict:
        try:
            return read()
        except DBAPIError as exc:
            if not exc.connection_invalidated:
                raise
        return read()

    def _bring_the_copy_up_to_date(self) -> dict:
        with self.engine.connect() as conn:
            conn = reading_one_snapshot(conn)
            with conn.begin(), self.replica.current(conn) as world:
                return {"providers": len(world.providers)}

    def _build_for_the_workers(self) -> dict:
        with self.engine.connect() as conn:
            conn = reading_one_snapshot(conn)
            with conn.begin():
                nodes = self.devices.read_device_nodes(conn, self.config.group_naming())
                return {
                    "providers": len(self.replica.world.providers),
                    "device nodes": nodes.count,
                    "translator nodes": self.group_resources.build_nodes(conn),
                    "text bytes": self.candidates.write_for_the_workers(conn),
                }

    @classmethod
    def build(cls, config: Config, engine: Engine) -> "Services":
        # Imported here, not above: prometheus-client decides at its import whether the
        # workers share their values (see observability.metrics), and ``placement serve``
        # imports this module before it sets the variable that decides.
        from placement.observability.metrics import Metrics

        metrics = Metrics(engine)
        replica = Replica(recorder=metrics)
        devices = DeviceSearch(replica, metrics)
        gangs = GangSearch(devices, metrics)
        return cls(
            config,
            engine,
            _authenticator(config),
            Policy(config.policy_file, config.enforce_new_defaults),
            replica,
            CandidateSearch(config, replica, metrics),
            GroupResourceSearch(replica, metrics),
            devices,
            metrics,
            gangs,
            SchedulerExtender(config, devices, gangs),
        )


def _authenticator(config: Config) -> auth.NoAuth2 | auth.KeystoneAuth | auth.TokenAuth:
    if config.auth_strategy == "keystone":
        return auth.KeystoneAuth()
    if config.auth_strategy == "token":
        assert config.tokens_file is not None  # enforced by Config
        return auth.TokenAuth.from_file(config.tokens_file)
    return auth.NoAuth2()
