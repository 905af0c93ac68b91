"""`--workers N`: N server processes sharing one port, kept alive by this supervisor.

The supervisor listens on the port (and so learns it when it is 0) and deals the connections out to the workers in
turn (round robin), each over a socketpair of its own (SCM_RIGHTS); a worker serves the connections it is dealt
(DealtConnections) and listens on nothing. So N workers each get 1/N of the connections, whenever they arrive
(issue 33). Two ways tried before spread them badly: one listening socket shared by every worker (asyncio accepts
up to its backlog per wake-up, so the worker that woke first took every connection waiting: the busiest of four
took twice its share of 256 streams; one connection per wake-up still left the worker that shares a core with the
client at 0.7 of its share), and a socket per worker with SO_REUSEPORT (the kernel deals by a hash of the
addresses: 64 +- 7 of 256 per worker, so 0.78-1.20 of the share). Dealing costs the supervisor an accept and a
sendmsg per connection, not per request: a kept-alive connection stays with its worker.

A connection waits in the kernel's queue (LISTEN_QUEUE) until the supervisor accepts it; one dealt to a worker that
cannot take it now (its socketpair full while it starts, or the worker gone) goes to the next. A worker that dies
(killed, crashed) is started again, and the connections it held or had not yet taken are reset; SIGTERM or SIGINT
stops every worker, with a grace period, then the supervisor. Forked rather than spawned: a worker is this process
as it was configured, nothing is imported again. The databases are prepared once here, before any worker starts
(Services.start with prepare=True, then stop).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import multiprocessing
import os
import signal
import socket
import threading
from collections.abc import Callable

import uvicorn

log = logging.getLogger("reference_server.workers")

STOP_GRACE_SECONDS = 10.0
RESTART_PAUSE_SECONDS = 0.5  # between restarts of a worker that keeps dying at once
LISTEN_QUEUE = 2048  # connections the kernel keeps until the supervisor accepts them (uvicorn's default backlog)
DEAL_POLL_SECONDS = 0.2  # how soon the dealer sees the supervisor stopping
FULL_PAUSE_SECONDS = 0.005  # when every worker's socketpair is full: wait, then deal again


def supervise(run_worker: Callable[[socket.socket], None], sock: socket.socket, workers: int) -> int:
    """Run `run_worker(channel)` in `workers` forked processes until SIGTERM/SIGINT, dealing `sock`'s connections
    to them over their channels (serve them with DealtConnections); the exit code."""
    context = multiprocessing.get_context("fork")
    stopping = threading.Event()
    processes: list[multiprocessing.Process | None] = [None] * workers
    channels: list[socket.socket | None] = [None] * workers  # the supervisor's end of each worker's socketpair

    def start(index: int) -> None:
        # A stream pair: its queue is the socket buffer (hundreds of connections); a datagram pair's is 10.
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        ours.setblocking(False)  # a worker that cannot take a connection now is skipped, never waited for
        inherited = [sock, ours, *(channel for channel in channels if channel is not None)]
        process = context.Process(target=_worker_main, args=(run_worker, theirs, inherited), name=f"worker-{index}")
        process.start()
        theirs.close()  # the worker's alone: when it dies, dealing to it fails at once
        old, channels[index] = channels[index], ours
        if old is not None:
            old.close()
        processes[index] = process
        log.info("worker %d started (pid %d)", index, process.pid)

    def stop(signum, _frame) -> None:
        stopping.set()

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    sock.listen(LISTEN_QUEUE)  # connections wait from now on, while the workers start
    dealer = threading.Thread(target=_deal, args=(sock, channels, stopping), name="dealer", daemon=True)
    try:
        for index in range(workers):
            start(index)
        dealer.start()
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
        stopping.set()
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
        if dealer.is_alive():
            dealer.join()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


def _deal(sock: socket.socket, channels: list[socket.socket | None], stopping: threading.Event) -> None:
    """Accept each connection and hand it to the next worker in turn; the supervisor's copy is closed after."""
    turn = 0
    sock.settimeout(DEAL_POLL_SECONDS)
    while not stopping.is_set():
        try:
            conn, _ = sock.accept()
        except TimeoutError:
            continue
        except OSError:  # gone before it was accepted (reset), or out of file descriptors for a moment
            stopping.wait(FULL_PAUSE_SECONDS)
            continue
        try:
            with conn:
                while not stopping.is_set():
                    if _give(conn, channels, turn):
                        break
                    stopping.wait(FULL_PAUSE_SECONDS)  # every worker busy taking connections, or starting
        except Exception:  # never a dealer that stops dealing: this connection is lost, the next is dealt
            log.exception("dealing a connection to a worker failed")
        turn += 1


def _give(conn: socket.socket, channels: list[socket.socket | None], turn: int) -> bool:
    """Send the connection to the worker whose turn it is, or to the next that can take it now."""
    for offset in range(len(channels)):
        channel = channels[(turn + offset) % len(channels)]
        if channel is None:
            continue
        try:
            socket.send_fds(channel, [b"c"], [conn.fileno()])
            return True
        except OSError:  # full (BlockingIOError), or the worker is gone: the next
            continue
    return False


class DealtConnections(uvicorn.Server):
    """A worker's uvicorn, serving the connections the supervisor deals it over `channel`: uvicorn's own protocol
    (as its startup builds it), on each connection through asyncio's connect_accepted_socket."""

    def __init__(self, config: uvicorn.Config, channel: socket.socket) -> None:
        super().__init__(config)
        self.channel = channel

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=[])  # the app's lifespan, and no listening socket
        protocol = functools.partial(
            self.config.http_protocol_class,
            config=self.config,
            server_state=self.server_state,
            app_state=self.lifespan.state,
        )
        self.channel.setblocking(False)
        asyncio.get_running_loop().add_reader(self.channel.fileno(), self._take, protocol)

    def _take(self, protocol: Callable[[], asyncio.Protocol]) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                # One byte: one connection's message (the kernel never joins messages that carry descriptors).
                message, fds, _, _ = socket.recv_fds(self.channel, 1, 16)
            except BlockingIOError:
                return
            except OSError:  # the channel broke: as if the supervisor were gone
                message, fds = b"", []
            if not message and not fds:  # the supervisor is gone: finish what runs, then exit
                loop.remove_reader(self.channel.fileno())
                self.should_exit = True
                return
            for fd in fds:
                conn = socket.socket(fileno=fd)  # family, type and IPPROTO_TCP read from the socket (TCP_NODELAY)
                conn.setblocking(False)
                task = loop.create_task(_connect(loop, protocol, conn))
                self.server_state.tasks.add(task)
                task.add_done_callback(self.server_state.tasks.discard)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        with contextlib.suppress(ValueError, OSError):  # removed already when the supervisor went first
            asyncio.get_running_loop().remove_reader(self.channel.fileno())
        self.channel.close()  # the supervisor deals to the other workers from now on
        await super().shutdown(sockets)


async def _connect(loop: asyncio.AbstractEventLoop, protocol: Callable[[], asyncio.Protocol], conn: socket.socket):
    try:
        await loop.connect_accepted_socket(protocol, conn)
    except OSError:  # the client left meanwhile
        conn.close()


def _worker_main(
    run_worker: Callable[[socket.socket], None], channel: socket.socket, inherited: list[socket.socket]
) -> None:
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, signal.SIG_DFL)  # uvicorn installs its own when it starts
    for other in inherited:  # the port and the other channels are the supervisor's
        other.close()
    run_worker(channel)
