"""The OpenAPI 3.1 document of the service, generated from the route table and the
marshmallow schemas (apispec).

A layer above ``routes``: nothing below imports it. ``document`` builds it,
``operations`` says what the document says of each view that the routes and schemas
do not (its request body, its own answers, its page of api-ref/). ``app`` serves it
at ``GET /openapi.json``, built once per application (``document.DocumentCache``);
``placement openapi`` prints it, and ``make openapi`` commits it as
``api-ref/openapi.json``, which a test keeps equal to what is built now.

It says of every route and method: its path parameters, the microversion header, the
request body where the view reads one (the schema of the latest microversion: earlier
bodies differ, as api-ref/ says), and the statuses it answers. The views build their
answers as dicts, not with schemas, so a successful answer is described as a JSON
object whose fields api-ref/ gives; every error has the one error format (``Errors``).
"""
