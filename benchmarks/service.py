"""A placement service to benchmark: throwaway or given, always shut down cleanly.

``running_service`` is a context manager yielding a ``Service`` (its base URL
and what it runs on). Three ways, in order of preference of the options:

* ``url``: an already running service (loopback only); nothing is started
  or stopped, nothing is migrated.
* ``database_url``: that database is migrated (``placement.db.migrate.upgrade``)
  and gunicorn is started against it; the database is left as it is.
* neither: a throwaway PostgreSQL (``--backend postgresql``, the default) or
  MariaDB (``--backend mysql``) is started with ``tests.pgserver`` or
  ``tests.mysqlserver`` (run from the repository root so that ``tests`` is
  importable), migrated, served by gunicorn, and removed afterwards.

gunicorn runs as ``python -m gunicorn --workers N ... placement.wsgi:application``,
with the worker settings of ``placement serve`` (``placement.server``), on a free
loopback port, with ``PLACEMENT_DATABASE_URL`` in its environment and
its output in a log file (kept when the start fails, and printed). With ``preload``
it also gets ``-c python:placement.observability.gunicorn_hooks`` and
``PLACEMENT_PRELOAD_PROVIDERS=true``: one copy of the providers per host, read in
gunicorn's arbiter before it forks the workers; without, each worker reads its own
(no hooks: the service as before issue 31).

``python -m benchmarks.service`` starts one and waits for Ctrl-C or SIGTERM, which is
handy for poking at a loaded service by hand.
"""

import argparse
import contextlib
import importlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

import requests
from gunicorn.config import KNOWN_SETTINGS

from benchmarks.client import require_loopback
from placement import server
from placement.config import Config
from placement.db import migrate
from placement.db.engine import is_sqlite, make_engine
from tests.ports import free_port

START_TIMEOUT_S = 60
STOP_TIMEOUT_S = 30


class ServiceError(RuntimeError):
    """The service could not be started or reached."""


@dataclass(frozen=True)
class Service:
    base_url: str
    workers: int | None  # None when the service was given by URL
    database: str  # a description, never a password
    log_path: str | None
    database_url: str | None = field(default=None, repr=False)  # None for a given service
    preload: bool = False  # one copy of the providers per host

    def configuration(self) -> dict:
        """The service's lines of a runner's configuration block."""
        return {
            "service": self.base_url,
            "database": " ".join(filter(None, [self.database, self.server_version()])),
            "gunicorn workers": self.workers if self.workers else "(given service)",
            "copy of the providers": "one per host (preloaded)" if self.preload else "per worker",
        }

    def server_version(self) -> str:
        """The database server's version, or '' when unknown (given service, SQLite)."""
        if self.database_url is None or is_sqlite(self.database_url):
            return ""
        engine = make_engine(self.database_url)
        try:
            with engine.connect() as conn:
                if conn.dialect.name == "mysql":
                    return str(conn.exec_driver_sql("SELECT VERSION()").scalar())
                return "PostgreSQL " + str(conn.exec_driver_sql("SHOW server_version").scalar())
        finally:
            engine.dispose()


PRELOAD_HELP = "one copy of the providers per host, read before gunicorn forks the workers"


def add_service_options(parser: argparse.ArgumentParser) -> None:
    """The options every runner shares: workers, loader threads, output, which service."""
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument("--load-threads", type=int, default=8, help="threads of the loader")
    parser.add_argument("--json", metavar="PATH", help="also write configuration and results")
    parser.add_argument("--log-dir", help="keep gunicorn.log in this folder")
    parser.add_argument(
        "--backend",
        choices=BACKENDS,
        default="postgresql",
        help="the throwaway database server (without --database-url)",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--database-url", help="migrate and serve this database")
    where.add_argument("--url", help="benchmark this running service (loopback only)")


def describe_database(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


@contextlib.contextmanager
def _throwaway_server(module_name: str, label: str):
    """Yield a fresh server of ``tests.<module_name>`` (its ``start()``); stop it after."""
    try:
        module = importlib.import_module(f"tests.{module_name}")
    except ImportError as exc:  # pragma: no cover - depends on the working directory
        raise ServiceError(
            f"cannot import tests.{module_name}: run from the repository root "
            "(python -m benchmarks.<script>)"
        ) from exc
    try:
        server = module.start()
    except RuntimeError as exc:  # (PostgresUnavailable, MysqlUnavailable)
        raise ServiceError(f"no throwaway {label}: {exc}") from exc
    try:
        yield server
    finally:
        server.stop()


@contextlib.contextmanager
def throwaway_postgres():
    """Yield the URL of a fresh PostgreSQL (tests/pgserver.py); remove it afterwards."""
    with _throwaway_server("pgserver", "PostgreSQL") as server:
        yield server.url


@contextlib.contextmanager
def throwaway_mysql():
    """Yield the URL of a database on a fresh MariaDB (tests/mysqlserver.py); remove the
    server afterwards."""
    with _throwaway_server("mysqlserver", "MariaDB") as server:
        engine = make_engine(server.url)
        with engine.connect() as conn:
            conn.exec_driver_sql("CREATE DATABASE placement")
        engine.dispose()
        yield server.url.replace("/mysql?", "/placement?")


THROWAWAY = {"postgresql": throwaway_postgres, "mysql": throwaway_mysql}
BACKENDS = tuple(THROWAWAY)


def migrate_database(database_url: str) -> None:
    engine = make_engine(database_url)
    try:
        migrate.upgrade(engine)
    finally:
        engine.dispose()


def wait_until_up(base_url: str, process: subprocess.Popen | None, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if requests.get(base_url + "/", timeout=2).status_code == 200:
                return
        except requests.RequestException:
            pass
        if process is not None and process.poll() is not None:
            raise ServiceError(f"gunicorn exited with status {process.returncode}")
        if time.monotonic() > deadline:
            raise ServiceError(f"{base_url} did not answer within {timeout:.0f} s")
        time.sleep(0.2)


@contextlib.contextmanager
def gunicorn(
    database_url: str,
    workers: int,
    log_path: str,
    extra_env: dict | None = None,
    extra_args: tuple[str, ...] = (),
    preload: bool = False,
):
    """Run gunicorn on a free loopback port (with ``extra_args`` among its options, the
    application ``preload``-ed: see the module docstring); yield its base URL; stop it
    on exit."""
    port = free_port()
    env = dict(os.environ, PLACEMENT_DATABASE_URL=database_url, **(extra_env or {}))
    if preload:
        env.setdefault("PLACEMENT_PRELOAD_PROVIDERS", "true")
        extra_args = ("-c", "python:placement.observability.gunicorn_hooks", *extra_args)
    # The access log would cost the workers time; errors still go to the log file.
    env.setdefault("PLACEMENT_LOG_LEVEL", "WARNING")
    command = [
        sys.executable,
        "-m",
        "gunicorn",
        # The workers of `placement serve` (threaded, with its client timeout).
        *server.worker_arguments(Config(workers=workers)),
        "--bind",
        f"127.0.0.1:{port}",
        "--graceful-timeout",
        "10",
    ]
    if "control_socket" in {setting.name for setting in KNOWN_SETTINGS}:
        # gunicorn 25+ listens on ~/.gunicorn/gunicorn.ctl by default, shared with every
        # other gunicorn of the user (the functional tests, another benchmark): give ours
        # its own, next to the log.
        command += ["--control-socket", os.path.join(os.path.dirname(log_path), "gunicorn.ctl")]
    command += [*extra_args, "placement.wsgi:application"]
    with open(log_path, "w") as log:
        process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
        base_url = f"http://127.0.0.1:{port}"
        try:
            try:
                wait_until_up(base_url, process, START_TIMEOUT_S)
            except ServiceError:
                log.flush()
                with open(log_path) as text:
                    sys.stderr.write(text.read())
                raise
            yield base_url
        finally:
            _stop(process)


def gunicorn_processes(base_url: str) -> tuple[int, list[int]]:
    """The arbiter serving ``base_url`` and its workers, from /proc."""
    bind = base_url.removeprefix("http://")
    parents = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as stream:
                command = stream.read().replace(b"\0", b" ").decode()
            with open(f"/proc/{pid}/stat") as stream:
                parent = int(stream.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
        if "gunicorn" in command and bind in command:
            parents[int(pid)] = parent
    (arbiter,) = [pid for pid, parent in parents.items() if parent not in parents]
    return arbiter, sorted(pid for pid, parent in parents.items() if parent == arbiter)


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)  # gunicorn: graceful shutdown of the workers
    try:
        process.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=STOP_TIMEOUT_S)


@contextlib.contextmanager
def running_service(
    workers: int = 2,
    database_url: str | None = None,
    url: str | None = None,
    log_dir: str | None = None,
    backend: str = "postgresql",
    extra_env: dict[str, str] | None = None,
    preload: bool = False,
):
    """Yield a ``Service``; see the module docstring for the three ways. ``extra_env``:
    more environment for the service started (its configuration, ``PLACEMENT_...``);
    ``preload``: one copy of the providers per host (the module docstring)."""
    if url is not None:
        base_url = require_loopback(url.rstrip("/"))
        wait_until_up(base_url, None, 10)
        yield Service(base_url, None, "(given service)", None)
        return
    with contextlib.ExitStack() as stack:
        if database_url is None:
            database_url = stack.enter_context(THROWAWAY[backend]())
            description = {
                "postgresql": "throwaway PostgreSQL (tests/pgserver.py)",
                "mysql": "throwaway MariaDB (tests/mysqlserver.py)",
            }[backend]
        else:
            description = describe_database(database_url)
        migrate_database(database_url)
        if log_dir is None:
            log_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="placement-bench-"))
        log_path = os.path.join(log_dir, "gunicorn.log")
        base_url = stack.enter_context(
            gunicorn(database_url, workers, log_path, extra_env=extra_env, preload=preload)
        )
        yield Service(base_url, workers, description, log_path, database_url, preload)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Start a placement service and wait for Ctrl-C or SIGTERM."
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--database-url", help="use this database instead of a throwaway one")
    parser.add_argument("--log-dir", help="keep gunicorn.log here")
    args = parser.parse_args(argv)

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    # SIGTERM (and SIGINT, which a shell ignores in background jobs) stop it cleanly.
    signal.signal(signal.SIGTERM, interrupt)
    signal.signal(signal.SIGINT, interrupt)
    with running_service(args.workers, args.database_url, log_dir=args.log_dir) as service:
        print(f"placement at {service.base_url} ({service.workers} workers, {service.database})")
        print("Ctrl-C or SIGTERM stops it.", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
