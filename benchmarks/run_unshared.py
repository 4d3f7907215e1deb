"""What a preloaded worker makes its own of the arbiter's memory, query by query, and
what lies on those pages (issue 31: one copy per host).

In process, on a database a run has loaded (``--database-url``): the application is
built and made ready to fork as gunicorn's arbiter makes it (``Services.prepare_to_fork``,
then ``freeze_startup_objects``), then a child is forked and runs the ``run_memory``
mix one query at a time, through Flask's test client, ``--rounds`` times each. After
each query the arbiter reads both processes' page tables (``/proc/PID/pagemap``: root
only, as it needs the page frames) over its writable private mappings:

* a page **un-shared** is one both map at another frame: the child wrote it (Python
  3.11 writes an object's reference count whenever it reads the object; the allocator
  writes the free slots it fills);
* **new** pages are the child's own beyond those (what its requests allocated and
  kept: its answers, its caches, its connection).

At the end the un-shared pages are put down to the objects on them: every object the
collector tracks and each untracked one they refer to (strings, numbers, tuples of
them), by type, each page split between the types by the bytes they cover on it. Pages
with none of these on them are the interpreter's and the libraries' own (``other``).

    python -m benchmarks.run_unshared --database-url postgresql+psycopg://...
"""

import argparse
import gc
import os
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterable

from benchmarks.client import HEADERS
from benchmarks.report import load_average
from benchmarks.run_devices import JOINT_4
from benchmarks.run_memory import Memory
from benchmarks.run_scale import FLAT_QUERY, NESTED_QUERY
from placement.app import create_app, freeze_startup_objects
from placement.config import Config

PAGE = os.sysconf("SC_PAGE_SIZE")
MIB = 1024 * 1024
_PRESENT = 1 << 63
_FRAME = (1 << 55) - 1
_MAPPING = re.compile(r"^([0-9a-f]+)-([0-9a-f]+) (\S+) ")


def writable_private_ranges(pid: int) -> list[tuple[int, int]]:
    """The address ranges of ``pid``'s writable private mappings (heap, anonymous
    memory, the libraries' data): all a child can un-share."""
    ranges = []
    with open(f"/proc/{pid}/maps") as maps:
        for line in maps:
            found = _MAPPING.match(line)
            if found and found.group(3).startswith("rw") and found.group(3).endswith("p"):
                ranges.append((int(found.group(1), 16), int(found.group(2), 16)))
    return ranges


def frames(pid: int, ranges: list[tuple[int, int]]) -> dict[int, int]:
    """Page address -> page frame of every present page of ``ranges`` in ``pid``."""
    present = {}
    with open(f"/proc/{pid}/pagemap", "rb") as pagemap:
        for start, end in ranges:
            pagemap.seek(start // PAGE * 8)
            entries = pagemap.read((end - start) // PAGE * 8)
            for index in range(len(entries) // 8):
                entry = int.from_bytes(entries[index * 8 : index * 8 + 8], "little")
                if entry & _PRESENT:
                    present[start + index * PAGE] = entry & _FRAME
    return present


def _uss(pid: int) -> int:
    return Memory.of(pid).uss


def mix(client, nested_root: str) -> dict[str, Callable[[], object]]:
    """``run_memory``'s queries, in process; each checked to answer 200."""

    def get(path: str) -> Callable[[], object]:
        return lambda: _ok(client.get(path, headers=HEADERS))

    def write_then_nested() -> None:
        _ok(
            client.put(
                f"/allocations/{os.urandom(16).hex()}", json=_claim(nested_root), headers=HEADERS
            ),
            204,
        )
        _ok(client.get(f"/allocation_candidates?{NESTED_QUERY}", headers=HEADERS))

    return {
        "GET / (the framework alone)": get("/"),
        "devices (a), limit: 1": lambda: _ok(
            client.post("/group_resources/device_candidates", json=JOINT_4.body(), headers=HEADERS)
        ),
        "nested, limit=10": get(f"/allocation_candidates?{NESTED_QUERY}"),
        "flat VCPU:1, limit=10": get(f"/allocation_candidates?{FLAT_QUERY}"),
        "flat VCPU:1, no limit": get("/allocation_candidates?resources=VCPU:1"),
        "a write, then nested": write_then_nested,
    }


def _claim(root: str) -> dict:
    return {
        "allocations": {root: {"resources": {"DISK_GB": 1}}},
        "project_id": "unshared",
        "user_id": "unshared",
        "consumer_generation": None,
        "consumer_type": "INSTANCE",
    }


def _ok(response, status: int = 200):
    if response.status_code != status:
        raise RuntimeError(f"{response.status_code}: {response.get_data(as_text=True)[:300]}")
    return response


def objects_by_page(pages: set[int]) -> dict[int, Counter]:
    """For each page of ``pages``: bytes on it by the type of the objects there (the
    collector's objects and the untracked ones they refer to)."""
    on_page: dict[int, Counter] = {}
    seen: set[int] = set()

    def place(obj: object) -> None:
        address = id(obj)
        if address in seen:
            return
        seen.add(address)
        size = _inline_size(obj)
        kind = type(obj).__name__
        for page in range(address // PAGE * PAGE, address + size, PAGE):
            if page in pages:
                covered = min(address + size, page + PAGE) - max(address, page)
                on_page.setdefault(page, Counter())[kind] += covered

    for obj in gc.get_objects():
        place(obj)
        for referent in gc.get_referents(obj):
            if not gc.is_tracked(referent):
                place(referent)
    return on_page


def _inline_size(obj: object) -> int:
    """The bytes of ``obj`` from its address on: all of it for the objects whose items
    lie inline (numbers, strings, tuples, code), the header alone for those whose items
    are allocated apart (lists, dicts, sets, bytearrays, arrays)."""
    kind = type(obj)
    if kind.__itemsize__ or isinstance(obj, str):
        return sys.getsizeof(obj, 0)
    return kind.__basicsize__


def by_type(pages: Iterable[int], on_page: dict[int, Counter]) -> Counter:
    """Bytes of ``pages`` by type, each page split in proportion to what covers it."""
    totals: Counter = Counter()
    for page in pages:
        kinds = on_page.get(page)
        if not kinds:
            totals["other"] += PAGE
            continue
        covered = sum(kinds.values())
        for kind, size in kinds.items():
            totals[kind] += PAGE * size / covered
    return totals


def nested_root(client) -> str:
    response = _ok(
        client.get(
            "/resource_providers?required=CUSTOM_FOO",
            headers={**HEADERS, "OpenStack-API-Version": "placement 1.18"},
        )
    )
    providers = response.json["resource_providers"]
    roots = [p["root_provider_uuid"] for p in providers] if providers else []
    if not roots:
        raise RuntimeError("no nested tree (load one with run_scale or run_memory)")
    return roots[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="What a worker un-shares (module docstring).")
    parser.add_argument("--database-url", required=True, help="a database a run has loaded")
    parser.add_argument("--rounds", type=int, default=4, help="times each query is asked")
    parser.add_argument("--top", type=int, default=12, help="types shown")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("run_unshared reads page frames: run it as root", file=sys.stderr)
        return 2
    app = create_app(Config(database_url=args.database_url))
    client = app.test_client()
    root = nested_root(client)
    held = app.extensions["placement"].prepare_to_fork()
    freeze_startup_objects()
    print(f"{held}; arbiter USS {_uss(os.getpid()) / MIB:.0f} MiB; load {load_average()}")
    queries = mix(client, root)
    ranges = writable_private_ranges(os.getpid())
    at_fork = frames(os.getpid(), ranges)
    ready, go = os.pipe(), os.pipe()
    child = os.fork()
    if child == 0:
        for query in queries.values():
            for _ in range(args.rounds):
                query()
            os.write(ready[1], b".")
            os.read(go[0], 1)
        os._exit(0)
    print("\n| after | un-shared MiB | the child's new MiB |\n|---|--:|--:|")
    unshared: set[int] = set()
    by_step: dict[str, set[int]] = {}
    for name in queries:
        if not os.read(ready[0], 1):
            raise RuntimeError("the child died (its error is above)")
        now = frames(child, ranges)
        before = unshared
        unshared = {page for page, frame in now.items() if at_fork.get(page, frame) != frame}
        by_step[name] = unshared - before
        new = _uss(child) - len(unshared) * PAGE
        print(f"| {name} | {len(unshared) * PAGE / MIB:.1f} | {new / MIB:.1f} |", flush=True)
        os.write(go[1], b".")
    os.waitpid(child, 0)
    gc.unfreeze()  # (the collector lists no frozen object)
    on_page = objects_by_page(unshared)
    print("\n| query | un-shared by it, MiB: the types on those pages |\n|---|---|")
    for name, pages in by_step.items():
        shown = ", ".join(
            f"{kind} {size / MIB:.1f}" for kind, size in by_type(pages, on_page).most_common(5)
        )
        print(f"| {name} | {len(pages) * PAGE / MIB:.1f}: {shown} |")
    totals = by_type(unshared, on_page)
    print("\n| on the un-shared pages | MiB |\n|---|--:|")
    for kind, size in totals.most_common(args.top):
        print(f"| {kind} | {size / MIB:.1f} |")
    rest = sum(size for _kind, size in totals.most_common()[args.top :])
    print(f"| the rest | {rest / MIB:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
