"""The real service for functional tests: a migrated database under gunicorn, started
and stopped as the benchmarks do (``benchmarks.service``), or by ``placement serve``
itself; and ``race``, for clients that hit it at the same moment."""

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

from benchmarks.service import gunicorn, migrate_database, wait_until_up
from tests.ports import free_port

START_TIMEOUT_S = 60


@contextlib.contextmanager
def running_gunicorn(
    database_url: str,
    folder: Path,
    workers: int,
    extra_args: tuple[str, ...] = (),
    extra_env: dict[str, str] | None = None,
) -> Iterator[str]:
    """Migrate ``database_url``, serve it with gunicorn (its log in ``folder``) and yield
    the base URL; stopped on exit."""
    migrate_database(database_url)
    with gunicorn(
        database_url,
        workers,
        str(folder / "gunicorn.log"),
        extra_env=extra_env,
        extra_args=extra_args,
    ) as base:
        yield base


@contextlib.contextmanager
def running_placement_serve(
    database_url: str,
    folder: Path,
    workers: int,
    extra_env: dict[str, str] | None = None,
) -> Iterator[str]:
    """Migrate ``database_url``, run ``placement serve`` on it (its output in
    ``folder``/serve.log, gunicorn's control socket in ``folder``) and yield the base URL;
    stopped on exit."""
    migrate_database(database_url)
    port = free_port()
    env = dict(
        os.environ,
        PLACEMENT_DATABASE_URL=database_url,
        XDG_RUNTIME_DIR=str(folder),
        **(extra_env or {}),
    )
    command = [
        sys.executable,
        "-m",
        "placement.cli.main",
        "serve",
        "--port",
        str(port),
        "--workers",
        str(workers),
    ]
    with open(folder / "serve.log", "w") as log:
        process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            base_url = f"http://127.0.0.1:{port}"
            wait_until_up(base_url, process, START_TIMEOUT_S)
            yield base_url
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)  # gunicorn: graceful shutdown
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=30)


def race(functions):
    """Run the functions in threads released together; return their results in order."""
    barrier = threading.Barrier(len(functions))
    results: list = [None] * len(functions)

    def run(index, function):
        barrier.wait()
        results[index] = function()

    threads = [threading.Thread(target=run, args=(i, f)) for i, f in enumerate(functions)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return results
