"""Group-resource keys: a flat map of hierarchical keys -> a tree of groups.

A key is ``name/index/name/index/.../basename``: every ``name/index`` pair is
one group level, the last segment is the base
resource held at the deepest of them. A key without a group path (``cpu``)
is a base resource of the node itself. A key whose first segment holds a dot
and that has exactly two segments (``nvidia.com/gpu``) is a Kubernetes-style
domain-qualified base resource, not a group.

The tree keeps the original key of every base resource, so that answers can
name the keys the client sent.
"""

import re
from dataclasses import dataclass, field

from placement import errors

SEGMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,62}")  # whole segment (fullmatch)
MAX_LEVELS = 16  # group levels in one key


@dataclass
class KeyGroup:
    """One group of a key map: its base resources and its subgroups.

    The root (the node, or the top of a request) has ``name`` and ``index``
    None and ``path`` ().
    """

    name: str | None = None
    index: str | None = None
    path: tuple[str, ...] = ()
    # base name -> (original key, raw value)
    base: dict[str, tuple[str, object]] = field(default_factory=dict)
    # (group name, index) -> subgroup, in the order first seen
    subgroups: dict[tuple[str, str], "KeyGroup"] = field(default_factory=dict)

    def key_of(self, base_name: str) -> str:
        return "/".join((*self.path, base_name))

    def walk(self):
        """This group and every group below it, parents first."""
        yield self
        for child in self.subgroups.values():
            yield from child.walk()

    def first_key(self) -> str:
        """A key under this group, to name it in errors."""
        for group in self.walk():
            for key, _value in group.base.values():
                return key
        return "/".join(self.path)


def parse_key_map(resources: object, what: str) -> KeyGroup:
    """The tree of ``resources`` (a JSON object of key -> amount); 400 naming a bad key.

    ``what`` names the map in errors ("node resources", "requested resources").
    """
    if not isinstance(resources, dict):
        raise errors.BadRequest(f"The {what} must be an object of key: amount.")
    root = KeyGroup()
    for key, value in resources.items():
        segments = split_key(key, what)
        group = root
        for position in range(0, len(segments) - 1, 2):
            name, index = segments[position], segments[position + 1]
            group = group.subgroups.setdefault(
                (name, index),
                KeyGroup(name=name, index=index, path=tuple(segments[: position + 2])),
            )
        group.base[segments[-1]] = (key, value)
    return root


def split_key(key: str, what: str) -> list[str]:
    if not isinstance(key, str):
        raise errors.BadRequest(f"Key {key!r} in the {what} is not a string.")
    if not key:
        raise errors.BadRequest(f"Empty key in the {what}.")
    segments = key.split("/")
    if len(segments) == 2 and "." in segments[0]:
        if not all(SEGMENT.fullmatch(segment) for segment in segments):
            raise errors.BadRequest(
                f"Key {key!r} in the {what}: a domain-qualified name is 'domain/name', each "
                "1 to 63 letters, digits, '_', '-' or '.', starting with a letter or digit."
            )
        return [key]  # domain-qualified base resource (nvidia.com/gpu)
    if len(segments) > 2 * MAX_LEVELS + 1:
        raise errors.BadRequest(
            f"Key {key[:80]!r}... in the {what} has more than {MAX_LEVELS} group levels."
        )
    if len(segments) % 2 == 0:
        raise errors.BadRequest(
            f"Key {key!r} in the {what} is not 'group/index/.../name': a group level "
            "needs a name and an index, and the key must end with a resource name."
        )
    for segment in segments if len(segments) > 1 else ():
        if not SEGMENT.fullmatch(segment):
            raise errors.BadRequest(
                f"Key {key!r} in the {what}: segment {segment!r} must be 1 to 63 letters, "
                "digits, '_', '-' or '.', starting with a letter or digit."
            )
    if len(segments) == 1 and not SEGMENT.fullmatch(key):
        raise errors.BadRequest(
            f"Key {key!r} in the {what}: a resource name must be 1 to 63 letters, digits, "
            "'_', '-' or '.', starting with a letter or digit."
        )
    return segments
