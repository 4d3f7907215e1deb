"""gunicorn's arbiter hooks (``placement.worker_hooks``) on an application built here, as
the arbiter holds it with ``preload_app``: before a fork the copy is brought up to date
(whole the first time, then from the change log) and the device nodes built from it,
both frozen, no connection left open and nothing counted in the metrics; after it a
forked child drops the inherited pool; nothing happens without a preloaded application; a
database that fails is logged, never raised into the arbiter. Every backend. (The real
arbiter and its workers: ``test_one_copy_per_host``.)"""

import gc
import logging
import os
from types import SimpleNamespace
from unittest import mock

import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from placement import worker_hooks
from placement.candidates import summaries as summaries_module
from placement.group_resources import replica_nodes
from placement.services import Services
from tests import frozen
from tests.api.candidate_helpers import Providers
from tests.api.device_helpers import EIGHT_SWITCHES, import_node
from tests.api.group_resource_helpers import candidates, eight_gpu_node, sync


@pytest.fixture
def arbiter(api):
    """A stand-in for gunicorn's arbiter holding the test's application as preloaded."""
    yield SimpleNamespace(
        app=SimpleNamespace(callable=api.client.application),
        log=logging.getLogger("gunicorn.error"),
    )
    frozen.unfreeze()  # (the hook froze the test process's objects)


def _no_connection_open(services: Services) -> bool:
    pool = services.engine.pool
    return pool.checkedin() == 0 and pool.checkedout() == 0


def test_before_a_fork_the_copy_is_read_then_followed_and_no_connection_is_left(api, arbiter):
    services = api.services
    first = api.create_provider("first")["uuid"]
    api.set_inventory(first, VCPU=4)

    worker_hooks.pre_fork(arbiter, None)
    world = services.replica.world
    assert set(world.id_of_uuid) == {first}
    assert _no_connection_open(services)
    assert gc.get_freeze_count() > 0
    kept = world.providers[world.id_of_uuid[first]]

    second = api.create_provider("second")["uuid"]  # written after the arbiter loaded
    api.set_inventory(second, VCPU=2)
    worker_hooks.pre_fork(arbiter, None)
    world = services.replica.world
    assert set(world.id_of_uuid) == {first, second}
    assert world.providers[world.id_of_uuid[first]] is kept  # read from the log, not again
    assert _no_connection_open(services)


def test_before_a_fork_the_nodes_are_built_and_nothing_is_counted(api, arbiter, caplog):
    import_node(api, "gpu-node", EIGHT_SWITCHES)
    sync(api, "translator-node", eight_gpu_node())
    counted = api.get("/metrics").text
    with caplog.at_level(logging.INFO, logger="gunicorn.error"):
        worker_hooks.pre_fork(arbiter, None)
    assert "(1 device nodes, 1 translator nodes)" in caplog.text
    refreshes = "placement_replica_refresh_duration_seconds_count"
    assert _sample(api.get("/metrics").text, refreshes) == _sample(counted, refreshes)
    # A translator search after the fork takes the node the arbiter built.
    with mock.patch.object(replica_nodes, "build_nodes", side_effect=AssertionError("built")):
        assert candidates(api, {"gpu/0/cards": 1})["candidates"]


def _sample(exposition: str, name: str) -> float:
    (line,) = [line for line in exposition.splitlines() if line.startswith(name + " ")]
    return float(line.split()[1])


def _hosts(api) -> Providers:
    """Three hosts of a VCPU inventory, each with a NUMA child of CUSTOM_MEM."""
    hosts = Providers(api)
    api.put("/resource_classes/CUSTOM_MEM")
    for host in ("host1", "host2", "host3"):
        hosts.add(host, inventory={"VCPU": 4}, traits=("HW_CPU_X86_AVX",))
        hosts.add(f"{host}-numa", parent=host, inventory={"CUSTOM_MEM": 1024})
    return hosts


def _summaries_by_name(hosts: Providers, body: dict) -> dict:
    return {hosts.name[uuid]: summary for uuid, summary in body["provider_summaries"].items()}


@pytest.fixture
def ids_placed_however_sparse(monkeypatch):
    """Buffers written whatever the ids (a test database's sequences run far ahead of the
    few providers each test makes)."""
    monkeypatch.setattr(summaries_module, "IDS_ALWAYS_PLACED", 10**9)


def test_before_a_fork_every_trees_summaries_are_written_and_a_worker_writes_what_changed(
    api, arbiter, ids_placed_however_sparse
):
    """The summaries a fork inherits are read in place (one buffer); a tree changed since
    is written again, alone; a class renamed drops them all. Each answer as without."""
    hosts = _hosts(api)
    before = _summaries_by_name(hosts, hosts.get("resources=VCPU:1"))
    summaries = api.services.candidates.summaries
    assert len(summaries._text) == 3  # (written per tree, as each worker without a fork)

    placed = hosts.candidates("resources=VCPU:1&resources1=CUSTOM_MEM:1")
    assert len(placed) == 3

    worker_hooks.pre_fork(arbiter, None)
    assert not summaries._text
    after = hosts.get("resources=VCPU:1&limit=3")  # (a new request: no body kept for it)
    assert _summaries_by_name(hosts, after) == before and len(before) == 6
    assert not summaries._text  # read from the buffer written before the fork
    # The allocation requests' uuids, from the table written before the fork.
    assert hosts.candidates("resources=VCPU:1&resources1=CUSTOM_MEM:1&limit=3") == placed

    api.set_inventory(hosts.uuid["host2-numa"], CUSTOM_MEM=2048)
    # The next fork shares the same buffers (written again, the workers forked before
    # would each keep the old ones as their own memory).
    written, uuids = summaries._written, api.services.candidates.uuids._table
    worker_hooks.pre_fork(arbiter, None)
    assert summaries._written is written and api.services.candidates.uuids._table is uuids
    changed = _summaries_by_name(hosts, hosts.get("resources=VCPU:2"))
    assert changed["host2-numa"]["resources"]["CUSTOM_MEM"]["capacity"] == 2048
    assert {name: s for name, s in changed.items() if name != "host2-numa"} == {
        name: s for name, s in before.items() if name != "host2-numa"
    }
    world = api.services.replica.world
    assert set(summaries._text) == {world.id_of_uuid[hosts.uuid["host2"]]}

    renamed = api.put("/resource_classes/CUSTOM_MEM", json={"name": "CUSTOM_RAM"}, version="1.2")
    assert renamed.status_code == 200, renamed.json
    after_rename = _summaries_by_name(hosts, hosts.get("resources=VCPU:3"))
    assert set(after_rename["host1-numa"]["resources"]) == {"CUSTOM_RAM"}
    assert summaries._written is None


def test_a_provider_added_after_a_fork_is_named_by_its_own_uuid(
    api, arbiter, ids_placed_however_sparse
):
    """A provider deleted after the fork, another created (on SQLite, under the same id):
    the allocation requests and summaries name the new one."""
    hosts = _hosts(api)
    gone = hosts.add("host4", inventory={"VCPU": 8})
    worker_hooks.pre_fork(arbiter, None)
    assert api.delete(f"/resource_providers/{gone}").status_code == 204
    new = hosts.add("host5", inventory={"VCPU": 8})
    body = hosts.get("resources=VCPU:8")
    assert [list(request["allocations"]) for request in body["allocation_requests"]] == [[new]]
    assert list(body["provider_summaries"]) == [new]


def test_summaries_of_root_ids_too_sparse_are_written_when_asked_for(api, arbiter, monkeypatch):
    hosts = _hosts(api)
    monkeypatch.setattr(summaries_module, "_IDS_PER_TREE_AT_MOST", 0)
    monkeypatch.setattr(summaries_module, "IDS_ALWAYS_PLACED", 0)
    worker_hooks.pre_fork(arbiter, None)
    summaries = api.services.candidates.summaries
    assert summaries._written is None
    body = hosts.get("resources=VCPU:1")
    assert len(_summaries_by_name(hosts, body)) == 6 and len(summaries._text) == 3


def test_a_log_pruned_past_the_copy_reads_every_version_again_before_a_fork(api, arbiter):
    services = api.services
    kept = api.create_provider("kept")["uuid"]
    worker_hooks.pre_fork(arbiter, None)
    gone = api.create_provider("gone")["uuid"]
    added = api.create_provider("added")["uuid"]
    assert api.delete(f"/resource_providers/{gone}").status_code == 204
    with services.engine.begin() as conn:
        conn.execute(text("UPDATE provider_changes_state SET pruned_below = :far"), {"far": 2**62})

    worker_hooks.pre_fork(arbiter, None)
    assert set(services.replica.world.id_of_uuid) == {kept, added}
    assert _no_connection_open(services)


def test_after_a_fork_the_child_drops_the_inherited_pool(api):
    """A real fork, with a connection of the parent's in the pool: the child's engine has
    a pool of its own, and the parent's connection still answers the parent."""
    services = api.services
    assert api.get("/resource_providers").status_code == 200  # a connection pooled
    inherited = services.engine.pool
    reading, writing = os.pipe()
    child = os.fork()
    if child == 0:  # (the child reports and leaves at once, whatever happens)
        try:
            os.write(writing, b"own pool" if services.engine.pool is not inherited else b"same")
        finally:
            os._exit(0)
    os.close(writing)
    os.waitpid(child, 0)
    with os.fdopen(reading, "rb") as report:
        assert report.read() == b"own pool"
    assert services.engine.pool is inherited
    assert api.get("/resource_providers").status_code == 200


def test_a_database_error_before_a_fork_is_logged_and_the_worker_started(
    api, arbiter, monkeypatch, caplog
):
    services = api.services

    def unreachable(self):
        with self.engine.connect():  # (a connection checked out, as a real read would)
            raise OperationalError("SELECT 1", {}, Exception("the server is gone"))

    monkeypatch.setattr(Services, "_build_for_the_workers", unreachable)
    with caplog.at_level(logging.ERROR, logger="gunicorn.error"):
        worker_hooks.pre_fork(arbiter, None)
    assert "could not be brought up to date" in caplog.text
    assert _no_connection_open(services)


def test_without_a_preloaded_application_the_hooks_do_nothing():
    arbiter = SimpleNamespace(app=SimpleNamespace(callable=None), log=None)
    frozen.unfreeze()
    assert worker_hooks.preloaded_services(arbiter) is None
    worker_hooks.pre_fork(arbiter, None)
    assert gc.get_freeze_count() == 0
