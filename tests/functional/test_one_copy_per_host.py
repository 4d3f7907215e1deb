"""One copy of the providers per host: gunicorn with the application preloaded
(``[placement] preload_providers``, ``-c python:placement.observability.gunicorn_hooks``),
2 workers, every backend.

The arbiter reads the copy before it forks each worker (``placement.worker_hooks``);
the workers must still answer exactly what the database holds: after writes made
through the API, by every worker; after a worker is killed, by its replacement (forked
from a copy brought up to date after the arbiter loaded, then written again); and after
the change log was pruned past the arbiter's copy (read whole again). The arbiter keeps
no database connection (nor the SQLite file) open across a fork. Which worker answered
each request is read from gunicorn's access log.
"""

import os
import re
import signal
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from placement.db.engine import make_engine
from tests.functional.gunicorn import running_gunicorn
from tests.functional.test_candidates_across_workers import Client

WORKERS = 2
BATCH = 8
QUERY = "/allocation_candidates?resources=VCPU:2"
HOOKS = ("-c", "python:placement.observability.gunicorn_hooks")


@pytest.fixture(params=["postgresql", "sqlite", "mysql"])
def service(request, empty_database_url, tmp_path):
    """The preloaded service; yields a ``Host`` to drive and watch it."""
    url = empty_database_url(request.param)
    access_log = tmp_path / "access.log"
    logging = ("--access-logfile", str(access_log), "--access-logformat", "%(p)s %({x-probe}i)s")
    environment = {"PLACEMENT_PRELOAD_PROVIDERS": "true", "PLACEMENT_LOG_LEVEL": "INFO"}
    with running_gunicorn(url, tmp_path, WORKERS, HOOKS + logging, environment) as base:
        yield Host(base, url, tmp_path / "gunicorn.log", access_log)


class Host(Client):
    """The service, its logs, and the model of what its providers hold: uuid -> VCPU
    (total, used)."""

    def __init__(self, base, database_url, log, access_log) -> None:
        self.base, self.database_url, self.log, self.access_log = (
            base,
            database_url,
            log,
            access_log,
        )
        self.model: dict[str, list[int]] = {}
        self.consumers: dict[str, str] = {}  # provider -> the consumer filling it
        self.killed: set[int] = set()

    def add_provider(self, total: int = 4) -> str:
        provider = self.call("POST", "/resource_providers", {"name": uuid.uuid4().hex})
        provider_uuid = provider.json()["uuid"]
        body = {"resource_provider_generation": 0, "inventories": {"VCPU": {"total": total}}}
        self.call("PUT", f"/resource_providers/{provider_uuid}/inventories", body)
        self.model[provider_uuid] = [total, 0]
        return provider_uuid

    def fill(self, provider: str) -> None:
        consumer = self.consumers[provider] = str(uuid.uuid4())
        total, used = self.model[provider]
        body = {
            "allocations": {provider: {"resources": {"VCPU": total - used}}},
            "project_id": "p",
            "user_id": "u",
            "consumer_generation": None,
            "consumer_type": "INSTANCE",
        }
        self.call("PUT", f"/allocations/{consumer}", body, expect=(204,))
        self.model[provider][1] = total

    def empty(self, provider: str) -> None:
        self.call("DELETE", f"/allocations/{self.consumers.pop(provider)}", expect=(204,))
        self.model[provider][1] = 0

    def expected(self) -> dict[str, dict]:
        """The summaries the answer must have: every provider with room for 2 VCPU."""
        return {
            provider: {"VCPU": {"capacity": total, "used": used}}
            for provider, (total, used) in self.model.items()
            if total - used >= 2
        }

    def arbiter(self) -> int:
        return int(re.search(r"Listening at: \S+ \((\d+)\)", self.log.read_text())[1])

    def workers(self) -> set[int]:
        booted = re.findall(r"Booting worker with pid: (\d+)", self.log.read_text())
        return {int(pid) for pid in booted} - self.killed

    def copies_made_for_workers(self) -> list[int]:
        """The providers the arbiter's copy held before each fork, in order."""
        made = re.findall(
            r"Copy of (\d+) providers \(\d+ device nodes, \d+ translator nodes\) up to date",
            self.log.read_text(),
        )
        return [int(count) for count in made]

    def check_every_worker(self) -> None:
        """Concurrent batches of the query until every live worker has answered some;
        each answer must be exactly the model's."""
        expected = self.expected()
        answered: set[int] = set()
        deadline = time.monotonic() + 60
        with ThreadPoolExecutor(BATCH) as pool:
            while answered != self.workers():
                assert time.monotonic() < deadline, f"only {answered} of {self.workers()}"
                probes = [uuid.uuid4().hex for _ in range(BATCH)]
                bodies = pool.map(lambda probe: self.call("GET", QUERY, probe=probe), probes)
                for body in bodies:
                    summaries = body.json()["provider_summaries"]
                    assert {p: s["resources"] for p, s in summaries.items()} == expected
                answered |= self._pids_of(probes)

    def _pids_of(self, probes: list[str]) -> set[int]:
        wanted = set(probes)
        for _ in range(50):  # the log is written by the workers, maybe a little later
            found = {}
            for line in self.access_log.read_text().splitlines():
                pid, probe = line.split(" ")
                if probe in wanted:
                    found[probe] = int(pid.strip("<>"))
            if len(found) == len(wanted):
                return set(found.values())
            time.sleep(0.1)
        raise AssertionError("requests missing from the access log")

    def kill_a_worker(self) -> None:
        """SIGKILL one worker; return once gunicorn has forked its replacement."""
        before = self.workers()
        victim = min(before)
        os.kill(victim, signal.SIGKILL)
        self.killed.add(victim)
        deadline = time.monotonic() + 60
        while len(self.workers()) < len(before):
            assert time.monotonic() < deadline, "no replacement worker"
            time.sleep(0.1)

    def prune_the_log_past_every_copy(self) -> None:
        engine = make_engine(self.database_url)
        try:
            with engine.begin() as conn:
                conn.execute(
                    text("UPDATE provider_changes_state SET pruned_below = :far"), {"far": 2**62}
                )
        finally:
            engine.dispose()

    def arbiter_holds_no_database(self) -> bool:
        """Whether the arbiter has the SQLite file, or a connection to the database's
        port, open."""
        pid = self.arbiter()
        url = make_url(self.database_url)
        if url.get_backend_name() == "sqlite":
            database = os.path.realpath(url.database or "")
            links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
            return not any(link.startswith(database) for link in links)
        return not _connections_to_port(pid, url.port)


def _connections_to_port(pid: int, port: int | None) -> list[str]:
    """The TCP connections of process ``pid`` whose remote port is ``port``."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        link = os.readlink(f"/proc/{pid}/fd/{fd}")
        if link.startswith("socket:["):
            inodes.add(link[len("socket:[") : -1])
    found = []
    for table in ("tcp", "tcp6"):
        with open(f"/proc/{pid}/net/{table}") as rows:
            next(rows)
            for row in rows:
                fields = row.split()
                remote_port = int(fields[2].rsplit(":", 1)[1], 16)
                if remote_port == port and fields[9] in inodes:
                    found.append(row)
    return found


@pytest.mark.slow
def test_every_worker_and_every_replacement_answer_exactly(service):
    host = service
    for _ in range(3):
        host.add_provider()
    host.check_every_worker()
    first, second, third = list(host.model)
    host.fill(first)
    host.check_every_worker()
    assert host.arbiter_holds_no_database()

    # Written after the arbiter loaded: its copy is brought up to date before the fork.
    host.add_provider()
    host.kill_a_worker()
    assert host.copies_made_for_workers()[-1] == len(host.model)
    host.empty(first)  # and after the replacement was forked
    host.fill(second)
    host.check_every_worker()

    # The log pruned past every copy: each reads every version again, still exactly.
    host.prune_the_log_past_every_copy()
    host.add_provider(total=1)  # (too small to answer)
    host.empty(second)
    host.kill_a_worker()
    assert host.copies_made_for_workers()[-1] == len(host.model)
    host.fill(third)
    host.check_every_worker()
    assert host.arbiter_holds_no_database()
