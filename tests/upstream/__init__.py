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
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from tests.ports import free_port
from tests.side_process import IN_CI, python_of, require, stop

REPO = Path(__file__).resolve().parents[2]
LAUNCHER = Path(__file__).with_name("serve_upstream.py")


class UpstreamUnavailable(RuntimeError):
    """The upstream oracle is not installed."""


def upstream_python() -> Path:
    return python_of(".venv-upstream", "PLACEMENT_UPSTREAM_PYTHON", UpstreamUnavailable)


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
    return require(upstream_python, "the upstream oracle")


@contextlib.contextmanager
def upstream_server(
    folder: Path, policy: str = "legacy", database_url: str | None = None
) -> Iterator[str]:
    """Run upstream on ``database_url`` (by default a new SQLite database in ``folder``),
    with the policy ``policy`` (see ``POLICIES``); yield its base URL."""
    python = upstream_python()
    port = free_port()
    database_url = database_url or f"sqlite:///{folder / f'upstream-{port}.sqlite'}"
    log = open(folder / f"upstream-{port}.log", "w")  # noqa: SIM115 - closed below
    # Upstream's package must not be shadowed by ours (also named placement).
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    process = subprocess.Popen(
        [str(python), str(LAUNCHER), upstream_url(database_url), str(port), policy],
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
        stop(process)
        log.close()


def upstream_url(database_url: str) -> str:
    """``database_url`` with the driver upstream runs on (psycopg2 for PostgreSQL: it
    fails on psycopg 3)."""
    return database_url.replace("postgresql+psycopg://", "postgresql+psycopg2://")


def upstream_command(name: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    """Run one of upstream's commands (``placement-manage``, ``placement-status``)."""
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [str(upstream_python().parent / name), *args],
        capture_output=True,
        text=True,
        cwd=str(cwd),
        env=environment,
        timeout=300,
    )


__all__ = [
    "IN_CI",
    "UpstreamUnavailable",
    "require_upstream",
    "upstream_package_dir",
    "upstream_python",
    "upstream_command",
    "upstream_server",
    "upstream_url",
]


# The policies upstream's gabbi files ask for, by the fixture that names each.
POLICIES = {
    "LegacyRBACPolicyFixture": "legacy",  # enforce_new_defaults false (also the default)
    "SecureRBACPolicyFixture": "secure",  # enforce_new_defaults true
    "OpenPolicyFixture": "open",  # every rule but admin_api is "@" (a policy file)
}
OPEN_POLICY_EXCEPT = "admin_api"


def policy_of(fixtures: list[str]) -> str:
    """The policy a gabbi file's fixtures ask the server for."""
    asked = {POLICIES[name] for name in fixtures if name in POLICIES}
    assert len(asked) <= 1, f"fixtures ask for several policies: {fixtures}"
    return asked.pop() if asked else "legacy"


def open_policy_file(rule_names, folder: Path) -> Path:
    """A policy file opening every rule of ``rule_names`` but ``admin_api`` to anyone."""
    path = folder / "open-policy.yaml"
    path.write_text(
        "".join(f'"{name}": "@"\n' for name in rule_names if name != OPEN_POLICY_EXCEPT)
    )
    return path
