"""Giving the cyclic collector back what the application froze, in a test process."""

import gc
import warnings


def unfreeze() -> None:
    """``gc.unfreeze()``, then a full collection that ignores ``ResourceWarning``.

    The application freezes every object alive as it is built or reads a large copy
    (``gc.freeze``, ``placement.app``, ``placement.replica``): in a test process that
    includes the garbage earlier tests left, such as the connections of engines dropped
    without being disposed. Once unfrozen it is collected at the next full collection,
    in whatever test runs then, and the driver's warning for each connection (an error
    in this suite) would fail that test: the Galera test once did. Collected here, at
    once, that garbage fails nothing."""
    gc.unfreeze()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()
