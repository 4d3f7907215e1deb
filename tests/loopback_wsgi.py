"""Serve a WSGI application on a loopback port, threaded and quiet, for the launchers of
the other services the tests run in virtualenvs of their own (``serve_upstream.py``,
``serve_keystone.py``). Those run under other interpreters: they import this file by
its folder, never through the ``tests`` package."""

import wsgiref.simple_server
from socketserver import ThreadingMixIn


class QuietHandler(wsgiref.simple_server.WSGIRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass


class ThreadingServer(ThreadingMixIn, wsgiref.simple_server.WSGIServer):
    daemon_threads = True


def serve(application, port: int) -> None:
    """Serve until killed; print ``ready`` first, once the port listens."""
    server = wsgiref.simple_server.make_server(
        "127.0.0.1", port, application, server_class=ThreadingServer, handler_class=QuietHandler
    )
    print("ready", flush=True)
    server.serve_forever()
