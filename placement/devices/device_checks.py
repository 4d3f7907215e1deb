"""What one device must be to serve one device type's request, check by check.

The chooser (``chooser``) asks them together: the devices a type's request may take are
those of its type, healthy, that its hint selects (``selected``), and that can give what
is asked of each on a PCIe switch that allows it (``fits``); a type asked alone can be
chosen when there are ``enough`` of them (else ``not_enough_words`` says why). The
explanation (``explain``) asks them one at a time, in that order (``type_checks``), to
count the nodes that have enough devices passing each in turn: a device passes them all
exactly when the chooser may take it.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from placement.devices.request import TypeRequest
from placement.devices.snapshot import DeviceNode
from placement.devices.takes import device_take
from placement.devices.topology import Device
from placement.schemas.devices import PCIE_LEVEL


@dataclass(frozen=True)
class DeviceCheck:
    """One check of a device, named for an explanation."""

    name: str
    test: Callable[[DeviceNode, int], bool]  # (node, device index) -> passes
    selects: bool = False  # one of the checks that make ``selected`` (the others: ``fits``)


def selected(node: DeviceNode, wanted: TypeRequest, healthy: bool = True) -> list[int]:
    """The devices of the type the hint selects, healthy (or, ``healthy`` False, not)."""
    return [
        index
        for index, state in enumerate(node.devices)
        if state.device.type == wanted.type
        and state.device.healthy == healthy
        and selects(wanted, state.device)
    ]


# Device type -> its ``able_devices`` on one node.
Able = Mapping[str, tuple[list[int], list[int]]]


def able_devices(node: DeviceNode, wanted: TypeRequest) -> tuple[list[int], list[int]]:
    """The devices the hint selects (``selected``), and those of them that fit (``fits``)."""
    chosen_from = selected(node, wanted)
    return chosen_from, [index for index in chosen_from if fits(node, index, wanted)]


def enough(chosen_from: list[int], fitting: list[int], wanted: TypeRequest) -> bool:
    """Whether a type's request can be chosen (``able_devices``): ``count`` devices that
    fit, or with ApplyForAll every device selected, one at least."""
    if wanted.count is None:
        return bool(chosen_from) and len(fitting) == len(chosen_from)
    return len(fitting) >= wanted.count


def not_enough_words(
    node: DeviceNode, wanted: TypeRequest, chosen_from: list[int], fitting: list[int]
) -> str:
    """Why a type asked alone cannot be chosen on the node (not ``enough``)."""
    if not chosen_from:
        return (
            f"{wanted.type}: no device of the node is {_selected_words(wanted)}"
            f"{_unhealthy_words(node, wanted)}"
        )
    if wanted.count is None:
        return (
            f"{wanted.type}: ApplyForAll needs all {len(chosen_from)} selected devices, "
            f"{len(fitting)} can give the request"
        )
    return (
        f"{wanted.type}: {wanted.count} device(s) needed, {len(fitting)} can give the "
        f"request{_unhealthy_words(node, wanted)}"
    )


def _unhealthy_words(node: DeviceNode, wanted: TypeRequest) -> str:
    """`` (2 unhealthy)`` when selected devices were left out for their health."""
    unhealthy = len(selected(node, wanted, healthy=False))
    return f" ({unhealthy} unhealthy)" if unhealthy else ""


def _selected_words(wanted: TypeRequest) -> str:
    return "selected by the hint" if wanted.selector or wanted.vf_selector else "of that type"


def selects(wanted: TypeRequest, device: Device) -> bool:
    """The hint's selectors match the device; with VFs listed one by one, ``vfSelector``
    matches one of them at least."""
    if not device.vf_list or wanted.vf_selector is None:
        return wanted.selects(device.labels, device.vf_labels)
    if wanted.selector is not None and not wanted.selector.matches(device.labels):
        return False
    return any(wanted.vf_selector.matches(vf.labels) for vf in device.vf_list)


def fits(node: DeviceNode, index: int, wanted: TypeRequest) -> bool:
    """The device can give what is asked of each (``gives``), on a PCIe switch that
    allows it (``switch_allows``)."""
    return gives(node, index, wanted) and switch_allows(node, index, wanted)


def gives(node: DeviceNode, index: int, wanted: TypeRequest) -> bool:
    """The device can give what is asked of each device (``takes.device_take``): not in use
    when asked whole or exclusively, and room in its inventories."""
    state = node.devices[index]
    return device_take(state, wanted.per_device, wanted.exclusive, wanted.vf_selector) is not None


def switch_allows(node: DeviceNode, index: int, wanted: TypeRequest) -> bool:
    """The device's PCIe switch has tenancy left for one more device of the type, or, for
    ``PCIeLevel`` exclusivity, all of it with no device of the type there in use."""
    state = node.devices[index]
    switch = node.switches[state.device.switch]
    if wanted.exclusive == PCIE_LEVEL:
        if not switch.allows(wanted.type, switch.total[wanted.type]):
            return False
        return not any(
            other.in_use
            for other in node.devices
            if other.device.type == wanted.type and other.device.switch == state.device.switch
        )
    return switch.allows(wanted.type, 1)


def type_checks(wanted: TypeRequest) -> list[DeviceCheck]:
    """``selected`` then ``fits``, one check at a time (the hint's only when it has one)."""
    checks = [
        DeviceCheck(
            f"{wanted.type} devices",
            lambda node, i: node.devices[i].device.type == wanted.type,
            selects=True,
        ),
        DeviceCheck("healthy", lambda node, i: node.devices[i].device.healthy, selects=True),
    ]
    if wanted.selector is not None or wanted.vf_selector is not None:
        checks.append(
            DeviceCheck(
                "selected by the hint",
                lambda node, i: selects(wanted, node.devices[i].device),
                selects=True,
            )
        )
    checks.append(
        DeviceCheck(
            "can give what is asked of each (free; not in use when whole or exclusive)",
            lambda node, i: gives(node, i, wanted),
        )
    )
    checks.append(
        DeviceCheck(
            "on a PCIe switch that allows it (tenancy; PCIeLevel: no device of the type there "
            "in use)",
            lambda node, i: switch_allows(node, i, wanted),
        )
    )
    return checks
