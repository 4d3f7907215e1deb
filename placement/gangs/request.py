"""What a gang asks for: its members, of one or several kinds (each kind a device
request and how many members make it), the network levels, and whether members share
nodes. Members are numbered kind by kind, in request order: member 0 is the first
kind's first.

``Counts`` codes how many members of each kind as one integer, for the search
(``search``): kind i's count sits in a field of the integer wide enough (2 k_i + 1
values) that the sum of two counts that each fit never carries into the next field,
so adding two codes adds the counts kind by kind, and a sum fits when it is one of
the codes ``Counts.fitting`` lists. With one kind the code is the count itself.
"""

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from placement import errors
from placement.devices.request import DeviceRequest, parse_device_request, parse_pod
from placement.nodes.naming import Naming

# The most count vectors a search keeps per domain: the product of (k_i + 1) over the
# kinds. One kind of 1024 members (the most a gang has) keeps 1025.
MAX_COUNT_VECTORS = 1025


@dataclass(frozen=True)
class MemberKind:
    request: DeviceRequest
    count: int


@dataclass(frozen=True)
class GangRequest:
    """M copies of ``member`` (``members`` = M), or members of several kinds
    (``kinds``, in request order; ``members`` their total, ``member`` unused)."""

    member: DeviceRequest | None
    members: int
    required: str
    preferred: str | None = None
    share_nodes: bool = False
    kinds: tuple[MemberKind, ...] = field(default=())

    def __post_init__(self) -> None:
        if not self.kinds:
            if self.member is None:
                raise ValueError("a gang request names its member request or its kinds")
            object.__setattr__(self, "kinds", (MemberKind(self.member, self.members),))

    def request_of(self, index: int) -> DeviceRequest:
        """The request of the kind numbered ``index``."""
        return self.kinds[index].request

    def counts(self) -> "Counts":
        return Counts(tuple(kind.count for kind in self.kinds))


class Counts:
    """How many members of each kind, coded as one integer (the module's docstring)."""

    def __init__(self, wanted: tuple[int, ...]) -> None:
        vectors = math.prod(count + 1 for count in wanted)
        if vectors > MAX_COUNT_VECTORS:
            raise errors.BadRequest(
                "members: the product of (count + 1) over the kinds is "
                f"{vectors}, above the limit of {MAX_COUNT_VECTORS} (the search keeps a "
                "best rank for every such vector of counts in each domain)."
            )
        self.wanted = wanted
        self.strides: list[int] = []
        stride = 1
        for count in wanted:
            self.strides.append(stride)
            stride *= 2 * count + 1
        self.total = sum(wanted)
        self.full = self.code(wanted)
        self.fitting = frozenset(
            self.code(vector) for vector in itertools.product(*(range(k + 1) for k in wanted))
        )

    def code(self, vector: Sequence[int]) -> int:
        return sum(count * stride for count, stride in zip(vector, self.strides, strict=True))

    def unit(self, kind: int) -> int:
        """The code of one member of ``kind``."""
        return self.strides[kind]

    def vector(self, code: int) -> tuple[int, ...]:
        found = []
        for count, stride in zip(self.wanted, self.strides, strict=True):
            found.append(code // stride % (2 * count + 1))
        return tuple(found)

    def size(self, code: int) -> int:
        """The members of every kind a code counts."""
        return sum(self.vector(code))


def member_request(body: Mapping, naming: Naming) -> DeviceRequest:
    """A member's request from its body: resources and annotations, or a whole Pod."""
    if "pod" in body:
        return parse_pod(body["pod"], naming)
    return parse_device_request(body["resources"], body.get("annotations", {}), naming)


def request_from_body(data: Mapping, naming: Naming) -> GangRequest:
    """The gang request of a validated body (``schemas.gangs.GangQuery``): ``members``
    M with ``member``, or ``members`` a list of ``{"count", "member"}``. 400 when the
    kinds' vectors of counts are too many for the search (``MAX_COUNT_VECTORS``)."""
    options = {
        "required": data["required"],
        "preferred": data.get("preferred"),
        "share_nodes": data.get("share_nodes", False),
    }
    if isinstance(data["members"], int):
        return GangRequest(member_request(data["member"], naming), data["members"], **options)
    kinds = tuple(
        MemberKind(member_request(group["member"], naming), group["count"])
        for group in data["members"]
    )
    Counts(tuple(kind.count for kind in kinds))  # refused here, before any search
    return GangRequest(None, sum(kind.count for kind in kinds), kinds=kinds, **options)


def members_of(data: Mapping) -> int:
    """How many members a validated body asks for, of every kind."""
    members = data["members"]
    return members if isinstance(members, int) else sum(group["count"] for group in members)
