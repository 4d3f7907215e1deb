"""How the process's copy of the providers keeps a large cloud small and quick (both
databases).

A full read goes a chunk of providers at a time (``ProviderWorld.read_chunk``);
equal inventories, traits and aggregates are one object, never changed in place;
a search that read many providers freezes them out of the cyclic collector's way;
the trees with every class of a set are kept in order until a tree gains or loses
a class (``ProviderWorld.roots_having``).
"""

import gc

from sqlalchemy import text

from placement.data import names
from placement.db.tables import traits
from placement.replica.replica import Replica
from placement.replica.world import ProviderWorld
from tests.functional.test_provider_change_log import (
    Reads,
    add_provider,
    refresh,
    remove_provider,
    set_vcpu,
    vcpu_total,
)


def add_trait(conn, provider_id: int, trait: str) -> None:
    if trait not in names.ids_by_name(conn, traits, [trait]):
        names.create_name(conn, traits, trait)
    conn.execute(
        text(
            "INSERT INTO resource_provider_traits (resource_provider_id, trait_id, created_at)"
            " SELECT :id, id, CURRENT_TIMESTAMP FROM traits WHERE name = :name"
        ),
        {"id": provider_id, "name": trait},
    )
    bump_generation(conn, provider_id)


def bump_generation(conn, provider_id: int) -> None:
    """What the data layer does after every write of a provider's inventories or traits."""
    conn.execute(
        text("UPDATE resource_providers SET generation = generation + 1 WHERE id = :id"),
        {"id": provider_id},
    )


def seen(world: ProviderWorld) -> dict:
    """What a search reads of each provider, by uuid."""
    return {
        provider.uuid: (
            provider.name,
            provider.parent_id,
            provider.root_id,
            dict(provider.inventories),
            provider.traits,
            provider.aggregates,
            provider.trait_ids_by_name,
            provider.aggregate_uuids,
        )
        for provider in world.providers.values()
    }


def test_a_full_read_in_chunks_reads_what_one_read_does(engine, monkeypatch):
    with engine.begin() as conn:
        ids = [add_provider(conn, f"chunked{i}", 4 + i % 3) for i in range(7)]
        add_trait(conn, ids[2], "CUSTOM_CHUNKED")
        add_trait(conn, ids[5], "CUSTOM_CHUNKED")
    whole = ProviderWorld()
    refresh(whole, engine)
    reads = Reads(monkeypatch)
    chunked = ProviderWorld(read_chunk=3)
    refresh(chunked, engine)
    assert reads.full_reads == 1
    # Three reads of consecutive ids: 3, 3 and 1 of the providers.
    assert [len(read) for read in reads.details] == [3, 3, 1]
    assert sorted(set().union(*reads.details)) == sorted(chunked.providers)
    assert seen(chunked) == seen(whole)
    assert set(chunked.trees) == set(whole.trees)
    assert {r: f.frees for r, f in chunked.form_of_tree.items()} == {
        r: f.frees for r, f in whole.form_of_tree.items()
    }


def test_equal_providers_share_their_tables_and_a_write_changes_only_its_own(engine):
    with engine.begin() as conn:
        first, second = (add_provider(conn, f"alike{i}", 8) for i in range(2))
        add_trait(conn, first, "CUSTOM_ALIKE")
        add_trait(conn, second, "CUSTOM_ALIKE")
    world = ProviderWorld()
    refresh(world, engine)
    one, other = world.providers[first], world.providers[second]
    assert one.inventories is other.inventories
    assert one.traits is other.traits
    assert one.trait_ids_by_name is other.trait_ids_by_name
    shared = one.inventories
    with engine.begin() as conn:
        set_vcpu(conn, second, 16)
    refresh(world, engine)
    assert vcpu_total(world, first) == 8 and vcpu_total(world, second) == 16
    assert world.providers[first].inventories is shared  # untouched, not rebuilt
    assert next(iter(shared.values())).capacity == 8  # and never changed in place
    with engine.begin() as conn:
        set_vcpu(conn, second, 8)
    refresh(world, engine)
    assert world.providers[second].inventories is shared  # alike again: shared again


def test_a_search_that_read_many_providers_freezes_the_collector(engine, monkeypatch):
    freezes = []
    monkeypatch.setattr(gc, "freeze", lambda: freezes.append(True))
    with engine.begin() as conn:
        for i in range(4):
            add_provider(conn, f"frozen{i}", 4)
    small = Replica(freeze_after=5)
    with engine.connect() as conn, conn.begin(), small.current(conn):
        pass
    assert freezes == []  # 4 read: below the mark
    large = Replica(freeze_after=4)
    with engine.connect() as conn, conn.begin(), large.current(conn):
        assert freezes == []  # after the search, not before
    assert freezes == [True]
    with engine.connect() as conn, conn.begin(), large.current(conn):
        pass  # warm: nothing read
    assert freezes == [True]


def test_the_trees_having_classes_change_with_the_classes_not_with_usage(engine):
    with engine.begin() as conn:
        first, second = (add_provider(conn, f"having{i}", 8) for i in range(2))
        vcpu = conn.execute(
            text("SELECT id FROM resource_classes WHERE name = 'VCPU'")
        ).scalar_one()
        disk = conn.execute(
            text("SELECT id FROM resource_classes WHERE name = 'DISK_GB'")
        ).scalar_one()
    world = ProviderWorld()
    refresh(world, engine)
    assert world.roots_having(frozenset({vcpu})) == [first, second]
    assert world.roots_having(frozenset({vcpu, disk})) == []
    with engine.begin() as conn:
        set_vcpu(conn, first, 4)  # amounts: the same trees
    refresh(world, engine)
    assert world.roots_having(frozenset({vcpu})) == [first, second]
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO inventories (resource_provider_id, resource_class_id, total,"
                " reserved, min_unit, max_unit, step_size, allocation_ratio, created_at)"
                " VALUES (:id, :disk, 10, 0, 1, 10, 1, 1.0, CURRENT_TIMESTAMP)"
            ),
            {"id": second, "disk": disk},
        )
        bump_generation(conn, second)
    refresh(world, engine)
    assert world.roots_having(frozenset({vcpu, disk})) == [second]
    assert world.roots_having(frozenset({vcpu})) == [first, second]
    with engine.begin() as conn:
        remove_provider(conn, first)
    refresh(world, engine)
    assert world.roots_having(frozenset({vcpu})) == [second]
