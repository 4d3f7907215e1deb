"""What a client sends its database, counted where the driver sends it.

SQLAlchemy's events see the statements run through SQLAlchemy, but not the pool's
ping at each checkout, nor the transaction's BEGIN and COMMIT on every driver, nor
what the copy of the providers reads through the driver's own cursor. So the count
is taken below SQLAlchemy, on each connection the engine opens from then on:

* SQLite: the library's trace callback (every statement it runs, BEGIN and COMMIT too);
* PostgreSQL: libpq's protocol trace, in which each statement is one ``Query``
  (simple protocol: the ping, BEGIN, COMMIT) or one ``Execute`` message (extended
  protocol), and each round trip ends with a ``Query`` or a ``Sync``;
* MySQL (PyMySQL): every command the connection sends (``COM_QUERY``, ``COM_PING``),
  each a round trip.

``StatementLog(engine)`` closes the engine's pooled connections so that the next
ones are traced; ``with log.counting() as seen:`` then holds, once the block ends,
each statement sent within it (its text, shortened) and ``log.round_trips``.
"""

import contextlib
import os
import tempfile
from collections.abc import Iterator

import psycopg.pq
from sqlalchemy import Engine, event

# PyMySQL's command bytes, as its constants name them.
MYSQL_COMMANDS = {3: "", 14: "(ping)"}
PG_STATEMENT = ("Query", "Execute")
PG_ROUND_TRIP_END = ("Query", "Sync")


class StatementLog:
    def __init__(self, engine: Engine) -> None:
        self.dialect = engine.dialect.name
        self.round_trips = 0
        self._seen: list[str] = []
        self._recording = False
        self._traces: list[tuple[int, str]] = []  # (fd, path) of each connection, PostgreSQL
        self._prepared: dict[tuple[str, str], str] = {}  # (trace, name) -> text, PostgreSQL
        engine.dispose()
        event.listen(engine, "connect", self._on_connect)
        self._engine = engine

    def close(self) -> None:
        event.remove(self._engine, "connect", self._on_connect)
        self._engine.dispose()
        for fd, path in self._traces:
            os.close(fd)
            os.unlink(path)

    @contextlib.contextmanager
    def counting(self) -> Iterator[list[str]]:
        seen: list[str] = []
        offsets = [os.lseek(fd, 0, os.SEEK_END) for fd, _ in self._traces]
        self._seen, self._recording, self.round_trips = seen, True, 0
        try:
            yield seen
        finally:
            self._recording = False
            # (connections opened during the block: their whole trace)
            offsets += [0] * (len(self._traces) - len(offsets))
            for (_, path), offset in zip(self._traces, offsets, strict=True):
                self._read_pg_trace(path, offset)

    def _on_connect(self, dbapi_connection, _record) -> None:
        if self.dialect == "sqlite":
            dbapi_connection.set_trace_callback(self._sqlite_statement)
        elif self.dialect == "postgresql":
            fd, path = tempfile.mkstemp(prefix="pg-trace-")
            self._traces.append((fd, path))
            dbapi_connection.pgconn.trace(fd)
            dbapi_connection.pgconn.set_trace_flags(
                psycopg.pq.Trace.SUPPRESS_TIMESTAMPS | psycopg.pq.Trace.REGRESS_MODE
            )
        elif self.dialect == "mysql":
            send = dbapi_connection._execute_command

            def counted(command, sql):
                self._mysql_command(command, sql)
                return send(command, sql)

            dbapi_connection._execute_command = counted

    def _sqlite_statement(self, statement: str) -> None:
        if self._recording:
            self._seen.append(" ".join(statement.split())[:100])
            self.round_trips += 1  # (in the process: each statement counts as one)

    def _mysql_command(self, command: int, sql) -> None:
        if self._recording:
            text = sql.decode() if isinstance(sql, (bytes, bytearray)) else sql
            self._seen.append(
                MYSQL_COMMANDS.get(command, f"command {command}") + " ".join(text.split())[:100]
            )
            self.round_trips += 1

    def _read_pg_trace(self, path: str, offset: int) -> None:
        with open(path, encoding="utf-8", errors="replace") as trace:
            trace.seek(offset)
            bound = ""
            for line in trace:
                fields = line.rstrip("\n").split("\t")
                if len(fields) < 3 or fields[0] != "F":
                    continue
                message, text = fields[2], "\t".join(fields[3:]).strip()
                quoted = text.split('"')  # Parse: "name" "text" ...; Bind: "portal" "name" ...
                if message == "Parse" and len(quoted) > 3:
                    self._prepared[path, quoted[1]] = bound = quoted[3]
                elif message == "Bind" and len(quoted) > 3:
                    bound = self._prepared.get((path, quoted[3]), "(prepared)")
                elif message in PG_STATEMENT:
                    shown = text.strip('"') if message == "Query" else bound
                    self._seen.append(" ".join(shown.split())[:100] or "(ping)")
                if message in PG_ROUND_TRIP_END:
                    self.round_trips += 1
