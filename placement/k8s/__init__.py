"""Kubernetes: kube-scheduler's extender over the device search, and keeping the
device allocations in step with the cluster's pods.

One module per job:

- ``protocol``: the extender's messages (``k8s.io/kube-scheduler/extender/v1``) in
  and out; pods and nodes read by the official client's models.
- ``pod_requests``: a pod's effective device requests -> the device routes' request.
- ``node_topology``: a node's GPU topology from its annotations (``Nodes`` mode).
- ``what_if``: a device node with some allocations given back (preemption, and
  "would it fit even empty").
- ``extender``: filter, prioritize, preempt and bind, the front door
  (``SchedulerExtender``, one per process, on the application's ``DeviceSearch``).
- ``cluster``: the Kubernetes API calls (read, annotate and bind a pod; list pods
  and Koordinator ``Device`` objects), through the official client.
- ``reconcile``: release what pods that are gone or finished still hold.
- ``koordinator_devices``: Koordinator's ``Device`` object -> a device list import.

HTTP lives in ``placement.handlers.k8s_scheduler``; the CLI in ``placement.cli.k8s``.
"""

# Where the extender's verbs are answered unless ``[k8s] scheduler_prefix`` says.
DEFAULT_SCHEDULER_PREFIX = "/k8s/scheduler"
# The prefix of the node annotations that give a node's GPU topology (``node_topology``).
DEFAULT_TOPOLOGY_PREFIX = "gpu-topology.placement/"
