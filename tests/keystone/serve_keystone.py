"""Serve a real Keystone on a loopback port, for the Keystone tests.

Run with the interpreter of the Keystone virtualenv (``.venv-keystone``), never
imported by this project's tests:

    python serve_keystone.py CONFIG_FILE PORT

The database named by the configuration must already be set up
(``keystone-manage db_sync``, ``fernet_setup``, ``credential_setup``,
``bootstrap``). Prints ``ready`` on its first line once it listens.
"""

import os
import sys
from pathlib import Path

# The shared launcher, by its folder: this runs under Keystone's interpreter.
sys.path.append(str(Path(__file__).resolve().parents[1]))  # last: tests/keystone hides keystone
from loopback_wsgi import serve  # noqa: E402


def main() -> None:
    config_file, port = os.path.abspath(sys.argv[1]), int(sys.argv[2])
    # Keystone's application reads the command line through oslo.config when it is
    # built: it must see no arguments of ours.
    sys.argv = [sys.argv[0]]
    os.environ["OS_KEYSTONE_CONFIG_DIR"] = os.path.dirname(config_file)
    os.environ["OS_KEYSTONE_CONFIG_FILES"] = os.path.basename(config_file)
    from keystone.server import wsgi

    application = wsgi.initialize_public_application()
    serve(application, port)


if __name__ == "__main__":
    main()
