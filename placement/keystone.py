"""Keystone in front of the application (``auth_strategy = keystone``).

keystonemiddleware's ``auth_token`` checks each request's ``X-Auth-Token`` with
Keystone and answers 401 itself to a missing or invalid one, as in front of
upstream Placement; it is configured by the ``[keystone_authtoken]`` section of
the service's configuration file, read with oslo.config into a configuration
object of this application's own. The paths that need no token (the API's root,
the probes) pass by it. ``auth.KeystoneAuth`` reads who the token belongs to from
the headers it sets.
"""

from collections.abc import Callable, Collection

from keystonemiddleware import auth_token
from oslo_config import cfg


class _AuthTokenExceptOpenPaths(auth_token.AuthProtocol):
    def __init__(
        self,
        app: Callable,
        conf: dict,
        open_paths: Collection[str],
        trusted_paths: Collection[str],
        trusted: Callable[[dict], bool],
    ) -> None:
        self._protected_app = app
        self._open_paths = frozenset(open_paths)
        self._trusted_paths = frozenset(trusted_paths)
        self._trusted = trusted
        super().__init__(app, conf)

    def __call__(self, environ, start_response):  # type: ignore[override]
        path = environ.get("PATH_INFO") or "/"
        if path in self._open_paths or (path in self._trusted_paths and self._trusted(environ)):
            return self._protected_app(environ, start_response)
        return super().__call__(environ, start_response)


def protect(
    wsgi_app: Callable,
    config_file: str,
    open_paths: Collection[str],
    trusted_paths: Collection[str] = (),
    trusted: Callable[[dict], bool] = lambda environ: False,
) -> Callable:
    """``wsgi_app`` behind keystonemiddleware, configured from ``config_file``. Requests for
    ``open_paths`` pass by it, and those for ``trusted_paths`` when ``trusted(environ)``
    (kube-scheduler's, which has no token, from its addresses): any other request for
    them has its token checked, so that the identity headers behind are the
    middleware's, never a client's."""
    conf = cfg.ConfigOpts()
    conf([], project="placement", default_config_files=[config_file], default_config_dirs=[])
    return _AuthTokenExceptOpenPaths(
        wsgi_app, {"oslo_config_config": conf}, open_paths, trusted_paths, trusted
    )
