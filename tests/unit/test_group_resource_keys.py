"""The translator's pure parts: keys, amounts, class names, levels, fitting requests."""

from fractions import Fraction

import pytest

from placement import errors
from placement.group_resources.keys import parse_key_map
from placement.group_resources.levels import LevelConflict, Levels
from placement.group_resources.node_tree import desired_tree
from placement.group_resources.request_tree import Unplaced, fit_to_levels, parse_request
from placement.nodes.naming import Naming, level_trait, path_of
from placement.nodes.quantities import amount_in_unit, parse_quantity


def test_keys_split_into_groups_with_their_base_resources():
    root = parse_key_map(
        {"cpu": 2, "gpu/0/cards": 1, "gpu/0/memory": "1Gi", "nvidia.com/gpu": 1}, "map"
    )
    assert set(root.base) == {"cpu", "nvidia.com/gpu"}
    [gpu0] = root.subgroups.values()
    assert (gpu0.name, gpu0.index, gpu0.path) == ("gpu", "0", ("gpu", "0"))
    assert gpu0.base["memory"] == ("gpu/0/memory", "1Gi")


@pytest.mark.parametrize(
    "key",
    ["gpu/0", "gpu//cards", "/cards", "gpu/0/", "a/b/c/d", "gpu/0/ca rds", "", "gpu/@/cards"],
)
def test_malformed_keys_are_refused_naming_the_key(key):
    with pytest.raises(errors.BadRequest) as raised:
        parse_key_map({key: 1}, "requested resources")
    assert repr(key) in raised.value.detail or "Empty key" in raised.value.detail


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (3, Fraction(3)),
        ("2Gi", Fraction(2 * 2**30)),
        ("1GiB", Fraction(2**30)),
        ("512Mi", Fraction(512 * 2**20)),
        ("1G", Fraction(10**9)),
        ("1.5Gi", Fraction(3 * 2**29)),
        ("500m", Fraction(1, 2)),
        ("2k", Fraction(2000)),
    ],
)
def test_quantities_are_read_exactly(text, expected):
    assert parse_quantity(text, "k") == expected


@pytest.mark.parametrize("value", ["lots", "1Gx", True, None, [1], "-1", 1.5])
def test_what_is_not_an_amount_is_refused(value):
    with pytest.raises(errors.BadRequest, match="k"):
        parse_quantity(value, "k")


def test_amounts_must_be_whole_in_the_class_unit():
    assert amount_in_unit("2GiB", "MB", "memory", "MEMORY_MB") == 2048
    with pytest.raises(errors.BadRequest, match="not a whole number MB"):
        amount_in_unit("1G", "MB", "memory", "MEMORY_MB")
    with pytest.raises(errors.BadRequest, match="cpu"):
        amount_in_unit("500m", "count", "cpu", "VCPU")


def test_class_names_follow_the_level_and_the_configured_units():
    naming = Naming()
    assert naming.resource_class(None, "cpu") == "VCPU"
    assert naming.resource_class(None, "memory") == "MEMORY_MB"
    assert naming.resource_class(None, "nvidia.com/gpu") == "CUSTOM_NVIDIA_COM_GPU"
    assert naming.resource_class("gpu", "cards") == "CUSTOM_GPU_CARDS"
    assert naming.resource_class("gpu", "memory") == "CUSTOM_GPU_MEMORY_MB"
    assert level_trait("Gpugrp1") == "CUSTOM_GROUP_LEVEL_GPUGRP1"
    custom = Naming(standard_classes={"cores": "VCPU"}, byte_units={"vram": "GB"})
    assert custom.resource_class(None, "cores") == "VCPU"
    assert custom.resource_class("gpu", "vram") == "CUSTOM_GPU_VRAM_GB"


def test_a_level_can_count_a_resource_in_its_own_unit():
    """Device nodes count GPU memory in KiB; the node's own memory keeps its unit."""
    from placement.devices.node_map import device_naming

    naming = device_naming(Naming())
    assert naming.resource_class("gpu", "memory") == "CUSTOM_GPU_MEMORY_KB"
    assert naming.unit("memory", "GPU") == "KB"
    assert naming.resource_class(None, "memory") == "MEMORY_MB"
    assert naming.unit("memory") == naming.unit("memory", "numa") == "MB"
    assert device_naming(naming) is naming


def test_provider_names_give_back_the_group_path():
    assert path_of("n1", "n1") == ()
    assert path_of("n1", "n1/Gpugrp0/0/gpu/dev1") == ("Gpugrp0", "0", "gpu", "dev1")
    assert path_of("n1", "n10/gpu/dev1") is None
    assert path_of("n1", "n1/gpu") is None


def test_a_level_may_sit_in_one_place_only():
    with pytest.raises(LevelConflict):
        Levels.from_paths([("gpu", "0"), ("grp", "0", "gpu", "1")])
    with pytest.raises(LevelConflict):
        Levels.from_paths([("grp", "0", "grp", "1")])
    with pytest.raises(errors.BadRequest, match="one place per group level"):
        desired_tree({"gpu/0/cards": 1, "grp/0/gpu/1/cards": 1}, Naming())


def test_two_keys_of_one_class_on_one_group_are_refused():
    with pytest.raises(errors.BadRequest, match="both become resource class"):
        desired_tree({"gpu/0/mem-x": 1, "gpu/0/mem_x": 1}, Naming())


def test_zero_amounts_create_no_inventory_but_keep_the_group():
    tree = desired_tree({"gpu/0/cards": 0}, Naming())
    assert [(p.path, p.inventories) for p in tree.providers] == [((), {}), (("gpu", "0"), {})]


def test_a_request_naming_a_lower_level_gets_a_higher_group_per_lower_group():
    levels = Levels.from_paths([("G1", "0", "G0", "0", "gpu", "d0")])
    request = parse_request({"G0/RA/gpu/a/cards": 1, "G0/RB/gpu/b/cards": 1}, Naming())
    assert not request.flat
    fitted = fit_to_levels(request, levels)
    assert not isinstance(fitted, Unplaced)
    filled = [(child.level, child.filled_in, child.path) for child in fitted.children]
    assert filled == [("G1", True, ("G1", "RA")), ("G1", True, ("G1", "RB"))]
    assert [c.children[0].path for c in fitted.children] == [("G0", "RA"), ("G0", "RB")]


def test_a_flat_request_is_left_as_it_is_and_unknown_levels_are_named():
    levels = Levels.from_paths([("G0", "0", "gpu", "d0")])
    request = parse_request({"gpu/0/cards": 1, "gpu/1/cards": 1}, Naming())
    assert request.flat
    assert fit_to_levels(request, levels) is request.top
    missing = fit_to_levels(parse_request({"fpga/0/cards": 1}, Naming()), levels)
    assert missing == Unplaced("fpga/0/cards", "the node has no 'fpga' groups")


def test_a_request_whose_level_sits_elsewhere_on_the_node_is_unplaced():
    levels = Levels.from_paths([("G0", "0", "gpu", "d0"), ("nic", "0")])
    request = parse_request({"G0/R/nic/n/vf": 1}, Naming())
    fitted = fit_to_levels(request, levels)
    assert isinstance(fitted, Unplaced)
    assert fitted.key == "G0/R/nic/n/vf"


def test_requested_amounts_must_be_positive():
    with pytest.raises(errors.BadRequest, match="gpu/0/cards"):
        parse_request({"gpu/0/cards": 0}, Naming())
    with pytest.raises(errors.BadRequest, match="empty"):
        parse_request({}, Naming())


@pytest.mark.parametrize(
    "key",
    ["gpu/dev0\n/cards", "cpu\n", "nvidia.com/gpu\n", "/".join(["l", "0"] * 17) + "/cards", 7],
)
def test_keys_with_a_trailing_newline_too_deep_or_not_strings_are_refused(key):
    with pytest.raises(errors.BadRequest):
        parse_key_map({key: 1}, "node resources")


@pytest.mark.parametrize("value", ["1" * 5000, "1" * 400 + ".5", "9" * 31 + "Gi", "1Gibibyte"])
def test_absurd_quantities_are_a_400_not_a_crash(value):
    with pytest.raises(errors.BadRequest, match="cpu"):
        amount_in_unit(value, "count", "cpu", "VCPU")


def test_one_class_on_two_levels_of_a_node_is_refused():
    with pytest.raises(errors.BadRequest, match="different levels"):
        desired_tree({"gpu_cards": 1, "gpu/dev0/cards": 1}, Naming())


def test_too_many_different_groups_side_by_side_are_refused():
    distinct = {f"gpu/{i}/memory": f"{i + 1}Gi" for i in range(16)}
    with pytest.raises(errors.BadRequest, match="too many different"):
        parse_request(distinct, Naming())
    alike = {f"gpu/{i}/memory": "1Gi" for i in range(64)}
    assert len(parse_request(alike, Naming()).top.children) == 64
