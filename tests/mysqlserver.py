"""A throwaway MariaDB (or MySQL) server for the test suite.

Started from Debian's ``mariadb-server`` binaries (``mariadbd`` or ``mysqld`` on
PATH or in /usr/sbin) in a temporary folder, listening on a free loopback port,
with durability off (the data dies with the run). As root the server runs as the
``mysql`` user, which the Debian package creates. ``make test`` runs this module
first: when the packages are absent and it runs as root (as CI does), it installs
them (``mariadb-server``, and ``galera-4`` and ``rsync`` for the Galera test).
"""

import os
import pwd
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field

from tests.ports import free_port

PACKAGES = ("mariadb-server", "galera-4", "rsync")
START_TIMEOUT_S = 60


class MysqlUnavailable(RuntimeError):
    """No MariaDB/MySQL server binaries could be found, installed or started."""


def server_binary() -> str | None:
    for name in ("mariadbd", "mysqld"):
        found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/libexec")
        if found:
            return found
    return None


def ensure_installed(packages: tuple[str, ...] = PACKAGES) -> None:
    """Install Debian's packages when their server binary is missing and we are root."""
    if server_binary() is not None and all(_installed(p) for p in packages):
        return
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise MysqlUnavailable(
            f"no MariaDB server binaries and cannot install {' '.join(packages)} (not root)"
        )
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (
        ["apt-get", "update", "-qq"],
        ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages],
    ):
        result = subprocess.run(command, capture_output=True, text=True, env=env)
        if result.returncode != 0:
            raise MysqlUnavailable(f"{' '.join(command)} failed: {result.stderr[-2000:]}")
    if server_binary() is None:
        raise MysqlUnavailable(f"installed {' '.join(packages)} but found no mariadbd")


def _installed(package: str) -> bool:
    result = subprocess.run(
        ["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True
    )
    return result.returncode == 0 and "install ok installed" in result.stdout


@dataclass
class Server:
    """One mariadbd process and its folder."""

    base: str
    port: int
    process: subprocess.Popen
    extra_options: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"mysql+pymysql://root@127.0.0.1:{self.port}/mysql?charset=utf8mb4"

    @property
    def socket_path(self) -> str:
        return os.path.join(self.base, "mysqld.sock")

    def stop(self, remove: bool = True) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if remove:
            shutil.rmtree(self.base, ignore_errors=True)

    def kill(self) -> None:
        """Stop at once, as a crash would (the data folder stays)."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def _run_as() -> str | None:
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam("mysql")
    except KeyError as exc:
        raise MysqlUnavailable("running as root and there is no 'mysql' user") from exc
    return "mysql"


def initialize(base: str) -> str:
    """Create an empty data directory in ``base``; return its path."""
    datadir = os.path.join(base, "data")
    user = _run_as()
    if user is not None:
        account = pwd.getpwnam(user)
        os.chown(base, account.pw_uid, account.pw_gid)
    _make_tmpdir(base, user)
    install_db = shutil.which("mariadb-install-db") or shutil.which("mysql_install_db")
    if install_db is None:
        raise MysqlUnavailable("no mariadb-install-db found")
    command = [
        install_db,
        "--no-defaults",
        f"--datadir={datadir}",
        "--auth-root-authentication-method=normal",
        "--skip-test-db",
        "--skip-name-resolve",
        f"--tmpdir={_tmpdir(base)}",
    ]
    if user is not None:
        command.append(f"--user={user}")
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise MysqlUnavailable(f"{install_db} failed: {result.stderr[-2000:] or result.stdout}")
    return datadir


def _make_tmpdir(base: str, user: str | None) -> None:
    os.makedirs(_tmpdir(base), exist_ok=True)
    if user is not None:
        account = pwd.getpwnam(user)
        os.chown(_tmpdir(base), account.pw_uid, account.pw_gid)


def _tmpdir(base: str) -> str:
    """The server's own temporary folder: servers started at once (one per test worker)
    must not share /tmp's temporary tables."""
    return os.path.join(base, "tmp")


def launch(base: str, datadir: str, port: int, extra_options: list[str] | None = None) -> Server:
    """Start mariadbd on ``datadir`` and wait until it accepts connections."""
    binary = server_binary()
    if binary is None:
        raise MysqlUnavailable("no mariadbd found")
    user = _run_as()
    _make_tmpdir(base, user)
    options = [
        binary,
        "--no-defaults",
        f"--datadir={datadir}",
        f"--port={port}",
        "--bind-address=127.0.0.1",
        f"--socket={os.path.join(base, 'mysqld.sock')}",
        f"--pid-file={os.path.join(base, 'mysqld.pid')}",
        "--skip-name-resolve",
        f"--log-error={os.path.join(base, 'error.log')}",
        f"--tmpdir={_tmpdir(base)}",
        "--innodb-flush-log-at-trx-commit=0",
        "--sync-binlog=0",
        "--innodb-doublewrite=0",
        "--innodb-buffer-pool-size=256M",
        "--max-connections=500",
        "--character-set-server=utf8mb4",
        "--collation-server=utf8mb4_general_ci",
        *(extra_options or []),
    ]
    if user is not None:
        options.append(f"--user={user}")
    process = subprocess.Popen(options, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    server = Server(base=base, port=port, process=process, extra_options=extra_options or [])
    _wait_ready(server)
    return server


def _wait_ready(server: Server) -> None:
    import pymysql

    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        if server.process.poll() is not None:
            raise MysqlUnavailable(f"mariadbd exited: {_log_tail(server.base)}")
        try:
            pymysql.connect(host="127.0.0.1", port=server.port, user="root").close()
            return
        except pymysql.err.OperationalError as exc:
            if time.monotonic() > deadline:
                server.stop(remove=False)
                raise MysqlUnavailable(
                    f"mariadbd did not answer: {_log_tail(server.base)}"
                ) from exc
            time.sleep(0.2)


def _log_tail(base: str) -> str:
    try:
        with open(os.path.join(base, "error.log")) as log:
            return log.read()[-2000:]
    except OSError:
        return "(no log)"


def start() -> Server:
    """A new server on an empty data directory."""
    base = tempfile.mkdtemp(prefix="placement-mysql-")
    os.chmod(base, 0o755)
    datadir = initialize(base)
    return launch(base, datadir, free_port())


if __name__ == "__main__":
    # make test: install the servers' packages if they are missing (as root), once,
    # before the test workers start (two at once would contend for dpkg's lock).
    try:
        ensure_installed()
    except MysqlUnavailable as exc:
        print(f"MariaDB for the tests: {exc}")
