"""The suite's one transport (conformance/transport/http.py): evidence with every real token redacted, the headers
rules are about kept, the suite's deadline worded as the suite's, a stream read through the tokenizer and cut where
the caller says."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import httpx
import pytest

from conformance.transport.http import KEPT_HEADERS, Transport

pytestmark = pytest.mark.anyio
USER_TOKEN, ADMIN_TOKEN = "user-secret", "admin-secret"
STREAM = b'data: {"type": "content"}\n\ndata: {"type": "stop here"}\n\ndata: {"type": "done"}\n\n'


@pytest.fixture
def anyio_backend():
    return "asyncio"


async def _stalling():
    yield b'data: {"type": "content"}\n\n'
    await asyncio.sleep(5)
    yield b'data: {"type": "done"}\n\n'


async def _answer(request: httpx.Request) -> httpx.Response:
    if request.url.path == "/slow":
        await asyncio.sleep(5)
    if request.url.path == "/stalls":
        return httpx.Response(200, content=_stalling(), headers={"content-type": "text/event-stream"})
    if request.url.path == "/stream":
        return httpx.Response(
            200,
            content=STREAM,
            headers={"content-type": "text/event-stream", "x-vercel-ai-ui-message-stream": "v1", "x-other": "no"},
        )
    return httpx.Response(401, json={"detail": "no"}, headers={"www-authenticate": "Bearer", "x-other": "no"})


def _transport(exchanges: list) -> Transport:
    users = {"main": SimpleNamespace(token=USER_TOKEN)}
    env = SimpleNamespace(
        users=users,
        controller=SimpleNamespace(admin_token=ADMIN_TOKEN),
        client=httpx.AsyncClient(transport=httpx.MockTransport(_answer)),
        authorization=lambda user: {"Authorization": f"Bearer {users[user].token}"},
    )
    return Transport(env, exchanges)


async def test_every_real_token_is_redacted_and_a_forged_one_shown_as_sent():
    exchanges: list = []
    transport = _transport(exchanges)
    await transport.send("GET", "http://t/a", deadline=5)
    await transport.send("GET", "http://t/a", user=None, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, deadline=5)
    await transport.send("GET", "http://t/a", user=None, headers={"Authorization": "Bearer forged"}, deadline=5)
    assert [e.authorization for e in exchanges] == ["Bearer $TOKEN", "Bearer $ADMIN_TOKEN", "Bearer forged"]
    assert all(USER_TOKEN not in e.curl() and ADMIN_TOKEN not in e.curl() for e in exchanges)
    assert exchanges[0].headers == {"www-authenticate": "Bearer", "content-type": "application/json"}


async def test_the_deadline_is_the_suites_and_said_so():
    exchanges: list = []
    exchange = await _transport(exchanges).send("GET", "http://t/slow", deadline=0.2)
    assert exchange.status is None and exchange.error.startswith("TimeoutError after 0.")
    assert exchange.error.endswith("(the suite's deadline)") and exchanges == [exchange]


async def test_a_stream_is_read_through_the_tokenizer_and_cut_where_the_caller_says():
    exchanges: list = []
    transport = _transport(exchanges)
    whole = await transport.stream("http://t/stream", b"{}", deadline=5)
    assert whole.completed and [f.json()["type"] for f in whole.sse.frames] == ["content", "stop here", "done"]
    assert whole.headers["x-other"] == "no" and "x-other" not in whole.exchange.headers
    assert (
        set(whole.exchange.headers) <= set(KEPT_HEADERS) and "x-vercel-ai-ui-message-stream" in whole.exchange.headers
    )
    cut = await transport.stream("http://t/stream", b"{}", deadline=5, stop_when=lambda f: "stop" in (f.data or ""))
    # The mock answers in one piece: the cut is seen after the piece that completed the frame.
    assert not cut.completed and len(exchanges) == 2


async def test_a_stream_past_its_deadline_keeps_the_frames_that_came_and_says_whose_deadline():
    exchanges: list = []
    answer = await _transport(exchanges).stream("http://t/stalls", b"{}", deadline=0.3)
    assert not answer.completed and [f.data for f in answer.sse.frames] == ['{"type": "content"}']
    assert answer.exchange.error.startswith("TimeoutError after 0.") and "the suite's deadline" in answer.exchange.error
    assert answer.exchange.status == 200 and exchanges == [answer.exchange]


def test_the_gns3_stop_condition_sees_the_events_the_framing_rules_read():
    """Whatever the line ends (the reader before the one tokenizer never stopped a CRLF stream)."""
    from conformance.channels.gns3_stream import _on_event
    from conformance.transport.sse import parse

    stop = _on_event(lambda event: event.get("type") == "content")
    frames = parse('data: {"type": "x"}\r\n\r\ndata: {"type": "content"}\r\n\r\ndata: 1\n\n').frames
    assert [stop(frame) for frame in frames] == [False, True, False]
