"""The service's client sockets (``placement.server.ClientSocket``): a client that stops
reading is given up after the timeout; one that reads, however slowly, gets the whole
answer, however long it takes."""

import socket
import threading
import time

import pytest

from placement.server import ClientSocket

TIMEOUT_S = 0.3


@pytest.fixture
def pair():
    server, client = socket.socketpair()
    server = ClientSocket.adopt(server, TIMEOUT_S)
    server.setblocking(True)  # (as gunicorn does before it writes: the timeout applies)
    yield server, client
    server.close()
    client.close()


def test_a_client_reading_slowly_gets_an_answer_longer_than_the_timeout(pair):
    server, client = pair
    answer = bytes(range(256)) * 8192  # 2 MiB: far more than the sockets buffer
    received = bytearray()

    def read_slowly():
        while len(received) < len(answer):
            chunk = client.recv(65536)
            if not chunk:
                return
            received.extend(chunk)
            time.sleep(0.02)

    reader = threading.Thread(target=read_slowly)
    reader.start()
    started = time.monotonic()
    server.sendall(answer)
    reader.join(timeout=30)
    assert time.monotonic() - started > 2 * TIMEOUT_S  # (longer than the timeout, in all)
    assert bytes(received) == answer


def test_a_client_that_stops_reading_is_given_up_after_the_timeout(pair):
    server, _client = pair
    started = time.monotonic()
    with pytest.raises(BrokenPipeError):
        server.sendall(bytes(8 * 1024 * 1024))
    assert time.monotonic() - started < TIMEOUT_S + 2
