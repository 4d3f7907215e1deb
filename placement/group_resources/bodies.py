"""The translator's answers as JSON-ready dicts, shared by the HTTP views and the CLI."""

from placement.group_resources.allocator import Placement
from placement.group_resources.candidate_query import MICROVERSION
from placement.group_resources.service import CandidateAnswer, Translation


def placement_body(placement: Placement, requested: dict) -> dict:
    """One node's placement; ``mappings`` in the order the client wrote the keys."""
    return {
        "node": placement.node.name,
        "node_uuid": placement.node.root.uuid,
        "score": round(placement.score, 6),
        "mappings": {key: placement.mappings[key] for key in requested},
        "allocations": {
            uuid: {"resources": resources} for uuid, resources in placement.allocations.items()
        },
    }


def candidates_body(answer: CandidateAnswer, requested: dict) -> dict:
    body: dict = {
        "candidates": [placement_body(p, requested) for p in answer.placements],
        "unplaced": [{"key": b.key, "reason": b.reason, "nodes": b.nodes} for b in answer.blocking],
    }
    if answer.feasible_nodes is not None:
        body["feasible_nodes"] = answer.feasible_nodes
    return body


def translations_body(translations: list[Translation]) -> dict:
    queries = []
    for translation in translations:
        entry: dict = {"nodes": translation.nodes}
        if translation.query is not None:
            entry["microversion"] = MICROVERSION
            entry["query"] = translation.query.query_string()
            entry["groups"] = translation.query.groups
        else:
            assert translation.unplaced is not None
            entry["unplaced"] = {
                "key": translation.unplaced.key,
                "reason": translation.unplaced.reason,
            }
        queries.append(entry)
    return {"queries": queries}
