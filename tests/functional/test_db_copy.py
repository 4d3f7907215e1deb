"""``placement db copy``: a whole database into an empty one of another backend, the
same through the API afterwards, and writable (ids go on after the copied ones)."""

import pytest
import sqlalchemy as sa

from placement.app import create_app
from placement.cli import main as cli
from placement.config import Config
from placement.db import copy, migrate
from placement.db.engine import make_engine
from tests.conftest import Api

AGGREGATE = "aaaaaaaa-0000-0000-0000-000000000001"
READS = [
    "/resource_providers",
    "/resource_classes",
    "/traits?name=startswith:CUSTOM_",
    "/usages?project_id=p1",
    "/usages?project_id=p2",
    "/allocation_candidates?resources=VCPU:1,CUSTOM_FPGA:1",
    "/allocation_candidates?resources=VCPU:1&member_of=" + AGGREGATE,
    "/group_resources/device_nodes",
]


@pytest.fixture
def engine_of(empty_database_url):
    """A maker of engines on new databases of a backend, disposed of afterwards."""
    made: list[sa.Engine] = []

    def make(backend: str) -> sa.Engine:
        made.append(make_engine(empty_database_url(backend)))
        return made[-1]

    yield make
    for engine in made:
        engine.dispose()


def _url(engine: sa.Engine) -> str:
    return engine.url.render_as_string(hide_password=False)


def _api(engine: sa.Engine) -> Api:
    return Api(create_app(Config(database_url=_url(engine)), engine=engine).test_client())


def _fill(api: Api) -> dict:
    """A tree, a second root, custom classes and traits, an aggregate, consumers of two
    types and projects, a device node."""
    root = api.create_provider("cn1")["uuid"]
    child = api.create_provider("cn1-numa0", parent=root)["uuid"]
    other = api.create_provider("cn2")["uuid"]
    assert api.put("/resource_classes/CUSTOM_FPGA").status_code == 201
    api.set_inventory(root, VCPU=16, MEMORY_MB=4096)
    api.set_inventory(child, CUSTOM_FPGA=2)
    api.set_inventory(other, VCPU={"total": 8, "allocation_ratio": 1.5})
    api.set_traits(root, "CUSTOM_RACK1", "HW_CPU_X86_AVX2")
    api.set_aggregates(other, AGGREGATE)
    assert (
        api.allocate(
            "11111111-0000-0000-0000-000000000001",
            {root: {"VCPU": 2}, child: {"CUSTOM_FPGA": 1}},
            project="p1",
        ).status_code
        == 204
    )
    body = {
        "allocations": {other: {"resources": {"VCPU": 3}}},
        "project_id": "p2",
        "user_id": "u",
        "consumer_generation": None,
        "consumer_type": "MIGRATION",
    }
    assert (
        api.put("/allocations/22222222-0000-0000-0000-000000000002", json=body).status_code == 204
    )
    node = {"resources": {"cpu": 8, "Gpugrp0/0/gpu/dev0/cards": 1}}
    assert api.put("/group_resources/nodes/gpu-node-1", json=node).status_code in (200, 201)
    return {"root": root, "other": other}


def _reads(api: Api) -> dict:
    found = {path: api.get(path).json for path in READS}
    for path in (
        "/allocations/11111111-0000-0000-0000-000000000001",
        "/allocations/22222222-0000-0000-0000-000000000002",
    ):
        found[path] = api.get(path).json
    for provider in found["/resource_providers"]["resource_providers"]:
        for part in ("", "/inventories", "/usages", "/traits", "/aggregates", "/allocations"):
            path = f"/resource_providers/{provider['uuid']}{part}"
            found[path] = api.get(path).json
    return found


@pytest.mark.parametrize(
    ("source", "target"),
    [("sqlite", "mysql"), ("mysql", "postgresql"), ("postgresql", "sqlite")],
)
def test_a_copy_answers_as_its_source_and_takes_new_writes(source, target, engine_of, capsys):
    source_engine, target_engine = engine_of(source), engine_of(target)
    migrate.upgrade(source_engine)
    before = _api(source_engine)
    made = _fill(before)
    expected = _reads(before)
    assert cli.main(["db", "copy", "--from", _url(source_engine), "--to", _url(target_engine)]) == 0
    printed = capsys.readouterr().out
    assert "the copy is the same as its source" in printed
    assert "resource_providers" in printed and "DIFFERENT" not in printed
    after = _api(target_engine)
    assert _reads(after) == expected
    # Writable: new ids come after the copied ones, generations go on from the copy's.
    added = after.create_provider("cn3")["uuid"]
    assert after.put("/resource_classes/CUSTOM_NEW").status_code == 201
    assert after.set_inventory(added, VCPU=4)["resource_provider_generation"] == 1
    generation = after.generation(made["root"])
    assert generation == expected[f"/resource_providers/{made['root']}"]["generation"]
    assert (
        after.allocate(
            "33333333-0000-0000-0000-000000000003", {made["root"]: {"VCPU": 1}}, project="p1"
        ).status_code
        == 204
    )


def test_a_target_that_is_not_empty_is_refused_and_left_alone(engine_of):
    source, target = engine_of("sqlite"), engine_of("postgresql")
    migrate.upgrade(source)
    migrate.upgrade(target)
    _api(target).create_provider("kept")
    with pytest.raises(copy.CopyRefused, match="not empty"):
        copy.copy_database(source, target)
    with target.connect() as conn:
        names = conn.execute(sa.text("SELECT name FROM resource_providers")).scalars().all()
    assert names == ["kept"]


def test_a_source_not_at_the_latest_revision_is_refused(engine_of):
    source, target = engine_of("sqlite"), engine_of("mysql")
    migrate.upgrade(source, "0005")
    with pytest.raises(copy.CopyRefused, match="revision 0005"):
        copy.copy_database(source, target)
    assert sa.inspect(target).get_table_names() == []
