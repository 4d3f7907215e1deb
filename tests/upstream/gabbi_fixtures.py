"""Upstream's gabbi fixtures, rebuilt over the public API to run its YAML files anywhere.

Upstream's functional suite (``placement/tests/functional/gabbits/*.yaml``)
names fixture classes that write their data straight into upstream's database
and publish environment variables the YAML files read (``$ENVIRON['RP_UUID']``).
The classes here have the same names and build the same providers, names,
inventories, traits, aggregates, parents, consumers, projects and users through
HTTP only, with the same environment variables, so the files run unchanged
against upstream itself and against this service.

gabbi creates fixture objects without arguments, so ``bind_fixtures(client)``
returns the "fixture module" that gabbi looks the names up in: subclasses that
carry the client of the Placement under test.

How the direct writes map onto HTTP (checked by running the files against
upstream, where every test passes):

- Inventory is added one class at a time (``POST .../inventories``), so the
  provider's generation moves exactly as upstream's fixtures move it (the YAML
  files assert generations, e.g. 5 in ``with-allocations.yaml``).
- Aggregates are set with the pre-1.19 form (a bare list), which leaves the
  generation alone, as upstream's direct write does.
- Allocations are written below microversion 1.38, so consumers have no
  consumer type, as upstream's direct writes leave them.
- Users and projects exist in the API only as the owners of consumers. Every
  user and project that upstream's fixtures create owns a consumer with
  allocations, so ``PUT /allocations/{consumer}`` creates them all; nothing
  is lost. Upstream's consumers are created apart from their allocations; over
  HTTP both come from one request, with the same resulting consumer
  generation.
- Upstream names its providers' UUIDs with per-process random sentinels; here
  they are random UUIDs too.

The policy fixtures create nothing: the policy is the server's configuration,
which the tests choose from the file's fixtures before they start the server
(``tests.upstream.policy_settings``). Not reproducible at all, hence not here:
``CORSFixture`` (CORS middleware is server configuration, and this service has
no CORS support). ``tests/upstream/test_upstream_gabbits.py`` excludes the
files that need them, with the reason.
"""

import os
import types
import uuid as uuidlib
from collections.abc import Iterable

import httpx
from gabbi import fixture

# Below 1.38 no consumer type is stored; from 1.28 a new consumer is asserted
# with ``consumer_generation: null``.
WRITE_VERSION = "1.37"
# Below 1.19 aggregates are a bare list and setting them keeps the generation.
AGGREGATES_VERSION = "1.18"


def new_uuid() -> str:
    return str(uuidlib.uuid4())


class FixtureRequestFailed(RuntimeError):
    """A request that builds fixture data was refused."""


class PlacementClient:
    """Admin requests, each of which must succeed, to one Placement.

    ``http`` is an ``httpx.Client`` whose base URL is the service's root: a
    loopback server, or an in-process WSGI app behind ``httpx.WSGITransport``.
    """

    def __init__(self, http: httpx.Client) -> None:
        self.http = http

    def _send(self, method: str, path: str, body=None, version: str = WRITE_VERSION):
        response = self.http.request(
            method,
            path,
            json=body,
            headers={"X-Auth-Token": "admin", "OpenStack-API-Version": f"placement {version}"},
        )
        if response.status_code >= 300:
            raise FixtureRequestFailed(
                f"{method} {path} {body!r} -> {response.status_code}: {response.text}"
            )
        return response.json() if response.content else None

    def generation(self, provider: str) -> int:
        return self._send("GET", f"/resource_providers/{provider}")["generation"]

    def create_provider(
        self, name: str, *aggregates: str, parent: str | None = None, uuid: str | None = None
    ) -> str:
        """A new provider (a random UUID unless given), optionally a child and in aggregates."""
        body = {"name": name, "uuid": uuid or new_uuid()}
        if parent is not None:
            body["parent_provider_uuid"] = parent
        provider = self._send("POST", "/resource_providers", body)["uuid"]
        if aggregates:
            self.set_aggregates(provider, *aggregates)
        return provider

    def set_aggregates(self, provider: str, *aggregates: str) -> None:
        self._send(
            "PUT",
            f"/resource_providers/{provider}/aggregates",
            list(aggregates),
            version=AGGREGATES_VERSION,
        )

    def ensure_resource_class(self, name: str) -> None:
        if name.startswith("CUSTOM_"):
            self._send("PUT", f"/resource_classes/{name}")

    def add_inventory(self, provider: str, resource_class: str, total: int, **fields) -> None:
        """One more class of inventory; ``max_unit`` defaults to the total."""
        self.ensure_resource_class(resource_class)
        body = {
            "resource_class": resource_class,
            "total": total,
            "max_unit": total,
            **fields,
            "resource_provider_generation": self.generation(provider),
        }
        self._send("POST", f"/resource_providers/{provider}/inventories", body)

    def set_traits(self, provider: str, *traits: str) -> None:
        for trait in traits:
            if trait.startswith("CUSTOM_"):
                self._send("PUT", f"/traits/{trait}")
        body = {"traits": list(traits), "resource_provider_generation": self.generation(provider)}
        self._send("PUT", f"/resource_providers/{provider}/traits", body)

    def allocate(self, provider: str, resources: dict[str, int], project: str, user: str) -> str:
        """A new consumer of ``project`` and ``user`` holding ``resources`` of ``provider``."""
        consumer = new_uuid()
        body = {
            "allocations": {provider: {"resources": resources}},
            "project_id": project,
            "user_id": user,
            "consumer_generation": None,
        }
        self._send("PUT", f"/allocations/{consumer}", body)
        return consumer


class APIFixture(fixture.GabbiFixture):
    """An empty service and the identifiers every file may use.

    The environment variables set here are put back as they were when the
    fixture stops, so one file's values never leak into another file.
    """

    client: PlacementClient  # given by bind_fixtures

    def start_fixture(self) -> None:
        self._replaced: dict[str, str | None] = {}
        for name in (
            "RP_UUID", "RP_NAME", "RP_UUID1", "RP_NAME1", "RP_UUID2", "RP_NAME2",
            "PROJECT_ID", "ADMIN_PROJECT_ID", "SERVICE_PROJECT_ID", "USER_ID",
            "PROJECT_ID_ALT", "USER_ID_ALT", "INSTANCE_UUID", "MIGRATION_UUID",
            "CONSUMER_UUID", "PARENT_PROVIDER_UUID", "ALT_PARENT_PROVIDER_UUID",
        ):  # fmt: skip
            self.export(name, new_uuid())
        self.export("CUSTOM_RES_CLASS", "CUSTOM_IRON_NFV")
        self.export("CUSTOM_RES_CLASS1", "CUSTOM_IRON_NFV1")
        self.export("CUSTOM_RES_CLASS2", "CUSTOM_IRON_NFV2")
        try:
            self.build()
        except BaseException:
            self.stop_fixture()  # gabbi does not stop a fixture that failed to start
            raise

    def build(self) -> None:
        """Create this fixture's data (none for the plain API fixture)."""

    def export(self, name: str, value: str) -> str:
        self._replaced.setdefault(name, os.environ.get(name))
        os.environ[name] = value
        return value

    def stop_fixture(self) -> None:
        for name, value in self._replaced.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


class AllocationFixture(APIFixture):
    """One provider (VCPU 10, DISK_GB 2048 in steps of 10) and three consumers on it.

    Two consumers of USER_ID hold DISK_GB 1000 (CONSUMER_0) and VCPU 6
    (CONSUMER_ID); one of ALT_USER_ID holds VCPU 1 and DISK_GB 20
    (ALT_CONSUMER_ID); all in PROJECT_ID. ALT_RP_UUID/ALT_RP_NAME name a
    provider that does not exist.
    """

    def build(self) -> None:
        project = os.environ["PROJECT_ID"]
        user = os.environ["USER_ID"]
        alt_user = self.export("ALT_USER_ID", new_uuid())
        client = self.client
        provider = client.create_provider(os.environ["RP_NAME"], uuid=os.environ["RP_UUID"])
        client.add_inventory(provider, "DISK_GB", 2048, step_size=10, min_unit=10, max_unit=1000)
        client.add_inventory(provider, "VCPU", 10, max_unit=10)
        self.export("CONSUMER_0", client.allocate(provider, {"DISK_GB": 1000}, project, user))
        self.export("CONSUMER_ID", client.allocate(provider, {"VCPU": 6}, project, user))
        self.export(
            "ALT_CONSUMER_ID",
            client.allocate(provider, {"DISK_GB": 20, "VCPU": 1}, project, alt_user),
        )
        self.export("ALT_RP_UUID", new_uuid())
        self.export("ALT_RP_NAME", new_uuid())


class SharedStorageFixture(APIFixture):
    """Two compute nodes and two sharing storage providers in one aggregate.

    cn1 and cn2: VCPU 24 (ratio 16), MEMORY_MB 128 GiB (ratio 1.5); cn1 has
    traits HW_CPU_X86_SSE and SSE2, cn2 has DISK_GB 2000 (100 reserved). ss and
    ss2: DISK_GB 2000 (100 reserved), MISC_SHARES_VIA_AGGREGATE. Each compute
    node has two NUMA children, each with one PF child of SRIOV_NET_VF 8.
    """

    def build(self) -> None:
        client = self.client
        aggregate = self.export("AGG_UUID", new_uuid())
        computes = {}
        for name in ("cn1", "cn2", "ss", "ss2"):
            computes[name] = self.export(
                f"{name.upper()}_UUID", client.create_provider(name, aggregate)
            )
        numas = {}
        for node, index in (("1", "1"), ("1", "2"), ("2", "1"), ("2", "2")):
            name = f"numa{node}_{index}"
            numas[name] = self.export(
                f"NUMA{node}_{index}_UUID",
                client.create_provider(name, parent=computes[f"cn{node}"]),
            )
        pfs = []
        for node, index in (("1", "1"), ("1", "2"), ("2", "1"), ("2", "2")):
            pf = client.create_provider(f"pf{node}_{index}", parent=numas[f"numa{node}_{index}"])
            pfs.append(self.export(f"PF{node}_{index}_UUID", pf))

        for name in ("cn1", "cn2"):
            client.add_inventory(computes[name], "VCPU", 24, allocation_ratio=16.0)
            client.add_inventory(computes[name], "MEMORY_MB", 128 * 1024, allocation_ratio=1.5)
        client.set_traits(computes["cn1"], "HW_CPU_X86_SSE", "HW_CPU_X86_SSE2")
        client.add_inventory(computes["cn2"], "DISK_GB", 2000, reserved=100, allocation_ratio=1.0)
        for name in ("ss", "ss2"):
            client.add_inventory(
                computes[name], "DISK_GB", 2000, reserved=100, allocation_ratio=1.0
            )
            client.set_traits(computes[name], "MISC_SHARES_VIA_AGGREGATE")
        for pf in pfs:
            client.add_inventory(pf, "SRIOV_NET_VF", 8, allocation_ratio=1.0)


class NUMAAggregateFixture(APIFixture):
    """Two resourceless compute nodes with two NUMA children each (VCPU 24, ratio 16).

    Aggregate A holds cn1, cn2 and sharing storage ss1; cn2 is also in B.
    numa1_1 is in C with sharing storage ss2. ss1 and ss2: DISK_GB 2000 (100
    reserved), MISC_SHARES_VIA_AGGREGATE.
    """

    def build(self) -> None:
        client = self.client
        agg_a = self.export("AGGA_UUID", new_uuid())
        agg_b = self.export("AGGB_UUID", new_uuid())
        agg_c = self.export("AGGC_UUID", new_uuid())
        cn1 = self.export("CN1_UUID", client.create_provider("cn1", agg_a))
        cn2 = self.export("CN2_UUID", client.create_provider("cn2", agg_a, agg_b))
        ss1 = self.export("SS1_UUID", client.create_provider("ss1", agg_a))
        ss2 = self.export("SS2_UUID", client.create_provider("ss2", agg_c))
        numas = [
            self.export("NUMA1_1_UUID", client.create_provider("numa1_1", agg_c, parent=cn1)),
            self.export("NUMA1_2_UUID", client.create_provider("numa1_2", parent=cn1)),
            self.export("NUMA2_1_UUID", client.create_provider("numa2_1", parent=cn2)),
            self.export("NUMA2_2_UUID", client.create_provider("numa2_2", parent=cn2)),
        ]
        for numa in numas:
            client.add_inventory(numa, "VCPU", 24, allocation_ratio=16.0)
        for sharing in (ss1, ss2):
            client.add_inventory(sharing, "DISK_GB", 2000, reserved=100, allocation_ratio=1.0)
            client.set_traits(sharing, "MISC_SHARES_VIA_AGGREGATE")


class NUMANetworkFixture(APIFixture):
    """Two compute hosts, one with NUMA nodes and network agents, one with NICs.

    - ss1: DISK_GB 2000, MISC_SHARES_VIA_AGGREGATE, in aggregate A.
    - cn1 (no inventory, COMPUTE_VOLUME_MULTI_ATTACH, aggregate A) with
      children numa0 (VCPU 4 with 2 used, MEMORY_MB 2048 min_unit 512
      step_size 256, HW_NUMA_ROOT; children fpga0 FPGA 1 and pgpu0 VGPU 8),
      numa1 (VCPU 4, MEMORY_MB 2048 min_unit 256 max_unit 1024, HW_NUMA_ROOT
      and CUSTOM_FOO; children fpga1_0 and fpga1_1, FPGA 1 each),
      sriov_agent (CUSTOM_VNIC_TYPE_DIRECT; children esn1 and esn2,
      CUSTOM_PHYSNET1/2 with NET_BW_EGR_KILOBIT_PER_SEC 10000/20000) and
      ovs_agent (CUSTOM_VNIC_TYPE_NORMAL; child br_int, CUSTOM_PHYSNET0,
      NET_BW_EGR_KILOBIT_PER_SEC 1000).
    - cn2 (VCPU 8 with 3 used, MEMORY_MB 2048 min_unit 1024 step_size 128,
      DISK_GB 1000, CUSTOM_FOO, aggregate A) with children nic1..nic3
      (CUSTOM_HW_NIC_ROOT) parenting PFs of CUSTOM_VF: pf1_1 and pf1_2 (4
      each, PHYSNET1 and 2), pf2_1..pf2_4 (2 each, PHYSNET1, 2, 1, 2), pf3_1
      (8, PHYSNET1).

    The used VCPUs belong to two consumers of user ``numafx-user`` in project
    ``numafx-project``. ``DeepNUMANetworkFixture`` creates cn1 and cn2 first,
    under parents of their own.
    """

    def build(self) -> None:
        self.make_entities(cn1=None, cn2=None)

    def make_entities(self, cn1: str | None, cn2: str | None) -> None:
        client = self.client
        agg_a = self.export("AGGA_UUID", new_uuid())
        ss1 = self.export("SS1_UUID", client.create_provider("ss1", agg_a))
        client.set_traits(ss1, "MISC_SHARES_VIA_AGGREGATE")
        client.add_inventory(ss1, "DISK_GB", 2000)

        cn1 = cn1 or client.create_provider("cn1", agg_a)
        client.set_aggregates(cn1, agg_a)
        client.set_traits(cn1, "COMPUTE_VOLUME_MULTI_ATTACH")
        self.export("CN1_UUID", cn1)
        numas = []
        for index, traits in ((0, ["HW_NUMA_ROOT"]), (1, ["HW_NUMA_ROOT", "CUSTOM_FOO"])):
            numa = client.create_provider(f"numa{index}", parent=cn1)
            client.set_traits(numa, *traits)
            client.add_inventory(numa, "VCPU", 4)
            numas.append(self.export(f"NUMA{index}_UUID", numa))
        client.add_inventory(numas[0], "MEMORY_MB", 2048, min_unit=512, step_size=256)
        client.add_inventory(numas[1], "MEMORY_MB", 2048, min_unit=256, max_unit=1024)
        project, user = "numafx-project", "numafx-user"
        client.allocate(numas[0], {"VCPU": 2}, project, user)

        fpga = self.export("FPGA0_UUID", client.create_provider("fpga0", parent=numas[0]))
        client.add_inventory(fpga, "FPGA", 1)
        pgpu = self.export("PGPU0_UUID", client.create_provider("pgpu0", parent=numas[0]))
        client.add_inventory(pgpu, "VGPU", 8)
        for index in (0, 1):
            fpga = client.create_provider(f"fpga1_{index}", parent=numas[1])
            client.add_inventory(fpga, "FPGA", 1)
            self.export(f"FPGA1_{index}_UUID", fpga)

        agent = self.export("SRIOV_AGENT_UUID", client.create_provider("sriov_agent", parent=cn1))
        client.set_traits(agent, "CUSTOM_VNIC_TYPE_DIRECT")
        for index in (1, 2):
            device = client.create_provider(f"esn{index}", parent=agent)
            client.set_traits(device, f"CUSTOM_PHYSNET{index}")
            client.add_inventory(device, "NET_BW_EGR_KILOBIT_PER_SEC", 10000 * index)
            self.export(f"ESN{index}_UUID", device)
        agent = self.export("OVS_AGENT_UUID", client.create_provider("ovs_agent", parent=cn1))
        client.set_traits(agent, "CUSTOM_VNIC_TYPE_NORMAL")
        bridge = self.export("BR_INT_UUID", client.create_provider("br_int", parent=agent))
        client.set_traits(bridge, "CUSTOM_PHYSNET0")
        client.add_inventory(bridge, "NET_BW_EGR_KILOBIT_PER_SEC", 1000)

        cn2 = cn2 or client.create_provider("cn2")
        client.set_aggregates(cn2, agg_a)
        client.add_inventory(cn2, "VCPU", 8)
        client.allocate(cn2, {"VCPU": 3}, project, user)
        client.add_inventory(cn2, "MEMORY_MB", 2048, min_unit=1024, step_size=128)
        client.add_inventory(cn2, "DISK_GB", 1000)
        client.set_traits(cn2, "CUSTOM_FOO")
        self.export("CN2_UUID", cn2)
        nics = []
        for index in (1, 2, 3):
            nic = client.create_provider(f"nic{index}", parent=cn2)
            client.set_traits(nic, "CUSTOM_HW_NIC_ROOT")
            nics.append(self.export(f"NIC{index}_UUID", nic))
        # (nic, pf suffix, physnet, VFs) in upstream's creation order
        pfs = [
            (nics[0], "1_1", 1, 4), (nics[0], "1_2", 2, 4),
            (nics[1], "2_1", 1, 2), (nics[1], "2_2", 2, 2),
            (nics[1], "2_3", 1, 2), (nics[1], "2_4", 2, 2),
            (nics[2], "3_1", 1, 8),
        ]  # fmt: skip
        for nic, suffix, physnet, vfs in pfs:
            pf = client.create_provider(f"pf{suffix}", parent=nic)
            client.set_traits(pf, f"CUSTOM_PHYSNET{physnet}")
            client.add_inventory(pf, "CUSTOM_VF", vfs)
            self.export(f"PF{suffix}_UUID", pf)


class DeepNUMANetworkFixture(NUMANetworkFixture):
    """``NUMANetworkFixture`` with cn1 under gp1/p1 and cn2 under gp1/p2 (all resourceless)."""

    def build(self) -> None:
        client = self.client
        grandparent = client.create_provider("gp1")
        parent1 = client.create_provider("p1", parent=grandparent)
        parent2 = client.create_provider("p2", parent=grandparent)
        cn1 = client.create_provider("cn1", parent=parent1)
        cn2 = client.create_provider("cn2", parent=parent2)
        self.make_entities(cn1=cn1, cn2=cn2)


class NonSharedStorageFixture(APIFixture):
    """Three compute nodes with VCPU 24, MEMORY_MB 128 GiB and DISK_GB 2000, in no aggregate.

    AGGA_UUID, AGGB_UUID and AGGC_UUID name aggregates the files use themselves.
    """

    def build(self) -> None:
        for name in ("AGGA_UUID", "AGGB_UUID", "AGGC_UUID"):
            self.export(name, new_uuid())
        computes = [
            self.export(f"CN{index}_UUID", self.client.create_provider(f"cn{index}"))
            for index in (1, 2, 3)
        ]
        for compute in computes:
            self.client.add_inventory(compute, "VCPU", 24)
            self.client.add_inventory(compute, "MEMORY_MB", 128 * 1024)
            self.client.add_inventory(compute, "DISK_GB", 2000)


class GranularFixture(APIFixture):
    """Three compute nodes and three sharing providers for granular requests.

    - cn_left (aggregate A): VCPU 8, MEMORY_MB 4096, DISK_GB 500, VGPU 8,
      SRIOV_NET_VF 8, CUSTOM_NET_MBPS 4000; HW_CPU_X86_AVX, HW_CPU_X86_AVX2,
      HW_GPU_API_DXVA, HW_NIC_DCB_PFC, CUSTOM_FOO.
    - cn_middle (A, B): VCPU 8, MEMORY_MB 4096, SRIOV_NET_VF 8,
      CUSTOM_NET_MBPS 4000; HW_CPU_X86_AVX, HW_CPU_X86_AVX2, HW_CPU_X86_SSE,
      HW_NIC_ACCEL_TLS.
    - cn_right (B, C): VCPU 8, MEMORY_MB 4096, DISK_GB 500, VGPU 8 max_unit 2;
      HW_CPU_X86_MMX, HW_GPU_API_DXVA, CUSTOM_DISK_SSD.
    - shr_disk_1 (A): DISK_GB 1000; MISC_SHARES_VIA_AGGREGATE, CUSTOM_DISK_SSD.
    - shr_disk_2 (A, B): DISK_GB 1000; MISC_SHARES_VIA_AGGREGATE.
    - shr_net (C): SRIOV_NET_VF 16, CUSTOM_NET_MBPS 40000;
      MISC_SHARES_VIA_AGGREGATE.
    """

    def build(self) -> None:
        client = self.client
        client.ensure_resource_class("CUSTOM_NET_MBPS")
        agg_a = self.export("AGGA", new_uuid())
        agg_b = self.export("AGGB", new_uuid())
        agg_c = self.export("AGGC", new_uuid())

        left = self.export("CN_LEFT", client.create_provider("cn_left", agg_a))
        for resource_class, total in (
            ("VCPU", 8), ("MEMORY_MB", 4096), ("DISK_GB", 500), ("VGPU", 8),
            ("SRIOV_NET_VF", 8), ("CUSTOM_NET_MBPS", 4000),
        ):  # fmt: skip
            client.add_inventory(left, resource_class, total)
        client.set_traits(
            left, "HW_CPU_X86_AVX", "HW_CPU_X86_AVX2", "HW_GPU_API_DXVA", "HW_NIC_DCB_PFC",
            "CUSTOM_FOO",
        )  # fmt: skip

        middle = self.export("CN_MIDDLE", client.create_provider("cn_middle", agg_a, agg_b))
        for resource_class, total in (
            ("VCPU", 8), ("MEMORY_MB", 4096), ("SRIOV_NET_VF", 8), ("CUSTOM_NET_MBPS", 4000),
        ):  # fmt: skip
            client.add_inventory(middle, resource_class, total)
        client.set_traits(
            middle, "HW_CPU_X86_AVX", "HW_CPU_X86_AVX2", "HW_CPU_X86_SSE", "HW_NIC_ACCEL_TLS"
        )

        right = self.export("CN_RIGHT", client.create_provider("cn_right", agg_b, agg_c))
        client.add_inventory(right, "VCPU", 8)
        client.add_inventory(right, "MEMORY_MB", 4096)
        client.add_inventory(right, "DISK_GB", 500)
        client.add_inventory(right, "VGPU", 8, max_unit=2)
        client.set_traits(right, "HW_CPU_X86_MMX", "HW_GPU_API_DXVA", "CUSTOM_DISK_SSD")

        disk1 = self.export("SHR_DISK_1", client.create_provider("shr_disk_1", agg_a))
        client.add_inventory(disk1, "DISK_GB", 1000)
        client.set_traits(disk1, "MISC_SHARES_VIA_AGGREGATE", "CUSTOM_DISK_SSD")
        disk2 = self.export("SHR_DISK_2", client.create_provider("shr_disk_2", agg_a, agg_b))
        client.add_inventory(disk2, "DISK_GB", 1000)
        client.set_traits(disk2, "MISC_SHARES_VIA_AGGREGATE")
        net = self.export("SHR_NET", client.create_provider("shr_net", agg_c))
        client.add_inventory(net, "SRIOV_NET_VF", 16)
        client.add_inventory(net, "CUSTOM_NET_MBPS", 40000)
        client.set_traits(net, "MISC_SHARES_VIA_AGGREGATE")


VNIC_DIRECT_TRAITS = (
    "CUSTOM_VNIC_TYPE_DIRECT",
    "CUSTOM_VNIC_TYPE_DIRECT_PHYSICAL",
    "CUSTOM_VNIC_TYPE_MACVTAP",
)


class NeutronQoSMultiSegmentFixture(APIFixture):
    """Four compute trees as Neutron builds them for QoS minimum bandwidth and packet rate.

    Each ``computeN`` (VCPU 8, MEMORY_MB 4096, DISK_GB 500) has an
    ``computeN:Open vSwitch agent`` child (NET_PACKET_RATE_KILOPACKET_PER_SEC
    1000, CUSTOM_VNIC_TYPE_NORMAL) with bridges, and a ``computeN:NIC Switch
    agent`` child (the direct VNIC types) with PFs. Bridges and PFs have
    egress and ingress bandwidth and a physnet trait: compute0 is on
    CUSTOM_PHYSNET_OTHER, compute1 on MSN_S1, compute2 on MSN_S2 (5000 per
    bridge, 10000 per PF), compute3 on both segments with two bridges and two
    PFs of 1000 each. The environment names each provider (``compute1:br_ex``).
    """

    def build(self) -> None:
        # (compute, physnets of its bridges/PFs, bandwidth of a bridge, of a PF)
        trees = (
            ("compute0", ["CUSTOM_PHYSNET_OTHER"], 5000, 10000),
            ("compute1", ["CUSTOM_PHYSNET_MSN_S1"], 5000, 10000),
            ("compute2", ["CUSTOM_PHYSNET_MSN_S2"], 5000, 10000),
            ("compute3", ["CUSTOM_PHYSNET_MSN_S1", "CUSTOM_PHYSNET_MSN_S2"], 1000, 1000),
        )
        sriov_agents = {tree[0]: self._compute_tree(*tree) for tree in trees}
        # Upstream publishes compute2's NIC Switch agent under compute3's name
        # too (no file reads it); kept identical.
        sriov_agents["compute3"] = sriov_agents["compute2"]
        for compute, agent in sriov_agents.items():
            self.export(f"{compute}:sriov_agent", agent)

    def _compute_tree(
        self, compute: str, physnets: list[str], bridge_bandwidth: int, pf_bandwidth: int
    ) -> str:
        """Build one tree; return its NIC Switch agent."""
        client = self.client
        root = self.export(compute, client.create_provider(compute))
        client.add_inventory(root, "VCPU", 8)
        client.add_inventory(root, "MEMORY_MB", 4096)
        client.add_inventory(root, "DISK_GB", 500)

        ovs_name = f"{compute}:Open vSwitch agent"
        ovs = self.export(f"{compute}:ovs_agent", client.create_provider(ovs_name, parent=root))
        client.add_inventory(ovs, "NET_PACKET_RATE_KILOPACKET_PER_SEC", 1000)
        client.set_traits(ovs, "CUSTOM_VNIC_TYPE_NORMAL")
        for index, physnet in enumerate(physnets):
            suffix = "" if index == 0 else str(index + 1)
            bridge = client.create_provider(f"{ovs_name}:br-ex{suffix}", parent=ovs)
            self._bandwidth(bridge, bridge_bandwidth, "CUSTOM_VNIC_TYPE_NORMAL", physnet)
            self.export(f"{compute}:br_ex{suffix}", bridge)

        sriov_name = f"{compute}:NIC Switch agent"
        sriov = client.create_provider(sriov_name, parent=root)
        client.set_traits(sriov, *VNIC_DIRECT_TRAITS)
        for index, physnet in enumerate(physnets):
            pf = client.create_provider(f"{sriov_name}:enp129s0f{index}", parent=sriov)
            self._bandwidth(pf, pf_bandwidth, *VNIC_DIRECT_TRAITS, physnet)
            self.export(f"{compute}:pf{index}", pf)
        return sriov

    def _bandwidth(self, provider: str, kilobits: int, *traits: str) -> None:
        self.client.add_inventory(provider, "NET_BW_EGR_KILOBIT_PER_SEC", kilobits)
        self.client.add_inventory(provider, "NET_BW_IGR_KILOBIT_PER_SEC", kilobits)
        self.client.set_traits(provider, *traits)


class LegacyRBACPolicyFixture(APIFixture):
    """The policy's legacy defaults (``enforce_new_defaults`` false): the server's
    configuration, chosen from the file's fixtures by ``policy_settings``."""


class SecureRBACPolicyFixture(APIFixture):
    """The policy's new defaults only (``enforce_new_defaults`` true): as above."""


class OpenPolicyFixture(APIFixture):
    """Every rule but ``admin_api`` open to anyone (a policy file): as above."""


FIXTURES: tuple[type[APIFixture], ...] = (
    APIFixture,
    AllocationFixture,
    SharedStorageFixture,
    NUMAAggregateFixture,
    NUMANetworkFixture,
    DeepNUMANetworkFixture,
    NonSharedStorageFixture,
    GranularFixture,
    NeutronQoSMultiSegmentFixture,
    LegacyRBACPolicyFixture,
    SecureRBACPolicyFixture,
    OpenPolicyFixture,
)


def bind_fixtures(
    client: PlacementClient, classes: Iterable[type[APIFixture]] = FIXTURES
) -> types.SimpleNamespace:
    """The fixture module for gabbi: each fixture class, bound to ``client``."""
    return types.SimpleNamespace(
        **{cls.__name__: type(cls.__name__, (cls,), {"client": client}) for cls in classes}
    )
