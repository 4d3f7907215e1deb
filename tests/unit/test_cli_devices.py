"""``placement devices``: import a topology, ask for devices and claim them from files,
with Pod manifests as Koordinator's users write them."""

import io
import uuid
from pathlib import Path

import pytest

SAMPLES = Path(__file__).parent.parent / "data" / "topologies"

# A pod whose GPUs and NIC must be on the same PCIe switch, as Koordinator's example
# writes it but for the count.
SAME_PCIE_POD = """\
kind: Pod
metadata:
  name: test-pod
  namespace: default
  annotations:
    scheduling.koordinator.sh/device-joint-allocate: |-
      {
        "deviceTypes": ["gpu","rdma"],
        "requiredScope": "SamePCIe"
      }
spec:
  containers:
    - name: main
      resources:
        requests:
          nvidia.com/gpu: 2
          koordinator.sh/rdma: 1
"""


def test_import_a_matrix_then_candidates_and_claim_for_a_pod(run_on_both, tmp_path):
    run = run_on_both
    matrix = str(SAMPLES / "pcie_4gpu.txt")
    status, body, _ = run("devices", "import", "box", matrix, "--gpu-memory", "24Gi")
    assert status == 0, body
    assert body["changed"] is True
    assert [d["memory"] for d in body["devices"] if d["type"] == "gpu"] == ["24576Mi"] * 4
    status, body, _ = run("devices", "import", "box", matrix, "--gpu-memory", "24Gi")
    assert (status, body["changed"]) == (0, False)

    pod = tmp_path / "pod.yaml"
    pod.write_text(SAME_PCIE_POD)
    status, body, _ = run("devices", "candidates", str(pod))
    assert status == 0
    [best] = body["candidates"]
    assert [g["minor"] for g in best["devices"]["gpu"]] == [0, 1]
    assert [n["id"] for n in best["devices"]["rdma"]] == ["mlx5_0"]

    consumer = str(uuid.uuid4())
    claim = ("devices", "claim", str(pod), "--consumer", consumer, "--project", "p", "--user", "u")
    status, body, _ = run(*claim)
    assert (status, body["consumer_uuid"]) == (0, consumer)
    # The only switch with a NIC is taken: the next claim cannot be placed.
    status, body, err = run(
        *claim[:3], "--consumer", str(uuid.uuid4()), "--project", "p", "--user", "u"
    )
    assert status == 1
    assert "placement.group_resources.unplaceable" in err

    status, body, _ = run("devices", "show", "box")
    gpu0 = next(d for d in body["devices"] if d["type"] == "gpu" and d["minor"] == 0)
    assert gpu0["inventories"]["core"] == {"total": 100, "used": 100}


def test_import_a_device_list_and_delete(run_on_both):
    run = run_on_both
    status, body, _ = run("devices", "import", "h", str(SAMPLES / "hetero_1nic.yaml"))
    assert status == 0
    status, _, _ = run("devices", "delete", "h")
    assert status == 0
    status, _, err = run("devices", "show", "h")
    assert status == 1
    assert "No device node named h" in err


def test_checkpoints_hold_the_devices_kubelet_gave_and_release_them(run_on_both, tmp_path):
    run = run_on_both
    status, body, _ = run("devices", "import", "h", str(SAMPLES / "hetero_1nic.yaml"))
    assert status == 0
    gpu0 = next(d for d in body["devices"] if d["type"] == "gpu" and d["minor"] == 0)
    entries = tmp_path / "checkpoints.yaml"
    entries.write_text(
        f"- podUID: pod-a\n  containerName: main\n  resourceName: nvidia.com/gpu\n"
        f"  deviceIDs: [{gpu0['id']}]\n"
    )
    status, body, _ = run("devices", "checkpoints", "h", str(entries), "--project", "p")
    assert status == 0, body
    [pod] = body["pods"]
    assert [g["minor"] for g in pod["devices"]["gpu"]] == [0]
    assert body["changed"] is True
    status, body, _ = run("devices", "checkpoints", "h", str(entries), "--project", "p")
    assert (status, body["changed"]) == (0, False)
    status, body, _ = run("devices", "show", "h")
    shown = next(d for d in body["devices"] if d["type"] == "gpu" and d["minor"] == 0)
    assert shown["inventories"]["core"] == {"total": 100, "used": 100}
    entries.write_text("checkpoints: []\n")
    status, body, _ = run("devices", "checkpoints", "h", str(entries))
    assert (status, body["released"]) == (0, [pod["consumer_uuid"]])
    entries.write_text("- {podUID: p, resourceName: nvidia.com/gpu, deviceIDs: [nope]}\n")
    status, body, _ = run("devices", "checkpoints", "h", str(entries))
    assert status == 0
    assert body["unknownDevices"] == [{"podUID": "p", "containerName": "", "deviceID": "nope"}]
    entries.write_text("- {podUID: p, resourceName: example.com/foo, deviceIDs: [nope]}\n")
    status, _, err = run("devices", "checkpoints", "h", str(entries))
    assert status == 1
    assert "resourceName 'example.com/foo' is not a device resource" in err


def test_a_malformed_matrix_is_refused_with_its_problem(run):
    status, _, err = run(
        "devices",
        "import",
        "bad",
        str(SAMPLES / "malformed_unknown_cell.txt"),
        "--gpu-memory",
        "16Gi",
    )
    assert status == 1
    assert "N0DE" in err


@pytest.mark.parametrize("text", ["", "\n  \n"])
def test_an_empty_matrix_file_says_it_is_empty_and_where_a_matrix_comes_from(run, tmp_path, text):
    # What `nvidia-smi topo -m > topo.txt` leaves on a machine without a GPU.
    topo = tmp_path / "topo.txt"
    topo.write_text(text)
    status, _, err = run("devices", "import", "n", str(topo), "--gpu-memory", "80Gi")
    assert status == 1
    assert f"{topo} is empty" in err
    assert "nvidia-smi topo -m" in err and "tests/data/topologies/dgx_a100.txt" in err
    assert "undefined_code" not in err


def test_dash_reads_the_matrix_and_the_request_from_stdin(run, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO((SAMPLES / "pcie_4gpu.txt").read_text()))
    status, body, err = run("devices", "import", "box", "-", "--gpu-memory", "24Gi")
    assert (status, body["changed"]) == (0, True), err
    monkeypatch.setattr("sys.stdin", io.StringIO(SAME_PCIE_POD))
    status, body, err = run("devices", "candidates", "-")
    assert status == 0, err
    assert [g["minor"] for g in body["candidates"][0]["devices"]["gpu"]] == [0, 1]
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    status, _, err = run("devices", "import", "box", "-", "--gpu-memory", "24Gi")
    assert status == 1 and "standard input is empty" in err


@pytest.mark.parametrize(
    ("memory", "words"),
    [
        (
            "80GB",
            "80GB = 80 x 1000^3 bytes, 76293 MiB). Give GPU memory in binary units: "
            "80Gi is 81920 MiB.",
        ),
        ("80G", "80Gi is 81920 MiB"),
        ("40000MB", "40000Mi is 40000 MiB"),
        ("1.5T", "1.5Ti is 1572864 MiB"),
    ],
)
def test_gpu_memory_in_decimal_units_is_refused_with_the_binary_spelling(run, memory, words):
    status, _, err = run(
        "devices", "import", "box", str(SAMPLES / "pcie_4gpu.txt"), "--gpu-memory", memory
    )
    assert status == 1
    assert "decimal units" in err and words in err
    status, _, _ = run("devices", "show", "box")
    assert status == 1


def test_gpu_memory_help_names_the_unit_system(run, capsys):
    with pytest.raises(SystemExit):
        run("devices", "import", "-h")
    help_text = " ".join(capsys.readouterr().out.split())
    assert "binary units: 80Gi (80 GiB = 81920 MiB)" in help_text
    assert "decimal units (80GB, 80G) are refused" in help_text
    assert "- for stdin" in help_text


def test_a_time_budget_cuts_the_device_search_as_over_http(run, tmp_path):
    import json

    from tests.api.test_devices_budget import NODES, WIDE_REQUEST, wide_node

    for index in range(NODES):
        node_file = tmp_path / f"d{index}.json"
        node_file.write_text(json.dumps(wide_node(index)))
        assert run("devices", "import", f"d{index:02d}", str(node_file))[0] == 0
    request_file = tmp_path / "wide.json"
    request_file.write_text(json.dumps({"resources": WIDE_REQUEST}))
    status, whole, _ = run("devices", "candidates", str(request_file))
    assert status == 0 and "cut" not in whole and len(whole["candidates"]) == NODES
    status, cut, _ = run("devices", "candidates", str(request_file), "--budget-ms", "1")
    assert status == 0
    assert cut["cut"]["nodes"] == NODES and 1 <= cut["cut"]["nodes_looked_at"] < NODES
    best = {candidate["node"]: candidate for candidate in whole["candidates"]}
    assert all(candidate == best[candidate["node"]] for candidate in cut["candidates"])
    status, _body, err = run("devices", "candidates", str(request_file), "--budget-ms", "0")
    assert status == 1 and "budget_ms" in err
