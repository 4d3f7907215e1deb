"""Unit tests of the observability package without a database: oslo's global request id
format, the metrics folder ``placement serve`` makes for its workers, and the refusal
to count in memory when the workers' values must be shared."""

import os
import uuid

import pytest
import sqlalchemy as sa

from placement import server
from placement.config import Config
from placement.observability import MULTIPROCESS_DIRECTORY
from placement.observability.metrics import Metrics
from placement.observability.request_log import global_request_id


def test_a_global_request_id_is_a_req_uuid_in_lower_case():
    valid = f"req-{uuid.uuid4()}"
    assert global_request_id(valid) == valid
    for sent in (None, "", valid.upper(), valid[4:], f"{valid} ", f"x{valid}", "req-1"):
        assert global_request_id(sent) is None


def test_serve_makes_a_metrics_folder_for_several_workers_and_removes_it():
    environ: dict[str, str] = {}
    with server.shared_metrics(Config(workers=2), environ) as folder:
        assert folder is not None and os.path.isdir(folder)
        assert environ[MULTIPROCESS_DIRECTORY] == folder
    assert not os.path.exists(folder)
    assert MULTIPROCESS_DIRECTORY not in environ


def test_serve_keeps_one_worker_in_memory_and_a_given_folder_as_it_is(tmp_path):
    environ: dict[str, str] = {}
    with server.shared_metrics(Config(workers=1), environ) as folder:
        assert folder is None and environ == {}
    environ = {MULTIPROCESS_DIRECTORY: str(tmp_path)}
    with server.shared_metrics(Config(workers=4), environ) as folder:
        assert folder == str(tmp_path)
    assert environ == {MULTIPROCESS_DIRECTORY: str(tmp_path)} and tmp_path.is_dir()


def test_metrics_refuse_a_folder_set_after_prometheus_client_was_imported(tmp_path):
    engine = sa.create_engine("sqlite://")
    with pytest.raises(RuntimeError, match=MULTIPROCESS_DIRECTORY):
        Metrics(engine, environ={MULTIPROCESS_DIRECTORY: str(tmp_path)})
    Metrics(engine, environ={})  # in memory, as this test process counts
