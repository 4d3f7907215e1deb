"""A throwaway PostgreSQL server for the test suite.

Started from the local server binaries (``/usr/lib/postgresql/*/bin`` or
PATH) in a temporary folder, listening on a free loopback port. PostgreSQL
refuses to run as root, so as root the server runs as the ``postgres`` user.
"""

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from dataclasses import dataclass

from tests.ports import free_port


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server binaries could be found or started."""


def _bindir() -> str:
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]))
    for path in reversed(candidates):
        if os.path.exists(os.path.join(path, "pg_ctl")):
            return path
    pg_ctl = shutil.which("pg_ctl")
    if pg_ctl:
        return os.path.dirname(pg_ctl)
    raise PostgresUnavailable("no PostgreSQL server binaries (pg_ctl, initdb) found")


@dataclass
class Server:
    url: str
    datadir: str
    bindir: str
    run_as: str | None

    def restart(self) -> None:
        """Stop the server (its connections dropped), then start it again as it was."""
        log = os.path.join(os.path.dirname(self.datadir), "log")
        pg_ctl = f"{self.bindir}/pg_ctl"
        _run(self.run_as, [pg_ctl, "-D", self.datadir, "-m", "fast", "-w", "-l", log, "restart"])

    def stop(self) -> None:
        _run(self.run_as, [f"{self.bindir}/pg_ctl", "-D", self.datadir, "-m", "immediate", "stop"])
        shutil.rmtree(os.path.dirname(self.datadir), ignore_errors=True)


def _run(user: str | None, command: list[str]) -> None:
    if user is not None:
        command = ["runuser", "-u", user, "--", *command]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise PostgresUnavailable(
            f"{' '.join(command)} failed ({result.returncode}): {result.stderr or result.stdout}"
        )


def start() -> Server:
    bindir = _bindir()
    base = tempfile.mkdtemp(prefix="placement-pg-")
    datadir = os.path.join(base, "data")
    run_as = None
    if os.geteuid() == 0:
        run_as = "postgres"
        try:
            account = pwd.getpwnam(run_as)
        except KeyError as exc:
            raise PostgresUnavailable("running as root and there is no 'postgres' user") from exc
        os.chown(base, account.pw_uid, account.pw_gid)
    port = free_port()
    _run(
        run_as,
        [
            f"{bindir}/initdb",
            "-D",
            datadir,
            "-A",
            "trust",
            "-U",
            "postgres",
            "--no-sync",
            "-E",
            "UTF8",
        ],
    )
    options = (
        f"-p {port} -k {base} -c listen_addresses=127.0.0.1 -c fsync=off "
        "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
    )
    _run(
        run_as,
        [
            f"{bindir}/pg_ctl",
            "-D",
            datadir,
            "-o",
            options,
            "-w",
            "-l",
            os.path.join(base, "log"),
            "start",
        ],
    )
    return Server(
        url=f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres",
        datadir=datadir,
        bindir=bindir,
        run_as=run_as,
    )
