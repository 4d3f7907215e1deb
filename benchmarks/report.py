"""Scenario results and how they are printed: a Markdown table plus the configuration.

A ``Row`` is one scenario: an optional sequential ``Timing`` (latency
percentiles) and an optional concurrent one (throughput). ``environment``
describes the machine and the code, so that a table is never read without
knowing what produced it.
"""

import json
import os
import platform
import shlex
import subprocess
import sys
from dataclasses import dataclass

from benchmarks.client import Timing


@dataclass
class Row:
    scenario: str
    sequential: Timing | None = None
    concurrent: Timing | None = None
    note: str = ""

    def as_dict(self) -> dict:
        return {
            "scenario": self.scenario,
            "sequential": self.sequential.as_dict() if self.sequential else None,
            "concurrent": self.concurrent.as_dict() if self.concurrent else None,
            "note": self.note,
        }


def _fmt(value: float, digits: int = 1) -> str:
    return "-" if value != value else f"{value:.{digits}f}"  # NaN is not equal to itself


def _statuses(row: Row) -> str:
    parts = []
    for label, timing in (("seq", row.sequential), ("conc", row.concurrent)):
        if timing is not None:
            text = timing.status_text()
            if timing.truncated:
                text += " (stopped by time limit)"
            parts.append(f"{label}: {text}")
    return "; ".join(parts)


def table(rows: list[Row], concurrency: int) -> str:
    header = [
        "scenario",
        "seq n",
        "seq p50 ms",
        "seq p95 ms",
        "seq p99 ms",
        "conc n",
        f"req/s @{concurrency}",
        "conc p50 ms",
        "conc p95 ms",
        "answers",
        "note",
    ]
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" if i == 0 or i >= 9 else "--:" for i in range(len(header))) + "|",
    ]
    for row in rows:
        s, c = row.sequential, row.concurrent
        cells = [
            row.scenario,
            str(s.count) if s else "-",
            _fmt(s.p50_ms) if s else "-",
            _fmt(s.p95_ms) if s else "-",
            _fmt(s.p99_ms) if s else "-",
            str(c.count) if c else "-",
            _fmt(c.per_second) if c else "-",
            _fmt(c.p50_ms) if c else "-",
            _fmt(c.p95_ms) if c else "-",
            _statuses(row),
            row.note,
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _git(*args: str) -> str:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        return subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, timeout=10
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def environment() -> dict:
    commit = _git("rev-parse", "--short", "HEAD") or "unknown"
    if _git("status", "--porcelain", "--untracked-files=no"):
        commit += " + uncommitted changes"
    return {
        "code": commit,
        "python": platform.python_version(),
        "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs",
        # Taken before the service starts: anything above ~0 means another process was busy.
        "load average before the run (1, 5 min)": load_average(),
    }


def load_average() -> str:
    """The 1- and 5-minute load averages, as printed in the configuration."""
    return ", ".join(f"{x:.2f}" for x in os.getloadavg()[:2])


def command_line(module: str, argv: list[str] | None) -> str:
    """How the runner ``module`` was invoked, for the configuration."""
    return f"python -m {module} " + shlex.join(sys.argv[1:] if argv is None else argv)


def dump_json(path: str, config: dict, rows: list[Row]) -> None:
    with open(path, "w") as out:
        json.dump({"config": config, "results": [r.as_dict() for r in rows]}, out, indent=2)
        out.write("\n")


def unexpected(rows: list[Row]) -> list[str]:
    """What went wrong in ``rows``: notes marked EXPECTED, non-2xx answers, errors, truncation."""
    problems = []
    for row in rows:
        if "EXPECTED" in row.note:
            problems.append(f"{row.scenario}: {row.note}")
        for timing in (row.sequential, row.concurrent):
            if timing is None:
                continue
            bad = {k: v for k, v in timing.statuses.items() if k not in (200, 204)}
            if bad or timing.errors or timing.truncated:
                problems.append(
                    f"{row.scenario}: {timing.status_text()}"
                    + (" (stopped by time limit)" if timing.truncated else "")
                )
    return problems


def finish(config: dict, rows: list[Row], concurrency: int, json_path: str | None) -> int:
    """Print the configuration and the table (and write ``json_path``); the exit status:
    1 when anything was unexpected, else 0."""
    print()
    print("Configuration:")
    for key, value in config.items():
        print(f"  {key}: {value}")
    print()
    print(table(rows, concurrency))
    if json_path:
        dump_json(json_path, config, rows)
    problems = unexpected(rows)
    if problems:
        print("\nUNEXPECTED:", *problems, sep="\n  ")
        return 1
    return 0
