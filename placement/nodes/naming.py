"""Names the translator gives things in placement: classes, traits, providers.

- A base resource of the node (``cpu``) gets the configured standard class
  (``VCPU``), or ``CUSTOM_<NAME>``.
- A base resource of a group level (``gpu/dev0/memory``) gets a class of its
  own per level: ``CUSTOM_<LEVEL>_<NAME>``, with ``_MB`` or ``_GB`` when the
  name is configured as an amount of bytes (``CUSTOM_GPU_MEMORY_MB``). A
  feature may count one level's resource in a unit of its own
  (``Naming.level_units``: device nodes count GPU memory in KiB,
  ``CUSTOM_GPU_MEMORY_KB``).
- Every group provider carries the trait ``CUSTOM_GROUP_LEVEL_<LEVEL>``; the
  node's root carries ``CUSTOM_GROUP_RESOURCES_NODE``.
- The provider of group ``gpu/dev0`` of node ``n1`` is named ``n1/gpu/dev0``.

Level and resource names compare without case, and characters other than
letters and digits become ``_`` (placement's names are ``[A-Z0-9_]``).
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

NODE_TRAIT = "CUSTOM_GROUP_RESOURCES_NODE"  # the root of every node's tree
# Also on the root of a device node: the device routes own its tree (its devices are
# allocated with their tenancy), so the translator's searches leave it out.
DEVICE_NODE_TRAIT = "CUSTOM_GROUP_RESOURCES_DEVICE_NODE"
LEVEL_TRAIT_PREFIX = "CUSTOM_GROUP_LEVEL_"

DEFAULT_STANDARD_CLASSES = {
    "cpu": "VCPU",
    "memory": "MEMORY_MB",
    "ephemeral-storage": "DISK_GB",
    "disk": "DISK_GB",
}
DEFAULT_BYTE_UNITS = {
    "memory": "MB",
    "ephemeral-storage": "GB",
    "disk": "GB",
    "storage": "GB",
}

_NOT_NAME = re.compile(r"[^A-Z0-9]")


def normalized(name: str) -> str:
    return _NOT_NAME.sub("_", name.upper())


@dataclass(frozen=True)
class Naming:
    """How base names become classes; from the ``[group_resources]`` configuration."""

    standard_classes: Mapping[str, str] = field(
        default_factory=lambda: dict(DEFAULT_STANDARD_CLASSES)
    )
    byte_units: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_BYTE_UNITS))
    # (normalized level, normalized base name) -> unit, before ``byte_units``: not
    # configured, set by a feature for the trees it owns (``placement.devices.node_map``).
    level_units: Mapping[tuple[str, str], str] = field(default_factory=dict)

    def resource_class(self, level: str | None, base_name: str) -> str:
        unit = self.unit(base_name, level)
        suffix = "" if unit == "count" else f"_{unit}"
        if level is None:
            standard = lookup_ignoring_case(self.standard_classes, base_name)
            if standard is not None:
                return standard
            return f"CUSTOM_{normalized(base_name)}{suffix}"
        return f"CUSTOM_{normalized(level)}_{normalized(base_name)}{suffix}"

    def unit(self, base_name: str, level: str | None = None) -> str:
        """``count``, ``KB``, ``MB`` or ``GB``: what one unit of the class is."""
        if level is not None and self.level_units:
            unit = self.level_units.get((normalized(level), normalized(base_name)))
            if unit is not None:
                return unit
        return lookup_ignoring_case(self.byte_units, base_name) or "count"


def lookup_ignoring_case(mapping: Mapping[str, str], name: str) -> str | None:
    """``mapping[name]``, ignoring case (``Memory`` is ``memory``)."""
    if name in mapping:
        return mapping[name]
    lowered = name.lower()
    for key, value in mapping.items():
        if key.lower() == lowered:
            return value
    return None


def unit_of_class(resource_class: str) -> str:
    """The unit a standard class counts in, by placement's naming (MEMORY_MB, DISK_GB)."""
    for unit in ("MB", "GB"):
        if resource_class.endswith(f"_{unit}"):
            return unit
    return "count"


def level_trait(level: str) -> str:
    return f"{LEVEL_TRAIT_PREFIX}{normalized(level)}"


def provider_name(node: str, path: tuple[str, ...]) -> str:
    return "/".join((node, *path))


def path_of(node: str, provider_name_: str) -> tuple[str, ...] | None:
    """The group path of a provider of ``node`` from its name; None if not one of ours."""
    if provider_name_ == node:
        return ()
    prefix = f"{node}/"
    if not provider_name_.startswith(prefix):
        return None
    segments = tuple(provider_name_[len(prefix) :].split("/"))
    return segments if len(segments) % 2 == 0 else None
