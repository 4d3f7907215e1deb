"""Upstream 16.0.0 as the expected side: a fresh server per scenario, transcripts kept.

Each scenario runs on its own new upstream server and database, so no scenario
can see another's providers, classes, traits or consumers (listing routes and
allocation candidates read the whole database). Servers come from
``upstream_forkserver.py``, which imports upstream once and forks a child per
server: ~0.1 s a server instead of the ~0.85 s of a new interpreter
(``tests.upstream.upstream_server``), which over this layer's few hundred
scenarios is the difference between seconds and minutes. Their SQLite files live
in /dev/shm where there is one: upstream commits every write to disk.

Upstream's answers do not depend on which of our backends is compared with them,
so each scenario's upstream transcript is recorded once per session. ``prefetch``
records them in two background threads, in the order the tests will ask, so upstream
(other processes) works while this process runs our side. Each server starts on a
copy of a database upstream migrated once (migrating costs more than most scenarios).
"""

import contextlib
import itertools
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from tests.differential.runner import HttpTarget, Transcript, run
from tests.differential.scenario import Scenario
from tests.ports import free_port
from tests.upstream import LAUNCHER, UpstreamUnavailable, upstream_python

FORKSERVER = Path(__file__).with_name("upstream_forkserver.py")
MEMORY_FOLDER = Path("/dev/shm")


class Oracle:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        in_memory = MEMORY_FOLDER.is_dir() and MEMORY_FOLDER.stat().st_mode & 0o002
        self.databases = Path(
            tempfile.mkdtemp(
                prefix="placement-upstream-", dir=MEMORY_FOLDER if in_memory else folder
            )
        )
        self.log = open(folder / "forkserver.log", "w")  # noqa: SIM115 - closed in close()
        self.process = subprocess.Popen(
            [str(upstream_python()), str(FORKSERVER), str(LAUNCHER.parent)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            cwd=str(folder),
            # Upstream's package must not be shadowed by ours (also named placement).
            env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
        )
        self.lock = threading.Lock()  # one command at a time on the fork server's pipes
        self.template_lock = threading.Lock()
        self.transcripts: dict[str, Future[Transcript]] = {}
        self.executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="upstream")
        self.numbers = itertools.count(1)  # of servers, for their file names

    def prefetch(self, scenarios: Iterable[Scenario]) -> None:
        for scenario in scenarios:
            if scenario.name not in self.transcripts:
                self.transcripts[scenario.name] = self.executor.submit(self._record, scenario)

    def transcript(self, scenario: Scenario) -> Transcript:
        self.prefetch([scenario])
        return self.transcripts[scenario.name].result()

    def _record(self, scenario: Scenario) -> Transcript:
        with self.server() as base_url:
            target = HttpTarget(base_url)
            try:
                return run(scenario, target)
            finally:
                target.close()

    @contextlib.contextmanager
    def server(self) -> Iterator[str]:
        number = next(self.numbers)
        database = self.databases / f"upstream-{number}.sqlite"
        shutil.copyfile(self._template(), database)
        pid, port = self._start(database, number)
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            self._command(f"stop {pid}")
            database.unlink(missing_ok=True)

    def _template(self) -> Path:
        """A database upstream has migrated and filled with its standard traits and
        classes once; each server starts on a copy (migrating takes longer than serving
        a whole scenario)."""
        template = self.databases / "template.sqlite"
        with self.template_lock:
            if not template.exists():
                pid, _ = self._start(template, 0)
                self._command(f"stop {pid}")
        return template

    def _start(self, database: Path, number: int) -> tuple[str, int]:
        port = free_port()
        log = self.folder / f"upstream-{number}.log"
        answer = self._command(f"start sqlite:///{database} {port} {log}")
        if not answer.startswith("ready "):
            raise UpstreamUnavailable(f"upstream did not start ({answer}): {log.read_text()}")
        return answer.split()[1], port

    def _command(self, line: str) -> str:
        assert self.process.stdin is not None and self.process.stdout is not None
        with self.lock:
            self.process.stdin.write(line + "\n")
            self.process.stdin.flush()
            answer = self.process.stdout.readline().strip()
        if not answer:
            raise UpstreamUnavailable(
                f"the upstream fork server ended: {(self.folder / 'forkserver.log').read_text()}"
            )
        return answer

    def close(self) -> None:
        self.executor.shutdown(cancel_futures=True)
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process.stdout.close()
        self.log.close()
        shutil.rmtree(self.databases, ignore_errors=True)
