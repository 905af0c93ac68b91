"""`--workers N`: N server processes sharing one port, kept alive by this supervisor.

The supervisor binds the port (and so learns it when it is 0); each worker then listens on a socket of its own bound
to the same port with SO_REUSEPORT, and the kernel spreads new connections evenly over those sockets. One socket
shared by every worker spread them badly: the worker that woke first accepted every connection waiting (asyncio
accepts up to its backlog per wake-up), and under 256 streams the busiest of four took twice its share (issue 33).
A worker gets connections from the moment it listens; those waiting in the queue of a worker that dies are
reset. Where SO_REUSEPORT is missing, the workers share the supervisor's socket as before. A worker that
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


def reusable_port(sock: socket.socket) -> None:
    """Before `sock` is bound: let the workers' own sockets share its port (a no-op where the option is missing)."""
    if hasattr(socket, "SO_REUSEPORT"):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)


def own_socket(shared: socket.socket) -> socket.socket:
    """A socket of this worker's own on the shared socket's address (SO_REUSEPORT), or the shared one itself."""
    if not hasattr(socket, "SO_REUSEPORT") or not shared.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT):
        return shared
    own = socket.socket(shared.family, shared.type, shared.proto)  # IPPROTO_TCP kept: asyncio's TCP_NODELAY
    own.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    own.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    own.bind(shared.getsockname())
    shared.close()  # only the supervisor keeps it, holding the port for workers started again
    return own


def _worker_main(run_worker: Callable[[socket.socket], None], sock: socket.socket) -> None:
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, signal.SIG_DFL)  # uvicorn installs its own when it starts
    run_worker(own_socket(sock))
