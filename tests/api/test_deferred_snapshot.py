"""A search whose snapshot is deferred (``placement.db.snapshots``, PostgreSQL) answers as
of one moment, whatever commits between its check of the change log and its later reads.

The write below lands between the two, from another connection: a new trait, given to
a provider. Before it, the trait did not exist (upstream answers 400); after it, the
provider is a candidate. Checked against the copy as it was, and the trait read after
the write, the search would find the trait and no provider with it: an empty answer,
true at no moment. The request is run again in one snapshot instead.
"""

import pytest
import sqlalchemy as sa

from placement.data import provider_world
from placement.db import snapshots
from placement.db.tables import resource_provider_traits, resource_providers, traits

TRAIT = "CUSTOM_ARRIVES_DURING_THE_SEARCH"
QUERY = f"/allocation_candidates?resources=VCPU:1&required={TRAIT}"


# The snapshot is deferred on PostgreSQL only.
pytestmark = pytest.mark.parametrize("backend", ["postgresql"])


def _give_trait(engine, provider_uuid: str) -> None:
    with engine.begin() as conn:
        now = sa.func.now()
        trait_id = conn.execute(
            sa.insert(traits).values(name=TRAIT, created_at=now).returning(traits.c.id)
        ).scalar_one()
        provider_id = conn.execute(
            sa.select(resource_providers.c.id).where(resource_providers.c.uuid == provider_uuid)
        ).scalar_one()
        conn.execute(
            sa.insert(resource_provider_traits).values(
                resource_provider_id=provider_id, trait_id=trait_id, created_at=now
            )
        )


def test_a_write_between_the_check_and_a_later_read_runs_the_search_again(api, engine, monkeypatch):
    provider = api.create_provider("cn1")["uuid"]
    api.set_inventory(provider, VCPU=8)
    assert api.get("/allocation_candidates?resources=VCPU:1").status_code == 200  # the copy
    refused = api.get(QUERY)
    assert refused.status_code == 400, refused.json  # the trait does not exist yet

    checks: list[bool] = []
    moved: list[bool] = []
    real_changes_since = provider_world.changes_since
    real_open = snapshots.open_snapshot

    def changes_since(conn, since):
        deferred = snapshots.is_deferred(conn)
        changes = real_changes_since(conn, since)
        checks.append(deferred)
        if deferred and len(checks) == 1:
            _give_trait(engine, provider)  # commits after the check, before the next read
        return changes

    def open_snapshot(conn):
        try:
            real_open(conn)
        except snapshots.SnapshotMoved:
            moved.append(True)
            raise

    monkeypatch.setattr(provider_world, "changes_since", changes_since)
    monkeypatch.setattr(snapshots, "open_snapshot", open_snapshot)
    answer = api.get(QUERY)

    assert answer.status_code == 200, answer.json
    assert list(answer.json["provider_summaries"]) == [provider]
    assert moved == [True]
    assert _open_transactions(engine) == 0
    # the deferred check, its second run as the snapshot opened; then the request again,
    # its snapshot open from the start
    assert checks == [True, False, False]


def test_a_search_that_reads_nothing_more_opens_no_snapshot(api, engine, monkeypatch):
    provider = api.create_provider("cn1")["uuid"]
    api.set_inventory(provider, VCPU=8)
    assert api.get("/allocation_candidates?resources=VCPU:1").status_code == 200
    opened: list[bool] = []
    real_open = snapshots.open_snapshot

    def open_snapshot(conn):
        opened.append(snapshots.is_deferred(conn))
        real_open(conn)

    monkeypatch.setattr(snapshots, "open_snapshot", open_snapshot)
    assert api.get("/allocation_candidates?resources=VCPU:1").status_code == 200
    assert opened == []
    api.set_inventory(provider, VCPU=16)  # a change: the copy reads it in a snapshot
    answer = api.get("/allocation_candidates?resources=VCPU:1")
    assert answer.json["provider_summaries"][provider]["resources"]["VCPU"]["capacity"] == 16
    assert opened == [True]
    assert _open_transactions(engine) == 0  # the snapshot ended with its request


def _open_transactions(engine) -> int:
    with engine.connect() as conn:
        return conn.execute(
            sa.text(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE datname = current_database() AND state LIKE 'idle in transaction%'"
            )
        ).scalar_one()
