"""Free ports on loopback for the servers the tests and benchmarks start.

Asking the kernel for port 0 gives an ephemeral port, and ephemeral ports are also
what every outgoing connection takes: between the moment the port is released and
the moment a server binds it, a client connecting to a database may take it, and the
server fails to start. So ports are drawn at random below the kernel's ephemeral
range instead, each checked free, and never given twice by one process (pytest-xdist
workers, drawing from the same range, rarely meet: a server that fails to bind its
port says so).
"""

import random
import socket

_GIVEN: set[int] = set()
_FIRST = 20000  # below: ports well-known services often listen on


def _ephemeral_range() -> tuple[int, int]:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as found:
            low, high = (int(part) for part in found.read().split())
            return low, high
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default


def free_port() -> int:
    low, high = _ephemeral_range()
    ports = range(_FIRST, low) if low - _FIRST >= 1000 else range(high + 1, 65536)
    chance = random.SystemRandom()
    for _ in range(200):
        port = chance.choice(ports)
        if port in _GIVEN:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        _GIVEN.add(port)
        return port
    raise RuntimeError(f"no free port on loopback in {ports}")


def distinct_free_ports(count: int) -> list[int]:
    return [free_port() for _ in range(count)]
