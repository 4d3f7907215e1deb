"""WSGI entry point: ``gunicorn placement.wsgi:application``.

The configuration comes from PLACEMENT_CONFIG_FILE (or /etc/placement/placement.conf)
and PLACEMENT_* environment variables.
"""

from placement.app import create_app, freeze_startup_objects

application = create_app()
freeze_startup_objects()
