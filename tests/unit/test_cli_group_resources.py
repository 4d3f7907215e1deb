"""``placement group-resources``: sync, candidates, claim and query from files."""

import io
import json
import uuid

import pytest
import yaml


def _write(tmp_path, name, data, as_yaml=True):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data) if as_yaml else json.dumps(data))
    return str(path)


NODE = {
    "cpu": 8,
    "memory": "16Gi",
    **{f"grp/{d // 2}/gpu/dev{d}/cards": 1 for d in range(4)},
}


def test_sync_candidates_claim_and_query_from_files(run_on_both, tmp_path):
    run = run_on_both
    node_file = _write(tmp_path, "node.yaml", NODE)
    status, body, _ = run("group-resources", "sync", "n1", node_file)
    assert status == 0
    assert {g["key"] for g in body["groups"]} >= {"grp/0", "grp/1/gpu/dev3"}
    assert body["changed"] is True
    status, body, _ = run("group-resources", "sync", "n1", node_file)
    assert (status, body["changed"]) == (0, False)

    request = {"cpu": 2, "grp/R/gpu/a/cards": 1, "grp/R/gpu/b/cards": 1}
    request_file = _write(tmp_path, "request.json", {"resources": request}, as_yaml=False)
    status, body, _ = run("group-resources", "candidates", request_file, "--limit", "1")
    assert status == 0
    [best] = body["candidates"]
    assert best["node"] == "n1"
    assert set(best["mappings"]) == set(request)

    status, body, _ = run("group-resources", "query", request_file)
    assert status == 0
    assert "same_subtree=" in body["queries"][0]["query"]

    consumer = str(uuid.uuid4())
    claim = (
        "group-resources",
        "claim",
        request_file,
        "--consumer",
        consumer,
        "--project",
        "p",
        "--user",
        "u",
    )
    status, body, _ = run(*claim)
    assert status == 0
    claimed = {body["mappings"]["grp/R/gpu/a/cards"], body["mappings"]["grp/R/gpu/b/cards"]}
    assert len({key.split("/")[1] for key in claimed}) == 1  # one grp for both GPUs

    status, body, _ = run("group-resources", "show", "n1")
    used = [
        g["key"] for g in body["groups"] if g["inventories"].get("CUSTOM_GPU_CARDS", {}).get("used")
    ]
    assert len(used) == 2

    status, _body, err = run(*claim)
    assert status == 1
    assert "placement.group_resources.consumer_exists" in err


def test_errors_name_the_problem_and_exit_non_zero(run, tmp_path):
    status, _body, err = run(
        "group-resources", "sync", "n1", _write(tmp_path, "bad.yaml", {"gpu/0": 1})
    )
    assert status == 1
    assert "gpu/0" in err
    status, _body, err = run("group-resources", "sync", "n1", str(tmp_path / "missing.yaml"))
    assert status == 1
    assert "Cannot read" in err
    status, _body, err = run("group-resources", "show", "nobody")
    assert status == 1
    assert "nobody" in err


def test_arguments_follow_the_api_rules(run, tmp_path):
    run("group-resources", "sync", "n1", _write(tmp_path, "node.yaml", NODE))
    request_file = _write(tmp_path, "request.yaml", {"grp/R/gpu/a/cards": 1})
    status, _body, err = run("group-resources", "candidates", request_file, "--limit", "0")
    assert status == 1 and "limit" in err
    claim = (
        "group-resources",
        "claim",
        request_file,
        "--consumer",
        str(uuid.uuid4()),
        "--project",
        "p",
        "--user",
        "u",
    )
    status, _body, err = run(*claim, "--consumer-type", "bad type")
    assert status == 1 and "consumer_type" in err
    status, _body, err = run(*claim[:-4], "--project", "p" * 300, "--user", "u")
    assert status == 1 and "project_id" in err


def test_dash_reads_the_key_map_from_stdin(run, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO(yaml.safe_dump({"resources": NODE})))
    status, body, err = run("group-resources", "sync", "n1", "-")
    assert (status, body["changed"]) == (0, True), err
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps({"grp/R/gpu/a/cards": 1})))
    status, body, err = run("group-resources", "query", "-")
    assert status == 0, err
    monkeypatch.setattr("sys.stdin", io.StringIO("{unclosed"))
    status, _, err = run("group-resources", "candidates", "-")
    assert status == 1 and "Cannot read standard input" in err


def test_the_readings_are_arguments_with_the_configuration_as_default(
    run_on_both, tmp_path, monkeypatch
):
    run = run_on_both
    run("group-resources", "sync", "n1", _write(tmp_path, "node.yaml", {"gpu/d0/cards": 2}))
    request_file = _write(tmp_path, "request.yaml", {"gpu/0/cards": 1, "gpu/1/cards": 1})
    status, body, _ = run("group-resources", "candidates", request_file)
    assert (status, body["candidates"]) == (0, [])
    status, body, _ = run(
        "group-resources",
        "candidates",
        request_file,
        "--sibling-groups",
        "shared",
        "--node-ranking",
        "sum",
    )
    assert status == 0
    assert body["candidates"][0]["mappings"]["gpu/1/cards"] == "gpu/d0/cards"
    status, body, _ = run("group-resources", "query", request_file, "--sibling-groups", "shared")
    assert body["queries"][0]["query"].endswith("group_policy=none")
    monkeypatch.setenv("PLACEMENT_GROUP_RESOURCE_SIBLING_GROUPS", "shared")
    status, body, _ = run(
        "group-resources",
        "claim",
        request_file,
        "--consumer",
        str(uuid.uuid4()),
        "--project",
        "p",
        "--user",
        "u",
        "--flat-requests",
        "fill_levels",
    )
    assert (status, body["mappings"]["gpu/0/cards"]) == (0, "gpu/d0/cards")
    with pytest.raises(SystemExit):
        run("group-resources", "candidates", request_file, "--node-ranking", "max")


def test_a_time_budget_cuts_the_search_as_over_http(run, tmp_path):
    from tests.api.test_group_resources_budget import NODES, WIDE_REQUEST, wide_node

    for index in range(NODES):
        node_file = _write(tmp_path, f"n{index}.yaml", wide_node(index))
        assert run("group-resources", "sync", f"n{index:02d}", node_file)[0] == 0
    request_file = _write(tmp_path, "wide.json", {"resources": WIDE_REQUEST}, as_yaml=False)
    status, whole, _ = run("group-resources", "candidates", request_file)
    assert status == 0 and "cut" not in whole and len(whole["candidates"]) == NODES
    status, cut, _ = run("group-resources", "candidates", request_file, "--budget-ms", "1")
    assert status == 0
    assert cut["cut"]["nodes"] == NODES and 1 <= cut["cut"]["nodes_looked_at"] < NODES
    best = {candidate["node"]: candidate for candidate in whole["candidates"]}
    assert all(candidate == best[candidate["node"]] for candidate in cut["candidates"])
    claim = (
        "group-resources",
        "claim",
        request_file,
        "--consumer",
        str(uuid.uuid4()),
        "--project",
        "p",
        "--user",
        "u",
        "--budget-ms",
        "1",
    )
    status, claimed, _ = run(*claim)
    assert status == 0 and claimed["cut"]["nodes"] == NODES
    status, _body, err = run("group-resources", "candidates", request_file, "--budget-ms", "0")
    assert status == 1 and "budget_ms" in err
