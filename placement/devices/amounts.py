"""How much of one device type a device request asks: a number of devices and what each
gives (``PerDevice``), from Koordinator's fine-grained resources (see ``request``), with
the refusals of amounts that ask for no device, parts of several, or too many.
"""

import math
from dataclasses import dataclass
from fractions import Fraction

from placement import errors
from placement.db.tables import MAX_INT
from placement.schemas import devices as schemas

WHOLE_GPUS = "nvidia.com/gpu"
MAX_DEVICES_ASKED = 256
KIB = 2**10


@dataclass(frozen=True)
class PerDevice:
    """What each chosen device gives."""

    whole: bool = False  # every inventory of the device, which must be unused
    core: int = 0  # gpu core percent
    ratio: int = 0  # gpu memory percent
    memory_kib: int = 0  # gpu memory (a whole GPU: the least it must have)
    share: int = 0  # rdma, fpga percent
    vfs: int = 0  # rdma virtual functions


def whole_number(amount: Fraction, name: str) -> int:
    """``amount`` of the resource ``name`` as an integer; 400 when it is not one."""
    if amount.denominator != 1:
        raise errors.BadRequest(f"{name}: {float(amount):g} is not a whole number.")
    if amount > MAX_INT:
        raise errors.BadRequest(f"{name}: out of range.")
    return int(amount)


def _devices(amount: int, name: str) -> int:
    """How many whole devices an amount over 100 asks for."""
    if amount % 100:
        raise errors.BadRequest(
            f"{name}: {amount} is over 100, so it must be a multiple of 100 (whole devices)."
        )
    return _at_most_devices(amount // 100, name)


def _at_most_devices(count: int, name: str) -> int:
    if count > MAX_DEVICES_ASKED:
        raise errors.BadRequest(f"{name}: at most {MAX_DEVICES_ASKED} devices.")
    return count


def gpus_counted(asked: dict[str, Fraction], prefix: str) -> tuple[int, PerDevice]:
    """RequestsAsCount for GPUs: the amount of ``kubernetes.io/gpu`` (or ``nvidia.com/gpu``,
    a count already) is a number of whole GPUs. The fine-grained resources are amounts of
    one GPU, not counts: refused with it."""
    if set(asked) == {WHOLE_GPUS}:
        return gpu_asked(asked, prefix)
    name = f"{prefix}gpu"
    if set(asked) != {"gpu"}:
        given = ", ".join(sorted(WHOLE_GPUS if r == WHOLE_GPUS else f"{prefix}{r}" for r in asked))
        raise errors.BadRequest(
            f"{schemas.HINT_ANNOTATION}: with RequestsAsCount the GPU amount is a number of "
            f"GPUs: ask {name} (or {WHOLE_GPUS}) alone, not {given}."
        )
    count = whole_number(asked["gpu"], name)
    return _at_most_devices(count, name), PerDevice(whole=True)


def gpu_asked(asked: dict[str, Fraction], prefix: str) -> tuple[int, PerDevice]:
    """The GPUs ``asked`` (resource name without its prefix -> amount) ask for: how many,
    and what each gives."""
    names = {
        resource: WHOLE_GPUS if resource == WHOLE_GPUS else f"{prefix}{resource}"
        for resource in asked
    }
    for single in (WHOLE_GPUS, "gpu"):
        if single in asked and len(asked) > 1:
            others = ", ".join(sorted(names[r] for r in asked if r != single))
            raise errors.BadRequest(f"{names[single]} cannot be combined with {others}.")
    if WHOLE_GPUS in asked:
        count = whole_number(asked[WHOLE_GPUS], WHOLE_GPUS)
        return _at_most_devices(count, WHOLE_GPUS), PerDevice(whole=True)
    if "gpu" in asked:
        percent = whole_number(asked["gpu"], names["gpu"])
        if percent >= 100:
            return _devices(percent, names["gpu"]), PerDevice(whole=True)
        return 1, PerDevice(core=percent, ratio=percent)
    core_name = f"{prefix}gpu-core"
    if "gpu-core" not in asked:
        given = ", ".join(sorted(names.values()))
        raise errors.BadRequest(f"{given} needs {core_name} with it.")
    memory = asked.get("gpu-memory")
    if ("gpu-memory-ratio" in asked) == (memory is not None):
        raise errors.BadRequest(
            f"{core_name} needs exactly one of {prefix}gpu-memory-ratio and {prefix}gpu-memory."
        )
    core = whole_number(asked["gpu-core"], core_name)
    ratio = whole_number(asked.get("gpu-memory-ratio", Fraction(0)), f"{prefix}gpu-memory-ratio")
    # Kept in KiB (``node_map``): an amount that is not a whole KiB is rounded up.
    memory_kib = math.ceil(memory / KIB) if memory is not None else 0
    if memory_kib > MAX_INT:
        raise errors.BadRequest(f"{prefix}gpu-memory: out of range.")
    if core > 100 or ratio > 100:
        ratio_name = f"{prefix}gpu-memory-ratio"
        count = _devices(core, core_name) if core > 100 else 1
        if ratio and (ratio != 100 * count or core != 100 * count):
            raise errors.BadRequest(
                f"{core_name} ({core}) and {ratio_name} ({ratio}): over 100, both must ask for "
                "the same number of whole GPUs."
            )
        return count, PerDevice(whole=True, memory_kib=math.ceil(memory_kib / count))
    if core == ratio == 100:  # all of one GPU: as nvidia.com/gpu: 1
        return 1, PerDevice(whole=True)
    if memory is not None and memory_kib == 0:
        raise errors.BadRequest(f"{prefix}gpu-memory: asks for no memory.")
    return 1, PerDevice(core=core, ratio=ratio, memory_kib=memory_kib)


def shared_device_asked(
    device_type: str, amount_asked: Fraction, prefix: str, strategy: str | None, vfs: bool
) -> tuple[int, PerDevice]:
    """The rdma or fpga devices an amount asks for (``vfs``: virtual functions, with a
    ``vfSelector``): how many, and what each gives."""
    name = f"{prefix}{device_type}"
    amount = whole_number(amount_asked, name)
    if strategy == schemas.REQUESTS_AS_COUNT:
        per_device = PerDevice(vfs=1) if vfs else PerDevice(whole=True)
        return _at_most_devices(amount, name), per_device
    if vfs:
        return 1, PerDevice(vfs=amount)
    if amount >= 100:
        return _devices(amount, name), PerDevice(whole=True)
    return 1, PerDevice(share=amount)
