"""The Alembic migrations build exactly the schema that placement.db.tables describes."""

import uuid

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from placement.db import migrate
from placement.db.engine import make_engine
from placement.db.tables import metadata


@pytest.mark.parametrize("target", ["sqlite", "postgresql", "mysql"])
def test_models_match_migrations(target, empty_database_url):
    engine = make_engine(empty_database_url(target))
    migrate.upgrade(engine)
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        differences = compare_metadata(context, metadata)
    engine.dispose()
    assert differences == []


@pytest.mark.parametrize("target", ["sqlite", "postgresql", "mysql"])
def test_downgrade_then_upgrade_round_trips(target, empty_database_url):
    engine = make_engine(empty_database_url(target))
    migrate.upgrade(engine)
    assert migrate.current_revision(engine) == migrate.head_revision()
    from alembic import command

    config = migrate.alembic_config()
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, "base")
    assert migrate.current_revision(engine) is None
    migrate.upgrade(engine)
    assert migrate.current_revision(engine) == migrate.head_revision()
    engine.dispose()


@pytest.mark.parametrize("target", ["sqlite", "postgresql", "mysql"])
def test_device_nodes_imported_before_0006_get_the_device_node_trait(target, empty_database_url):
    """A device node's root is told by its trait from 0006 on; the device nodes already
    imported get it on upgrade (and a new revision, so running copies re-read them)."""
    from datetime import datetime

    from sqlalchemy import text

    engine = make_engine(empty_database_url(target))
    migrate.upgrade(engine, "0005")
    with engine.begin() as conn:
        for name in ("device-node", "plain-node"):
            conn.execute(
                text(
                    "INSERT INTO resource_providers (uuid, name, generation, created_at)"
                    " VALUES (:uuid, :name, 3, :now)"
                ),
                {"uuid": str(uuid.uuid4()), "name": name, "now": datetime.now()},
            )
        conn.execute(text("UPDATE resource_providers SET root_provider_id = id"))
        conn.execute(
            text(
                "INSERT INTO device_topologies (node_name, document, created_at)"
                " VALUES ('device-node', '{}', :now)"
            ),
            {"now": datetime.now()},
        )
    migrate.upgrade(engine)
    query = text(
        "SELECT rp.name, rp.generation, rp.revision FROM resource_providers rp"
        " JOIN resource_provider_traits rpt ON rpt.resource_provider_id = rp.id"
        " JOIN traits t ON t.id = rpt.trait_id"
        " WHERE t.name = 'CUSTOM_GROUP_RESOURCES_DEVICE_NODE'"
    )
    with engine.connect() as conn:
        assert [tuple(row) for row in conn.execute(query)] == [("device-node", 3, 1)]
    from alembic import command

    config = migrate.alembic_config()
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, "0005")
    with engine.connect() as conn:
        assert conn.execute(query).all() == []
    engine.dispose()


@pytest.mark.parametrize("target", ["sqlite", "postgresql", "mysql"])
def test_a_database_without_device_nodes_holds_only_the_standard_traits(target, empty_database_url):
    """As upstream's: no custom trait until something asks for one. The device node
    trait 0006 created goes again in 0010 where no provider carries it."""
    from sqlalchemy import text

    from placement.data.names import standard_traits

    engine = make_engine(empty_database_url(target))
    migrate.upgrade(engine)
    _write(engine, lambda conn: None)  # the standard names, as the service's start writes
    with engine.connect() as conn:
        names = sorted(conn.execute(text("SELECT name FROM traits")).scalars())
    assert [name for name in names if name.startswith("CUSTOM_")] == []
    assert names == sorted(standard_traits())
    engine.dispose()


@pytest.mark.parametrize("target", ["sqlite", "postgresql", "mysql"])
def test_device_nodes_keep_the_device_node_trait_through_0010(target, empty_database_url):
    from datetime import datetime

    from sqlalchemy import text

    engine = make_engine(empty_database_url(target))
    migrate.upgrade(engine, "0007")
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO resource_providers (uuid, name, generation, created_at)"
                " VALUES (:uuid, 'device-node', 1, :now)"
            ),
            {"uuid": str(uuid.uuid4()), "now": datetime.now()},
        )
        conn.execute(
            text(
                "INSERT INTO resource_provider_traits (resource_provider_id, trait_id, created_at)"
                " SELECT rp.id, t.id, :now FROM resource_providers rp, traits t"
                " WHERE t.name = 'CUSTOM_GROUP_RESOURCES_DEVICE_NODE'"
            ),
            {"now": datetime.now()},
        )
    migrate.upgrade(engine)
    with engine.connect() as conn:
        assert conn.execute(
            text(
                "SELECT rp.name FROM resource_providers rp"
                " JOIN resource_provider_traits rpt ON rpt.resource_provider_id = rp.id"
                " JOIN traits t ON t.id = rpt.trait_id"
                " WHERE t.name = 'CUSTOM_GROUP_RESOURCES_DEVICE_NODE'"
            )
        ).scalars().all() == ["device-node"]
    engine.dispose()


def _write(engine, work):
    from placement.data.names import sync_standard_names
    from placement.db.engine import WRITE_TRANSACTION_OPTION

    with engine.connect().execution_options(**{WRITE_TRANSACTION_OPTION: True}) as conn:
        with conn.begin():
            sync_standard_names(conn)
            return work(conn)


@pytest.mark.parametrize("target", ["sqlite", "postgresql", "mysql"])
def test_gpu_memory_imported_in_mib_before_0007_is_kept_in_kib(target, empty_database_url):
    """0007: a device node's GPU memory (inventories and allocations) moves from
    CUSTOM_GPU_MEMORY_MB to CUSTOM_GPU_MEMORY_KB, amounts times 1024; a plain
    translator node's is left alone; the result is what an import writes now, and
    searches and claims account the old allocations right. The downgrade converts back."""
    from sqlalchemy import text

    from placement.data import allocations as allocation_data
    from placement.data import device_topologies
    from placement.devices import importing, service
    from placement.devices.device_list import parse_device_list
    from placement.devices.node_map import device_layout
    from placement.devices.request import parse_device_request
    from placement.group_resources import sync as group_sync
    from placement.nodes.naming import Naming
    from placement.replica.replica import Replica

    naming = Naming()  # no level units: how 0006's import named and counted GPU memory
    topology = parse_device_list(
        {
            "devices": [
                {"type": "gpu", "minor": m, "numa": 0, "pcie": 0, "memory": "8Gi"} for m in (0, 1)
            ]
        }
    )
    engine = make_engine(empty_database_url(target))
    migrate.upgrade(engine, "0006")
    holder, plain_holder = str(uuid.uuid4()), str(uuid.uuid4())

    def import_before_0007(conn):
        layout = device_layout(topology)
        group_sync.sync_node(conn, "old", layout.resources, naming)
        importing._sync_traits(conn, "old", layout)
        device_topologies.store_document(conn, "old", topology.to_document())
        group_sync.sync_node(conn, "plain", {"gpu/0/memory": "8Gi"}, naming)
        uuids = dict(conn.execute(text("SELECT name, uuid FROM resource_providers")).all())
        # GPU1's memory inventory as an operator changed it through the generic API.
        conn.execute(
            text(
                "UPDATE inventories SET min_unit = 256, step_size = 256, reserved = 512"
                " WHERE resource_provider_id = (SELECT id FROM resource_providers"
                " WHERE name = 'old/numa/0/bridge/0/pcie/0/gpu/1')"
                " AND resource_class_id = (SELECT id FROM resource_classes"
                " WHERE name = 'CUSTOM_GPU_MEMORY_MB')"
            )
        )
        allocation_data.write_allocations(
            conn,
            [
                allocation_data.ConsumerWrite(
                    holder,
                    "p",
                    "u",
                    {
                        uuids["old/numa/0/bridge/0/pcie/0/gpu/0"]: {
                            "CUSTOM_GPU_CORE": 50,
                            "CUSTOM_GPU_MEMORY_MB": 4096,
                            "CUSTOM_GPU_MEMORY_RATIO": 50,
                            "CUSTOM_GPU_TENANCY": 1,
                        },
                        uuids["old/numa/0/bridge/0/pcie/0"]: {"CUSTOM_PCIE_GPU_TENANCY": 1},
                    },
                    generation=None,
                ),
                allocation_data.ConsumerWrite(
                    plain_holder,
                    "p",
                    "u",
                    {uuids["plain/gpu/0"]: {"CUSTOM_GPU_MEMORY_MB": 1024}},
                    generation=None,
                ),
            ],
        )

    _write(engine, import_before_0007)
    inventory_query = text(
        "SELECT rp.name, rc.name, i.total, i.reserved, i.min_unit, i.max_unit, i.step_size,"
        " rp.generation FROM inventories i"
        " JOIN resource_providers rp ON rp.id = i.resource_provider_id"
        " JOIN resource_classes rc ON rc.id = i.resource_class_id"
        " WHERE rc.name IN ('CUSTOM_GPU_MEMORY_MB', 'CUSTOM_GPU_MEMORY_KB') ORDER BY rp.name"
    )
    allocation_query = text(
        "SELECT c.uuid, rc.name, a.used FROM allocations a"
        " JOIN consumers c ON c.id = a.consumer_id"
        " JOIN resource_classes rc ON rc.id = a.resource_class_id"
        " WHERE rc.name IN ('CUSTOM_GPU_MEMORY_MB', 'CUSTOM_GPU_MEMORY_KB')"
    )
    with engine.connect() as conn:
        before = conn.execute(inventory_query).all()
        assert [tuple(row[:7]) for row in before] == [
            ("old/numa/0/bridge/0/pcie/0/gpu/0", "CUSTOM_GPU_MEMORY_MB", 8192, 0, 1, 8192, 1),
            ("old/numa/0/bridge/0/pcie/0/gpu/1", "CUSTOM_GPU_MEMORY_MB", 8192, 512, 256, 8192, 256),
            ("plain/gpu/0", "CUSTOM_GPU_MEMORY_MB", 8192, 0, 1, 8192, 1),
        ]
    migrate.upgrade(engine)
    with engine.connect() as conn:
        after = conn.execute(inventory_query).all()
        assert [tuple(row[:7]) for row in after] == [
            ("old/numa/0/bridge/0/pcie/0/gpu/0", "CUSTOM_GPU_MEMORY_KB", 8388608, 0, 1, 8388608, 1),
            (
                "old/numa/0/bridge/0/pcie/0/gpu/1",
                "CUSTOM_GPU_MEMORY_KB",
                8388608,
                524288,
                262144,
                8388608,
                262144,
            ),
            ("plain/gpu/0", "CUSTOM_GPU_MEMORY_MB", 8192, 0, 1, 8192, 1),
        ]
        # The device providers' generations moved, the plain node's did not.
        assert [a[7] - b[7] for a, b in zip(after, before, strict=True)] == [1, 1, 0]
        assert sorted(conn.execute(allocation_query).all()) == sorted(
            [
                (holder, "CUSTOM_GPU_MEMORY_KB", 4194304),
                (plain_holder, "CUSTOM_GPU_MEMORY_MB", 1024),
            ]
        )

    def read_after_0007(conn):
        search = service.DeviceSearch(Replica())
        view = search.node_view(conn, naming, "old")
        assert view["devices"][0]["memory"] == "8192Mi"
        assert view["devices"][0]["inventories"]["memory"] == {"total": 8388608, "used": 4194304}
        # What the migration left is what an import writes now.
        importing.import_node(conn, "fresh", topology, naming)
        fresh = conn.execute(inventory_query).all()
        assert fresh[0][1:7] == after[0][1:7]  # fresh's GPU0 as old's
        # The old allocation is accounted in KiB: the other 4 GiB of GPU0 fit it, pack
        # puts them there; more does not fit and goes to GPU1 (in its operator's steps).
        for memory, minor in (("4Gi", 0), ("4352Mi", 1)):
            request = parse_device_request(
                {"kubernetes.io/gpu-core": 50, "kubernetes.io/gpu-memory": memory}, {}, naming
            )
            answer = search.find_candidates(conn, request, naming, node_names=["old"])
            assert [
                d.device.minor
                for d in (
                    answer.candidates[0].node.devices[i] for i, _ in answer.candidates[0].pick.takes
                )
            ] == [minor]
        search.claim(
            conn,
            parse_device_request(
                {"kubernetes.io/gpu-core": 50, "kubernetes.io/gpu-memory": "4Gi"}, {}, naming
            ),
            naming,
            str(uuid.uuid4()),
            "p",
            "u",
            node_names=["old"],
        )
        view = search.node_view(conn, naming, "old")
        assert view["devices"][0]["inventories"]["memory"] == {"total": 8388608, "used": 8388608}
        importing.delete_node(conn, "fresh")

    _write(engine, read_after_0007)
    from alembic import command

    config = migrate.alembic_config()
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, "0006")
    with engine.connect() as conn:
        assert [tuple(row[:7]) for row in conn.execute(inventory_query).all()] == [
            tuple(row[:7]) for row in before
        ]
        assert sorted(conn.execute(allocation_query).all()) == sorted(
            [
                (holder, "CUSTOM_GPU_MEMORY_MB", 4096),
                (plain_holder, "CUSTOM_GPU_MEMORY_MB", 1024),
            ]
            + [
                (row[0], "CUSTOM_GPU_MEMORY_MB", 4096)
                for row in conn.execute(
                    text("SELECT c.uuid FROM consumers c WHERE c.uuid NOT IN (:a, :b)"),
                    {"a": holder, "b": plain_holder},
                ).all()
            ]
        )
    engine.dispose()


@pytest.mark.parametrize(
    ("stop_at", "statement"),
    [("0001", "create_index"), ("0003", "create_index"), ("0008", "execute")],
)
def test_a_migration_stopped_halfway_on_mysql_runs_again_to_the_end(
    stop_at, statement, empty_database_url, monkeypatch
):
    """MySQL commits each DDL statement at once: a revision that fails after its first
    statements leaves them behind, and Alembic still records the revision before it.
    Run again, it skips what is there and finishes; the schema is then exactly the
    models'. (Each revision is stopped at its last ``statement``, after the others.)"""
    from alembic.operations import Operations

    before = {"0001": None, "0003": "0002", "0008": "0007"}[stop_at]
    real = getattr(Operations, statement)
    calls = {"n": 0, "fail_at": None}

    def counted(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == calls["fail_at"]:
            raise RuntimeError("killed halfway")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Operations, statement, counted)
    engines = [make_engine(empty_database_url("mysql")) for _ in range(2)]
    for engine in engines:
        if before:
            migrate.upgrade(engine, before)
    counting, engine = engines
    calls["n"] = 0
    migrate.upgrade(counting, stop_at)  # how many such statements the revision runs
    assert calls["n"] >= 1
    calls["n"], calls["fail_at"] = 0, calls["n"]
    with pytest.raises(RuntimeError, match="killed halfway"):
        migrate.upgrade(engine, stop_at)
    calls["fail_at"] = None
    assert migrate.current_revision(engine) == before
    migrate.upgrade(engine)
    assert migrate.current_revision(engine) == migrate.head_revision()
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        assert compare_metadata(context, metadata) == []
        triggers = {row[0] for row in conn.exec_driver_sql("SHOW TRIGGERS")}
        state = conn.exec_driver_sql("SELECT COUNT(*) FROM provider_changes_state").scalar()
    assert {
        "resource_providers_inserted",
        "resource_providers_updated",
        "resource_providers_deleted",
    } <= triggers
    assert state == 1
    for each in engines:
        each.dispose()
