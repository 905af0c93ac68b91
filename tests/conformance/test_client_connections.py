"""A request a check sends with `fresh=True` opens a TCP connection of its own, whatever the run's client keeps
alive: a server of several processes behind one port then gets it in whichever process the kernel gives that
connection (concurrency.busy_across_connections, abort.other_connection, stats.concurrent_sessions)."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from conformance.channels.gns3_stream import ChatClient
from conformance.harness.environment import Environment, User
from conformance.harness.target import load_target


async def _peer_ports(fresh: bool, requests: int = 3, *, stream: bool = False) -> list[int]:
    """The client ports a tiny keep-alive HTTP server saw, for `requests` calls (or streams) of one ChatClient."""
    ports: list[int] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:  # one request after another on the connection, until the client closes it
            try:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    (int(h.split(b":")[1]) for h in head.lower().split(b"\r\n") if h.startswith(b"content-length:")), 0
                )
                await reader.readexactly(length)
            except (asyncio.IncompleteReadError, ConnectionError):
                break
            ports.append(writer.get_extra_info("peername")[1])
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n[]")
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server, httpx.AsyncClient(trust_env=False) as shared:  # keeps its connections alive
        users = {"main": User("main", "t")}
        env = Environment(load_target(None), f"http://127.0.0.1:{port}", "", {}, users, "p", "c", None, None, shared)
        client = ChatClient(env, "test.connections")
        for _ in range(requests):
            if stream:
                exchange = (await client.stream({"message": "hi"}, fresh=fresh, deadline=10)).exchange
            else:
                exchange = await client.call("GET", "/sessions", fresh=fresh)
            assert exchange.status == 200, exchange.error
    return ports


@pytest.mark.parametrize("stream", [False, True], ids=["call", "stream"])
def test_fresh_requests_each_open_a_connection_of_their_own(stream):
    ports = asyncio.run(_peer_ports(fresh=True, stream=stream))
    assert len(ports) == 3 and len(set(ports)) == 3


def test_the_shared_client_would_have_sent_them_on_one_kept_alive_connection():
    """The control: without `fresh`, a client that keeps connections alive sends all three on one."""
    ports = asyncio.run(_peer_ports(fresh=False))
    assert len(ports) == 3 and len(set(ports)) == 1
