"""The request log (``placement.observability.request_log``): one line per request, in JSON
with its fields and never a token; the client's global request id kept when it is one;
the warning of an inventory accepted below its usage; how a process is configured."""

import contextlib
import datetime
import io
import json
import logging
import uuid

import pytest

from placement.app import create_app
from placement.config import Config
from placement.observability import request_log
from tests.conftest import Api

GLOBAL_ID = f"req-{uuid.uuid4()}"


class JsonLog:
    """The records of the ``placement`` loggers at INFO and above, as the JSON format
    writes them."""

    def __init__(self) -> None:
        self.stream = io.StringIO()

    def text(self) -> str:
        return self.stream.getvalue()

    def entries(self, logger: str | None = None) -> list[dict]:
        found = [json.loads(line) for line in self.text().splitlines()]
        return [entry for entry in found if logger is None or entry["logger"] == logger]

    def requests(self) -> list[dict]:
        return self.entries("placement.requests")


@pytest.fixture
def json_log():
    log = JsonLog()
    handler = logging.StreamHandler(log.stream)
    handler.setFormatter(request_log.JsonFormatter())
    handler.addFilter(request_log.RequestIds())
    logger = logging.getLogger("placement")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield log
    logger.removeHandler(handler)
    logger.setLevel(level)


def test_one_json_line_per_request_with_its_fields(api, json_log):
    provider = api.create_provider("logged")["uuid"]
    response = api.get(
        f"/resource_providers/{provider}",
        token="alice:project-a",
        headers={"X-Openstack-Request-Id": GLOBAL_ID, "X-Roles": "admin"},
    )
    assert response.status_code == 200
    entry = json_log.requests()[-1]
    assert datetime.datetime.fromisoformat(entry["timestamp"]).tzinfo is not None
    assert entry["level"] == "INFO"
    assert entry["method"] == "GET"
    assert entry["route"] == "/resource_providers/<uuid>"
    assert entry["path"] == f"/resource_providers/{provider}"
    assert entry["status"] == 200
    assert entry["duration_ms"] >= 0
    assert entry["request_id"] == response.headers["X-Openstack-Request-Id"]
    assert entry["global_request_id"] == GLOBAL_ID
    assert (entry["user_id"], entry["project_id"]) == ("alice", "project-a")
    assert entry["client"] == "127.0.0.1"
    assert entry["message"].startswith(f"GET /resource_providers/{provider} 200 ")
    assert len(json_log.requests()) == 2  # the POST that created it, and this GET


def test_refused_and_unmatched_requests_are_logged_too(api, json_log):
    api.get("/resource_providers", token=None)
    api.get("/nowhere")
    refused, unmatched = json_log.requests()
    assert (refused["status"], refused["user_id"], refused["route"]) == (
        401,
        None,
        "/resource_providers",
    )
    assert (unmatched["status"], unmatched["route"]) == (404, "unmatched")


def test_the_client_global_request_id_is_kept_when_valid_and_never_echoed(api, json_log):
    response = api.get("/", headers={"X-Openstack-Request-Id": GLOBAL_ID})
    local = response.headers["X-Openstack-Request-Id"]
    assert local != GLOBAL_ID and local.startswith("req-")  # the answer names its own id
    invalid = ["req-not-a-uuid", GLOBAL_ID.upper(), f"{GLOBAL_ID}0", "<script>x</script>"]
    for sent in invalid:
        response = api.get("/", headers={"X-Openstack-Request-Id": sent})
        assert response.headers["X-Openstack-Request-Id"] != sent
    kept, *ignored = json_log.requests()
    assert kept["global_request_id"] == GLOBAL_ID
    assert [entry["global_request_id"] for entry in ignored] == [None] * len(invalid)
    assert "<script>" not in json_log.text() and "req-not-a-uuid" not in json_log.text()


def test_tokens_are_never_logged(config, engine, tmp_path, json_log):
    tokens = tmp_path / "tokens"
    tokens.write_text("admin s3cret-admin-token\nreader s3cret-reader-token\n")
    token_config = config.replace(auth_strategy="token", tokens_file=str(tokens))
    api = Api(create_app(token_config, engine).test_client())
    for headers in (
        {"X-Auth-Token": "s3cret-admin-token"},
        {"Authorization": "Bearer s3cret-reader-token"},
        {"Authorization": "Bearer s3cret-wrong-token"},
    ):
        api.client.get("/resource_providers", headers=headers)
        api.client.get("/metrics", headers=headers)
    assert len(json_log.requests()) == 6
    assert "s3cret" not in json_log.text()


def test_an_inventory_below_its_usage_is_accepted_with_a_warning(api, json_log):
    provider = api.create_provider("shrunk")["uuid"]
    api.set_inventory(provider, VCPU=8)
    assert api.allocate(str(uuid.uuid4()), {provider: {"VCPU": 6}}).status_code == 204
    response = api.put(
        f"/resource_providers/{provider}/inventories/VCPU",
        json={
            "resource_provider_generation": api.generation(provider),
            "total": 4,
        },
    )
    assert response.status_code == 200
    (warning,) = json_log.entries("placement.data.inventories")
    assert warning["level"] == "WARNING"
    assert f"{provider}: VCPU usage 6 now exceeds its capacity 4" in warning["message"]
    # Logged within the request: it carries the request's id.
    assert warning["request_id"] == response.headers["X-Openstack-Request-Id"]


@contextlib.contextmanager
def bare_root_logger():
    """The root logger without handlers, as a process starts (pytest's own are added for
    the test's body); put back afterwards."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    root.handlers.clear()
    try:
        yield root
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


def test_a_process_logs_in_the_configured_format_and_level():
    with bare_root_logger() as root:
        request_log.configure_logging(Config(log_format="json", log_level="WARNING"))
        request_log.configure_logging(Config(log_format="text", log_level="DEBUG"))
        (text,) = root.handlers  # configured again: replaced, not added
        assert root.level == logging.DEBUG
        request_log.configure_logging(Config(log_format="json"))
        (json_handler,) = root.handlers
    record = logging.LogRecord("placement.x", logging.INFO, __file__, 1, "hello %s", ("you",), None)
    text.filter(record)
    assert text.format(record).endswith(" INFO placement.x hello you")  # no request, no ids
    json_handler.filter(record)
    entry = json.loads(json_handler.format(record))
    assert {"timestamp", "level", "logger", "pid", "message"} <= set(entry)
    assert (entry["level"], entry["message"]) == ("INFO", "hello you")


def test_logging_configured_by_the_process_is_left_alone():
    with bare_root_logger() as root:
        own = logging.NullHandler()
        root.addHandler(own)
        request_log.configure_logging(Config(log_format="json", log_level="DEBUG"))
        assert root.handlers == [own]
