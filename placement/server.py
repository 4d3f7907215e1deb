"""How ``placement serve`` runs the application under gunicorn, so that slow clients
cannot stop it.

A sync gunicorn worker reads a request, runs it and writes the answer in its one
thread: four clients that open a connection and send nothing (or half a request)
hold every worker until gunicorn kills it. So the workers are threaded (gunicorn's
``gthread``): a connection that sends nothing waits in the worker's poller and costs
no thread, and one that sends slowly holds one of ``threads`` threads, never the
worker. The application still runs one request at a time per process (its
``serving_lock``, taken once the body is read: see ``placement.app``), as under sync
workers, so its per-worker copies and caches see requests in order.

With ``[placement] preload_providers`` (the default) the application is built in
gunicorn's arbiter, which reads the copy of the providers before it forks each worker:
one copy per host, shared by the workers (``placement.worker_hooks``).

``ThreadWorker`` adds the timeout gunicorn's threaded worker lacks: a client
silent for ``client_timeout_seconds`` while it sends its request or reads the
answer is treated as gone and its connection closed, so that a trickle of bytes
holds a thread for a bounded time. (TLS connections keep gunicorn's behaviour; put
TLS in the reverse proxy, which the README recommends in front of the service.)
"""

import contextlib
import errno
import os
import selectors
import shutil
import socket
import tempfile
import time
from collections.abc import Iterator, MutableMapping
from functools import partial
from typing import Any

from gunicorn.workers.gthread import TConn
from gunicorn.workers.gthread import ThreadWorker as GunicornThreadWorker

from placement import worker_hooks
from placement.config import Config
from placement.observability import MULTIPROCESS_DIRECTORY

WORKER_CLASS = "placement.server.ThreadWorker"


def worker_settings(config: Config) -> dict[str, Any]:
    """gunicorn's settings for the workers of ``config`` (``placement serve`` and the
    benchmarks' launcher use these)."""
    return {"workers": config.workers, "worker_class": WORKER_CLASS, "threads": config.threads}


def worker_arguments(config: Config) -> list[str]:
    """``worker_settings`` as gunicorn's command-line options."""
    arguments = []
    for name, value in worker_settings(config).items():
        arguments += [f"--{name.replace('_', '-')}", str(value)]
    return arguments


def serve(config: Config) -> None:
    """Run gunicorn in this process until it is stopped."""
    from gunicorn.app.base import BaseApplication

    from placement.app import create_app, freeze_startup_objects

    class PlacementServer(BaseApplication):
        def load_config(self) -> None:
            self.cfg.set("bind", f"{config.bind_host}:{config.bind_port}")
            for name, value in worker_settings(config).items():
                self.cfg.set(name, value)
            # No access log: the application logs one line per request itself
            # (observability.request_log), with what gunicorn's lacks (request ids, route,
            # user, project) and in the configured format. What never reaches the
            # application (a malformed request, a client timed out) is in the error log.
            self.cfg.set("accesslog", None)
            self.cfg.set("loglevel", config.log_level.lower())
            self.cfg.set("preload_app", config.preload_providers)
            for hook in ("pre_fork", "child_exit"):
                self.cfg.set(hook, getattr(worker_hooks, hook))

        def load(self):
            application = create_app(config)
            freeze_startup_objects()
            return application

    with shared_metrics(config, os.environ):
        PlacementServer().run()


@contextlib.contextmanager
def shared_metrics(config: Config, environ: MutableMapping[str, str]) -> Iterator[str | None]:
    """With several workers, a fresh folder for their metrics (``PROMETHEUS_MULTIPROC_DIR``,
    removed afterwards) unless the environment names one; yields the folder in use. Set
    before the workers build their applications: prometheus-client reads it at import."""
    given = environ.get(MULTIPROCESS_DIRECTORY)
    if given or config.workers < 2:
        yield given or None
        return
    folder = tempfile.mkdtemp(prefix="placement-metrics-")
    environ[MULTIPROCESS_DIRECTORY] = folder
    try:
        yield folder
    finally:
        del environ[MULTIPROCESS_DIRECTORY]
        shutil.rmtree(folder, ignore_errors=True)


class ClientSocket(socket.socket):
    """A client's connection whose blocking reads and writes give up after
    ``client_timeout`` seconds without progress. A read that times out is an end of
    stream (gunicorn then drops the connection as a client that went away); a write
    that times out is a broken pipe (likewise, without a traceback in the log)."""

    client_timeout: float | None = None

    @classmethod
    def adopt(cls, sock: socket.socket, timeout: float) -> "ClientSocket":
        adopted = cls(sock.family, sock.type, sock.proto, fileno=sock.detach())
        adopted.client_timeout = timeout
        return adopted

    def setblocking(self, flag: bool) -> None:
        # gunicorn makes the socket blocking before every read of a request.
        if flag:
            self.settimeout(self.client_timeout)
        else:
            super().setblocking(False)

    def recv(self, bufsize: int, flags: int = 0) -> bytes:
        try:
            return super().recv(bufsize, flags)
        except TimeoutError:
            return b""

    def sendall(self, data, flags: int = 0) -> None:  # type: ignore[override]
        # One send at a time, each given the timeout: the socket's own sendall counts it
        # over the whole answer, and a client reading a large one (tens of MiB of
        # candidates) slower than that was cut off while it still read.
        left = memoryview(data).cast("B")
        while left:
            try:
                sent = self.send(left, flags)
            except TimeoutError:
                raise BrokenPipeError(errno.EPIPE, "the client stopped reading") from None
            left = left[sent:]


class ThreadWorker(GunicornThreadWorker):
    """gunicorn's threaded worker (27.x: this subclass relies on its internals, hence
    the pinned range) with two changes:

    * a new connection waits in the poller until it is readable, with the connections
      gunicorn itself puts back there (``pending_conns``, closed once their time is
      up): gunicorn 27 hands it to a thread that waits up to 5 s for its first bytes,
      so a handful of silent connections held every thread;
    * its socket is a ``ClientSocket``, timed out after the application's
      ``client_timeout_seconds``.
    """

    def accept(self, listener):
        try:
            client, address = listener.accept()
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                raise
            return
        self.nr_conns += 1
        timeout = self._client_timeout()
        if not self.cfg.is_ssl:
            client = ClientSocket.adopt(client, timeout)
        conn = TConn(self.cfg, client, address, listener.getsockname())
        conn.timeout = time.monotonic() + timeout
        self.pending_conns.append(conn)
        self.poller.register(
            conn.sock, selectors.EVENT_READ, partial(self.on_pending_socket_readable, conn)
        )

    def _client_timeout(self) -> float:
        services = self.wsgi.extensions["placement"]
        return float(services.config.client_timeout_seconds)
