"""In-process races of device claims: a write started between a claim's choice and its
own write, on a migrated database of either backend."""

import threading
from collections.abc import Callable

from placement.data.names import sync_standard_names
from placement.db.engine import WRITE_TRANSACTION_OPTION
from placement.devices import service

# Backends whose write transactions wait for each other from their start (SQLite's
# BEGIN IMMEDIATE, MySQL's queue on the change log's state row).
QUEUED_WRITERS = frozenset({"sqlite", "mysql"})


def write(engine, work):
    """``work(conn)`` in a write transaction of its own; its result."""
    with engine.connect().execution_options(**{WRITE_TRANSACTION_OPTION: True}) as conn:
        with conn.begin():
            sync_standard_names(conn)
            return work(conn)


def minors(candidate) -> list[int]:
    return [candidate.node.devices[index].device.minor for index, _ in candidate.pick.takes]


def claim_with_a_write_between(
    engine,
    search: service.DeviceSearch,
    claim: Callable,
    between: threading.Thread,
    target: str,
):
    """Claim (``claim(conn)`` through ``search``), starting ``between`` once the claim has
    chosen and before it writes; the minors first chosen and the candidate claimed.
    PostgreSQL: ``between`` commits before the claim writes. SQLite and MySQL: it waits
    on the claim's write transaction (writers are serialized), and commits after it."""
    chosen: list[list[int]] = []
    find_candidates = search.find_candidates

    def choose_then_write(*args, **kwargs):
        answer = find_candidates(*args, **kwargs)
        if not chosen:
            chosen.append(minors(answer.candidates[0]))
            between.start()
            between.join(timeout=1 if target in QUEUED_WRITERS else 30)
            assert between.is_alive() == (target in QUEUED_WRITERS)
        return answer

    search.find_candidates = choose_then_write  # type: ignore[method-assign]
    try:
        claimed = write(engine, claim)
    finally:
        search.find_candidates = find_candidates  # type: ignore[method-assign]
    between.join(timeout=30)
    assert not between.is_alive()
    return chosen, claimed
