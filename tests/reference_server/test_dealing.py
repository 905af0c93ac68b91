"""The supervisor's dealing of connections to its workers (reference_server/workers.py), without starting any: each
connection goes to the worker whose turn it is, or to the next that can take it now, and a worker serves what it
is dealt until its supervisor is gone."""

from __future__ import annotations

import asyncio
import contextlib
import socket

import pytest
import uvicorn

from reference_server.workers import DealtConnections, _give

pytestmark = pytest.mark.anyio


def _pair() -> tuple[socket.socket, socket.socket]:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    ours.setblocking(False)
    return ours, theirs


def _taken(theirs: socket.socket) -> int:
    """How many connections the worker's end holds (each a descriptor of its own, closed here)."""
    theirs.setblocking(False)
    count = 0
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(theirs, 1, 16)
        except BlockingIOError:
            return count
        for fd in fds:
            socket.socket(fileno=fd).close()
        count += len(fds)
        assert message == b"c" and len(fds) == 1  # one message, one connection


def test_each_connection_goes_to_the_worker_whose_turn_it_is():
    pairs = [_pair() for _ in range(3)]
    conn, other = socket.socketpair()
    with conn, other:
        for turn in range(6):
            assert _give(conn, [ours for ours, _ in pairs], turn)
    assert [_taken(theirs) for _, theirs in pairs] == [2, 2, 2]


def test_a_gone_full_or_missing_worker_is_skipped_and_none_left_says_so():
    gone, full, ready = _pair(), _pair(), _pair()
    gone[1].close()  # the worker died: its end closed with it
    with contextlib.suppress(BlockingIOError):  # the worker takes nothing: its socket buffer fills
        while True:
            full[0].send(b"x" * 65536)
    channels = [gone[0], full[0], None, ready[0]]
    conn, other = socket.socketpair()
    with conn, other:
        assert _give(conn, channels, 0) and _give(conn, channels, 1) and _give(conn, channels, 2)
        assert _taken(ready[1]) == 3
        assert not _give(conn, [gone[0], full[0], None], 0)


def _worker_side() -> tuple[DealtConnections, socket.socket]:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    theirs.setblocking(False)
    return DealtConnections(uvicorn.Config(app=None), theirs), ours


async def test_a_worker_serves_each_connection_it_is_dealt_with_the_protocol_given():
    server, supervisor_end = _worker_side()
    made: list[asyncio.Transport] = []

    class Recorder(asyncio.Protocol):
        def connection_made(self, transport):
            made.append(transport)

    client, dealt = socket.socketpair()
    with supervisor_end, client:
        socket.send_fds(supervisor_end, [b"c"], [dealt.fileno()])
        dealt.close()  # the supervisor's copy: the worker holds its own
        server._take(Recorder)
        await asyncio.wait(list(server.server_state.tasks))
        assert len(made) == 1 and not server.should_exit
        made[0].close()


async def test_a_worker_whose_supervisor_is_gone_finishes_and_exits():
    server, supervisor_end = _worker_side()
    supervisor_end.close()
    server._take(asyncio.Protocol)
    assert server.should_exit and not server.server_state.tasks
