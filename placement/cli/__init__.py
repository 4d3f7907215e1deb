"""The ``placement`` command (``main``): ``db``, ``serve``, ``sample-config``, and the
admin commands of the two node features, ``group-resources`` and ``devices``, which
share ``common``."""
