"""One runner on each throwaway database server, side by side.

``python -m benchmarks.compare_backends run_candidates -- --trees 1000`` runs
``benchmarks.run_candidates`` once with ``--backend postgresql`` and once with
``--backend mysql`` (the arguments after ``--`` given to both, one after the other, never
at once: two runs on two cores would measure each other), then prints each scenario's
p50 and throughput on both and the ratio MySQL / PostgreSQL (above 1: slower on MySQL).
Each runner's own table and configuration are printed as it finishes.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

from benchmarks.report import load_average
from benchmarks.service import BACKENDS


def _run(runner: str, backend: str, arguments: list[str], folder: str) -> dict | None:
    path = os.path.join(folder, f"{backend}.json")
    command = [
        sys.executable,
        "-m",
        f"benchmarks.{runner}",
        "--backend",
        backend,
        "--json",
        path,
        *arguments,
    ]
    print(f"# {backend}: {' '.join(command[1:])} (load average {load_average()})", flush=True)
    finished = subprocess.run(command)
    if not os.path.exists(path):
        print(f"# {backend}: the runner wrote no results (exit {finished.returncode})")
        return None
    with open(path) as results:
        return json.load(results)


def _p50(result: dict) -> float:
    timing = result.get("sequential") or result.get("concurrent")
    return timing["p50_ms"] if timing else math.nan


def _per_second(result: dict) -> float:
    timing = result.get("concurrent")
    return timing["req_per_s"] if timing else math.nan


def _cell(value: float, digits: int = 1) -> str:
    return "-" if value != value else f"{value:.{digits}f}"


def side_by_side(by_backend: dict[str, dict]) -> str:
    """The Markdown table of the scenarios every backend ran."""
    first, second = BACKENDS
    rows = {r["scenario"]: r for r in by_backend[first]["results"]}
    other = {r["scenario"]: r for r in by_backend[second]["results"]}
    lines = [
        f"| scenario | {first} p50 ms | {second} p50 ms | ratio | {first} req/s | {second} req/s |",
        "|---|--:|--:|--:|--:|--:|",
    ]
    for scenario, row in rows.items():
        if scenario not in other:
            continue
        a, b = _p50(row), _p50(other[scenario])
        ratio = b / a if a and a == a and b == b else math.nan
        lines.append(
            f"| {scenario} | {_cell(a)} | {_cell(b)} | {_cell(ratio, 2)} "
            f"| {_cell(_per_second(row))} | {_cell(_per_second(other[scenario]))} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runner", help="run_candidates, run_foundation, run_devices, ...")
    parser.add_argument("arguments", nargs="*", help="the runner's own arguments (after --)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="placement-compare-") as folder:
        by_backend = {}
        for backend in BACKENDS:
            result = _run(args.runner, backend, args.arguments, folder)
            if result is None:
                return 1
            by_backend[backend] = result
    print()
    print(side_by_side(by_backend))
    return 0


if __name__ == "__main__":
    sys.exit(main())
