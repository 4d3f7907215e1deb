"""``placement network`` and ``placement gangs``: the network set from a file and one node
at a time, gangs found, explained, claimed, shown and released from files, as over
HTTP."""

import json
import uuid

import yaml

from tests.api.gang_helpers import LEVELS, gpu_box

# 2 spines; s0 has leaves l0 (NVLink domains a, b) and l1 (c).
CLUSTER = {
    "n0": ("s0", "l0", "a"),
    "n1": ("s0", "l0", "a"),
    "n2": ("s0", "l0", "b"),
    "n3": ("s0", "l1", "c"),
}
# One member of 2 GPUs (a parameter server) and two of 4 (workers), under one spine.
MIXED = {
    "members": [
        {"count": 1, "member": {"resources": {"nvidia.com/gpu": 2}}},
        {"count": 2, "member": {"resources": {"nvidia.com/gpu": 4}}},
    ],
    "required": "spine",
    "preferred": "leaf",
}


def _write(tmp_path, name: str, data) -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data) if name.endswith(".yaml") else json.dumps(data))
    return str(path)


def _cluster(run, tmp_path) -> None:
    node_file = _write(tmp_path, "box.json", gpu_box(4))
    for name in CLUSTER:
        assert run("devices", "import", name, node_file)[0] == 0
    network = {
        "levels": LEVELS,
        "nodes": {name: dict(zip(LEVELS, path, strict=True)) for name, path in CLUSTER.items()},
    }
    status, body, err = run("network", "set", _write(tmp_path, "network.yaml", network))
    assert status == 0, err
    assert body == network


def test_the_network_from_a_file_and_one_node_at_a_time(run_on_both, tmp_path):
    run = run_on_both
    _cluster(run, tmp_path)
    status, body, err = run(
        "network", "set-node", "n9", "--domain", "spine=s1", "--domain", "leaf=l2",
        "--domain", "nvlink_domain=d",
    )  # fmt: skip
    assert status == 0, err
    assert body == {
        "name": "n9",
        "domains": {"spine": "s1", "leaf": "l2", "nvlink_domain": "d"},
        "created": True,
    }
    status, body, _ = run("network", "show")
    assert status == 0 and body["nodes"]["n9"]["leaf"] == "l2" and len(body["nodes"]) == 5

    # Refused, nothing written: a second parent, a level left out, a malformed domain.
    for domains, words in (
        (["spine=s1", "leaf=l0", "nvlink_domain=z"], "leaf l0 has two parents"),
        (["spine=s1", "leaf=l2"], "no domain at level(s) nvlink_domain"),
        (["spine"], "give LEVEL=DOMAIN"),
    ):
        arguments = [part for domain in domains for part in ("--domain", domain)]
        status, _, err = run("network", "set-node", "n8", *arguments)
        assert status == 1 and words in err, err
    bad_network = _write(tmp_path, "bad.json", {"levels": ["spine", "spine"], "nodes": {}})
    status, _, err = run("network", "set", bad_network)
    assert status == 1 and "named twice" in err
    assert run("network", "show")[1] == body

    assert run("network", "delete-node", "n9")[0] == 0
    status, _, err = run("network", "delete-node", "n9")
    assert status == 1 and "No node named n9 in the network" in err


def test_gangs_of_two_kinds_found_explained_claimed_shown_and_released(run_on_both, tmp_path):
    run = run_on_both
    _cluster(run, tmp_path)
    request = _write(tmp_path, "gang.yaml", MIXED)
    status, found, err = run("gangs", "candidates", request)
    assert status == 0, err
    [best] = found["gangs"]
    assert [m["kind"] for m in best["members"]] == [0, 1, 1]
    assert best["domains"]["leaf"] == ["l0"]
    assert [len(m["devices"]["gpu"]) for m in best["members"]] == [2, 4, 4]

    status, explained, _ = run("gangs", "explain", request)
    assert status == 0
    assert explained["gangs_found"] == 1 and explained["members"] == 3

    gang, consumers = str(uuid.uuid4()), [str(uuid.uuid4()) for _ in range(3)]
    claim = ["gangs", "claim", request, "--project", "p", "--user", "u", "--gang", gang]
    status, claimed, err = run(*claim, *(part for c in consumers for part in ("--consumer", c)))
    assert status == 0, err
    assert claimed["gang_uuid"] == gang
    assert [m["consumer_uuid"] for m in claimed["members"]] == consumers
    assert [m["node"] for m in claimed["members"]] == [m["node"] for m in best["members"]]
    status, shown, _ = run("gangs", "show", gang)
    assert status == 0 and [m["consumer_uuid"] for m in shown["members"]] == consumers
    assert all(member["allocations"] for member in shown["members"])

    # Left under s0: n3, and the half of a node the 2 GPUs left: two members of three.
    status, _, err = run("gangs", "claim", request, "--project", "p", "--user", "u")
    assert status == 1 and "placement.group_resources.unplaceable" in err
    assert "holds 2 of 3" in err

    assert run("gangs", "release", gang)[0] == 0
    status, _, err = run("gangs", "show", gang)
    assert status == 1 and f"No gang {gang}" in err
    # Released: a claim with consumers made by the command itself takes it again.
    status, again, _ = run("gangs", "claim", request, "--project", "p", "--user", "u")
    assert status == 0 and len({m["consumer_uuid"] for m in again["members"]}) == 3


def test_bad_gang_requests_are_refused_as_over_http(run, tmp_path):
    _cluster(run, tmp_path)
    request = _write(tmp_path, "gang.json", MIXED)
    for arguments, words in (
        (["--budget-ms", "0"], "budget_ms"),
        (["--limit", "0"], "limit"),
    ):
        status, _, err = run("gangs", "candidates", request, *arguments)
        assert status == 1 and words in err, err
    both_forms = _write(tmp_path, "both.json", {**MIXED, "member": {"resources": {"cpu": 1}}})
    status, _, err = run("gangs", "candidates", both_forms)
    assert status == 1 and "without 'member'" in err
    status, _, err = run(
        "gangs", "claim", request, "--project", "p", "--user", "u", "--consumer", str(uuid.uuid4())
    )
    assert status == 1 and "give one per member (3), not 1" in err


def test_a_time_budget_cuts_the_gang_search_as_over_http(run, tmp_path):
    from tests.api.test_devices_budget import NODES, WIDE_REQUEST, wide_node

    nodes = {}
    for index in range(NODES):
        name = f"d{index:02d}"
        assert (
            run("devices", "import", name, _write(tmp_path, f"{name}.json", wide_node(index)))[0]
            == 0
        )
        nodes[name] = {"spine": "s0", "leaf": f"l{index % 3}", "nvlink_domain": f"v{index}"}
    network = _write(tmp_path, "network.json", {"levels": LEVELS, "nodes": nodes})
    assert run("network", "set", network)[0] == 0
    gang = {"members": 2, "member": {"resources": WIDE_REQUEST}, "required": "spine"}
    request = _write(tmp_path, "gang.json", {**gang, "share_nodes": True})
    status, whole, _ = run("gangs", "candidates", request)
    assert status == 0 and "cut" not in whole and whole["nodes_in_network"] == NODES
    status, cut, _ = run("gangs", "candidates", request, "--budget-ms", "1")
    assert status == 0
    assert cut["cut"]["nodes"] == NODES and 1 <= cut["cut"]["nodes_looked_at"] < NODES
    assert len(cut["gangs"]) == 1
    status, explained, _ = run("gangs", "explain", request, "--budget-ms", "1")
    assert status == 0 and explained["cut"]["nodes_looked_at"] < NODES


def test_the_command_answers_as_the_route_does(run, tmp_path):
    """One door: the same body, from a file and over HTTP on the same database."""
    from placement.app import create_app
    from placement.config import Config
    from tests.conftest import Api

    _cluster(run, tmp_path)
    request = _write(tmp_path, "gang.json", MIXED)
    status, from_file, _ = run("gangs", "candidates", request)
    assert status == 0
    app = create_app(Config(database_url=f"sqlite:///{tmp_path / 'placement.sqlite'}"))
    over_http = Api(app.test_client()).post("/group_resources/gang_candidates", json=MIXED)
    assert over_http.status_code == 200
    assert over_http.json == from_file
