"""A small stand-in for the Kubernetes API server: it answers the few calls this service
makes (read, patch and bind a pod; list pods; list Koordinator ``Device`` objects; read a
``PodGroup`` of the coscheduling plugin or of Volcano) with
the API's documented JSON, and records every request. No API server can run on the test
machines; the service's own calls go through the official client unchanged."""

import contextlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

POD = re.compile(r"^/api/v1/namespaces/(?P<ns>[^/]+)/pods/(?P<name>[^/]+)$")
# A Binding is created in the pod's namespace, naming the pod in its metadata (the API
# server also takes it at .../pods/{name}/binding; the client uses this one).
BINDINGS = re.compile(r"^/api/v1/namespaces/(?P<ns>[^/]+)/bindings$")
PODS = "/api/v1/pods"
DEVICES = "/apis/scheduling.koordinator.sh/v1alpha1/devices"
# A namespaced custom object: the pod groups' (any group and version, as stored).
POD_GROUP = re.compile(
    r"^/apis/(?P<group>[^/]+)/(?P<version>[^/]+)/namespaces/(?P<ns>[^/]+)/podgroups/(?P<name>[^/]+)$"
)


@dataclass
class Recorded:
    method: str
    path: str
    content_type: str | None
    body: object


@dataclass
class FakeApiServer:
    """Pods by (namespace, name); pod groups by (API group/version, namespace, name);
    ``refuse`` maps (method, kind) -> (status, message) for calls to answer with a
    ``Status`` failure (kind: ``pod``, ``binding``, ``pods``, ``podgroup``)."""

    pods: dict[tuple[str, str], dict] = field(default_factory=dict)
    pod_groups: dict[tuple[str, str, str], dict] = field(default_factory=dict)
    devices: list[dict] = field(default_factory=list)
    refuse: dict[tuple[str, str], tuple[int, str]] = field(default_factory=dict)
    requests: list[Recorded] = field(default_factory=list)
    page_size: int | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    url: str = ""

    def add_pod(self, pod: dict) -> None:
        metadata = pod["metadata"]
        self.pods[(metadata["namespace"], metadata["name"])] = json.loads(json.dumps(pod))

    def add_pod_group(self, pod_group: dict) -> None:
        metadata = pod_group["metadata"]
        key = (pod_group["apiVersion"], metadata["namespace"], metadata["name"])
        self.pod_groups[key] = json.loads(json.dumps(pod_group))

    def calls(self, method=None) -> list[Recorded]:
        return [r for r in self.requests if method is None or r.method == method]


def _status(code: int, message: str, reason: str) -> dict:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure" if code >= 400 else "Success",
        "message": message,
        "reason": reason,
        "code": code,
    }


def _handler(server: FakeApiServer):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # quiet
            pass

        def _answer(self, code: int, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _read(self):
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            return json.loads(raw) if raw else None

        def _handle(self, method: str) -> None:
            path, _, query = self.path.partition("?")
            body = self._read()
            with server.lock:
                server.requests.append(
                    Recorded(method, self.path, self.headers.get("Content-Type"), body)
                )
                code, answer = self._route(method, path, query, body)
            self._answer(code, answer)

        def _route(self, method, path, query, body):
            match = POD.match(path)
            binding = BINDINGS.match(path)
            pod_group = POD_GROUP.match(path)
            if pod_group is not None:
                return self._pod_group(method, pod_group)
            kind = (
                "pod"
                if match
                else "binding"
                if binding
                else ("pods" if path == PODS else "devices" if path == DEVICES else None)
            )
            if (method, kind) in server.refuse:
                code, message = server.refuse[(method, kind)]
                return code, _status(code, message, "Forbidden" if code == 403 else "Invalid")
            if kind == "pods" and method == "GET":
                return 200, self._pod_list(query)
            if kind == "devices" and method == "GET":
                return 200, {
                    "apiVersion": "scheduling.koordinator.sh/v1alpha1",
                    "kind": "DeviceList",
                    "metadata": {},
                    "items": server.devices,
                }
            if match is not None:
                key = (match["ns"], match["name"])
            elif binding is not None and isinstance(body, dict):
                key = (binding["ns"], body.get("metadata", {}).get("name", ""))
            else:
                return 404, _status(
                    404, "the server could not find the requested resource", "NotFound"
                )
            pod = server.pods.get(key)
            if pod is None:
                return 404, _status(404, f'pods "{key[1]}" not found', "NotFound")
            if kind == "pod" and method == "GET":
                return 200, pod
            if kind == "pod" and method == "PATCH":
                annotations = (body or {}).get("metadata", {}).get("annotations", {})
                pod["metadata"].setdefault("annotations", {}).update(annotations)
                return 200, pod
            if kind == "binding" and method == "POST":
                if pod["spec"].get("nodeName"):
                    return 409, _status(
                        409,
                        f'pod {key[1]} is already assigned to node "{pod["spec"]["nodeName"]}"',
                        "Conflict",
                    )
                if body["metadata"].get("uid") not in (None, pod["metadata"]["uid"]):
                    return 409, _status(409, "Precondition failed: UID in precondition", "Conflict")
                pod["spec"]["nodeName"] = body["target"]["name"]
                return 201, _status(201, "", "")
            return 405, _status(405, "method not allowed", "MethodNotAllowed")

        def _pod_group(self, method, match):
            if (method, "podgroup") in server.refuse:
                code, message = server.refuse[(method, "podgroup")]
                return code, _status(code, message, "Forbidden" if code == 403 else "Invalid")
            key = (f"{match['group']}/{match['version']}", match["ns"], match["name"])
            found = server.pod_groups.get(key)
            if method != "GET":
                return 405, _status(405, "method not allowed", "MethodNotAllowed")
            if found is None:
                return 404, _status(
                    404, f'podgroups.{match["group"]} "{match["name"]}" not found', "NotFound"
                )
            return 200, found

        def _pod_list(self, query: str) -> dict:
            params = dict(p.partition("=")[::2] for p in query.split("&") if p)
            items = [server.pods[key] for key in sorted(server.pods)]
            start = int(params.get("continue") or 0)
            size = server.page_size or len(items) or 1
            page = items[start : start + size]
            metadata: dict = {"resourceVersion": "1"}
            if start + size < len(items):
                metadata["continue"] = str(start + size)
            return {"kind": "PodList", "apiVersion": "v1", "metadata": metadata, "items": page}

        def do_GET(self):
            self._handle("GET")

        def do_POST(self):
            self._handle("POST")

        def do_PATCH(self):
            self._handle("PATCH")

    return Handler


@contextlib.contextmanager
def running(server: FakeApiServer):
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(server))
    server.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def binding_args(pod: dict, node: str) -> dict:
    """What kube-scheduler sends the extender's bind verb for ``pod`` (ExtenderBindingArgs)."""
    metadata = pod["metadata"]
    return {
        "PodName": metadata["name"],
        "PodNamespace": metadata["namespace"],
        "PodUID": metadata["uid"],
        "Node": node,
    }


def kubeconfig(url: str) -> str:
    """A kubeconfig naming the server ``url`` with a bearer token."""
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": "test",
            "clusters": [{"name": "test", "cluster": {"server": url}}],
            "users": [{"name": "scheduler", "user": {"token": "extender-token"}}],
            "contexts": [{"name": "test", "context": {"cluster": "test", "user": "scheduler"}}],
        }
    )


def kubeconfig_file(folder, url: str) -> str:
    """The path of a kubeconfig file in ``folder`` naming the server ``url``."""
    path = folder / "kubeconfig"
    path.write_text(kubeconfig(url), encoding="utf-8")
    return str(path)
