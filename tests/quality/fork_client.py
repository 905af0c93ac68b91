"""`python -m tests.quality.fork_client SOCKET MODULE [arguments]`: `python -m MODULE [arguments]` forked by the fork
server at SOCKET (tests/quality/fork_server.py), as the suite sees a process it starts: this process's stdin, stdout
and stderr are the fork's, SIGTERM and SIGINT reach it, and this process ends with its exit code. Only the standard
library is imported here: this process is the cheap part."""

from __future__ import annotations

import json
import os
import signal
import socket
import sys


def main() -> int:
    path, argv = sys.argv[1], sys.argv[2:]
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(path)
    request = {"argv": argv, "env": dict(os.environ), "cwd": os.getcwd()}
    socket.send_fds(connection, [json.dumps(request).encode()], [0, 1, 2])
    lines = connection.makefile("r", encoding="utf-8")
    first = lines.readline().split()
    if len(first) != 2 or first[0] != "pid":
        print(f"the fork server did not start {' '.join(argv[:1])} ({' '.join(first) or 'no answer'})", file=sys.stderr)
        return 1
    pid = int(first[1])

    def forward(number: int, _frame: object) -> None:
        try:
            os.kill(pid, number)
        except ProcessLookupError:  # the fork has just ended: its exit line follows
            pass

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, forward)
    last = lines.readline().split()  # "exit CODE", or nothing when the fork was killed
    return int(last[1]) if len(last) == 2 and last[0] == "exit" else 1


if __name__ == "__main__":
    sys.exit(main())
