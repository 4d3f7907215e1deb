"""Claiming the best choice for a new consumer, again and again if others win the race.

The translator's and the device claims differ in what they choose, not in how
they claim: choose from fresh data, write the allocations in a savepoint, and
when a concurrent claim committed first (the write fails placement's capacity
check, or meets a provider deleted meanwhile) choose again (never after another
refusal: a bad request is answered as such, not as contention), at random among
the choices as good as the best, so that claimers racing for one node spread
out. ``claim_best`` is that loop for one new consumer, ``claim_all`` for several at
once (a gang: all of them, or none, in one write); the choosing is the caller's, and
so is what the claim must still hold once its rows are locked (``Claimant.confirm``). Each retry is
logged as a warning, and each claim's end (granted or refused) and retries are told
to a ``ClaimRecorder`` (the application's metrics).
"""

import dataclasses
import logging
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from sqlalchemy import Connection

from placement import errors
from placement.data import allocations as allocation_data
from placement.data import consumers as consumer_data

LOG = logging.getLogger(__name__)
CLAIM_ATTEMPTS = 10
RETRY_CHOICES = 16  # choices a retried claim looks at, if they rank as well as the best

Choice = TypeVar("Choice")


class ClaimRecorder(Protocol):
    def claim_retried(self, kind: str) -> None:
        """A claim of ``kind`` lost a race and chooses again."""

    def claim_ended(self, kind: str, granted: bool) -> None:
        """A claim of ``kind`` was granted (its allocations written) or refused."""

    def search_cut(self, kind: str) -> None:
        """A search of ``kind`` (for candidates or a claim) ran out of its time budget."""


class NotRecorded:
    """A ``ClaimRecorder`` that keeps nothing (the CLI's claims)."""

    def claim_retried(self, kind: str) -> None:
        pass

    def claim_ended(self, kind: str, granted: bool) -> None:
        pass

    def search_cut(self, kind: str) -> None:
        pass


@dataclass(frozen=True)
class Claimant(Generic[Choice]):
    """How one kind of claim chooses."""

    kind: str  # what is claimed, as logs and metrics name it: group_resources, devices
    # limit -> the best choices first (at most ``limit``), or the error to answer with
    choose: Callable[[int], Sequence[Choice] | errors.PlacementError]
    standing: Callable[[Choice], object]  # equal for choices ranked as well as each other
    # provider uuid -> class -> n (``claim_all``: a list of them, one per consumer)
    allocations: Callable[[Choice], Any]
    # Run after the allocations are written (their providers' rows locked), in the same
    # savepoint: raises Conflict when the choice no longer holds for a reason placement's
    # capacity check cannot see (a device found unhealthy since), to choose again.
    confirm: Callable[[Choice], None] | None = None


@dataclass(frozen=True)
class NewConsumer:
    """Who a claim allocates for: a consumer that has no allocations yet."""

    uuid: str
    project_id: str
    user_id: str
    consumer_type: str | None = None


def claim_best(
    conn: Connection, claimant: Claimant[Choice], consumer: NewConsumer, recorder: ClaimRecorder
) -> Choice:
    one = dataclasses.replace(claimant, allocations=lambda choice: [claimant.allocations(choice)])
    return claim_all(conn, one, [consumer], recorder)


def claim_all(
    conn: Connection,
    claimant: Claimant[Choice],
    consumers: Sequence[NewConsumer],
    recorder: ClaimRecorder,
) -> Choice:
    """Claim for every one of ``consumers`` at once: ``claimant.allocations`` gives a
    list, each consumer's allocations in their order; all are written in one
    statement batch, or none."""
    try:
        best = _claim(conn, claimant, consumers, recorder)
    except errors.PlacementError:
        recorder.claim_ended(claimant.kind, granted=False)
        raise
    recorder.claim_ended(claimant.kind, granted=True)
    return best


def _claim(
    conn: Connection,
    claimant: Claimant[Choice],
    consumers: Sequence[NewConsumer],
    recorder: ClaimRecorder,
) -> Choice:
    who = ", ".join(consumer.uuid for consumer in consumers)
    last_conflict = None
    for attempt in range(CLAIM_ATTEMPTS):
        existing = consumer_data.get_consumers(conn, [consumer.uuid for consumer in consumers])
        if existing:
            raise errors.Conflict(
                f"Consumer {min(existing)} already has allocations; a claim allocates for a new "
                "consumer.",
                code=errors.GROUP_CONSUMER_EXISTS,
            )
        # A retry looks at a few more choices, to spread over those as good as the best.
        choices = claimant.choose(RETRY_CHOICES if attempt else 1)
        if isinstance(choices, errors.PlacementError):
            raise choices
        best = choices[0]
        if attempt:
            top = claimant.standing(best)
            best = random.choice([c for c in choices if claimant.standing(c) == top])
        writes = [
            allocation_data.ConsumerWrite(
                consumer_uuid=consumer.uuid,
                project_id=consumer.project_id,
                user_id=consumer.user_id,
                allocations=allocations,
                generation=None,
                consumer_type=consumer.consumer_type,
            )
            for consumer, allocations in zip(consumers, claimant.allocations(best), strict=True)
        ]
        try:
            with conn.begin_nested():
                allocation_data.write_allocations(conn, writes)
                if claimant.confirm is not None:
                    claimant.confirm(best)
        except (errors.Conflict, allocation_data.ProviderNotFound) as exc:
            # Taken, changed or deleted by a transaction that committed after our read:
            # choose again from fresh data. Any other refusal is the answer.
            last_conflict = exc
            if attempt + 1 < CLAIM_ATTEMPTS:
                LOG.warning(
                    "Claim (%s) for consumer(s) %s lost a race on attempt %d of %d, choosing "
                    "again: %s",
                    claimant.kind,
                    who,
                    attempt + 1,
                    CLAIM_ATTEMPTS,
                    exc.detail,
                )
                recorder.claim_retried(claimant.kind)
            continue
        return best
    raise errors.Conflict(
        f"Concurrent claims took every choice {CLAIM_ATTEMPTS} times in a row; retry. "
        f"Last: {last_conflict.detail if last_conflict else ''}",
        code=errors.CONCURRENT_UPDATE,
    )
