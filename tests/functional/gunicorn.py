"""The real service for functional tests: a migrated database under gunicorn, started
and stopped as the benchmarks do (``benchmarks.service``); and ``race``, for clients that
hit it at the same moment."""

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path

from benchmarks.service import gunicorn, migrate_database


@contextlib.contextmanager
def running_gunicorn(
    database_url: str, folder: Path, workers: int, extra_args: tuple[str, ...] = (),
    extra_env: dict[str, str] | None = None,
) -> Iterator[str]:
    """Migrate ``database_url``, serve it with gunicorn (its log in ``folder``) and yield
    the base URL; stopped on exit."""
    migrate_database(database_url)
    with gunicorn(
        database_url, workers, str(folder / "gunicorn.log"), extra_env=extra_env,
        extra_args=extra_args,
    ) as base:
        yield base


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
