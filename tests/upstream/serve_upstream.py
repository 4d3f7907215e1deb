"""Serve upstream openstack-placement 16.0.0 on a loopback port, for the oracle tests.

Run with the interpreter of the upstream virtualenv (``.venv-upstream``), never
imported by this project's tests: both packages are called ``placement``.

    python serve_upstream.py DATABASE_URL PORT

The database is created and migrated on start (``sync_on_startup``); the
service uses ``noauth2`` and the default policy, as upstream's own suite does.
It prints ``ready`` on its first line once it listens. Policy: the deprecated
rules (``enforce_new_defaults = False``), as upstream's own functional
fixtures and default deployments use them (the token ``admin`` may do
everything, POST /reshaper included).
"""

import sys
import wsgiref.simple_server
from socketserver import ThreadingMixIn

from oslo_config import cfg
from oslo_policy import opts as policy_opts

from placement import conf as placement_conf
from placement import db_api, deploy


class QuietHandler(wsgiref.simple_server.WSGIRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass


class ThreadingServer(ThreadingMixIn, wsgiref.simple_server.WSGIServer):
    daemon_threads = True


def build_config(database_url: str) -> cfg.ConfigOpts:
    config = cfg.ConfigOpts()
    placement_conf.register_opts(config)
    policy_opts.set_defaults(config)
    config.set_default("connection", database_url, group="placement_database")
    config([], default_config_files=[])
    config.set_override("auth_strategy", "noauth2", group="api")
    config.set_override("enforce_new_defaults", False, group="oslo_policy")
    config.set_override("sync_on_startup", True, group="placement_database")
    return config


def main() -> None:
    database_url, port = sys.argv[1], int(sys.argv[2])
    config = build_config(database_url)
    db_api.configure(config)
    application = deploy.loadapp(config)
    server = wsgiref.simple_server.make_server(
        "127.0.0.1", port, application, server_class=ThreadingServer, handler_class=QuietHandler
    )
    print("ready", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
