"""``placement devices``: import a topology, ask for devices and claim them from files,
with the seed's Pod manifests as they are written."""

import uuid
from pathlib import Path

SAMPLES = Path(__file__).parent.parent / "data" / "topologies"

# Seed 001, "Allocated GPU and NIC forced be on the same PCIe", verbatim but for the count.
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
    claim = ("devices", "claim", str(pod), "--consumer", consumer, "--project", "p",
             "--user", "u")
    status, body, _ = run(*claim)
    assert (status, body["consumer_uuid"]) == (0, consumer)
    # The only switch with a NIC is taken: the next claim cannot be placed.
    status, body, err = run(*claim[:3], "--consumer", str(uuid.uuid4()), "--project", "p",
                            "--user", "u")
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


def test_a_malformed_matrix_is_refused_with_its_problem(run):
    status, _, err = run("devices", "import", "bad", str(SAMPLES / "malformed_unknown_cell.txt"),
                         "--gpu-memory", "16Gi")
    assert status == 1
    assert "N0DE" in err
