"""Serve many fresh upstream placements from one interpreter that imported upstream once.

Run with the upstream virtualenv's interpreter, never imported by this project's
tests (both packages are called ``placement``):

    python upstream_forkserver.py LAUNCHER_FOLDER

Importing upstream takes ~0.75 s of the ~0.85 s a new server needs; a scenario
wants a fresh database, so this process imports ``serve_upstream`` (from
``tests/upstream``) once and forks a child per server. A child configures upstream
for its own SQLite database and serves it exactly as ``serve_upstream.main``
does, on a state nothing else has touched (the parent never configures upstream).

Commands, one per line on stdin; one answer line each on stdout:

    start DATABASE_URL PORT LOG_PATH  ->  ready PID  |  failed PID
    stop PID                          ->  stopped PID

End of stdin stops every child and exits.
"""

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def start(serve_upstream, database_url: str, port: str, log_path: str) -> str:
    read_end, write_end = os.pipe()
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:  # the child: one upstream server
        os.close(read_end)
        # Stop with the fork server, however it ends.
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(write_end, 1)
        log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(log, 2)
        sys.stdin = open(0)  # noqa: SIM115 - the process's own streams
        sys.stdout = open(1, "w")  # noqa: SIM115
        sys.stderr = open(2, "w")  # noqa: SIM115
        sys.argv = [serve_upstream.__file__, database_url, port]
        try:
            serve_upstream.main()
        finally:
            os._exit(1)
    os.close(write_end)
    with os.fdopen(read_end) as ready:
        first = ready.readline().strip()
    if first == "ready":
        return f"ready {pid}"
    os.waitpid(pid, 0)
    return f"failed {pid}"


def stop(pid: int) -> None:
    os.kill(pid, signal.SIGTERM)
    os.waitpid(pid, 0)


def main() -> None:
    sys.path.insert(0, sys.argv[1])
    import serve_upstream  # noqa: PLC0415 - only from the launcher's folder, given at run time

    children: set[int] = set()
    try:
        for line in sys.stdin:
            command, *args = line.split()
            if command == "start":
                answer = start(serve_upstream, *args)
                if answer.startswith("ready"):
                    children.add(int(answer.split()[1]))
            elif command == "stop":
                pid = int(args[0])
                stop(pid)
                children.discard(pid)
                answer = f"stopped {pid}"
            else:
                answer = f"unknown {command}"
            print(answer, flush=True)
    finally:
        for pid in children:
            stop(pid)


if __name__ == "__main__":
    main()
