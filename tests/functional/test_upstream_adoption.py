"""Taking over a cloud's database from upstream openstack-placement 16.0.0, and giving
it back: on each backend, with upstream itself writing and reading the database.

The story: upstream fills a database through its API; everything is read through its
API; ``placement db upgrade`` (given upstream's configuration file) adopts it; this
service answers every read as upstream did, and takes Nova's cached generations;
it writes more; ``placement db return-to-upstream`` gives it back, and upstream
answers every read as this service did, passes its own upgrade check, and writes.
"""

import re

import pytest
import sqlalchemy as sa

from placement.app import create_app
from placement.cli import main as cli
from placement.config import Config
from placement.db import adopt, migrate, rebuild
from placement.db.engine import make_engine
from placement.db.survey import survey
from placement.db.upstream_schema import UPSTREAM_HEAD, UPSTREAM_TABLES
from tests.conftest import BACKENDS, Api
from tests.functional.upstream_cloud import HttpClient, differences, fill, reads
from tests.upstream import require_upstream, upstream_command, upstream_server, upstream_url

pytestmark = pytest.mark.parametrize("backend", BACKENDS)


@pytest.fixture
def upstream_database(backend, empty_database_url, tmp_path):
    """A new database at upstream's head, made by upstream's own ``db sync``; its URL,
    and the configuration file upstream and this service both read (upstream's URL: with
    psycopg2 on PostgreSQL, which this service reads as psycopg 3)."""
    require_upstream()
    url = empty_database_url(backend)
    if backend == "mysql":
        # As the clouds that upstream has served for years keep it: 3-byte utf8.
        _execute(url, "ALTER DATABASE CHARACTER SET utf8mb3 COLLATE utf8mb3_general_ci")
    config = tmp_path / "placement.conf"
    config.write_text(f"[placement_database]\nconnection = {upstream_url(url)}\n")
    synced = upstream_command(
        "placement-manage", "--config-file", str(config), "db", "sync", cwd=tmp_path
    )
    assert synced.returncode == 0, synced.stderr
    return url, config


def _placement(config, *command) -> int:
    return cli.main(["--config-file", str(config), *command])


def _ours(url: str) -> tuple[Api, sa.Engine]:
    engine = make_engine(url)
    return Api(create_app(Config(database_url=url), engine=engine).test_client()), engine


def _kind(url: str) -> str:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return survey(conn).kind
    finally:
        engine.dispose()


def test_a_cloud_moves_over_and_back(upstream_database, tmp_path, capsys):
    url, config = upstream_database
    with upstream_server(tmp_path, database_url=url) as base:
        upstream = Api(HttpClient(base))
        cloud = fill(upstream)
        before = reads(upstream, cloud.consumers)
        numa = cloud.providers["cn2-numa0"]
        nova_generation = upstream.generation(numa)
        instance = cloud.consumers[-1]
        held = upstream.get(f"/allocations/{instance}").json
    assert len(before) > 100

    assert _placement(config, "db", "upgrade") == 0
    said = capsys.readouterr().out
    assert "upstream openstack-placement's database" in said
    assert f"database at revision {migrate.head_revision()}" in said
    ours, engine = _ours(url)
    try:
        assert differences(before, reads(ours, cloud.consumers)) == []
        # Nova's next writes with the generations it holds succeed.
        inventory = {
            "resource_provider_generation": nova_generation,
            "inventories": {"VCPU": {"total": 12}, "MEMORY_MB": {"total": 4096}},
        }
        answer = ours.put(f"/resource_providers/{numa}/inventories", json=inventory)
        assert answer.status_code == 200, answer.json
        resized = {
            "allocations": {numa: {"resources": {"VCPU": 2, "MEMORY_MB": 512}}},
            "project_id": held["project_id"],
            "user_id": held["user_id"],
            "consumer_generation": held["consumer_generation"],
            "consumer_type": "INSTANCE",
        }
        answer = ours.put(f"/allocations/{instance}", json=resized)
        assert answer.status_code == 204, answer.json
        # New classes, traits, providers and consumers made here.
        assert ours.put("/resource_classes/CUSTOM_MADE_HERE").status_code == 201
        new = ours.create_provider("made-here")["uuid"]
        ours.set_inventory(new, VCPU=4, CUSTOM_MADE_HERE=2)
        ours.set_traits(new, "CUSTOM_HERE", "HW_CPU_X86_AVX2")
        consumer = "c0ffee00-0000-0000-0000-000000000001"
        assert (
            ours.allocate(
                consumer, {new: {"VCPU": 1, "CUSTOM_MADE_HERE": 1}}, project="project-1"
            ).status_code
            == 204
        )
        consumers = [*cloud.consumers, consumer]
        written_here = reads(ours, consumers)
    finally:
        engine.dispose()

    assert _placement(config, "db", "return-to-upstream") == 0
    assert f"revision {UPSTREAM_HEAD}" in capsys.readouterr().out
    checked = upstream_command(
        "placement-status", "--config-file", str(config), "upgrade", "check", cwd=tmp_path
    )
    assert checked.returncode == 0, (checked.stdout, checked.stderr)
    with upstream_server(tmp_path, database_url=url) as base:
        upstream = Api(HttpClient(base))
        assert differences(reads(upstream, consumers), written_here) == []
        # Upstream writes again: a custom class takes an id of its own, Nova's
        # generations go on.
        assert upstream.put("/resource_classes/CUSTOM_BACK_AGAIN").status_code == 201
        upstream.set_inventory(new, VCPU=4, CUSTOM_MADE_HERE=2, CUSTOM_BACK_AGAIN=1)
        assert upstream.delete(f"/allocations/{consumer}").status_code == 204
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            classes = dict(conn.execute(sa.text("SELECT name, id FROM resource_classes")).all())
    finally:
        engine.dispose()
    assert classes["VCPU"] == 0 and classes["MEMORY_MB"] == 1
    assert min(classes["CUSTOM_FPGA"], classes["CUSTOM_MADE_HERE"]) >= 10000
    assert classes["CUSTOM_BACK_AGAIN"] == max(classes.values())


OTHER_BACKEND = {"sqlite": "postgresql", "postgresql": "mysql", "mysql": "sqlite"}


def test_a_copy_of_upstreams_database_is_adopted_and_the_source_kept(
    upstream_database, backend, empty_database_url, tmp_path, capsys
):
    """``placement db copy`` from upstream's schema: to another backend, checked table by
    table, then adopted; the source stays upstream's."""
    url, config = upstream_database
    with upstream_server(tmp_path, database_url=url) as base:
        upstream = Api(HttpClient(base))
        cloud = fill(upstream)
        before = reads(upstream, cloud.consumers)
    target = empty_database_url(OTHER_BACKEND[backend])
    assert _placement(config, "db", "copy", "--from", url, "--to", target) == 0
    said = capsys.readouterr().out
    assert "the copy is the same as its source" in said and "adopted" in said
    assert (_kind(url), _kind(target)) == ("upstream", "ours")
    ours, engine = _ours(target)
    try:
        assert differences(before, reads(ours, cloud.consumers)) == []
    finally:
        engine.dispose()


def _execute(url: str, *statements: str) -> None:
    engine = make_engine(url)
    try:
        with engine.begin() as conn:
            for statement in statements:
                conn.execute(sa.text(statement))
    finally:
        engine.dispose()


def _rows(url: str) -> dict[str, int]:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return {
                name: conn.execute(sa.text(f"SELECT COUNT(*) FROM {name}")).scalar_one()
                for name in UPSTREAM_TABLES
            }
    finally:
        engine.dispose()


UUIDS = [f"{n:08d}-0000-0000-0000-000000000000" for n in range(4)]
PROVIDER = (
    "INSERT INTO resource_providers (id, uuid, name, generation, root_provider_id,"
    " created_at) VALUES ({id}, '{uuid}', {name}, {generation}, {root}, {created})"
)


def test_rows_upstream_refuses_are_refused_and_nothing_changes(upstream_database, capsys):
    url, config = upstream_database
    _execute(
        url,
        PROVIDER.format(id=1, uuid=UUIDS[0], name="'a'", generation=0, root="NULL", created="NULL"),
        "INSERT INTO allocations (resource_provider_id, consumer_id, resource_class_id, used)"
        f" VALUES (1, '{UUIDS[1]}', 0, 1)",
    )
    rows = _rows(url)
    assert _placement(config, "db", "upgrade") == 2
    said = capsys.readouterr().err
    assert "1 allocations whose consumer does not exist" in said
    assert "1 resource providers without a root provider" in said
    assert "online_data_migrations" in said
    assert "nothing was changed" in said
    assert _kind(url) == "upstream" and _rows(url) == rows


def test_an_older_upstream_revision_is_sent_to_upstreams_sync(upstream_database, capsys):
    url, config = upstream_database
    _execute(url, "UPDATE alembic_version SET version_num = '422ece571366'")
    assert _placement(config, "db", "upgrade") == 2
    assert "run upstream's 'placement-manage db sync' first" in capsys.readouterr().err
    assert _kind(url) == "upstream-older"
    # The service itself refuses to serve it, naming what to do.
    assert _placement(config, "serve") == 2
    assert "openstack-placement's" in capsys.readouterr().err


def test_upstreams_tables_without_a_revision_are_sent_to_upstreams_stamp(upstream_database, capsys):
    url, config = upstream_database
    _execute(url, "DELETE FROM alembic_version")
    assert _placement(config, "db", "upgrade") == 2
    assert "placement-manage db stamp" in capsys.readouterr().err
    assert _kind(url) == "upstream-unversioned"


def test_this_services_first_revision_stopped_halfway_is_finished(
    backend, empty_database_url, tmp_path
):
    """MySQL commits each DDL statement: a first ``db upgrade`` killed during revision
    0001 leaves some of its tables and no revision. It is this service's, not upstream's:
    the next run finishes it."""
    url = empty_database_url(backend)
    engine = make_engine(url)
    try:
        migrate.upgrade(engine, "0001")
        with engine.begin() as conn:
            conn.execute(sa.text("DELETE FROM alembic_version"))
            conn.execute(sa.text("DROP TABLE allocations"))
    finally:
        engine.dispose()
    config = tmp_path / "placement.conf"
    config.write_text(f"[placement_database]\nconnection = {url}\n")
    assert _kind(url) == "ours"
    assert _placement(config, "db", "upgrade") == 0
    assert _kind(url) == "ours" and _revision(url) == migrate.head_revision()


def _revision(url: str) -> str | None:
    engine = make_engine(url)
    try:
        return migrate.current_revision(engine)
    finally:
        engine.dispose()


def test_what_upstream_left_null_is_settled_and_said(upstream_database, capsys):
    url, config = upstream_database
    _execute(
        url,
        PROVIDER.format(
            id=7, uuid=UUIDS[2], name="NULL", generation="NULL", root=7, created="NULL"
        ),
        PROVIDER.format(
            id=8,
            uuid=UUIDS[3],
            name="'named'",
            generation=4,
            root=7,
            created="'2019-05-01 10:00:00'",
        ),
        "UPDATE resource_providers SET parent_provider_id = 7 WHERE id = 8",
    )
    assert _placement(config, "db", "upgrade", "--dry-run") == 0
    said = capsys.readouterr().out
    assert "1 providers without a name take their uuid as name" in said
    assert "1 providers with no generation get generation 0" in said
    assert "1 rows without a creation time" in said
    assert _kind(url) == "upstream"
    assert _placement(config, "db", "upgrade") == 0
    ours, engine = _ours(url)
    try:
        nameless = ours.get(f"/resource_providers/{UUIDS[2]}").json
        assert (nameless["name"], nameless["generation"]) == (UUIDS[2], 0)
        child = ours.get(f"/resource_providers/{UUIDS[3]}", version="1.15")
        assert child.json["parent_provider_uuid"] == UUIDS[2]
        assert child.headers["Last-Modified"] == "Wed, 01 May 2019 10:00:00 GMT"
    finally:
        engine.dispose()


def test_an_adoption_stopped_halfway_is_done_again(upstream_database, monkeypatch, capsys):
    """A failure after upstream's tables moved aside: PostgreSQL and SQLite roll it all
    back; MySQL has committed the DDL, and the next run puts them back and starts over."""
    url, config = upstream_database
    _execute(
        url,
        PROVIDER.format(
            id=3, uuid=UUIDS[0], name="'cn'", generation=2, root=3, created="'2020-01-01 00:00:00'"
        ),
    )

    def broken(*args):
        raise RuntimeError("the process stops here")

    engine = make_engine(url)
    with monkeypatch.context() as patched:
        patched.setattr(rebuild, "link_providers", broken)
        with pytest.raises(RuntimeError):
            adopt.adopt(engine)
    engine.dispose()
    halfway = _kind(url)
    assert halfway == ("adopting" if url.startswith("mysql") else "upstream")
    assert _placement(config, "db", "upgrade") == 0
    said = capsys.readouterr().out
    assert ("put back first" in said) == (halfway == "adopting")
    ours, engine = _ours(url)
    try:
        provider = ours.get(f"/resource_providers/{UUIDS[0]}").json
        assert (provider["name"], provider["generation"]) == ("cn", 2)
    finally:
        engine.dispose()
    assert _kind(url) == "ours"


def test_the_schema_given_back_is_upstreams(upstream_database):
    """Tables, columns, keys, unique constraints and indexes, by name, as upstream's own
    migrations make them (MySQL: but for the collation, which stays binary: names that
    differ only in case, distinct here, stay distinct)."""
    url, config = upstream_database
    expected = _schema(url)
    assert _placement(config, "db", "upgrade") == 0
    assert _kind(url) == "ours"
    assert _placement(config, "db", "return-to-upstream") == 0
    assert _schema(url) == expected


def test_what_upstream_has_no_place_for_goes_back_only_when_the_operator_says(
    upstream_database, capsys
):
    """A network's levels and domains (gangs) have no table upstream: refused, nothing
    changed, unless ``--discard-extensions``."""
    url, config = upstream_database
    assert _placement(config, "db", "upgrade") == 0
    ours, engine = _ours(url)
    try:
        network = {"levels": ["spine", "leaf"], "nodes": {"n1": {"spine": "s0", "leaf": "l0"}}}
        assert ours.put("/group_resources/network", json=network).status_code == 200
    finally:
        engine.dispose()
    capsys.readouterr()
    assert _placement(config, "db", "return-to-upstream") == 2
    said = capsys.readouterr().err
    assert (
        "2 network levels, 1 nodes placed in the network" in said and "--discard-extensions" in said
    )
    assert _kind(url) == "ours"
    assert _placement(config, "db", "return-to-upstream", "--discard-extensions") == 0
    assert _kind(url) == "upstream"


def _schema(url: str) -> dict:
    engine = make_engine(url)
    try:
        found = sa.inspect(engine)
        return {
            table: {
                "columns": [
                    (c["name"], _type(c["type"]), c["nullable"]) for c in found.get_columns(table)
                ],
                "primary key": found.get_pk_constraint(table)["constrained_columns"],
                "unique": sorted(
                    (u["name"], tuple(u["column_names"]))
                    for u in found.get_unique_constraints(table)
                ),
                "indexes": sorted(
                    (i["name"], tuple(i["column_names"]))
                    for i in found.get_indexes(table)
                    if not i.get("unique")
                ),
                "foreign keys": sorted(
                    (tuple(f["constrained_columns"]), f["referred_table"])
                    for f in found.get_foreign_keys(table)
                ),
            }
            for table in sorted(found.get_table_names())
        }
    finally:
        engine.dispose()


def _type(column_type) -> str:
    """The type as both sides spell it, without a collation or display width."""
    return re.sub(r" COLLATE.*", "", str(column_type.compile()))
