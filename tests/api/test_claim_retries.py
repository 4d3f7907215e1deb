"""The claim loop shared by the translator's and the device claims
(``group_resources.claiming.claim_best``) chooses again only when a concurrent writer
won (capacity taken, a provider deleted since the choice); any other refusal of the
write is the answer at once, never a 409 "concurrent claims took every choice". Each
retry is logged as a warning and, with each claim's outcome, told to the recorder."""

import logging
import uuid

import pytest

from placement import errors
from placement.claiming import CLAIM_ATTEMPTS, Claimant, NewConsumer, claim_best
from placement.data import names


class Recorder:
    """What the claim loop tells the application's metrics."""

    def __init__(self) -> None:
        self.events: list[tuple] = []

    def claim_retried(self, kind):
        self.events.append(("retried", kind))

    def claim_ended(self, kind, granted):
        self.events.append(("granted" if granted else "refused", kind))

    def search_cut(self, kind):
        self.events.append(("cut", kind))


@pytest.fixture
def host(api):
    provider = api.create_provider("cn1")["uuid"]
    api.set_inventory(provider, VCPU={"total": 8})
    return provider


def _claim(
    engine, choices: list[dict], recorder: Recorder | None = None
) -> tuple[dict | Exception, int]:
    """Claim with a claimant whose n-th choice is ``choices[n]`` (the last one again when
    asked more often); the claim's result or error, and how often it chose."""
    asked: list[int] = []

    def choose(limit):
        asked.append(limit)
        return [choices[min(len(asked), len(choices)) - 1]]

    claimant = Claimant(
        kind="test", choose=choose, standing=lambda choice: 0, allocations=lambda c: c
    )
    recorder = recorder or Recorder()
    with engine.connect() as conn, conn.begin():
        try:
            consumer = NewConsumer(str(uuid.uuid4()), "p", "u")
            result = claim_best(conn, claimant, consumer, recorder)
        except errors.PlacementError as exc:
            return exc, len(asked)
    return result, len(asked)


def test_an_unknown_class_is_answered_at_once(engine, host):
    result, choices = _claim(engine, [{host: {"CUSTOM_NOPE": 1}}])
    assert isinstance(result, names.UnknownResourceClass)
    assert choices == 1


def test_a_provider_deleted_since_the_choice_is_chosen_again(engine, host):
    gone = str(uuid.uuid4())
    result, choices = _claim(engine, [{gone: {"VCPU": 1}}, {host: {"VCPU": 1}}])
    assert result == {host: {"VCPU": 1}}
    assert choices == 2


def test_capacity_taken_since_the_choice_is_chosen_again(engine, host):
    result, choices = _claim(engine, [{host: {"VCPU": 9}}, {host: {"VCPU": 8}}])
    assert result == {host: {"VCPU": 8}}
    assert choices == 2


def test_conflicts_every_time_end_in_a_concurrent_update(engine, host):
    result, choices = _claim(engine, [{host: {"VCPU": 9}}])
    assert isinstance(result, errors.Conflict)
    assert result.code == errors.CONCURRENT_UPDATE
    assert "Concurrent claims took every choice" in result.detail
    assert choices == CLAIM_ATTEMPTS


def test_a_retry_is_logged_and_recorded(engine, host, caplog):
    recorder = Recorder()
    with caplog.at_level(logging.WARNING, logger="placement.claiming"):
        result, _ = _claim(engine, [{host: {"VCPU": 9}}, {host: {"VCPU": 8}}], recorder)
    assert result == {host: {"VCPU": 8}}
    assert recorder.events == [("retried", "test"), ("granted", "test")]
    (warning,) = [r for r in caplog.records if r.name == "placement.claiming"]
    assert warning.levelno == logging.WARNING
    assert "lost a race on attempt 1 of 10" in warning.getMessage()


def test_refusals_are_recorded_and_the_last_conflict_is_no_retry(engine, host):
    recorder = Recorder()
    _claim(engine, [{host: {"CUSTOM_NOPE": 1}}], recorder)
    assert recorder.events == [("refused", "test")]
    recorder = Recorder()
    _claim(engine, [{host: {"VCPU": 9}}], recorder)
    retries = [("retried", "test")] * (CLAIM_ATTEMPTS - 1)
    assert recorder.events == [*retries, ("refused", "test")]
