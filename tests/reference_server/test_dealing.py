"""The supervisor's dealing of connections to its workers (reference_server/workers.py), without starting any: each
connection goes to the worker whose turn it is, or to the next that can take it now."""

from __future__ import annotations

import contextlib
import socket

from reference_server.workers import _give


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
