"""GET /: the version document."""

import flask

from placement import microversion
from placement.context import RequestContext
from placement.http import json_response


def home(ctx: RequestContext) -> flask.Response:
    body = {
        "versions": [
            {
                "id": f"v{microversion.min_version_string()}",
                "min_version": microversion.min_version_string(),
                "max_version": microversion.max_version_string(),
                "status": "CURRENT",
                "links": [{"rel": "self", "href": ""}],
            }
        ]
    }
    return json_response(ctx, body)
