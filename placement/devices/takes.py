"""What one device gives one request: the amount of each of its inventories, for a whole
device, a share of a GPU (core with a memory ratio or amount), a share of a NIC or FPGA,
or VFs (counted, or listed one by one and matched by ``vfSelector``). The chooser asks
it of every device it weighs; the scorers ask which inventories they weigh."""

from placement.devices.amounts import PerDevice
from placement.devices.request import Selector
from placement.devices.snapshot import DeviceState
from placement.schemas.devices import DEVICE_LEVEL, PCIE_LEVEL


def counts_in_scores(base_name: str) -> bool:
    """Whether the scorers weigh an inventory: not tenancy, and not each VF listed one by
    one (their count, ``vf``, already does)."""
    return base_name != "tenancy" and not base_name.startswith("vf-")


def device_take(
    state: DeviceState, per: PerDevice, exclusive: str | None, vf_selector: Selector | None = None
) -> dict | None:
    """Base name -> amount the device gives; None when it cannot. VFs listed one by one
    are given by the lowest minors free among those ``vf_selector`` matches."""
    total, free = state.total, state.free
    if per.whole or exclusive in (DEVICE_LEVEL, PCIE_LEVEL):
        if state.in_use:
            return None
    if per.whole:
        if state.device.type == "gpu" and total["memory"] < per.memory_kib:
            return None
        whole = {name: amount for name, amount in total.items() if amount}
        if not all(state.allows(name, amount) for name, amount in whole.items()):
            return None
        return whole
    amounts: dict[str, int] = {}
    if state.device.type == "gpu":
        memory_total = total["memory"]
        if per.ratio:
            memory = memory_total * per.ratio // 100
            ratio = per.ratio
        else:  # memory asked as an amount: accounted as that amount, its ratio rounded down
            memory = per.memory_kib
            ratio = 100 * per.memory_kib // memory_total if memory_total else 101
        amounts = {"core": per.core, "memory": memory, "memory-ratio": ratio}
    else:
        amounts = {"share": per.share, "vf": per.vfs}
        if per.vfs and state.device.vf_list:
            free_vfs = [
                vf.base_name
                for vf in state.device.vf_list
                if (vf_selector is None or vf_selector.matches(vf.labels))
                and state.allows(vf.base_name, 1)
            ]
            if len(free_vfs) < per.vfs:
                return None
            amounts.update(dict.fromkeys(free_vfs[: per.vfs], 1))
    amounts["tenancy"] = total["tenancy"] if exclusive else 1
    amounts = {name: amount for name, amount in amounts.items() if amount}
    if not all(name in free and state.allows(name, amount) for name, amount in amounts.items()):
        return None
    return amounts
