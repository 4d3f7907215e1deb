"""The scenario list and the list of expected differences are consistent (no database)."""

from tests.differential.expected import EXPECTED
from tests.differential.scenarios import BY_NAME, SCENARIOS


def test_scenario_names_are_unique():
    assert SCENARIOS
    assert len(BY_NAME) == len(SCENARIOS)


def test_every_expected_difference_names_a_scenario_and_a_step():
    for name, known in EXPECTED.items():
        assert name in BY_NAME, f"{name} in expected.py is not a scenario"
        scenario = BY_NAME[name]
        labels = {step.label for step in scenario.steps if step.label}
        numbers = {f"step {n}" for n in range(1, len(scenario.steps) + 1)}
        assert known.step in labels | numbers, f"{name}: no step {known.step!r}"
        assert known.reason and "\n" not in known.reason, f"{name}: a one-line reason"
