"""On MySQL a request whose transaction loses a race at commit (a deadlock victim, or on
Galera a write set that failed certification: error 1213 at COMMIT) is run again from
its start, up to ``endpoints.CONTENTION_ATTEMPTS`` times; the last loss is a 409 in the
API's error format, never a 500, and nothing of a lost attempt is written."""

import pymysql
import pytest
from sqlalchemy.exc import OperationalError

from placement import endpoints


@pytest.fixture(scope="session")
def backend() -> str:
    return "mysql"


@pytest.fixture
def losing_commits(monkeypatch):
    """Make the next ``n`` commits fail as a certification failure does."""
    state = {"left": 0, "lost": 0}
    commit = pymysql.connections.Connection.commit

    def failing_commit(self):
        if state["left"] > 0:
            state["left"] -= 1
            state["lost"] += 1
            self.rollback()
            raise pymysql.err.OperationalError(1213, "Deadlock: wsrep aborted transaction")
        return commit(self)

    monkeypatch.setattr(pymysql.connections.Connection, "commit", failing_commit)

    def lose(n: int) -> dict:
        state["left"] = n
        return state

    return lose


def test_a_write_that_lost_at_commit_is_run_again(api, losing_commits):
    state = losing_commits(2)
    created = api.post("/resource_providers", json={"name": "cn1"})
    assert created.status_code == 200, created.json
    assert state["lost"] == 2
    listed = api.get("/resource_providers").json["resource_providers"]
    assert [p["name"] for p in listed] == ["cn1"]


def test_a_write_that_keeps_losing_is_a_409_and_writes_nothing(api, losing_commits):
    state = losing_commits(endpoints.CONTENTION_ATTEMPTS)
    refused = api.post("/resource_providers", json={"name": "cn1"})
    assert refused.status_code == 409, refused.json
    assert refused.json["errors"][0]["code"] == "placement.concurrent_update"
    assert state["lost"] == endpoints.CONTENTION_ATTEMPTS
    assert api.get("/resource_providers").json["resource_providers"] == []


def test_a_driver_error_sqlalchemy_did_not_wrap_is_answered_as_a_wrapped_one(api, monkeypatch):
    """A connection lost where SQLAlchemy hands the driver's error on as it is (as when it
    sets an isolation level): 503 with Retry-After, like every unreachable database."""
    from placement.handlers import resource_provider

    def lost(*args, **kwargs):
        raise pymysql.err.OperationalError(2013, "Lost connection to server during query")

    monkeypatch.setattr(resource_provider.providers, "list_providers", lost)
    answer = api.get("/resource_providers")
    assert answer.status_code == 503, answer.json
    assert answer.headers["Retry-After"]


def test_a_savepoint_lost_to_a_deadlock_runs_the_request_again(api, monkeypatch):
    """InnoDB rolls a deadlocked transaction back whole; the savepoint's rollback then
    fails (1305). The request is run again like any lost race."""
    from placement.data import sql

    calls = {"n": 0}
    real = sql._mysql_inserting_one_by_one

    def deadlocked_once(conn, table, rows, columns):
        calls["n"] += 1
        if calls["n"] == 1:
            with conn.begin_nested():
                # As InnoDB does to a deadlock victim: the whole transaction rolled back
                # (so its savepoint is gone), then the statement's error.
                conn.exec_driver_sql("ROLLBACK")
                raise OperationalError(
                    "INSERT INTO consumers ...",
                    {},
                    pymysql.err.OperationalError(1213, "Deadlock found"),
                )
        return real(conn, table, rows, columns)

    monkeypatch.setattr(sql, "_mysql_inserting_one_by_one", deadlocked_once)
    created = api.post("/resource_providers", json={"name": "cn1"})
    assert created.status_code == 200, created.json
    assert calls["n"] >= 2
