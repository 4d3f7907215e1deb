"""JSON answers of the gang endpoints: each gang with the domains it uses at every
level, and each member as the device candidates answer a single node
(``devices.bodies``), with its kind (its index in the request's kinds; 0 for M copies
of one request) and its rank's parts."""

from placement.devices.bodies import candidate_body
from placement.gangs import explain
from placement.gangs.search import Gang
from placement.gangs.service import GangAnswer, GangRequest


def candidates_body(answer: GangAnswer, limit: int | None, device_allocated: bool) -> dict:
    gangs = answer.gangs[:limit] if limit is not None else answer.gangs
    body = {
        "gangs": [gang_body(answer.request, gang, device_allocated) for gang in gangs],
        "domains_considered": len(answer.fits),
        "nodes_in_network": sum(1 for s in answer.slots if s.node.name in answer.network.domains),
        "device_nodes_outside_network": explain.outside(answer),
    }
    if not gangs:
        body["closest"] = answer.closest()
    return body


def gang_body(
    request: GangRequest,
    gang: Gang,
    device_allocated: bool,
    consumer_uuids: list[str] | None = None,
) -> dict:
    members = []
    for index, (node, choice) in enumerate(gang.members):
        member: dict = {"member": index, "kind": choice.kind}
        if consumer_uuids is not None:
            member["consumer_uuid"] = consumer_uuids[index]
        kind_request = request.request_of(choice.kind)
        member.update(candidate_body(choice.on(node), kind_request, device_allocated))
        member["strength"] = choice.strength
        members.append(member)
    return {
        "required": {"level": request.required, "domain": gang.domain},
        "domains": gang.domains,
        "nodes": len({node.name for node, _ in gang.members}),
        "score": round(sum(choice.score for _, choice in gang.members), 6),
        "strength": sum(choice.strength for _, choice in gang.members),
        "members": members,
    }


def claim_body(
    request: GangRequest,
    gang: Gang,
    gang_uuid: str,
    consumer_uuids: list[str],
    device_allocated: bool,
) -> dict:
    """A claimed gang: its uuid, and the gang as the candidates give it, each member with
    its consumer."""
    return {"gang_uuid": gang_uuid, **gang_body(request, gang, device_allocated, consumer_uuids)}


def explain_body(answer: GangAnswer) -> dict:
    return {
        "required": answer.request.required,
        "members": answer.request.members,
        "gangs_found": len(answer.gangs),
        "domains_considered": len(answer.fits),
        "closest": answer.closest(),
        "device_nodes_outside_network": explain.outside(answer),
    }
