"""How the service connects to its database: upstream's [placement_database] options."""

from dataclasses import dataclass


@dataclass(frozen=True)
class DatabaseOptions:
    """The pool (PostgreSQL and MySQL; SQLite's file needs none), the attempts to reach
    the database at start, and MySQL's sql_mode. Defaults as upstream's (oslo.db's)."""

    max_pool_size: int = 5
    max_overflow: int = 50
    connection_recycle_time: int = 3600
    max_retries: int = 10
    retry_interval: int = 10
    mysql_sql_mode: str = "TRADITIONAL"
