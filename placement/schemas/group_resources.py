"""Request bodies for the /group_resources endpoints (the key translator).

``resources`` maps keys to amounts; the keys and amounts are checked by the
translator itself, which names the offending key.
"""

import re

from marshmallow import fields, validate

from placement.nodes.group_options import CHOICES
from placement.nodes.scorers import SCORER_NAMES
from placement.nodes.search_budget import MAX_BUDGET_MS
from placement.schemas import ExtensionSchema
from placement.schemas.fields import StrictInteger, StrictString, UuidString

CONSUMER_TYPE_PATTERN = re.compile(r"^[A-Z0-9_]+$")

_scorer = StrictString(validate=validate.OneOf(sorted(SCORER_NAMES)))
_node_names = fields.List(StrictString(max_length=200), validate=validate.Length(min=1))
# A search's time budget in milliseconds (``placement.nodes.search_budget``).
_budget_ms = StrictInteger(minimum=1, maximum=MAX_BUDGET_MS)


class SyncNode(ExtensionSchema):
    """PUT /group_resources/nodes/{name}."""

    resources = fields.Dict(required=True)
    uuid = UuidString()


class SearchOptions(ExtensionSchema):
    """The group allocator's readings a request chooses (``placement.nodes.group_options``);
    one left out is the configuration's."""

    flat_requests = StrictString(validate=validate.OneOf(CHOICES["flat_requests"]))
    node_ranking = StrictString(validate=validate.OneOf(CHOICES["node_ranking"]))
    sibling_groups = StrictString(validate=validate.OneOf(CHOICES["sibling_groups"]))


class Translate(ExtensionSchema):
    """POST /group_resources/queries (dry-run)."""

    resources = fields.Dict(required=True)
    nodes = _node_names
    options = fields.Nested(SearchOptions)


class FindCandidates(Translate):
    """POST /group_resources/candidates."""

    scorer = _scorer
    limit = StrictInteger(minimum=1)
    budget_ms = _budget_ms


class Claim(Translate):
    """POST /group_resources/claims."""

    consumer_uuid = UuidString(required=True)
    project_id = StrictString(required=True)
    user_id = StrictString(required=True)
    consumer_type = StrictString(pattern=CONSUMER_TYPE_PATTERN)
    scorer = _scorer
    budget_ms = _budget_ms
