"""The Python SDK's stream and transport where no conforming server goes: a stream cut mid-turn, a stream that ends
without `done`, an answer that is not an event stream, a frame that is not an event, a refusal's body. Each is
raised typed and the turn is sent exactly once (httpx.MockTransport counts the requests). Also: path parameters are
encoded as one segment, the package imports without this project, and the contract's constants match."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import tomllib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from gns3_copilot_chat_client import (
    CONTRACT_VERSION,
    DEFAULT_CHAT_PREFIX,
    GNS3_CHAT_PREFIX,
    KNOWN_CHAT_PREFIXES,
    AsyncCopilotClient,
    ChatRequest,
    ContentEvent,
    CopilotApiError,
    CopilotClient,
    CopilotStreamError,
    DoneEvent,
    NotFoundError,
    ServiceUnavailableError,
    StreamProtocolError,
    TooManyRequestsError,
    ValidationFailedError,
)

import gns3_copilot_spec as spec

pytestmark = pytest.mark.slow  # a live server: left out of `python3 tasks.py test --quick`

ROOT = Path(__file__).resolve().parents[2]
FIRST = b'data: {"type": "content", "content": "Hel", "session_id": "s-1"}\n\n'
DONE = b'data: {"type": "done", "session_id": "s-1"}\n\n'
SSE = {"content-type": "text/event-stream; charset=utf-8"}


class CutStream(httpx.SyncByteStream, httpx.AsyncByteStream):
    """One event, then the connection drops (what httpx raises when the peer closes mid-body)."""

    def __iter__(self) -> Iterator[bytes]:
        yield FIRST
        raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield FIRST
        raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")


def serving(answer: httpx.Response | None = None) -> tuple[list[httpx.Request], httpx.MockTransport]:
    """A transport that gives `answer` to every request and records each request it was sent."""
    sent: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return answer if answer is not None else httpx.Response(200, json=[])

    return sent, httpx.MockTransport(handle)


def sync_client(transport: httpx.MockTransport, **options) -> CopilotClient:
    return CopilotClient("http://copilot.test", token="t", http_client=httpx.Client(transport=transport), **options)


def test_a_stream_cut_mid_turn_raises_typed_and_is_not_sent_again():
    sent, transport = serving(httpx.Response(200, headers=SSE, stream=CutStream()))
    seen = []
    with sync_client(transport) as client, pytest.raises(CopilotStreamError) as cut:
        with client.stream_chat("p-1", ChatRequest(message="Hello")) as stream:
            seen.extend(stream)
    assert cut.value.code == "stream_interrupted" and isinstance(cut.value.__cause__, httpx.RemoteProtocolError)
    assert [type(event) for event in seen] == [ContentEvent] and len(sent) == 1
    assert sent[0].url.path == "/v3/projects/p-1/chat/stream"


def test_the_async_stream_cut_mid_turn_raises_typed_and_is_not_sent_again():
    sent, transport = serving(httpx.Response(200, headers=SSE, stream=CutStream()))

    async def scenario() -> list[object]:
        seen = []
        http = httpx.AsyncClient(transport=transport)
        async with AsyncCopilotClient("http://copilot.test", token="t", http_client=http) as client:
            async with await client.stream_chat("p-1", ChatRequest(message="Hello")) as stream:
                async for event in stream:
                    seen.append(event)
        return seen

    with pytest.raises(CopilotStreamError) as cut:
        asyncio.run(scenario())
    assert cut.value.code == "stream_interrupted" and len(sent) == 1


def test_a_stream_that_ends_without_done_is_an_interrupted_stream():
    _, transport = serving(httpx.Response(200, headers=SSE, content=FIRST))
    with sync_client(transport) as client, pytest.raises(CopilotStreamError, match="before its `done`") as cut:
        with client.stream_chat("p-1", ChatRequest(message="Hello")) as stream:
            list(stream)
    assert cut.value.code == "stream_interrupted" and not isinstance(cut.value, StreamProtocolError)


def test_a_complete_stream_with_comments_reads_as_its_events_and_closing_inside_the_loop_ends_it():
    body = b": heartbeat\n\n" + FIRST + b": keep-alive\n\n" + DONE
    _, transport = serving(httpx.Response(200, headers=SSE, content=body))
    with sync_client(transport) as client:
        with client.stream_chat("p-1", ChatRequest(message="Hello")) as stream:
            assert [type(event) for event in stream] == [ContentEvent, DoneEvent] and stream.session_id == "s-1"
        with client.stream_chat("p-1", ChatRequest(message="Hello")) as stream:
            for _ in stream:
                stream.close()  # the caller stops reading: no error, the loop ends
        with client.stream_chat("p-1", ChatRequest(message="Hello")) as stream:
            next(iter(stream))
        # left early by the `with` block: nothing raised either


def test_an_answer_that_is_not_an_event_stream_is_refused_when_the_stream_opens():
    _, transport = serving(httpx.Response(200, json={"type": "done", "session_id": "s-1"}))
    with sync_client(transport) as client, pytest.raises(StreamProtocolError) as wrong:
        client.stream_chat("p-1", ChatRequest(message="Hello"))
    assert wrong.value.code == "not_an_event_stream" and "application/json" in str(wrong.value)


def test_a_frame_that_is_not_an_event_of_the_contract_is_a_protocol_error():
    body = FIRST + b'data: {"type": "thinking", "session_id": "s-1"}\n\n' + DONE
    _, transport = serving(httpx.Response(200, headers=SSE, content=body))
    with sync_client(transport) as client, pytest.raises(StreamProtocolError) as wrong:
        with client.stream_chat("p-1", ChatRequest(message="Hello")) as stream:
            list(stream)
    assert wrong.value.code == "invalid_event" and "thinking" in str(wrong.value)


def test_refusals_carry_the_contracts_body_and_are_sent_once():
    detail = {"errors": [{"loc": ["body", "message"], "msg": "String should have at least 1 character"}]}
    invalid = {"message": "Request validation failed", "code": "validation_error", "details": detail}
    sent, transport = serving(httpx.Response(422, json=invalid))
    with sync_client(transport) as client, pytest.raises(ValidationFailedError) as refused:
        client.stream_chat("p-1", ChatRequest(message="x"))
    assert refused.value.body is not None and refused.value.code == "validation_error" and len(sent) == 1
    assert refused.value.body.details.errors[0].loc == ["body", "message"]  # type: ignore[union-attr]
    assert str(refused.value) == "HTTP 422 validation_error: Request validation failed"

    full = {"message": "Storage is not writable: disk is full", "code": "storage_unavailable"}
    sent, transport = serving(httpx.Response(503, json=full))
    with sync_client(transport) as client, pytest.raises(ServiceUnavailableError) as unavailable:
        client.list_sessions("p-1")
    assert (unavailable.value.status, unavailable.value.code, len(sent)) == (503, "storage_unavailable", 1)

    throttled = {"message": "Too many failed logins", "code": "too_many_login_attempts"}
    _, transport = serving(httpx.Response(429, json=throttled, headers={"Retry-After": "42"}))
    with sync_client(transport) as client, pytest.raises(TooManyRequestsError) as slow_down:
        client.login("admin", "wrong")
    assert (slow_down.value.code, slow_down.value.retry_after) == ("too_many_login_attempts", 42)

    _, transport = serving(httpx.Response(502, text="<html>Bad gateway</html>"))
    with sync_client(transport) as client, pytest.raises(CopilotApiError) as proxy:
        client.list_projects()
    assert proxy.value.code == "unknown" and proxy.value.body is None and "Bad gateway" in proxy.value.raw


def test_path_parameters_are_one_encoded_segment_under_the_chosen_prefix():
    sent, transport = serving(httpx.Response(404, json={"message": "No such session", "code": "session_not_found"}))
    with sync_client(transport, chat_prefix=GNS3_CHAT_PREFIX) as client, pytest.raises(NotFoundError):
        client.get_session_history("p 1", "a/b?c", limit=5)
    assert sent[0].url.raw_path == b"/v3/copilot/projects/p%201/chat/sessions/a%2Fb%3Fc/history?limit=5"
    assert sent[0].headers["authorization"] == "Bearer t"


def test_the_package_imports_without_this_project():
    """Installed alone, the SDK has neither gns3_copilot_generated nor gns3_copilot_spec: it must not need them."""
    blocked = "import sys; sys.modules['gns3_copilot_generated'] = sys.modules['gns3_copilot_spec'] = None; "
    code = blocked + "import gns3_copilot_chat_client as sdk; print(len(sdk.__all__))"
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr


def test_the_contract_constants_and_the_package_version_follow_the_contract():
    assert DEFAULT_CHAT_PREFIX == spec.default_prefix()
    assert GNS3_CHAT_PREFIX in KNOWN_CHAT_PREFIXES and DEFAULT_CHAT_PREFIX in KNOWN_CHAT_PREFIXES
    assert CONTRACT_VERSION == spec.contract_version()
    pyproject = tomllib.loads((ROOT / "sdk" / "python" / "pyproject.toml").read_text())
    assert pyproject["project"]["version"] == CONTRACT_VERSION
