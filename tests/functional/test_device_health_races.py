"""An import marking a device unhealthy, racing claims: no claim lands on the device
after the import committed, on either database.

A claim chooses from what it read, then writes; an import committing in between
must not let the write land on a device it made unhealthy. The claim's write locks
its devices' rows, the import locks the rows of the devices whose health it
changes, and the claim reads the health again under its locks
(``placement.devices``): whichever commits first, the other sees it.
"""

import threading
import uuid

import pytest
import requests
from sqlalchemy import text

from placement.db import migrate
from placement.db.engine import make_engine
from placement.devices import importing, service
from placement.devices.device_list import parse_device_list
from placement.devices.request import parse_device_request
from placement.nodes.naming import Naming
from placement.replica.replica import Replica
from tests.functional.device_races import QUEUED_WRITERS, claim_with_a_write_between
from tests.functional.device_races import minors as _minors
from tests.functional.device_races import write as _write
from tests.functional.gunicorn import race, running_gunicorn

HEADERS = {"X-Auth-Token": "admin", "OpenStack-API-Version": "placement 1.39"}
NAMING = Naming()
PERCENT = 2
SHARE = {"kubernetes.io/gpu-core": PERCENT, "kubernetes.io/gpu-memory-ratio": PERCENT}
CLAIMERS = 30  # all fit on either GPU: GPU1 takes what GPU0 may no longer


def _two_gpus(unhealthy: bool = False) -> dict:
    devices = [{"type": "gpu", "minor": m, "numa": 0, "pcie": 0, "memory": "8Gi"} for m in (0, 1)]
    if unhealthy:
        devices[0]["health"] = False
    return {"devices": devices}


@pytest.mark.parametrize("target", ["postgresql", "sqlite", "mysql"])
def test_an_import_between_a_claims_choice_and_its_write(target, empty_database_url):
    """The claim chooses GPU0 (pack: it holds a share already); the import marking it
    unhealthy is started right then. PostgreSQL: the import commits before the claim
    writes, so the claim finds GPU0 unhealthy under its lock and chooses again: GPU1.
    SQLite: writers are serialized, so the import waits for the claim, which commits
    on GPU0 first; the import then commits and the allocation stays, visible."""
    engine = make_engine(empty_database_url(target))
    migrate.upgrade(engine)
    healthy, sick = parse_device_list(_two_gpus()), parse_device_list(_two_gpus(True))
    _write(engine, lambda conn: importing.import_node(conn, "n", healthy, NAMING))
    search = service.DeviceSearch(Replica())
    request = parse_device_request(SHARE, {}, NAMING)

    def claim(conn):
        return search.claim(conn, request, NAMING, str(uuid.uuid4()), "p", "u")

    assert _minors(_write(engine, claim)) == [0]
    importer = threading.Thread(
        target=_write, args=(engine, lambda conn: importing.import_node(conn, "n", sick, NAMING))
    )
    chosen, claimed = claim_with_a_write_between(engine, search, claim, importer, target)
    assert chosen == [[0]]
    assert _minors(claimed) == ([1] if target not in QUEUED_WRITERS else [0])
    view = _write(engine, lambda conn: search.node_view(conn, NAMING, "n"))
    gpu0 = view["devices"][0]
    assert gpu0["health"] is False
    used = gpu0["inventories"]["core"]["used"]
    assert used == PERCENT * (1 if target not in QUEUED_WRITERS else 2)
    assert _minors(_write(engine, claim)) == [1]
    engine.dispose()


@pytest.fixture(params=["postgresql", "sqlite", "mysql"])
def served(request, empty_database_url, tmp_path):
    url = empty_database_url(request.param)
    with running_gunicorn(url, tmp_path, workers=4) as base:
        yield base, url, request.param


RACES = 3  # on a busy machine the import may commit before any claim writes


@pytest.mark.slow
def test_claims_racing_an_import_never_land_on_the_device_after_it(served):
    """30 claims of 2 % and an import marking GPU0 unhealthy, released together. Every
    claim that wrote on GPU0 locked its row, and so did the import: in the log of
    provider changes (written under those locks, in their order), no write on GPU0
    follows the import's, and every share GPU0 holds was written before it. Raced
    again on another node while no claim reached GPU0 before the import (nothing
    to check the order of then)."""
    base, url, target = served
    for attempt in range(RACES):
        if _race_claims_and_an_import(base, url, target, f"n{attempt}"):
            return
    pytest.fail(f"in {RACES} races the import committed before every claim on GPU0")


def _race_claims_and_an_import(base: str, url: str, target: str, node: str) -> bool:
    """One race on a new node ``node``, checked; whether any claim landed on GPU0."""
    created = requests.put(
        f"{base}/group_resources/device_nodes/{node}", json=_two_gpus(), headers=HEADERS, timeout=60
    )
    assert created.status_code == 201, created.text
    gpu0, root = created.json()["devices"][0]["provider"], created.json()["uuid"]
    engine = make_engine(url)
    with engine.connect() as conn:
        ids = dict(
            conn.execute(
                text("SELECT uuid, id FROM resource_providers WHERE uuid IN (:gpu0, :root)"),
                {"gpu0": gpu0, "root": root},
            ).all()
        )
        setup_end = conn.execute(text("SELECT max(id) FROM provider_changes")).scalar()

    def claim():
        body = {
            "resources": SHARE,
            "consumer_uuid": str(uuid.uuid4()),
            "project_id": "p",
            "user_id": "u",
            "nodes": [node],  # (not the GPUs an earlier race left shares on)
        }
        return requests.post(
            f"{base}/group_resources/device_claims", json=body, headers=HEADERS, timeout=60
        )

    def mark_unhealthy():
        return requests.put(
            f"{base}/group_resources/device_nodes/{node}",
            json=_two_gpus(unhealthy=True),
            headers=HEADERS,
            timeout=60,
        )

    calls = [claim] * (CLAIMERS // 2) + [mark_unhealthy] + [claim] * (CLAIMERS - CLAIMERS // 2)
    responses = race(calls)
    imported = responses[CLAIMERS // 2]
    assert imported.status_code == 200, imported.text
    claims = responses[: CLAIMERS // 2] + responses[CLAIMERS // 2 + 1 :]
    assert {r.status_code for r in claims} <= {200, 409}, [r.text for r in claims]
    on_gpu0 = [r for r in claims if r.status_code == 200 and gpu0 in r.json()["allocations"]]
    with engine.connect() as conn:
        entries = conn.execute(
            text(
                "SELECT id, provider_id, transaction_id FROM provider_changes WHERE id > :after"
                " AND provider_id IN (:gpu0, :root) ORDER BY id"
            ),
            {"after": setup_end, "gpu0": ids[gpu0], "root": ids[root]},
        ).all()
    # The import is the only writer of the root since the setup (claims ask nothing of it):
    # its entries (the root's row, and each of its rows the import rewrote, migration 0009)
    # are all of one transaction.
    import_root = min(
        (entry for entry in entries if entry.provider_id == ids[root]), key=lambda e: e.id
    )
    gpu0_writes = [entry for entry in entries if entry.provider_id == ids[gpu0]]
    if target not in QUEUED_WRITERS:
        [import_gpu0] = [e for e in gpu0_writes if e.transaction_id == import_root.transaction_id]
    else:  # one writer at a time: the import's GPU0 write follows its root's
        import_gpu0 = next(e for e in gpu0_writes if e.id > import_root.id)
    before = [e for e in gpu0_writes if e.id < import_gpu0.id]
    after = [e for e in gpu0_writes if e.id > import_gpu0.id]
    assert after == []
    # Each claim on GPU0 logged its lock of GPU0's row; on SQLite, then one revision bump
    # per allocation row it wrote there (migration 0009). Elsewhere the rows move no
    # provider their transaction logged already (migration 0013).
    if not on_gpu0:  # the import first: GPU0 holds nothing, and nothing was written on it
        assert before == []
        engine.dispose()
        return False
    per_claim = 1
    if target == "sqlite":
        per_claim += len(on_gpu0[0].json()["allocations"][gpu0]["resources"])
    assert len(before) == per_claim * len(on_gpu0)
    view = requests.get(f"{base}/group_resources/device_nodes/{node}", headers=HEADERS).json()
    assert view["devices"][0]["health"] is False
    assert view["devices"][0]["inventories"]["core"]["used"] == PERCENT * len(on_gpu0)
    later = claim()
    assert later.status_code == 200, later.text
    assert gpu0 not in later.json()["allocations"]
    engine.dispose()
    return True
