"""Pausing Python's cyclic garbage collector while one large answer is built."""

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic garbage collection while one answer is built.

    A large answer allocates hundreds of thousands of small objects that all
    stay alive until the response is sent; each collection would traverse
    them again, so collections alone would make the time grow faster than the
    answer. Nothing here creates cycles that must be freed before the end of
    the request; the collector resumes (and catches up) right after it.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
