"""GET /openapi.json: the OpenAPI document of the service (``placement.openapi``).

Outside the API, as the probes: no token, no microversion, no transaction. The
application builds the document once and keeps it as ``extensions[EXTENSION]``.
"""

import flask

EXTENSION = "openapi"


def document() -> flask.Response:
    text = flask.current_app.extensions[EXTENSION].text()
    return flask.Response(text, mimetype="application/json")
