"""The real service for functional tests: a migrated database under gunicorn."""

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from placement.db import migrate
from placement.db.engine import make_engine


@contextlib.contextmanager
def running_gunicorn(
    database_url: str, folder: Path, workers: int, extra_args: tuple[str, ...] = ()
) -> Iterator[str]:
    """Migrate ``database_url``, serve it with gunicorn (its log in ``folder``) and yield
    the base URL; stopped on exit."""
    engine = make_engine(database_url)
    migrate.upgrade(engine)
    engine.dispose()
    port = _free_port()
    env = dict(os.environ, PLACEMENT_DATABASE_URL=database_url)
    log_path = folder / "gunicorn.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "--workers", str(workers),
             "--bind", f"127.0.0.1:{port}", *extra_args, "placement.wsgi:application"],
            env=env, stdout=log, stderr=subprocess.STDOUT,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            _wait_until_up(base, process, log_path)
            yield base
        finally:
            process.terminate()
            process.wait(timeout=30)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_until_up(base: str, process: subprocess.Popen, log_path: Path) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            requests.get(base + "/", timeout=2)
            return
        except requests.RequestException:
            if time.monotonic() > deadline or process.poll() is not None:
                pytest.fail(f"gunicorn did not start: {log_path.read_text()}")
            time.sleep(0.2)
