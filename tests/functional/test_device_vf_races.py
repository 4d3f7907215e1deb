"""Two claims of one named VF at the same moment, on either database: each VF listed one
by one is an inventory of 1 on its NIC, so placement's capacity check gives it once and
the claim that comes second chooses again (the next VF)."""

import threading
import uuid

import pytest

from placement.db import migrate
from placement.db.engine import make_engine
from placement.devices import importing, service
from placement.devices.device_list import parse_device_list
from placement.devices.request import parse_device_request
from placement.nodes.naming import Naming
from placement.replica.replica import Replica
from tests.functional.device_races import (
    QUEUED_WRITERS,
    claim_with_a_write_between,
    write,
)

NAMING = Naming()
NIC = {
    "devices": [
        {
            "type": "rdma",
            "minor": 0,
            "numa": 0,
            "pcie": 0,
            "vfGroups": [
                {
                    "labels": {"type": "fullmode"},
                    "vfs": [{"minor": m, "busID": f"0000:1f:00.{m + 2}"} for m in range(3)],
                }
            ],
        }
    ]
}
ONE_VF = (
    {"koordinator.sh/rdma": 1},
    {"scheduling.koordinator.sh/device-allocate-hint": {"rdma": {"vfSelector": {}}}},
)


def _vfs(candidate) -> list[int]:
    return sorted(
        vf.minor
        for index, amounts in candidate.pick.takes
        for vf in candidate.node.devices[index].device.vf_list
        if vf.base_name in dict(amounts)
    )


@pytest.mark.parametrize("target", ["postgresql", "sqlite", "mysql"])
def test_a_vf_claimed_between_a_claims_choice_and_its_write(target, empty_database_url):
    """The claim chooses VF0; another claim of VF0 is started right then. PostgreSQL: it
    commits first, and the claim, refused by the capacity check, takes VF1. SQLite: it
    waits for the claim (VF0), is refused in turn and takes VF1."""
    engine = make_engine(empty_database_url(target))
    migrate.upgrade(engine)
    write(engine, lambda conn: importing.import_node(conn, "n", parse_device_list(NIC), NAMING))
    request = parse_device_request(*ONE_VF, NAMING)

    def claim_with(search):
        return lambda conn: search.claim(conn, request, NAMING, str(uuid.uuid4()), "p", "u")

    other: list = []
    rival = threading.Thread(
        target=lambda: other.append(write(engine, claim_with(service.DeviceSearch(Replica()))))
    )
    search = service.DeviceSearch(Replica())
    chosen, claimed = claim_with_a_write_between(engine, search, claim_with(search), rival, target)
    assert chosen == [[0]]  # NIC0 (its VF0)
    [rival_claim] = other
    queued = target in QUEUED_WRITERS
    first, second = (claimed, rival_claim) if queued else (rival_claim, claimed)
    assert (_vfs(first), _vfs(second)) == ([0], [1])
    view = write(engine, lambda conn: search.node_view(conn, NAMING, "n"))
    inventories = view["devices"][0]["inventories"]
    assert [inventories[f"vf-{m}"]["used"] for m in range(3)] == [1, 1, 0]
    assert inventories["vf"]["used"] == 2
    engine.dispose()
