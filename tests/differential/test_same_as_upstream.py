"""Each scenario against upstream 16.0.0 and against this service, on both backends:
the same statuses, error codes, bodies and generations, step by step (see
tests/differential/__init__.py), except where ``expected.EXPECTED`` says otherwise."""

import pytest

from tests.differential.compare import first_difference, upstream_faults
from tests.differential.expected import EXPECTED
from tests.differential.runner import FlaskTarget, run
from tests.differential.scenarios import SCENARIOS

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("case", SCENARIOS, ids=lambda case: case.name)
def test_same_as_upstream(case, backend, upstream, app):
    theirs = upstream.transcript(case)
    faults = upstream_faults(theirs)
    if faults:
        pytest.fail(f"scenario {case.name} is broken on upstream:\n" + "\n".join(faults))
    ours = run(case, FlaskTarget(app.test_client()))
    difference = first_difference(theirs, ours)
    known = EXPECTED.get(case.name)
    if known is None or backend not in known.backends:
        if difference is not None:
            pytest.fail(difference.report(case.name, len(case.steps)), pytrace=False)
    elif difference is None:
        pytest.fail(
            f"{case.name} no longer differs from upstream on {backend} ({known.reason}): "
            "remove it from the list in tests/differential/expected.py",
            pytrace=False,
        )
    elif difference.where != known.step:
        pytest.fail(
            f"{case.name} was expected to differ first at {known.step!r} ({known.reason}), "
            f"but differs first at {difference.where!r}:\n"
            + difference.report(case.name, len(case.steps)),
            pytrace=False,
        )
