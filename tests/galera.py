"""A throwaway three-node MariaDB Galera cluster on loopback, for the Galera test.

Built on ``tests.mysqlserver`` (Debian's ``mariadbd``, run as the ``mysql`` user when
root, ``--no-defaults``) with Debian's ``galera-4`` provider and ``rsync`` for state
transfers. Every node has its own folder, data directory, client port and Galera
ports (group communication, incremental state transfer, rsync state transfer), all
on 127.0.0.1 and all chosen free at start, so two runs on one machine never meet.

Node 1 bootstraps the cluster (``--wsrep-new-cluster``) on an initialized data
directory; nodes 2 and 3 start on copies of it and join (``_seed_data_directories``).
``kill`` stops a node as a crash would (SIGKILL); ``restart`` starts it again on its
data directory, and it rejoins by incremental transfer (IST) or a full one (SST).
The failure detector's timeouts are shortened, as a loopback cluster can afford, so
that the survivors declare a killed node gone within seconds. ``Balancer`` is a
round-robin TCP proxy in front of the nodes that skips those not synced, as HAProxy
with Galera's health check is in front of a cloud's cluster.

Every wait is bounded (``START_TIMEOUT_S``, ``SYNC_TIMEOUT_S``); a node that fails to
start raises ``mysqlserver.MysqlUnavailable`` with its error log's tail.
"""

import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass

from tests import mysqlserver
from tests.ports import distinct_free_ports

PROVIDER = "/usr/lib/galera/libgalera_smm.so"
NODES = 3
SYNC_TIMEOUT_S = 60
COMMAND_TIMEOUT_S = 60
RECOVERED = re.compile(r"WSREP: Recovered position: ([0-9a-f-]{36}:-?[0-9]+)")
# Failure detection: keepalive <= check period <= suspect <= inactive (galera's rule).
# Shorter than Galera's defaults (5 s and 15 s), long enough that a node slowed by a
# busy machine is not taken for dead.
FAILURE_DETECTION = (
    "evs.keepalive_period=PT0.5S;evs.inactive_check_period=PT0.5S;"
    "evs.suspect_timeout=PT3S;evs.inactive_timeout=PT5S;evs.install_timeout=PT5S"
)
# What every node runs with, besides its own addresses: Galera's required settings
# (row-based binary log, interleaved auto-increment locks), rsync state transfers,
# and a small buffer pool and write-set cache (three servers share the machine).
COMMON_OPTIONS = (
    "--wsrep-on=ON",
    f"--wsrep-provider={PROVIDER}",
    "--wsrep-cluster-name=placement-test",
    "--wsrep-sst-method=rsync",
    "--binlog-format=ROW",
    "--innodb-autoinc-lock-mode=2",
    "--default-storage-engine=InnoDB",
    "--innodb-buffer-pool-size=64M",
    "--wsrep-slave-threads=2",
)


class GaleraUnavailable(mysqlserver.MysqlUnavailable):
    """The cluster could not be started or did not come together in time."""


@dataclass
class Node:
    """One node: its folder, ports, and the server while it runs."""

    index: int  # 1, 2 or 3
    base: str
    datadir: str
    port: int
    gcomm_port: int
    ist_port: int
    sst_port: int
    server: mysqlserver.Server | None = None

    def options(self, peers: str, bootstrap: bool) -> list[str]:
        provider_options = (
            f"base_host=127.0.0.1;base_port={self.gcomm_port};"
            f"gmcast.listen_addr=tcp://127.0.0.1:{self.gcomm_port};"
            f"ist.recv_addr=127.0.0.1:{self.ist_port};gcache.size=32M;{FAILURE_DETECTION}"
        )
        options = [
            *COMMON_OPTIONS,
            f"--wsrep-node-name=node{self.index}",
            "--wsrep-node-address=127.0.0.1",
            f"--wsrep-node-incoming-address=127.0.0.1:{self.port}",
            f"--wsrep-sst-receive-address=127.0.0.1:{self.sst_port}",
            f"--wsrep-cluster-address={peers}",
            f"--wsrep-provider-options={provider_options}",
        ]
        if bootstrap:
            options.append("--wsrep-new-cluster")
        return options

    @property
    def running(self) -> bool:
        return self.server is not None and self.server.process.poll() is None


class Cluster:
    """Three nodes on loopback. ``url(i)`` is node i's URL for ``database``."""

    def __init__(self, root: str, nodes: list[Node], database: str) -> None:
        self.root = root
        self.nodes = nodes
        self.database = database

    @property
    def peers(self) -> str:
        return "gcomm://" + ",".join(f"127.0.0.1:{n.gcomm_port}" for n in self.nodes)

    def node(self, index: int) -> Node:
        return self.nodes[index - 1]

    def url(self, index: int, database: str | None = None) -> str:
        name = self.database if database is None else database
        return f"mysql+pymysql://root@127.0.0.1:{self.node(index).port}/{name}?charset=utf8mb4"

    # -- starting and stopping -------------------------------------------------------

    @classmethod
    def start(cls, database: str = "placement") -> "Cluster":
        """Bootstrap node 1, join nodes 2 and 3, wait until all three are synced, and
        create ``database`` through node 1 (it replicates)."""
        if not os.path.exists(PROVIDER):
            raise GaleraUnavailable(f"no Galera provider at {PROVIDER} (package galera-4)")
        if shutil.which("rsync") is None:
            raise GaleraUnavailable("no rsync for state transfers (package rsync)")
        root = tempfile.mkdtemp(prefix="placement-galera-")
        os.chmod(root, 0o755)
        ports = distinct_free_ports(4 * NODES)
        nodes = []
        for index in range(1, NODES + 1):
            base = os.path.join(root, f"node{index}")
            os.mkdir(base, 0o755)
            port, gcomm, ist, sst = ports[4 * (index - 1) : 4 * index]
            nodes.append(Node(index, base, os.path.join(base, "data"), port, gcomm, ist, sst))
        cluster = cls(root, nodes, database)
        try:
            cluster._seed_data_directories()
            # One joiner at a time: a second one would wait for a free donor.
            for node in nodes:
                cluster._launch(node, bootstrap=node is nodes[0])
            cluster.wait_synced(NODES)
            _execute(nodes[0].port, f"CREATE DATABASE `{database}`")
            cluster.wait_database(database)
        except BaseException:
            cluster.stop()
            raise
        return cluster

    def _seed_data_directories(self) -> None:
        """Give every node the same data directory, of the same cluster, so that the
        joiners receive only the few write sets since (an incremental transfer,
        IST), not the whole directory (an rsync SST, seconds more each): node 1
        bootstraps a cluster on a fresh one and stops cleanly, which records the
        cluster's id and position in it (grastate.dat), and nodes 2 and 3 start on
        copies (``cp -a`` keeps the ``mysql`` user's ownership)."""
        first = self.nodes[0]
        mysqlserver.initialize(first.base)
        self._launch(first, bootstrap=True)
        assert first.server is not None
        first.server.stop(remove=False)
        for node in self.nodes[1:]:
            _owned_by_server_user(node.base)
            copy = subprocess.run(
                ["cp", "-a", first.datadir, node.datadir],
                capture_output=True,
                text=True,
                timeout=COMMAND_TIMEOUT_S,
            )
            if copy.returncode != 0:
                raise GaleraUnavailable(f"cannot copy node 1's data directory: {copy.stderr}")

    def _launch(self, node: Node, bootstrap: bool) -> None:
        # A joiner's SST must finish before it opens its port: launch's wait covers it.
        node.server = mysqlserver.launch(
            node.base, node.datadir, node.port, node.options(self.peers, bootstrap)
        )

    def kill(self, index: int) -> None:
        """SIGKILL node ``index`` (its data directory stays)."""
        node = self.node(index)
        if node.server is not None:
            node.server.kill()

    def restart(self, index: int) -> None:
        """Start a stopped node again on its data directory; it rejoins the cluster.
        As Debian's service does after a crash (``galera_recovery``), the node's last
        committed position is first read from InnoDB (``--wsrep-recover``) and given
        to it (``--wsrep-start-position``): a killed node's grastate.dat does not
        know it, and without it the node would need a full state transfer, which
        blocks its donor, instead of the missed write sets (IST). Returns once the node
        accepts connections (``wait_synced`` waits for it to be synced)."""
        node = self.node(index)
        if node.running:
            raise GaleraUnavailable(f"node {index} is still running")
        options = node.options(self.peers, bootstrap=False)
        position = _recovered_position(node, self.peers)
        if position is not None:
            options.append(f"--wsrep-start-position={position}")
        node.server = mysqlserver.launch(node.base, node.datadir, node.port, options)

    def stop(self) -> None:
        """Stop every node and remove the cluster's folder."""
        for node in self.nodes:
            if node.server is not None and node.server.process.poll() is None:
                node.server.process.terminate()
        for node in self.nodes:
            if node.server is not None:
                node.server.stop(remove=False)
        shutil.rmtree(self.root, ignore_errors=True)

    # -- state -----------------------------------------------------------------------

    def status(self, index: int) -> dict[str, str]:
        """Node ``index``'s ``wsrep_%`` status variables."""
        rows = _execute(self.node(index).port, "SHOW GLOBAL STATUS LIKE 'wsrep\\_%'")
        return {name: str(value) for name, value in rows}

    def synced(self, index: int, size: int | None = None) -> bool:
        """Whether node ``index`` is up, synced, in the primary component (of ``size``
        nodes, if given): what a proxy's health check (clustercheck) asks."""
        if not self.node(index).running:
            return False
        try:
            status = self.status(index)
        except Exception:  # noqa: BLE001 - any failure means "not yet"
            return False
        return (
            status.get("wsrep_ready") == "ON"
            and status.get("wsrep_cluster_status") == "Primary"
            and status.get("wsrep_local_state_comment") == "Synced"
            and (size is None or status.get("wsrep_cluster_size") == str(size))
        )

    def wait_synced(self, size: int, timeout: float = SYNC_TIMEOUT_S) -> None:
        """Wait until every running node is synced in a primary cluster of ``size``."""
        deadline = time.monotonic() + timeout
        while True:
            running = [n.index for n in self.nodes if n.running]
            if len(running) == size and all(self.synced(i, size) for i in running):
                return
            if time.monotonic() > deadline:
                states = {i: self._summary(i) for i in running}
                raise GaleraUnavailable(
                    f"cluster not synced at size {size} within {timeout:.0f} s: {states}"
                    f"\n{self.log_tails()}"
                )
            time.sleep(0.2)

    def wait_database(self, database: str, timeout: float = SYNC_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout
        for node in self.nodes:
            while not _execute(node.port, f"SHOW DATABASES LIKE '{database}'"):
                if time.monotonic() > deadline:
                    raise GaleraUnavailable(f"{database} not on node {node.index}")
                time.sleep(0.1)

    def _summary(self, index: int) -> str:
        try:
            status = self.status(index)
        except Exception as exc:  # noqa: BLE001 - shown in the error only
            return f"unreachable ({exc})"
        keys = (
            "wsrep_ready",
            "wsrep_cluster_status",
            "wsrep_local_state_comment",
            "wsrep_cluster_size",
        )
        return " ".join(status.get(k, "?") for k in keys)

    def log_tails(self, chars: int = 1500) -> str:
        parts = []
        for node in self.nodes:
            try:
                with open(os.path.join(node.base, "error.log")) as log:
                    parts.append(f"--- node {node.index} ---\n{log.read()[-chars:]}")
            except OSError:
                parts.append(f"--- node {node.index}: no log ---")
        return "\n".join(parts)


def _recovered_position(node: Node, peers: str) -> str | None:
    """The position (``uuid:seqno``) of the last transaction node's InnoDB committed,
    or None when it cannot be told."""
    binary = mysqlserver.server_binary()
    if binary is None:
        raise GaleraUnavailable("no mariadbd found")
    log_path = os.path.join(node.base, "recover.log")
    command = [
        binary,
        "--no-defaults",
        f"--datadir={node.datadir}",
        "--wsrep-recover",
        "--skip-networking",
        f"--socket={os.path.join(node.base, 'recover.sock')}",
        f"--pid-file={os.path.join(node.base, 'recover.pid')}",
        f"--log-error={log_path}",
        # Its options as it runs (rsync transfers want the cluster's address even here).
        *node.options(peers, bootstrap=False),
    ]
    if os.geteuid() == 0:
        command.append("--user=mysql")
    try:
        subprocess.run(command, capture_output=True, timeout=COMMAND_TIMEOUT_S)
        with open(log_path) as log:
            found = RECOVERED.findall(log.read())
    except (OSError, subprocess.TimeoutExpired):
        return None
    return found[-1] if found else None


def _execute(port: int, statement: str) -> tuple:
    import pymysql

    connection = pymysql.connect(
        host="127.0.0.1",
        port=port,
        user="root",
        connect_timeout=5,
        read_timeout=30,
        autocommit=True,
    )
    try:
        with connection.cursor() as cursor:
            cursor.execute(statement)
            return cursor.fetchall()
    finally:
        connection.close()


def _owned_by_server_user(path: str) -> None:
    """As root the nodes run as ``mysql``: their folders (where the rsync SST script,
    run by the server, writes) must be its."""
    if os.geteuid() != 0:
        return
    account = pwd.getpwnam("mysql")
    os.chown(path, account.pw_uid, account.pw_gid)


class Balancer:
    """A TCP balancer on loopback in front of the cluster, as HAProxy with Galera's
    health check is in a cloud: each new connection goes to the next node, in turn,
    that is synced (a node down or joining is skipped), and stays there until either
    side closes it. ``drop`` closes every connection, as a proxy's restart or
    failover does: the clients reconnect, to other nodes."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.connections: Counter = Counter()  # node index -> connections made to it
        self._pairs: set[tuple[socket.socket, socket.socket]] = set()
        self._lock = threading.Lock()
        self._turn = 0
        self._closed = threading.Event()
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(128)
        self._listener.settimeout(0.2)
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, database: str | None = None) -> str:
        name = self.cluster.database if database is None else database
        return f"mysql+pymysql://root@127.0.0.1:{self.port}/{name}?charset=utf8mb4"

    def drop(self) -> None:
        with self._lock:
            pairs = list(self._pairs)
        for pair in pairs:
            self._close(pair)

    def stop(self) -> None:
        self._closed.set()
        self._listener.close()
        self.drop()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _address = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            client.settimeout(None)
            backend = self._backend()
            if backend is None:
                client.close()
                continue
            pair = (client, backend)
            with self._lock:
                self._pairs.add(pair)
            for source, target in (pair, pair[::-1]):
                threading.Thread(
                    target=self._pump, args=(source, target, pair), daemon=True
                ).start()

    def _backend(self) -> socket.socket | None:
        for _ in range(NODES):
            self._turn = self._turn % NODES + 1
            if not self.cluster.synced(self._turn):
                continue
            try:
                backend = socket.create_connection(
                    ("127.0.0.1", self.cluster.node(self._turn).port), timeout=5
                )
            except OSError:
                continue
            backend.settimeout(None)
            self.connections[self._turn] += 1
            return backend
        return None

    def _pump(self, source: socket.socket, target: socket.socket, pair) -> None:
        try:
            while data := source.recv(65536):
                target.sendall(data)
        except OSError:
            pass
        finally:
            self._close(pair)

    def _close(self, pair: tuple[socket.socket, socket.socket]) -> None:
        with self._lock:
            self._pairs.discard(pair)
        for sock in pair:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
