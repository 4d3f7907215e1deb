"""Pods of one pod group get their nodes from one gang: filtered to the best gang, the
whole gang reserved at the first pod's bind, each later pod taking a reserved member,
and a reservation whose pods never come released after its time. Against the stand-in
API server (``tests.k8s_api_server``), which serves the groups' ``PodGroup`` objects."""

import datetime
import json

import pytest
from sqlalchemy import select

from placement import clock
from placement.cli import main as cli
from placement.db.tables import consumer_types, consumers, gang_members, pod_group_members
from placement.db.tables import pod_group_reservations as reservations
from tests.api.device_helpers import import_node
from tests.api.gang_helpers import build_cluster, gpu_box, set_network
from tests.api.k8s_helpers import api_with_cluster, call, filter_names, pod
from tests.api.test_gangs import CLUSTER
from tests.k8s_api_server import FakeApiServer, binding_args, kubeconfig_file, running

COSCHEDULING = "scheduling.x-k8s.io/pod-group"
VOLCANO = "scheduling.k8s.io/group-name"
ALLOCATED = "scheduling.koordinator.sh/device-allocated"
# The gang tests' cluster: 2 spines; s0 has leaves l0 (nvlink domains a: n0, n1; b: n2) and
# l1 (c: n3, n4); s1 has l2 (d: n5). Every node a box of 4 GPUs (two per switch).
NODES = sorted(CLUSTER)
# Four whole boxes under one spine, as few leaves and then NVLink domains as can be:
# both leaves of s0 are needed; a and c hold two boxes each.
BEST_GANG = ["n0", "n1", "n3", "n4"]


@pytest.fixture
def apiserver():
    with running(FakeApiServer()) as server:
        yield server


@pytest.fixture
def k8s_config(config):
    return config.replace(k8s_gang_required_level="spine", k8s_gang_preferred_level="leaf")


@pytest.fixture
def k8s_api(k8s_config, engine, tmp_path, apiserver):
    api = api_with_cluster(k8s_config, engine, tmp_path, apiserver.url)
    build_cluster(api, CLUSTER)
    return api


@pytest.fixture
def later(monkeypatch):
    """Set the service's clock some seconds after the test's start."""

    start = clock.utcnow()

    def move(seconds):
        now = start + datetime.timedelta(seconds=seconds)
        monkeypatch.setattr(clock, "utcnow", lambda: now)

    return move


def coscheduling_group(name, min_member, annotations=None, namespace="default") -> dict:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace, "annotations": annotations or {}},
        "spec": {"minMember": min_member, "scheduleTimeoutSeconds": 60},
    }


def volcano_group(name, min_member, namespace="default") -> dict:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"minMember": min_member, "queue": "default"},
    }


def group_pods(group, count, gpus=4, volcano=False, first=0) -> list[dict]:
    pods = []
    for index in range(first, first + count):
        body = pod(name=f"{group}-{index}", resources={"nvidia.com/gpu": gpus})
        if volcano:
            body["metadata"]["annotations"][VOLCANO] = group
        else:
            body["metadata"]["labels"] = {COSCHEDULING: group}
        pods.append(body)
    return pods


def bind(api, apiserver, body, node) -> str:
    if (body["metadata"]["namespace"], body["metadata"]["name"]) not in apiserver.pods:
        apiserver.add_pod(body)
    return call(api, "bind", binding_args(body, node)).json["Error"]


def pod_group_reads(apiserver) -> list[str]:
    return [r.path for r in apiserver.calls("GET") if "/podgroups/" in r.path]


def rows(engine, table):
    with engine.connect() as conn:
        return [row._asdict() for row in conn.execute(select(table))]


def gpus_used(api, node) -> list[int]:
    shown = api.get(f"/group_resources/device_nodes/{node}").json
    return [device["inventories"]["tenancy"]["used"] for device in shown["devices"]]


def tree(api, node) -> set[str]:
    root = api.get(f"/resource_providers?name={node}").json["resource_providers"][0]["uuid"]
    found = api.get(f"/resource_providers?in_tree={root}").json["resource_providers"]
    return {provider["uuid"] for provider in found}


def placeholders(engine) -> list[str]:
    with engine.connect() as conn:
        return list(
            conn.scalars(
                select(consumers.c.uuid)
                .join(consumer_types, consumer_types.c.id == consumers.c.consumer_type_id)
                .where(consumer_types.c.name == "POD_GROUP")
            )
        )


def test_a_group_of_four_reserves_its_gang_and_each_pod_takes_a_member(k8s_api, apiserver, engine):
    apiserver.add_pod_group(coscheduling_group("train", 4))
    pods = group_pods("train", 5)

    first = filter_names(k8s_api, pods[0], NODES)
    assert first["NodeNames"] == BEST_GANG
    assert first["FailedNodes"] == {}
    reason = "pod group default/train: not a node of its best gang (spine s0: n0, n1, n3, n4)"
    assert first["FailedAndUnresolvableNodes"] == {"n2": reason, "n5": reason}
    assert pod_group_reads(apiserver) == [
        "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups/train"
    ]
    scores = call(k8s_api, "prioritize", {"Pod": pods[0], "NodeNames": NODES}).json
    assert {s["Host"]: s["Score"] for s in scores} == {
        node: 10 if node in BEST_GANG else 0 for node in NODES
    }
    assert rows(engine, reservations) == []  # filter and prioritize reserve nothing

    # The first bind reserves the whole gang: four members, one of them the pod's.
    assert bind(k8s_api, apiserver, pods[0], "n3") == ""
    (reservation,) = rows(engine, reservations)
    assert reservation["pod_group"] == "podgroups.scheduling.x-k8s.io/default/train"
    gang = reservation["gang_uuid"]
    members = sorted(rows(engine, pod_group_members), key=lambda m: m["member"])
    assert [m["node_name"] for m in members] == BEST_GANG
    uid0 = pods[0]["metadata"]["uid"]
    assert [m["pod_uid"] for m in members] == [None, None, uid0, None]
    recorded = {m["member"]: m["consumer_uuid"] for m in rows(engine, gang_members)}
    assert recorded[2] == uid0 and len(recorded) == 4
    assert sorted(placeholders(engine)) == sorted(recorded[i] for i in (0, 1, 3))
    shown = k8s_api.get(f"/group_resources/gangs/{gang}").json
    assert all(member["allocations"] for member in shown["members"])
    held = k8s_api.get(f"/allocations/{uid0}").json
    assert held["consumer_type"] == "POD" and held["project_id"] == "default"
    assert set(held["allocations"]) <= tree(k8s_api, "n3")
    for node in NODES:
        assert gpus_used(k8s_api, node) == [1000] * 4 if node in BEST_GANG else [0] * 4
    patch = next(r for r in apiserver.requests if r.method == "PATCH")
    given = json.loads(patch.body["metadata"]["annotations"][ALLOCATED])
    assert [device["minor"] for device in given["gpu"]] == [0, 1, 2, 3]

    # The others: filtered to the reserved nodes no pod took, no PodGroup read again.
    reads = len(pod_group_reads(apiserver))
    second = filter_names(k8s_api, pods[1], NODES)
    assert second["NodeNames"] == ["n0", "n1", "n4"]
    assert "has reserved nodes n0, n1, n4" in second["FailedAndUnresolvableNodes"]["n3"]
    assert bind(k8s_api, apiserver, pods[1], "n1") == ""
    assert filter_names(k8s_api, pods[2], NODES)["NodeNames"] == ["n0", "n4"]
    assert bind(k8s_api, apiserver, pods[2], "n4") == ""
    scores = call(k8s_api, "prioritize", {"Pod": pods[3], "NodeNames": NODES}).json
    assert [s["Host"] for s in scores if s["Score"] == 10] == ["n0"]
    # A node whose member a pod took is refused at bind too.
    assert "no member of its gang is left on node n4" in bind(k8s_api, apiserver, pods[3], "n4")
    assert bind(k8s_api, apiserver, pods[3], "n0") == ""
    assert len(pod_group_reads(apiserver)) == reads

    # Every member is a pod's now; nothing was allocated twice.
    uids = [p["metadata"]["uid"] for p in pods[:4]]
    by_member = {m["member"]: m["pod_uid"] for m in rows(engine, pod_group_members)}
    assert by_member == {0: uids[3], 1: uids[1], 2: uids[0], 3: uids[2]}
    assert sorted(m["consumer_uuid"] for m in rows(engine, gang_members)) == sorted(uids)
    assert placeholders(engine) == []
    for node in NODES:
        assert gpus_used(k8s_api, node) == [1000] * 4 if node in BEST_GANG else [0] * 4
    for uid in uids:
        assert len(k8s_api.get(f"/allocations/{uid}").json["allocations"]) >= 4
    binds = [r for r in apiserver.calls("POST") if r.path.endswith("/bindings")]
    assert [b.body["target"]["name"] for b in binds] == ["n3", "n1", "n4", "n0"]
    # A fifth pod, beyond minMember, is placed on its own.
    assert filter_names(k8s_api, pods[4], NODES)["NodeNames"] == ["n2", "n5"]
    assert bind(k8s_api, apiserver, pods[4], "n5") == ""
    assert len(rows(engine, pod_group_members)) == 4


@pytest.mark.parametrize("released_by", ["filter", "bind", "reconcile"])
def test_a_reservation_whose_pods_never_come_is_released_after_its_time(
    k8s_api, apiserver, engine, later, released_by, monkeypatch, tmp_path, capsys
):
    apiserver.add_pod_group(volcano_group("late", 4))
    pods = group_pods("late", 4, volcano=True)
    assert bind(k8s_api, apiserver, pods[0], "n0") == ""
    assert pod_group_reads(apiserver) == [
        "/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups/late"
    ]
    assert len(placeholders(engine)) == 3
    later(240)
    assert filter_names(k8s_api, pods[1], NODES)["NodeNames"] == ["n1", "n3", "n4"]
    assert len(placeholders(engine)) == 3
    later(360)
    other = pod(name="alone", resources={"nvidia.com/gpu": 4})
    if released_by == "filter":
        filter_names(k8s_api, other, NODES)  # any pod's filter
    elif released_by == "bind":
        assert bind(k8s_api, apiserver, other, "n5") == ""
    else:
        monkeypatch.setenv("PLACEMENT_DATABASE_URL", k8s_api.services.config.database_url)
        monkeypatch.setenv("PLACEMENT_K8S_KUBECONFIG", kubeconfig_file(tmp_path, apiserver.url))
        monkeypatch.delenv("PLACEMENT_CONFIG_FILE", raising=False)
        apiserver.add_pod(pods[0])
        assert cli.main(["k8s", "reconcile", "--no-devices"]) == 0
        done = json.loads(capsys.readouterr().out)
        assert len(done["pod_groups"]["members_released"]) == 3
        assert done["pod_groups"]["reservations_ended"] == []
    # The members no pod took are gone; the first pod keeps its own.
    assert placeholders(engine) == []
    assert [m["node_name"] for m in rows(engine, pod_group_members)] == ["n0"]
    assert len(rows(engine, gang_members)) == 1
    assert gpus_used(k8s_api, "n0") == [1000] * 4
    for node in ("n1", "n3", "n4"):
        assert gpus_used(k8s_api, node) == [0] * 4
    # The late pods are placed on their own now.
    names = filter_names(k8s_api, pods[1], NODES)["NodeNames"]
    assert "n2" in names and "n0" not in names


def test_a_pod_of_the_group_asking_otherwise_is_placed_on_its_own(k8s_api, apiserver, engine):
    apiserver.add_pod_group(coscheduling_group("mixed", 2))
    workers = group_pods("mixed", 2)
    assert bind(k8s_api, apiserver, workers[0], "n0") == ""
    (odd,) = group_pods("mixed", 1, gpus=2, first=2)
    # Not limited to the reserved n1 (whose GPUs are held): wherever 2 GPUs are free.
    assert filter_names(k8s_api, odd, NODES)["NodeNames"] == ["n2", "n3", "n4", "n5"]
    assert bind(k8s_api, apiserver, odd, "n2") == ""
    taken = {m["node_name"]: m["pod_uid"] for m in rows(engine, pod_group_members)}
    assert taken == {"n0": workers[0]["metadata"]["uid"], "n1": None}
    assert gpus_used(k8s_api, "n2") == [1000, 1000, 0, 0]
    assert filter_names(k8s_api, workers[1], NODES)["NodeNames"] == ["n1"]


def test_a_group_whose_pods_are_released_reserves_a_new_gang(k8s_api, apiserver, engine):
    apiserver.add_pod_group(coscheduling_group("again", 2))
    first = group_pods("again", 2)
    assert bind(k8s_api, apiserver, first[0], "n0") == ""
    assert bind(k8s_api, apiserver, first[1], "n1") == ""
    (old,) = rows(engine, reservations)
    for each in first:  # the pods are gone: reconcile's release, or DELETE /allocations
        assert k8s_api.delete(f"/allocations/{each['metadata']['uid']}").status_code == 204
    again = group_pods("again", 2, first=2)
    assert filter_names(k8s_api, again[0], NODES)["NodeNames"] == ["n0", "n1"]
    assert bind(k8s_api, apiserver, again[0], "n1") == ""
    (new,) = rows(engine, reservations)
    assert new["gang_uuid"] != old["gang_uuid"]
    assert sorted(m["node_name"] for m in rows(engine, pod_group_members)) == ["n0", "n1"]


@pytest.mark.parametrize(
    "refused, status",
    [(("POST", "binding"), 409), (("PATCH", "pod"), 403)],
)
def test_a_refused_binding_rolls_the_whole_reservation_back(
    k8s_api, apiserver, engine, refused, status
):
    apiserver.add_pod_group(coscheduling_group("refused", 4))
    pods = group_pods("refused", 4)
    apiserver.refuse[refused] = (status, "not today")
    error = bind(k8s_api, apiserver, pods[0], "n3")
    assert error.startswith("The Kubernetes API refused") and "not today" in error
    for table in (reservations, pod_group_members, gang_members):
        assert rows(engine, table) == []
    assert placeholders(engine) == []
    for node in NODES:
        assert gpus_used(k8s_api, node) == [0] * 4
    apiserver.refuse.clear()
    assert bind(k8s_api, apiserver, pods[0], "n3") == ""
    assert len(rows(engine, pod_group_members)) == 4


def test_two_groups_after_one_domain_never_over_commit(k8s_api, apiserver, engine):
    apiserver.add_pod_group(coscheduling_group("a", 4))
    apiserver.add_pod_group(coscheduling_group("b", 4))
    a, b = group_pods("a", 4), group_pods("b", 4)
    # Both filtered before either binds: both see the same best gang.
    assert filter_names(k8s_api, a[0], NODES)["NodeNames"] == BEST_GANG
    assert filter_names(k8s_api, b[0], NODES)["NodeNames"] == BEST_GANG
    assert bind(k8s_api, apiserver, a[0], "n0") == ""
    error = bind(k8s_api, apiserver, b[0], "n1")
    assert error.startswith("Pod group default/b: No gang of 4 member(s) fits in one spine")
    assert "the closest, spine s0, holds 1 of 4" in error
    (only,) = rows(engine, reservations)
    assert only["pod_group"].endswith("/default/a")
    # b's next filter says why, on every node; a's pods still go to their members.
    refused = filter_names(k8s_api, b[0], NODES)
    assert refused["NodeNames"] == []
    assert all(
        "No gang of 4 member(s)" in refused["FailedAndUnresolvableNodes"][node]
        for node in ("n2", "n5")
    )
    for each, node in zip(a[1:], ("n1", "n3", "n4"), strict=True):
        assert bind(k8s_api, apiserver, each, node) == ""
    for node in NODES:
        assert gpus_used(k8s_api, node) == ([1000] * 4 if node in BEST_GANG else [0] * 4)


def test_a_group_of_two_nvlink_domains_sharing_nodes_and_the_podgroup_annotations(
    k8s_api, apiserver, engine
):
    # Two members of 2 GPUs in one NVLink domain, one node each unless shared.
    apiserver.add_pod_group(
        coscheduling_group(
            "pair",
            2,
            annotations={"gpu-topology.placement/gang-required-level": "nvlink_domain"},
        )
    )
    pair = group_pods("pair", 2, gpus=2)
    assert filter_names(k8s_api, pair[0], NODES)["NodeNames"] == ["n0", "n1"]
    apiserver.add_pod_group(
        coscheduling_group(
            "shared",
            2,
            annotations={
                "gpu-topology.placement/gang-required-level": "nvlink_domain",
                "gpu-topology.placement/gang-share-nodes": "true",
            },
        )
    )
    shared = group_pods("shared", 2, gpus=2)
    (node,) = filter_names(k8s_api, shared[0], NODES)["NodeNames"]
    assert bind(k8s_api, apiserver, shared[0], node) == ""
    assert filter_names(k8s_api, shared[1], NODES)["NodeNames"] == [node]
    assert bind(k8s_api, apiserver, shared[1], node) == ""
    assert gpus_used(k8s_api, node) == [1000] * 4


@pytest.mark.parametrize(
    "pod_group, expected",
    [
        (None, 'podgroups.scheduling.x-k8s.io "ghost" not found'),
        (
            coscheduling_group(
                "ghost", 2, annotations={"gpu-topology.placement/gang-required-level": "rack"}
            ),
            "Pod group default/ghost: required: unknown level 'rack'",
        ),
        (
            coscheduling_group(
                "ghost", 2, annotations={"gpu-topology.placement/gang-share-nodes": "maybe"}
            ),
            "Pod group default/ghost: gang-share-nodes 'maybe' is not true or false.",
        ),
        (
            {**coscheduling_group("ghost", 2), "spec": {"minMember": "four"}},
            "Pod group default/ghost: spec.minMember 'four' is not a whole number",
        ),
    ],
)
def test_a_pod_group_that_does_not_read_is_an_error(
    k8s_api, apiserver, engine, pod_group, expected
):
    if pod_group is not None:
        apiserver.add_pod_group(pod_group)
    (member,) = group_pods("ghost", 1)
    response = call(k8s_api, "filter", {"Pod": member, "NodeNames": NODES})
    assert response.status_code == 200
    assert expected in response.json["Error"]
    assert expected in bind(k8s_api, apiserver, member, "n0")
    assert rows(engine, reservations) == [] and placeholders(engine) == []


def test_groups_of_one_and_networks_without_levels_place_pods_on_their_own(
    k8s_config, engine, tmp_path, apiserver
):
    api = api_with_cluster(k8s_config, engine, tmp_path, apiserver.url)
    for name in ("n0", "n1"):
        import_node(api, name, gpu_box())
    # No network yet: a group of two is placed pod by pod.
    apiserver.add_pod_group(coscheduling_group("two", 2))
    two = group_pods("two", 2)
    assert filter_names(api, two[0], ["n0", "n1"])["NodeNames"] == ["n0", "n1"]
    assert bind(api, apiserver, two[0], "n0") == ""
    # In the network now, but a group of one is a single pod.
    set_network(api, {"n0": ("s0", "l0", "a"), "n1": ("s0", "l0", "a")})
    apiserver.add_pod_group(coscheduling_group("one", 1))
    (alone,) = group_pods("one", 1)
    assert filter_names(api, alone, ["n0", "n1"])["NodeNames"] == ["n1"]
    assert bind(api, apiserver, alone, "n1") == ""
    assert rows(engine, reservations) == [] and placeholders(engine) == []
