"""Compare two transcripts of one scenario and describe the first step where they differ."""

import json
from dataclasses import dataclass
from typing import Any

from tests.differential.runner import Exchange, Transcript


@dataclass(frozen=True)
class Difference:
    index: int  # of the step, from 0
    upstream: Exchange
    ours: Exchange

    @property
    def where(self) -> str:
        """The differing step: its label, or its number when it has none."""
        return self.upstream.step.label or f"step {self.index + 1}"

    @property
    def aspects(self) -> list[str]:
        names = ("status", "body", "location", "generations read back")
        return [
            name
            for name, theirs, ours in zip(
                names, self.upstream.compared(), self.ours.compared(), strict=True
            )
            if theirs != ours
        ]

    def report(self, scenario: str, steps: int) -> str:
        step = self.upstream.step
        lines = [
            f"scenario {scenario}: step {self.index + 1} of {steps} ({self.where}) differs "
            f"in {', '.join(self.aspects)}",
            f"  request: {step.describe()}",
            f"  sent upstream: {_dump(self.upstream.sent)}",
        ]
        if self.ours.sent != self.upstream.sent:
            lines.append(f"  sent here:     {_dump(self.ours.sent)}")
        for side, exchange in (("upstream", self.upstream), ("here    ", self.ours)):
            lines.append(
                f"  {side}: {exchange.status} {_dump(exchange.body)}"
                + (f" Location: {exchange.location}" if exchange.location else "")
            )
        for side, exchange in (("upstream", self.upstream), ("here    ", self.ours)):
            readback = ", ".join(f"{name}={value}" for name, value in exchange.readback)
            lines.append(f"  generations after, {side}: {readback or '(none watched)'}")
        return "\n".join(lines)


def first_difference(upstream: Transcript, ours: Transcript) -> Difference | None:
    assert len(upstream.exchanges) == len(ours.exchanges), "one exchange per step on each side"
    for index, (theirs, mine) in enumerate(zip(upstream.exchanges, ours.exchanges, strict=True)):
        if theirs.compared() != mine.compared():
            return Difference(index, theirs, mine)
    return None


def upstream_faults(upstream: Transcript) -> list[str]:
    """Steps on which the scenario itself is broken: upstream answered 5xx (outside the
    rule's comparison) or a reference could not be resolved against upstream's answers."""
    faults = []
    for exchange in upstream.exchanges:
        if isinstance(exchange.status, str) or exchange.status >= 500:
            faults.append(f"{exchange.step.describe()}: {exchange.status} {_dump(exchange.body)}")
    return faults


def _dump(value: Any) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 1500 else text[:1500] + "..."
