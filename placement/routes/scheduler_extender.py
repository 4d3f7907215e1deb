"""kube-scheduler's extender verbs, under ``[k8s] scheduler_prefix`` (not part of the
Placement API; ``sort`` is ``prioritize`` under the name GPU topology extenders give it).
Admitted without a token from ``[k8s] scheduler_clients`` only (``app``)."""

from placement.handlers import k8s_scheduler
from placement.k8s import DEFAULT_SCHEDULER_PREFIX
from placement.routes.route import SEARCH, Route
from placement.schemas import k8s_scheduler as extender_schemas

PRIORITIZE = Route(
    k8s_scheduler.prioritize_nodes,
    SEARCH,
    rule="placement:k8s:scheduler:prioritize",
    body=extender_schemas.ExtenderArgs(),
    answers={
        200: "HostPriorityList: each node's score, 0 to 10.",
        400: "Error: the body does not read.",
    },
)
SCHEDULER_EXTENDER: dict[str, Route] = {
    "/filter": Route(
        k8s_scheduler.filter_nodes,
        rule="placement:k8s:scheduler:filter",
        body=extender_schemas.ExtenderArgs(),
        answers={
            200: "ExtenderFilterResult: the nodes that pass, FailedNodes, "
            "FailedAndUnresolvableNodes; or Error.",
        },
    ),  # imports the nodes' annotated topologies
    "/prioritize": PRIORITIZE,
    "/sort": PRIORITIZE,
    "/bind": Route(
        k8s_scheduler.bind_pod,
        rule="placement:k8s:scheduler:bind",
        body=extender_schemas.ExtenderBindingArgs(),
        answers={
            200: "ExtenderBindingResult: Error empty when bound, else why not.",
        },
    ),
    "/preempt": Route(
        k8s_scheduler.preempt,
        SEARCH,
        rule="placement:k8s:scheduler:preempt",
        body=extender_schemas.ExtenderPreemptionArgs(),
        answers={
            200: "ExtenderPreemptionResult: the nodes where the pod fits once its victims are "
            "gone; or Error.",
        },
    ),
}
SCHEDULER_EXTENDER_ENDPOINT = "k8s-scheduler "


def scheduler_extender_api(prefix: str = DEFAULT_SCHEDULER_PREFIX) -> dict[str, dict[str, Route]]:
    """The extender's routes under ``prefix``, as ``API`` declares routes."""
    return {prefix + verb: {"POST": route} for verb, route in SCHEDULER_EXTENDER.items()}
