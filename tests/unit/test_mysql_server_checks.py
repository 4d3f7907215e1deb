"""What the service checks of a MySQL server or Galera node at start."""

from placement.db import mysql


class FakeServer:
    """Answers SHOW GLOBAL VARIABLES / STATUS as a server with these values would."""

    def __init__(self, variables: dict[str, str], status: dict[str, str]) -> None:
        self.variables, self.status = variables, status

    def exec_driver_sql(self, statement: str):
        source = self.variables if "VARIABLES" in statement else self.status
        return [(name, value) for name, value in source.items() if f"'{name}'" in statement]


HEALTHY_NODE = {"wsrep_on": "ON", "innodb_autoinc_lock_mode": "2", "binlog_format": "ROW"}
READY = {"wsrep_ready": "ON", "wsrep_cluster_status": "Primary", "wsrep_cluster_size": "3"}


def test_a_plain_server_has_nothing_to_say():
    server = FakeServer({"wsrep_on": "OFF", "binlog_format": "MIXED"}, {})
    assert mysql.server_warnings(server) == []


def test_a_healthy_galera_node_has_nothing_to_say():
    assert mysql.server_warnings(FakeServer(HEALTHY_NODE, READY)) == []


def test_a_node_outside_the_primary_component_or_not_ready_is_named():
    status = {"wsrep_ready": "OFF", "wsrep_cluster_status": "non-Primary"}
    warnings = mysql.server_warnings(FakeServer(HEALTHY_NODE, status))
    assert len(warnings) == 2
    assert "wsrep_ready" in warnings[0] and "non-Primary" in warnings[1]


def test_settings_galera_needs_are_named_with_the_reason():
    variables = {**HEALTHY_NODE, "innodb_autoinc_lock_mode": "1", "binlog_format": "STATEMENT"}
    warnings = mysql.server_warnings(FakeServer(variables, READY))
    assert [w.split(" = ")[0] for w in warnings] == ["innodb_autoinc_lock_mode", "binlog_format"]
