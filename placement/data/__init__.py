"""The data layer: functions that take a connection first and return rows or
dataclasses. All SQL lives here; views never build queries."""
