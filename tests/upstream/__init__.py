"""Upstream openstack-placement 16.0.0 as an oracle: where it is installed, and a server of it.

`make test` installs it into ``.venv-upstream`` (pinned by ``constraints.txt``);
``PLACEMENT_UPSTREAM_PYTHON`` names another interpreter that has it. Its package
is also called ``placement``, so it never shares a process with ours: it runs
as a subprocess (``serve_upstream.py``) on a loopback port.

Without it the tests that need it are skipped, except with ``CI=true``, where
that is a failure.
"""

import contextlib
import os
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LAUNCHER = Path(__file__).with_name("serve_upstream.py")
IN_CI = os.environ.get("CI", "").lower() == "true"


class UpstreamUnavailable(RuntimeError):
    """The upstream oracle is not installed."""


def upstream_python() -> Path:
    given = os.environ.get("PLACEMENT_UPSTREAM_PYTHON")
    python = Path(given) if given else REPO / ".venv-upstream" / "bin" / "python"
    if not python.exists():
        raise UpstreamUnavailable(
            f"{python} does not exist: run `make test`, or set PLACEMENT_UPSTREAM_PYTHON"
        )
    return python


def upstream_package_dir() -> Path:
    """The installed upstream ``placement`` package (its gabbi files live below it)."""
    found = subprocess.run(
        [
            str(upstream_python()),
            "-c",
            "import os, placement; print(os.path.dirname(placement.__file__))",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=tempfile.gettempdir(),
    )
    return Path(found.stdout.strip())


def require_upstream() -> Path:
    """The upstream interpreter, or skip (fail with ``CI=true``)."""
    try:
        return upstream_python()
    except UpstreamUnavailable as exc:
        if IN_CI:
            pytest.fail(f"CI=true and the upstream oracle is missing: {exc}")
        pytest.skip(str(exc))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def upstream_server(folder: Path) -> Iterator[str]:
    """Run upstream on a new SQLite database in ``folder``; yield its base URL."""
    python = upstream_python()
    port = _free_port()
    database = folder / f"upstream-{port}.sqlite"
    log = open(folder / f"upstream-{port}.log", "w")  # noqa: SIM115 - closed below
    # Upstream's package must not be shadowed by ours (also named placement).
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    process = subprocess.Popen(
        [str(python), str(LAUNCHER), f"sqlite:///{database}", str(port)],
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        cwd=str(folder),
        env=environment,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline().strip()
        if first != "ready":
            process.wait(timeout=10)
            raise UpstreamUnavailable(
                f"upstream did not start: {(folder / f'upstream-{port}.log').read_text()}"
            )
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()
        log.close()


__all__ = [
    "IN_CI",
    "UpstreamUnavailable",
    "require_upstream",
    "upstream_package_dir",
    "upstream_python",
    "upstream_server",
]
