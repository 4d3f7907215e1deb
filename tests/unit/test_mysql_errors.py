"""Which MySQL errors mean a lost race (run the request again, then 409) and which mean
the database is out of reach (503)."""

import pymysql
from sqlalchemy.exc import OperationalError

from placement.db import mysql


def _raised_while_handling(first: BaseException, then: BaseException) -> BaseException:
    try:
        try:
            raise first
        except BaseException:
            raise then  # noqa: B904 - the chain under test is the implicit one
    except BaseException as exc:
        return exc


DEADLOCK = pymysql.err.OperationalError(1213, "Deadlock found when trying to get lock")
NO_SAVEPOINT = pymysql.err.OperationalError(1305, "SAVEPOINT sa_savepoint_1 does not exist")


def test_a_deadlock_wrapped_or_not_is_a_lost_race():
    assert mysql.lost_a_race(DEADLOCK)
    assert mysql.lost_a_race(OperationalError("INSERT ...", {}, DEADLOCK))
    assert mysql.lost_a_race(pymysql.err.OperationalError(1205, "Lock wait timeout exceeded"))


def test_a_savepoint_lost_to_a_deadlock_is_a_lost_race():
    """InnoDB rolls the whole transaction back on a deadlock: the ROLLBACK TO SAVEPOINT
    that follows fails, and that is the error that surfaces."""
    wrapped_deadlock = OperationalError("INSERT INTO consumers ...", {}, DEADLOCK)
    surfaced = _raised_while_handling(
        wrapped_deadlock, OperationalError("ROLLBACK TO SAVEPOINT", {}, NO_SAVEPOINT)
    )
    assert mysql.lost_a_race(surfaced)


def test_other_errors_are_not_races():
    assert not mysql.lost_a_race(OperationalError("ROLLBACK TO SAVEPOINT", {}, NO_SAVEPOINT))
    assert not mysql.lost_a_race(pymysql.err.IntegrityError(1062, "Duplicate entry"))
    assert not mysql.lost_a_race(ValueError("not a database error"))
    assert not mysql.lost_a_race(None)


def test_a_node_outside_the_primary_component_or_a_lost_server_is_unreachable():
    assert mysql.is_unreachable(pymysql.err.InternalError(1047, "WSREP has not yet prepared"))
    assert mysql.is_unreachable(pymysql.err.OperationalError(2013, "Lost connection"))
    assert not mysql.is_unreachable(DEADLOCK)
