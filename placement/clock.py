"""Time as the database stores it: naive UTC."""

import datetime


def utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
