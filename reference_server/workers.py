"""`--workers N`: N server processes accepting on one listening socket, kept alive by this supervisor.

The socket is bound before the workers are forked, so the kernel spreads connections over them. A worker that
dies (killed, crashed) is started again; SIGTERM or SIGINT stops every worker, with a grace period, then the
supervisor. Forked rather than spawned: a worker is this process as it was configured, nothing is imported again.
The databases are prepared once here, before any worker starts (Services.start with prepare=True, then stop).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import socket
import threading
from collections.abc import Callable

log = logging.getLogger("reference_server.workers")

STOP_GRACE_SECONDS = 10.0
RESTART_PAUSE_SECONDS = 0.5  # between restarts of a worker that keeps dying at once


def supervise(run_worker: Callable[[socket.socket], None], sock: socket.socket, workers: int) -> int:
    """Run `run_worker(sock)` in `workers` forked processes until SIGTERM/SIGINT; the exit code."""
    context = multiprocessing.get_context("fork")
    stopping = threading.Event()
    processes: list[multiprocessing.Process | None] = [None] * workers

    def start(index: int) -> None:
        process = context.Process(target=_worker_main, args=(run_worker, sock), name=f"worker-{index}")
        process.start()
        processes[index] = process
        log.info("worker %d started (pid %d)", index, process.pid)

    def stop(signum, _frame) -> None:
        stopping.set()

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        for index in range(workers):
            start(index)
        while not stopping.wait(0.2):
            for index, process in enumerate(processes):
                if process is not None and not process.is_alive():
                    log.warning(
                        "worker %d (pid %d) ended with %s; starting it again", index, process.pid, process.exitcode
                    )
                    stopping.wait(RESTART_PAUSE_SECONDS)
                    if not stopping.is_set():
                        start(index)
    finally:
        for process in processes:
            if process is not None and process.is_alive():
                os.kill(process.pid, signal.SIGTERM)  # uvicorn's graceful shutdown: turns finish, leases go
        for process in processes:
            if process is not None:
                process.join(STOP_GRACE_SECONDS)
                if process.is_alive():
                    log.error("worker pid %d did not stop within %.0f s; killing it", process.pid, STOP_GRACE_SECONDS)
                    process.kill()
                    process.join()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


def _worker_main(run_worker: Callable[[socket.socket], None], sock: socket.socket) -> None:
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, signal.SIG_DFL)  # uvicorn installs its own when it starts
    run_worker(sock)
