"""Every worked example of upstream Placement's guide "Modeling with Provider Trees" as
exact answers: sharing providers, aggregates, member_of, required and forbidden traits,
granular groups with group_policy, in_tree, root_required and same_subtree.

Each test builds the example's providers through the API and asserts the exact
set of candidates the guide lists. The guide's ACCELERATOR_FPGA is not a
valid class name; the standard FPGA class stands in for it.
"""

import pytest

from tests.api.candidate_helpers import Providers, alloc

RESOURCES = "resources=VCPU:1,MEMORY_MB:512,DISK_GB:500"


@pytest.fixture
def tree(api) -> Providers:
    return Providers(api)


def test_sharing_provider_serves_the_trees_in_its_aggregate(tree):
    tree.add(
        "SS1", inventory={"DISK_GB": 1000}, traits=["MISC_SHARES_VIA_AGGREGATE"], aggregates=["A"]
    )
    tree.add("SS2", inventory={"DISK_GB": 1000}, traits=["MISC_SHARES_VIA_AGGREGATE"])
    tree.add("CN1", inventory={"VCPU": 8, "MEMORY_MB": 1024, "DISK_GB": 1000}, aggregates=["A"])
    tree.add("CN2", inventory={"VCPU": 8, "MEMORY_MB": 1024, "DISK_GB": 1000})

    found = tree.candidates(RESOURCES)

    assert sorted(found, key=sorted) == sorted(
        [
            alloc(("CN1", "VCPU", 1, "MEMORY_MB", 512, "DISK_GB", 500)),
            alloc(("CN2", "VCPU", 1, "MEMORY_MB", 512, "DISK_GB", 500)),
            alloc(("CN1", "VCPU", 1, "MEMORY_MB", 512), ("SS1", "DISK_GB", 500)),
        ],
        key=sorted,
    )


@pytest.fixture
def numa_trees_with_sharing(tree) -> Providers:
    tree.add(
        "SS1", inventory={"DISK_GB": 1000}, traits=["MISC_SHARES_VIA_AGGREGATE"], aggregates=["A"]
    )
    tree.add("CN1", inventory={"MEMORY_MB": 1024, "DISK_GB": 1000}, aggregates=["A", "B"])
    tree.add("NUMA1_1", parent="CN1", inventory={"VCPU": 8})
    tree.add("NUMA1_2", parent="CN1", inventory={"VCPU": 8})
    tree.add("CN2", inventory={"MEMORY_MB": 1024, "DISK_GB": 1000}, aggregates=["A"])
    tree.add("NUMA2_1", parent="CN2", inventory={"VCPU": 8}, aggregates=["B"])
    tree.add("NUMA2_2", parent="CN2", inventory={"VCPU": 8})
    return tree


def _eight_numa_candidates():
    found = []
    for cn, numas in (("CN1", ("NUMA1_1", "NUMA1_2")), ("CN2", ("NUMA2_1", "NUMA2_2"))):
        for numa in numas:
            found.append(alloc((numa, "VCPU", 1), (cn, "MEMORY_MB", 512, "DISK_GB", 500)))
            found.append(alloc((numa, "VCPU", 1), (cn, "MEMORY_MB", 512), ("SS1", "DISK_GB", 500)))
    return found


def test_a_sharing_provider_serves_the_whole_tree(numa_trees_with_sharing):
    found = numa_trees_with_sharing.candidates(RESOURCES)

    assert len(found) == 8
    assert set(found) == set(_eight_numa_candidates())


def test_an_aggregate_on_the_root_spans_its_tree(numa_trees_with_sharing):
    found = numa_trees_with_sharing.candidates(f"{RESOURCES}&member_of={{A}}")

    assert len(found) == 8
    assert set(found) == set(_eight_numa_candidates())


def test_an_aggregate_on_a_child_does_not_span_its_tree(numa_trees_with_sharing):
    found = numa_trees_with_sharing.candidates(f"{RESOURCES}&member_of={{B}}")

    assert sorted(found, key=sorted) == sorted(
        [
            alloc(("NUMA1_1", "VCPU", 1), ("CN1", "MEMORY_MB", 512, "DISK_GB", 500)),
            alloc(("NUMA1_2", "VCPU", 1), ("CN1", "MEMORY_MB", 512, "DISK_GB", 500)),
        ],
        key=sorted,
    )


@pytest.fixture
def nics(tree) -> Providers:
    tree.add("CN1", inventory={"VCPU": 8, "MEMORY_MB": 1024, "DISK_GB": 1000})
    tree.add("NIC1_1", parent="CN1", inventory={"SRIOV_NET_VF": 8}, traits=["HW_NIC_ACCEL_SSL"])
    tree.add("NIC1_2", parent="CN1", inventory={"SRIOV_NET_VF": 8})
    return tree


COMPUTE = ("CN1", "VCPU", 1, "MEMORY_MB", 512, "DISK_GB", 500)


def test_a_required_trait_is_met_by_one_of_the_providers(nics):
    found = nics.candidates(f"{RESOURCES},SRIOV_NET_VF:2&required=HW_NIC_ACCEL_SSL")

    assert found == [alloc(COMPUTE, ("NIC1_1", "SRIOV_NET_VF", 2))]


def test_a_forbidden_trait_excludes_its_provider(nics):
    found = nics.candidates(f"{RESOURCES},SRIOV_NET_VF:2&required=!HW_NIC_ACCEL_SSL")

    assert found == [alloc(COMPUTE, ("NIC1_2", "SRIOV_NET_VF", 2))]


def test_traits_not_asked_for_are_ignored(nics):
    found = nics.candidates(f"{RESOURCES},SRIOV_NET_VF:2")

    assert set(found) == {
        alloc(COMPUTE, ("NIC1_1", "SRIOV_NET_VF", 2)),
        alloc(COMPUTE, ("NIC1_2", "SRIOV_NET_VF", 2)),
    }
    assert len(found) == 2


GRANULAR_NICS = (
    f"{RESOURCES}&resources1=SRIOV_NET_VF:1&required1=HW_NIC_ACCEL_SSL&resources2=SRIOV_NET_VF:1"
)


def test_isolated_granular_groups_take_distinct_providers(nics):
    found = nics.candidates(f"{GRANULAR_NICS}&group_policy=isolate")

    assert found == [alloc(COMPUTE, ("NIC1_1", "SRIOV_NET_VF", 1), ("NIC1_2", "SRIOV_NET_VF", 1))]


def test_granular_groups_may_share_a_provider_with_group_policy_none(nics):
    found = nics.candidates(f"{GRANULAR_NICS}&group_policy=none")

    assert set(found) == {
        alloc(COMPUTE, ("NIC1_1", "SRIOV_NET_VF", 1), ("NIC1_2", "SRIOV_NET_VF", 1)),
        alloc(COMPUTE, ("NIC1_1", "SRIOV_NET_VF", 2)),
    }
    assert len(found) == 2


@pytest.fixture
def two_trees_two_sharing(tree) -> Providers:
    for ss in ("SS1", "SS2"):
        tree.add(
            ss, inventory={"DISK_GB": 1000}, traits=["MISC_SHARES_VIA_AGGREGATE"], aggregates=["A"]
        )
    for cn, numas in (("CN1", ("NUMA1_1", "NUMA1_2")), ("CN2", ("NUMA2_1", "NUMA2_2"))):
        tree.add(cn, inventory={"DISK_GB": 1000}, aggregates=["A"])
        for numa in numas:
            tree.add(numa, parent=cn, inventory={"VCPU": 4})
    return tree


@pytest.mark.parametrize("anchor", ["CN1", "NUMA1_1"])
def test_in_tree_keeps_the_tree_of_the_named_provider(two_trees_two_sharing, anchor):
    found = two_trees_two_sharing.candidates(f"resources=VCPU:1,DISK_GB:50&in_tree=<{anchor}>")

    assert set(found) == {
        alloc(("NUMA1_1", "VCPU", 1), ("CN1", "DISK_GB", 50)),
        alloc(("NUMA1_2", "VCPU", 1), ("CN1", "DISK_GB", 50)),
    }
    assert len(found) == 2


def test_unsuffixed_in_tree_does_not_bind_a_granular_group(two_trees_two_sharing):
    found = two_trees_two_sharing.candidates("resources=VCPU:1&in_tree=<CN1>&resources1=DISK_GB:10")

    assert set(found) == {
        alloc((numa, "VCPU", 1), (disk, "DISK_GB", 10))
        for numa in ("NUMA1_1", "NUMA1_2")
        for disk in ("CN1", "SS1", "SS2")
    }
    assert len(found) == 6


def test_suffixed_in_tree_sticks_to_the_sharing_provider(two_trees_two_sharing):
    found = two_trees_two_sharing.candidates(
        "resources=VCPU:1&resources1=DISK_GB:10&in_tree1=<SS1>"
    )

    assert set(found) == {
        alloc((numa, "VCPU", 1), ("SS1", "DISK_GB", 10))
        for numa in ("NUMA1_1", "NUMA1_2", "NUMA2_1", "NUMA2_2")
    }
    assert len(found) == 4


def test_in_tree_on_both_groups(two_trees_two_sharing):
    found = two_trees_two_sharing.candidates(
        "resources1=VCPU:1&in_tree1=<CN1>&resources2=DISK_GB:10&in_tree2=<SS1>&group_policy=isolate"
    )

    assert set(found) == {
        alloc(("NUMA1_1", "VCPU", 1), ("SS1", "DISK_GB", 10)),
        alloc(("NUMA1_2", "VCPU", 1), ("SS1", "DISK_GB", 10)),
    }
    assert len(found) == 2


@pytest.fixture
def root_traits(tree) -> Providers:
    tree.add(
        "NON_NUMA_CN",
        inventory={"VCPU": 8, "MEMORY_MB": 1024, "DISK_GB": 1000},
        traits=[
            "HW_CPU_X86_AVX2",
            "STORAGE_DISK_SSD",
            "COMPUTE_VOLUME_MULTI_ATTACH",
            "CUSTOM_WINDOWS_LICENSE_POOL",
        ],
    )
    tree.add(
        "NUMA_CN",
        inventory={"DISK_GB": 1000},
        traits=["STORAGE_DISK_SSD", "COMPUTE_VOLUME_MULTI_ATTACH"],
    )
    tree.add("NUMA1", parent="NUMA_CN", inventory={"VCPU": 4, "MEMORY_MB": 1024})
    tree.add(
        "NUMA2",
        parent="NUMA_CN",
        inventory={"VCPU": 4, "MEMORY_MB": 1024},
        traits=["HW_CPU_X86_AVX2"],
    )
    return tree


def test_root_required_keeps_trees_whose_root_has_the_trait(root_traits):
    found = root_traits.candidates(
        "resources1=VCPU:1,MEMORY_MB:512&required1=HW_CPU_X86_AVX2&resources2=DISK_GB:100"
        "&group_policy=none&root_required=COMPUTE_VOLUME_MULTI_ATTACH"
    )

    assert set(found) == {
        alloc(("NON_NUMA_CN", "VCPU", 1, "MEMORY_MB", 512, "DISK_GB", 100)),
        alloc(("NUMA_CN", "DISK_GB", 100), ("NUMA2", "VCPU", 1, "MEMORY_MB", 512)),
    }
    assert len(found) == 2


def test_root_required_forbidden_trait_drops_the_tree(root_traits):
    found = root_traits.candidates(
        "resources1=VCPU:1,MEMORY_MB:512&resources2=DISK_GB:100"
        "&group_policy=none&root_required=!CUSTOM_WINDOWS_LICENSE_POOL"
    )

    assert set(found) == {
        alloc(("NUMA_CN", "DISK_GB", 100), ("NUMA1", "VCPU", 1, "MEMORY_MB", 512)),
        alloc(("NUMA_CN", "DISK_GB", 100), ("NUMA2", "VCPU", 1, "MEMORY_MB", 512)),
    }
    assert len(found) == 2


@pytest.fixture
def fpgas(tree) -> Providers:
    tree.add("CN")
    for numa in ("NUMA0", "NUMA1"):
        tree.add(
            numa, parent="CN", inventory={"VCPU": 4, "MEMORY_MB": 2048}, traits=["HW_NUMA_ROOT"]
        )
    tree.add("FPGA0_0", parent="NUMA0", inventory={"FPGA": 1}, traits=["CUSTOM_TYPE1"])
    tree.add("FPGA1_0", parent="NUMA1", inventory={"FPGA": 1}, traits=["CUSTOM_TYPE1"])
    tree.add("FPGA1_1", parent="NUMA1", inventory={"FPGA": 1}, traits=["CUSTOM_TYPE2"])
    return tree


def test_same_subtree_keeps_accelerators_under_their_numa_node(fpgas):
    found = fpgas.candidates(
        "resources_COMPUTE=VCPU:1,MEMORY_MB:256&resources_ACCEL=FPGA:1"
        "&group_policy=none&same_subtree=_COMPUTE,_ACCEL"
    )

    assert set(found) == {
        alloc(("NUMA0", "VCPU", 1, "MEMORY_MB", 256), ("FPGA0_0", "FPGA", 1)),
        alloc(("NUMA1", "VCPU", 1, "MEMORY_MB", 256), ("FPGA1_0", "FPGA", 1)),
        alloc(("NUMA1", "VCPU", 1, "MEMORY_MB", 256), ("FPGA1_1", "FPGA", 1)),
    }
    assert len(found) == 3


def test_same_subtree_with_a_resourceless_group(fpgas):
    body = fpgas.get(
        "required_NUMA=HW_NUMA_ROOT&resources_ACCEL1=FPGA:1&required_ACCEL1=CUSTOM_TYPE1"
        "&resources_ACCEL2=FPGA:1&required_ACCEL2=CUSTOM_TYPE2"
        "&group_policy=none&same_subtree=_NUMA,_ACCEL1,_ACCEL2"
    )

    [request] = body["allocation_requests"]
    assert fpgas.named(request) == alloc(("FPGA1_0", "FPGA", 1), ("FPGA1_1", "FPGA", 1))
    # The resourceless group's provider shows in the mappings only.
    assert fpgas.mappings(request) == {
        "_NUMA": {"NUMA1"},
        "_ACCEL1": {"FPGA1_0"},
        "_ACCEL2": {"FPGA1_1"},
    }
