"""The Kubernetes API, as this service calls it, through the official client: read a
pod, put an annotation on it, bind it to a node, list the pods and Koordinator's
``Device`` objects, read a pod group's ``PodGroup``.

The client is configured from a kubeconfig file (``[k8s] kubeconfig``) or, without
one, from the pod's service account (in-cluster). A refusal of the API server, or a
server that cannot be reached, is a ``ClusterError`` that says which call and why.
"""

import contextlib
import json
from collections.abc import Iterator, Mapping

from kubernetes import client as k8s_client
from kubernetes import config as k8s_config
from kubernetes.client import V1Pod
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from placement import errors

MERGE_PATCH = "application/merge-patch+json"
DEVICE_GROUP, DEVICE_VERSION, DEVICE_PLURAL = "scheduling.koordinator.sh", "v1alpha1", "devices"
PAGE = 500


class ClusterError(errors.Conflict):
    """The Kubernetes API refused a call, or could not be reached."""


class Cluster:
    """One API client per process, built on first use (``SchedulerExtender``)."""

    def __init__(self, api_client: k8s_client.ApiClient, timeout_seconds: float) -> None:
        self._core = k8s_client.CoreV1Api(api_client)
        self._custom = k8s_client.CustomObjectsApi(api_client)
        self._timeout = timeout_seconds

    @classmethod
    def configured(cls, kubeconfig: str | None, timeout_seconds: float) -> "Cluster":
        try:
            if kubeconfig:
                api_client = k8s_config.new_client_from_config(
                    config_file=kubeconfig, persist_config=False
                )
            else:
                configuration = k8s_client.Configuration()
                k8s_config.load_incluster_config(client_configuration=configuration)
                api_client = k8s_client.ApiClient(configuration)
        except (k8s_config.ConfigException, OSError, ValueError) as exc:
            where = f"kubeconfig {kubeconfig}" if kubeconfig else "the in-cluster configuration"
            raise ClusterError(
                f"The Kubernetes API cannot be configured from {where}: {exc}"
            ) from exc
        return cls(api_client, timeout_seconds)

    def read_pod(self, namespace: str, name: str) -> V1Pod:
        with _calling(f"reading pod {namespace}/{name}"):
            return self._core.read_namespaced_pod(name, namespace, _request_timeout=self._timeout)

    def annotate_pod(self, namespace: str, name: str, annotations: Mapping[str, str]) -> None:
        with _calling(f"annotating pod {namespace}/{name}"):
            self._core.patch_namespaced_pod(
                name,
                namespace,
                {"metadata": {"annotations": dict(annotations)}},
                _content_type=MERGE_PATCH,
                _preload_content=False,
                _request_timeout=self._timeout,
            )

    def bind_pod(self, namespace: str, name: str, uid: str, node: str) -> None:
        binding = k8s_client.V1Binding(
            metadata=k8s_client.V1ObjectMeta(name=name, namespace=namespace, uid=uid),
            target=k8s_client.V1ObjectReference(api_version="v1", kind="Node", name=node),
        )
        with _calling(f"binding pod {namespace}/{name} to node {node}"):
            # The API server answers a Status, not the Binding: not read as one.
            self._core.create_namespaced_binding(
                namespace, binding, _preload_content=False, _request_timeout=self._timeout
            )

    def read_custom_object(
        self, group: str, version: str, plural: str, namespace: str, name: str
    ) -> dict:
        """One namespaced custom object as JSON (a ``PodGroup``)."""
        with _calling(f"reading {plural}.{group} {namespace}/{name}"):
            answer = self._custom.get_namespaced_custom_object(
                group, version, namespace, plural, name, _request_timeout=self._timeout
            )
        return answer if isinstance(answer, dict) else {}

    def pods(self) -> Iterator[V1Pod]:
        """Every pod of the cluster, a page at a time."""
        token = None
        while True:
            with _calling("listing pods"):
                page = self._core.list_pod_for_all_namespaces(
                    limit=PAGE, _continue=token, _request_timeout=self._timeout
                )
            yield from page.items or []
            token = page.metadata._continue if page.metadata else None
            if not token:
                return

    def devices(self) -> list[dict]:
        """Koordinator's ``Device`` objects (one per node, named after it), as JSON."""
        with _calling("listing Koordinator Device objects"):
            answer = self._custom.list_cluster_custom_object(
                DEVICE_GROUP, DEVICE_VERSION, DEVICE_PLURAL, _request_timeout=self._timeout
            )
        return list(answer.get("items") or []) if isinstance(answer, dict) else []


@contextlib.contextmanager
def _calling(what: str) -> Iterator[None]:
    """Turns the client's failures into a ``ClusterError`` naming the call."""
    try:
        yield
    except ApiException as exc:
        raise ClusterError(
            f"The Kubernetes API refused {what}: {exc.status} {_message(exc)}"
        ) from exc
    except (HTTPError, OSError) as exc:
        raise ClusterError(f"The Kubernetes API could not be reached for {what}: {exc}") from exc
    except ValueError as exc:  # an answer the client's models do not read
        raise ClusterError(f"The Kubernetes API's answer to {what} does not read: {exc}") from exc


def _message(exc: ApiException) -> str:
    """The ``message`` of the API server's Status body, else its reason."""
    try:
        status = json.loads(exc.body or "")
    except (TypeError, ValueError):
        status = None
    if isinstance(status, dict) and status.get("message"):
        return str(status["message"])
    return str(exc.reason or "")
