"""Slow clients against the real service (gunicorn with the workers of ``placement serve``).

Connections that send nothing, or half a request, or half a body, never stop the
service from answering others, even with one worker; a client silent for longer than
``client_timeout_seconds`` is disconnected. On sync workers (the service's earlier
default) the first test waits for gunicorn's 30 s timeout and fails.
"""

import socket
import time
import urllib.parse

import pytest
import requests

from tests.functional.gunicorn import running_gunicorn

CLIENT_TIMEOUT_S = 2
HEADERS = {"X-Auth-Token": "admin", "OpenStack-API-Version": "placement 1.39"}


@pytest.fixture
def service(empty_database_url, tmp_path):
    env = {"PLACEMENT_CLIENT_TIMEOUT_SECONDS": str(CLIENT_TIMEOUT_S)}
    with running_gunicorn(
        empty_database_url("sqlite"),
        tmp_path,
        workers=1,
        extra_args=("--threads", "4"),
        extra_env=env,
    ) as base:
        yield base


def _connect(base: str) -> socket.socket:
    url = urllib.parse.urlsplit(base)
    return socket.create_connection((url.hostname, url.port), timeout=10)


def _answers_quickly(base: str) -> None:
    started = time.monotonic()
    response = requests.get(base + "/resource_providers", headers=HEADERS, timeout=5)
    assert response.status_code == 200
    assert time.monotonic() - started < 2


def test_idle_and_half_sent_requests_hold_no_worker(service):
    silent = [_connect(service) for _ in range(8)]
    half_headers = [_connect(service) for _ in range(3)]  # fewer than the threads
    for sock in half_headers:
        sock.sendall(b"GET /resource_providers HTTP/1.1\r\nHost: x\r\nX-Auth-")
    try:
        for _ in range(5):
            _answers_quickly(service)
    finally:
        for sock in silent + half_headers:
            sock.close()


def test_a_slow_body_holds_only_its_own_thread(service):
    sock = _connect(service)
    sock.sendall(
        b"POST /resource_providers HTTP/1.1\r\nHost: x\r\nX-Auth-Token: admin\r\n"
        b'Content-Type: application/json\r\nContent-Length: 40\r\n\r\n{"name": '
    )
    try:
        for _ in range(3):
            _answers_quickly(service)  # the application is not waiting on that body
    finally:
        sock.close()


def test_a_silent_client_is_disconnected_after_the_client_timeout(service):
    sock = _connect(service)
    sock.sendall(b"GET /resource_providers HTTP/1.1\r\nHost: x\r\n")
    started = time.monotonic()
    try:
        assert sock.recv(1024) == b""  # closed by the service, with no answer
    finally:
        sock.close()
    waited = time.monotonic() - started
    assert CLIENT_TIMEOUT_S - 0.5 < waited < CLIENT_TIMEOUT_S + 3


def test_a_trickled_request_is_answered_within_the_timeout(service):
    """Each byte within the timeout of the last: a slow client is still served."""
    sock = _connect(service)
    request = b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    try:
        for start in range(0, len(request), 8):
            sock.sendall(request[start : start + 8])
            time.sleep(0.1)
        answer = b""
        while chunk := sock.recv(4096):
            answer += chunk
    finally:
        sock.close()
    assert answer.startswith(b"HTTP/1.1 200 ")
