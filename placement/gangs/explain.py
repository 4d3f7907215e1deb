"""Why no gang fits, or why the gangs found are what they are: the domains of the
required level that came closest, each with the members that fit in it against the
members needed, and why its nodes took no (further) member, counted by reason (the
device route's own reasons: ``devices.chooser``)."""

from collections import Counter
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from placement.gangs.service import GangAnswer

MOST_DOMAINS = 5  # domains described, the fullest first
MOST_REASONS = 3  # reasons per domain, the most common first


def closest(answer: "GangAnswer", most: int = MOST_DOMAINS) -> list[dict]:
    """The ``most`` fullest domains of the required level, described."""
    request, network = answer.request, answer.network
    required = network.levels.index(request.required)
    reasons: dict[str, Counter[str]] = {}
    nodes: Counter[str] = Counter()
    for slots in answer.slots:
        path = network.domains.get(slots.node.name)
        if path is None:
            continue
        nodes[path[required]] += 1
        if slots.unfit is not None:
            reasons.setdefault(path[required], Counter())[slots.unfit] += 1
    return [
        {
            "domain": fit.domain,
            "members_fit": fit.holds,
            "members_needed": request.members,
            "nodes": nodes[fit.domain],
            "nodes_unfit": [
                {"reason": reason, "nodes": count}
                for reason, count in reasons.get(fit.domain, Counter()).most_common(MOST_REASONS)
            ],
        }
        for fit in answer.fits[:most]
    ]


def outside(answer: "GangAnswer") -> list[str]:
    """The device nodes outside the network (no domains), by name."""
    return [s.node.name for s in answer.slots if s.node.name not in answer.network.domains]


def sentence(answer: "GangAnswer") -> str:
    """What the closest domain lacked, in one sentence."""
    described = closest(answer, 1)
    if not described:
        left_out = outside(answer)
        return (
            "no device node has domains in the network"
            + (
                f" ({len(left_out)} device node(s) outside it, such as {left_out[0]})"
                if left_out
                else ""
            )
            + "."
        )
    first = described[0]
    why = "; ".join(
        f"{entry['reason']} ({entry['nodes']} node(s))" for entry in first["nodes_unfit"]
    )
    return (
        f"the closest, {answer.request.required} {first['domain']}, holds "
        f"{first['members_fit']} of {first['members_needed']} "
        f"({first['members_needed'] - first['members_fit']} short; {first['nodes']} "
        f"node(s) in it" + (f"; {why}" if why else "") + ")."
    )
