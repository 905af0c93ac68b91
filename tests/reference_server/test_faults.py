"""Faults around a turn: client disconnects, a killed server, many concurrent turns and busy sessions.

Whatever happens to the stream, a turn that has ended leaves statistics that agree with the history
(STATS-001, STATS-004, STATS-005), a history whose tool calls are all answered (HISTORY-005), and a session
that accepts the next turn.

In-process, the httpx ASGI transport buffers the whole response before returning it, so it cannot express a
client that goes away mid-stream; the in-process disconnect tests therefore call the ASGI app directly and
answer `receive()` with `http.disconnect` once the frames they wait for were sent, as uvicorn does when the
socket closes (ASGI spec 2.3, the version uvicorn declares). The real-socket variants close an httpx stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sqlite3
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from conformance.harness.machine_load import stretched
from gns3_copilot_generated.constants import DB_LOCATION
from reference_server.agent.service import INTERRUPTED_ANSWER
from reference_server.agent.turn import CANCELLED_TOOL_OUTPUT

from .conftest import Lab, Stream, in_process_lab, start_server_process

pytestmark = pytest.mark.anyio

Event = dict[str, Any]

# --- scripts ---------------------------------------------------------------------------------------------------

# A long answer whose chunks come 0.8 s apart: after the first content frame, the turn is mid-answer for 4 s.
DRIBBLE = """\
name: dribble
description: Six text chunks, 0.8 s apart (a turn that is mid-answer for 4 s).
steps:
  - text_chunks: ["First words", " then", " more", " and", " more", " words."]
    delay_between_ms: 800
    usage: {input_tokens: 70, output_tokens: 12}
title:
  text_chunks: ["Dribbling"]
  usage: {input_tokens: 5, output_tokens: 1}
"""

# A tool call to wait_seconds: after tool_start, the turn is mid-tool for 2 s.
LONG_TOOL = """\
name: long-tool
description: Calls wait_seconds for 2 s, then answers.
steps:
  - text_chunks: ["Waiting for OSPF."]
    tool_calls:
      - {id: call_wait_1, name: wait_seconds, arguments: {seconds: 2}}
    usage: {input_tokens: 80, output_tokens: 15}
  - text_chunks: ["Converged."]
    usage: {input_tokens: 120, output_tokens: 4}
title:
  text_chunks: ["Waiting"]
  usage: {input_tokens: 6, output_tokens: 1}
"""

# What one turn of each built-in script adds, without its title generation: (history roles, llm calls, input
# tokens, output tokens, answer text); and what the title generation of the session's first turn adds (counted:
# title_counts_in_stats defaults to true): (llm calls, input tokens, output tokens, title).
TURNS = {
    "plain": (["user", "assistant"], 1, 42, 9, "The lab looks healthy."),
    "tool-round-trip": (
        ["user", "assistant", "tool", "assistant"],
        2,
        120 + 180,
        18 + 7,
        "The topology has two routers.",
    ),
    "parallel-tools": (
        ["user", "assistant", "tool", "tool", "assistant"],
        2,
        150 + 260,
        40 + 9,
        "Checking both routers.Both routers know 10.0.0.0/24.",
    ),
}
TITLES = {
    "plain": (1, 30, 4, "Lab health check"),
    "tool-round-trip": (1, 40, 3, "Topology overview"),
    "parallel-tools": (1, 45, 6, "Routing tables of R1 and R2"),
}
SLOW_ANSWER = "Sorry for the wait: all links are up."
PLAIN_ANSWER = TURNS["plain"][4]


@pytest.fixture(scope="module")
def scripts_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("fault-scripts")
    (folder / "dribble.yaml").write_text(DRIBBLE, encoding="utf-8")
    (folder / "long-tool.yaml").write_text(LONG_TOOL, encoding="utf-8")
    return folder


class LoggedServer:
    """A server process of its own (the tests kill it) and what it logged (start_server_process keeps reading its
    output)."""

    def __init__(self, data_dir: Path, *args: str) -> None:
        self.server = start_server_process(data_dir, *args, fork=False)
        self.process, self.base_url = self.server.process, self.server.base_url

    def log_text(self) -> str:
        return "".join(self.server.output)

    def stop(self, sig: int = signal.SIGTERM) -> int:
        return self.server.stop(sig)


@pytest.fixture(scope="module")
def socket_server(tmp_path_factory: pytest.TempPathFactory, scripts_dir: Path):
    """One real server process for the socket variants; each test works in a project of its own."""
    server = LoggedServer(tmp_path_factory.mktemp("socket-server") / "data", "--fake-llm-scripts", str(scripts_dir))
    try:
        yield server
    finally:
        server.stop()


# --- helpers ---------------------------------------------------------------------------------------------------


class FrameReader:
    """Split streamed text into `data: <json>` events as it arrives."""

    def __init__(self) -> None:
        self.buffer = ""
        self.events: list[Event] = []

    def feed(self, text: str) -> None:
        self.buffer += text
        while "\n\n" in self.buffer:
            frame, self.buffer = self.buffer.split("\n\n", 1)
            assert frame.startswith("data: "), frame
            self.events.append(json.loads(frame[len("data: ") :]))


Until = Callable[[list[Event]], bool]


def after_first(event_type: str) -> Until:
    return lambda events: any(e["type"] == event_type for e in events)


async def disconnect_in_process(app: Any, lab: Lab, body: dict[str, Any], until: Until) -> list[Event]:
    """POST a stream straight to the ASGI app; once `until(events)`, the client disconnects (http.disconnect)."""
    path = f"{lab.prefix()}/stream"
    raw_body = json.dumps(body).encode()
    headers = [
        (b"host", b"reference"),
        (b"content-type", b"application/json"),
        (b"content-length", str(len(raw_body)).encode()),
    ]
    headers += [(k.lower().encode(), v.encode()) for k, v in lab.headers.items()]
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("reference", 80),
    }
    reader = FrameReader()
    gone = asyncio.Event()
    request_sent = False
    status: list[int] = []

    async def receive() -> dict[str, Any]:
        nonlocal request_sent
        if not request_sent:
            request_sent = True
            return {"type": "http.request", "body": raw_body, "more_body": False}
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            status.append(message["status"])
        elif message["type"] == "http.response.body":
            assert not gone.is_set(), "the app kept sending after the client disconnected"
            reader.feed(message.get("body", b"").decode())
            if until(reader.events):
                gone.set()

    await asyncio.wait_for(app(scope, receive, send), timeout=10)
    assert status == [200]
    assert gone.is_set(), f"the stream ended before the disconnect point: {[e['type'] for e in reader.events]}"
    return reader.events


async def disconnect_over_socket(base_url: str, lab: Lab, body: dict[str, Any], until: Until) -> list[Event]:
    """Open a stream on a real socket, read frames until `until(events)`, then close the connection."""
    reader = FrameReader()
    async with httpx.AsyncClient(base_url=base_url, timeout=10) as client:
        async with client.stream("POST", f"{lab.prefix()}/stream", json=body, headers=lab.headers) as response:
            assert response.status_code == 200
            async for text in response.aiter_text():
                reader.feed(text)
                if until(reader.events):
                    break
            else:
                pytest.fail(f"the stream ended before the disconnect point: {[e['type'] for e in reader.events]}")
    # Leaving both blocks closed the half-read response and its connection: the server sees a disconnect.
    return reader.events


async def wait_for_turn_end(lab: Lab, session_id: str, before: dict[str, Any], deadline: float = 10) -> dict[str, Any]:
    """Poll the listing until the session's statistics were written (updated_at moves forward, LIST-003)."""
    end = time.monotonic() + stretched(deadline)  # longer on a busy machine
    while time.monotonic() < end:
        session = await lab.session(session_id)
        if session["updated_at"] != before["updated_at"]:
            return session
        await asyncio.sleep(0.05)
    pytest.fail(f"the statistics of session {session_id} were not written within {deadline} s of the disconnect")


async def stream_when_free(lab: Lab, message: str, session_id: str, deadline: float = 5) -> Stream:
    """A stream on the session, retried while 409 session_busy (the turn is between its UPDATE and its end)."""
    end = time.monotonic() + stretched(deadline)  # longer on a busy machine
    while True:
        stream = await lab.stream(message, session_id)
        if stream.status != 409 or time.monotonic() > end:
            return stream
        assert json.loads(stream.text)["code"] == "session_busy", stream.text
        await asyncio.sleep(0.05)


def assert_tool_calls_answered(messages: list[dict[str, Any]]) -> None:
    """HISTORY-005 both ways: the tool messages right after an assistant message answer its calls, each once,
    with the call's name; no tool message stands elsewhere. (Scripted call ids repeat from turn to turn.)"""
    index = 0
    while index < len(messages):
        message = messages[index]
        index += 1
        assert message["role"] != "tool", f"a tool message that follows no assistant tool call: {message}"
        calls = {c["id"]: c["function"]["name"] for c in message.get("tool_calls") or []}
        if message["role"] != "assistant" or not calls:
            continue
        answers = []
        while index < len(messages) and messages[index]["role"] == "tool":
            answers.append(messages[index])
            index += 1
        assert sorted(a["tool_call_id"] for a in answers) == sorted(calls), (calls, answers)
        assert all(a["name"] == calls[a["tool_call_id"]] for a in answers), (calls, answers)


async def assert_invariants(lab: Lab, session_id: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """STATS-001, STATS-004 and HISTORY-005 on the session as it is now; returns (session, history messages)."""
    session = await lab.session(session_id)
    history = await lab.history(session_id)
    messages = history["messages"]
    assert session["message_count"] == len(messages), (session, [m["role"] for m in messages])
    assert session["total_tokens"] == session["input_tokens"] + session["output_tokens"], session
    assert history["llm_calls"] == session["llm_calls_count"]
    assert_tool_calls_answered(messages)
    return session, messages


def stats(messages: int, llm_calls: int, input_tokens: int, output_tokens: int) -> tuple[int, int, int, int, int]:
    """Expected statistics, in the order of `stats_of`; total_tokens is their sum (STATS-004)."""
    return messages, llm_calls, input_tokens, output_tokens, input_tokens + output_tokens


def stats_of(session: dict[str, Any]) -> tuple[int, int, int, int, int]:
    return (
        session["message_count"],
        session["llm_calls_count"],
        session["input_tokens"],
        session["output_tokens"],
        session["total_tokens"],
    )


def assert_completed(stream: Stream, session_id: str) -> None:
    assert stream.status == 200, stream.text
    assert stream.frame_violations == []
    assert "error" not in stream.types, stream.events
    assert stream.types[-1] == "done", stream.types
    assert {event["session_id"] for event in stream.events} == {session_id}


# --- 1. client disconnect mid-answer and mid-tool ----------------------------------------------------------------

# (script, disconnect point, expected roles after the stopped turn, stats after it, stats after the next turn)
# A turn stopped mid-answer keeps its user message and the text it streamed (STREAM-CONTENT-001), and counts the
# generation it started (STATS-002) with no usage (none was reported, STATS-003); one stopped mid-tool keeps the
# tool call, answered by a "cancelled" tool message, and the usage of its completed generation.

DISCONNECTS = {
    "mid-answer": (
        "dribble",
        "content",
        ["user", "assistant", "user", "assistant"],
        stats(4, 3, 72, 13),
        stats(6, 4, 72 + 42, 13 + 9),
    ),
    "mid-tool": (
        "long-tool",
        "tool_start",
        ["user", "assistant", "user", "assistant", "tool"],
        stats(5, 3, 72 + 80, 13 + 15),
        stats(7, 4, 72 + 80 + 42, 13 + 15 + 9),
    ),
}


async def check_disconnect(lab: Lab, disconnect: Callable[..., Any], point: str) -> None:
    script, event_type, roles, stopped_stats, next_stats = DISCONNECTS[point]
    session_id = f"drop-{point}"
    first = await lab.stream("hello [[fake-llm:plain]]", session_id)
    assert_completed(first, session_id)
    before = await lab.session(session_id)
    assert stats_of(before) == stats(2, 2, 72, 13)

    message = f"please take your time [[fake-llm:{script}]]"
    events = await disconnect(lab, {"message": message, "session_id": session_id}, after_first(event_type))
    assert events[-1]["type"] == event_type and "done" not in [e["type"] for e in events]

    after = await wait_for_turn_end(lab, session_id, before)
    session, messages = await assert_invariants(lab, session_id)
    assert [m["role"] for m in messages] == roles
    assert messages[2]["content"] == message
    assert stats_of(after) == stats_of(session) == stopped_stats
    # What the client saw is what the history keeps: the 0.8 s pauses mean nothing more was streamed.
    received = "".join(e["content"] for e in events if e["type"] == "content")
    assert received == {"mid-answer": "First words", "mid-tool": "Waiting for OSPF."}[point]
    assert "".join(m["content"] for m in messages[3:] if m["role"] == "assistant") == received
    if point == "mid-tool":
        call = messages[3]["tool_calls"]
        assert [(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"])) for c in call] == [
            ("call_wait_1", "wait_seconds", {"seconds": 2})
        ]
        assert (messages[4]["tool_call_id"], messages[4]["name"], messages[4]["content"]) == (
            "call_wait_1",
            "wait_seconds",
            CANCELLED_TOOL_OUTPUT,
        )
    # The disconnect stopped the turn, judged on what it kept, not on a duration (which a loaded machine stretches):
    # a turn left running would have stored the rest of the answer, or the tool's own output, not the cancellation.

    # The session accepts a new turn, which completes and keeps the invariant.
    again = await stream_when_free(lab, "and now? [[fake-llm:plain]]", session_id)
    assert_completed(again, session_id)
    assert again.content == PLAIN_ANSWER
    session, messages = await assert_invariants(lab, session_id)
    assert [m["role"] for m in messages] == [*roles, "user", "assistant"]
    assert stats_of(session) == next_stats
    assert session["title"] == "Lab health check"


@pytest.mark.covers(
    "STATS-001",
    "STATS-002",
    "STATS-003",
    "STATS-004",
    "STATS-005",
    "HISTORY-005",
    "SESSION-005",
    "STREAM-CONTENT-001",
    "TITLE-004",
)
@pytest.mark.parametrize("point", list(DISCONNECTS))
async def test_client_disconnect_in_process(make_settings, scripts_dir, point):
    in_process = in_process_lab(make_settings(fake_llm_scripts=[scripts_dir]))
    async with in_process as lab:
        app = in_process.app

        async def disconnect(lab: Lab, body: dict[str, Any], until: Until) -> list[Event]:
            return await disconnect_in_process(app, lab, body, until)

        await check_disconnect(lab, disconnect, point)


@pytest.mark.covers(
    "STATS-001",
    "STATS-002",
    "STATS-003",
    "STATS-004",
    "STATS-005",
    "HISTORY-005",
    "SESSION-005",
    "STREAM-CONTENT-001",
    "TITLE-004",
)
@pytest.mark.parametrize("point", list(DISCONNECTS))
async def test_client_disconnect_over_socket(socket_server: LoggedServer, point):
    async with httpx.AsyncClient(base_url=socket_server.base_url, timeout=30) as client:
        lab = await Lab(client).setup()

        async def disconnect(lab: Lab, body: dict[str, Any], until: Until) -> list[Event]:
            return await disconnect_over_socket(socket_server.base_url, lab, body, until)

        await check_disconnect(lab, disconnect, point)


# --- 2. SIGKILL mid-stream, then restart --------------------------------------------------------------------------


def checkpoint_count(db_path: Path, session_id: str) -> int:
    with contextlib.closing(sqlite3.connect(f"{db_path.as_uri()}?mode=ro", uri=True, timeout=10)) as db:
        return db.execute("SELECT COUNT(*) FROM checkpoints WHERE thread_id = ?", (session_id,)).fetchone()[0]


async def wait_for_checkpoints(db_path: Path, session_id: str, count: int, deadline: float = 10) -> None:
    end = time.monotonic() + stretched(deadline)  # longer on a busy machine
    while checkpoint_count(db_path, session_id) < count:
        if time.monotonic() > end:
            pytest.fail(f"session {session_id} did not reach {count} checkpoints within {deadline} s")
        await asyncio.sleep(0.02)


async def read_until(
    client: httpx.AsyncClient, lab: Lab, session_id: str, message: str, event_type: str, stack
) -> AsyncIterator[str]:
    """Open a stream kept open in `stack` and read it up to its first `event_type`; the caller keeps the returned
    iterator: once collected, it would close the connection, and the server would end the turn as a disconnect."""
    body = {"message": message, "session_id": session_id}
    response = await stack.enter_async_context(
        client.stream("POST", f"{lab.prefix()}/stream", json=body, headers=lab.headers)
    )
    assert response.status_code == 200
    reader = FrameReader()
    texts = response.aiter_text()
    while not after_first(event_type)(reader.events):
        reader.feed(await anext(texts))
    return texts


async def sessions_after_restart(server: LoggedServer, lab: Lab) -> dict[str, tuple[dict[str, Any], list[Any]]]:
    """Log in again; every session checked before any new turn: STATS-001 and HISTORY-005, no `user, user` pair."""
    lab.client = httpx.AsyncClient(base_url=server.base_url, timeout=30)
    lab.headers = await lab.login()
    found = {}
    for session in (await lab.client.get(f"{lab.prefix()}/sessions", headers=lab.headers)).json():
        session_id = session["thread_id"]
        found[session_id] = await assert_invariants(lab, session_id)
        roles = [m["role"] for m in found[session_id][1]]
        assert ("user", "user") not in set(zip(roles, roles[1:], strict=False)), (session_id, roles)
    return found


def roles_and_text(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in messages]


# A turn cut by a kill while it waits for its answer (only its user message is checkpointed), and one cut in its tool
# (its tool call and that generation's usage are): (message, where the kill lands, checkpoints the cut turn has
# written by then: input, then one per step; history and statistics once recovered at the restart).
CUTS = {
    "crash-answer": (
        "this one dies [[fake-llm:slow]]",
        "heartbeat",
        2,
        ["user", "assistant", "user", "assistant"],
        stats(4, 2, 72, 13),
    ),
    "crash-tool": (
        "this one dies mid-tool [[fake-llm:long-tool]]",
        "tool_start",
        3,
        ["user", "assistant", "user", "assistant", "tool"],
        stats(5, 2 + 1, 72 + 80, 13 + 15),
    ),
}


@pytest.mark.covers(
    "DB-001",
    "DB-002",
    "STATS-001",
    "STATS-002",
    "STATS-003",
    "STATS-004",
    "HISTORY-005",
    "SESSION-005",
    "LIST-001",
)
@pytest.mark.slow  # whole suite runs or servers: left out of --quick
async def test_sigkill_mid_stream_then_restart(tmp_path: Path, scripts_dir: Path):
    """Turns cut by SIGKILL are recovered at the restart, before any new turn: repaired as cut-short turns, counted
    from what their checkpoints kept, once, also after a second restart."""
    data_dir = tmp_path / "data"
    # Heartbeats every 0.5 s, so that a frame arrives while the slow script still waits for its 3 s.
    options = ("--heartbeat-interval", "0.5", "--fake-llm-scripts", str(scripts_dir))
    server = LoggedServer(data_dir, *options)
    servers = [server]
    try:
        async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as client:
            lab = await Lab(client).setup()
            db_path = Path(DB_LOCATION.format(project_dir=data_dir / "projects" / lab.project_id))
            for session_id in CUTS:
                first = await lab.stream("hello [[fake-llm:plain]]", session_id)
                assert_completed(first, session_id)
                before, _ = await assert_invariants(lab, session_id)
                assert stats_of(before) == stats(2, 2, 72, 13)
            async with contextlib.AsyncExitStack() as streams:
                open_streams = []
                for session_id, (message, point, written, _, _) in CUTS.items():
                    already = checkpoint_count(db_path, session_id)
                    open_streams.append(await read_until(client, lab, session_id, message, point, streams))
                    await wait_for_checkpoints(db_path, session_id, already + written)
                os.kill(server.process.pid, signal.SIGKILL)
                assert server.process.wait(10) == -signal.SIGKILL

        with contextlib.closing(sqlite3.connect(db_path)) as db:
            assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
            assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)

        # The project was left opened: it is opened again at start-up, where the cut turns are recovered.
        servers.append(LoggedServer(data_dir, *options))
        recovered = await sessions_after_restart(servers[-1], lab)
        assert sorted(recovered) == sorted(CUTS)
        for session_id, (message, _, _, roles, expected) in CUTS.items():
            session, messages = recovered[session_id]
            print(session_id, "after the crash:", roles_and_text(messages))
            assert [m["role"] for m in messages] == roles
            assert roles_and_text(messages[:3]) == [
                ("user", "hello [[fake-llm:plain]]"),
                ("assistant", PLAIN_ANSWER),
                ("user", message),
            ]
            assert stats_of(session) == expected
        # The dangling user message is answered; the cut tool call has its "cancelled" result (HISTORY-005).
        assert recovered["crash-answer"][1][3]["content"] == INTERRUPTED_ANSWER
        assert recovered["crash-tool"][1][3]["content"] == "Waiting for OSPF."
        assert recovered["crash-tool"][1][4]["content"] == CANCELLED_TOOL_OUTPUT

        after = await lab.stream("still there? [[fake-llm:plain]]", "crash-answer")
        assert_completed(after, "crash-answer")
        assert after.content == PLAIN_ANSWER
        await lab.client.aclose()

        # A second restart counts nothing again.
        servers[-1].stop()
        servers.append(LoggedServer(data_dir, *options))
        again = await sessions_after_restart(servers[-1], lab)
        assert stats_of(again["crash-answer"][0]) == stats(6, 3, 72 + 42, 13 + 9)
        assert stats_of(again["crash-tool"][0]) == CUTS["crash-tool"][4]
        assert again["crash-answer"][0]["title"] == again["crash-tool"][0]["title"] == "Lab health check"
        await lab.client.aclose()
        assert "recovered" not in servers[-1].log_text()
    finally:
        servers[0].stop(signal.SIGKILL)
        for restarted in servers[1:]:
            restarted.stop()


# --- 3. 32 concurrent streams on 32 sessions ---------------------------------------------------------------------

SCRIPT_MIX = ["plain", "tool-round-trip", "parallel-tools"]


async def check_concurrent_sessions(lab: Lab, label: str, count: int = 32, rounds: int = 2) -> None:
    """`rounds` bursts of `count` concurrent streams, one per session; then every session is checked."""
    sessions = {f"conc-{i:02d}": SCRIPT_MIX[i % len(SCRIPT_MIX)] for i in range(count)}

    async def timed(session_id: str, message: str) -> tuple[Stream | BaseException, float]:
        started = time.monotonic()
        try:
            stream: Stream | BaseException = await lab.stream(message, session_id)
        except Exception as exc:  # in-process, an exception of the app reaches the client
            stream = exc
        return stream, time.monotonic() - started

    problems: list[str] = []
    for round_ in range(rounds):
        sent = {sid: f"question {round_} of {sid} [[fake-llm:{script}]]" for sid, script in sessions.items()}
        started = time.monotonic()
        results = await asyncio.gather(*(timed(sid, message) for sid, message in sent.items()))
        wall = time.monotonic() - started
        total = sum(duration for _, duration in results)
        print(
            f"\n{label}, round {round_}: {count} concurrent streams in {wall:.2f} s; sum of stream times "
            f"{total:.2f} s; wall/sum = {wall / total:.3f} (1.0 would mean serialised)"
        )
        for (session_id, script), (stream, _) in zip(sessions.items(), results, strict=True):
            if isinstance(stream, BaseException):
                problems.append(f"round {round_} {session_id}: {stream!r}")
            elif stream.status != 200 or stream.types[-1:] != ["done"] or "error" in stream.types:
                problems.append(f"round {round_} {session_id}: {stream.status} {stream.types or stream.text[:80]}")
            elif stream.frame_violations or {e["session_id"] for e in stream.events} != {session_id}:
                problems.append(f"round {round_} {session_id}: {stream.frame_violations} {stream.events}")
            elif stream.content != TURNS[script][4]:
                problems.append(f"round {round_} {session_id}: content {stream.content!r}")

    response = await lab.client.get(f"{lab.prefix()}/sessions", headers=lab.headers)
    assert response.status_code == 200
    listed = sorted(s["thread_id"] for s in response.json())
    for session_id, script in sessions.items():
        roles, llm_calls, input_tokens, output_tokens, _ = TURNS[script]
        title_calls, title_input, title_output, title = TITLES[script]
        if session_id not in listed:
            problems.append(f"{session_id}: not listed")
            continue
        try:
            session, messages = await assert_invariants(lab, session_id)
        except AssertionError as exc:
            problems.append(f"{session_id}: {exc!r}"[:300])
            continue
        expected = stats(
            rounds * len(roles),
            rounds * llm_calls + title_calls,
            rounds * input_tokens + title_input,
            rounds * output_tokens + title_output,
        )
        if [m["role"] for m in messages] != roles * rounds or stats_of(session) != expected:
            problems.append(f"{session_id}: {[m['role'] for m in messages]} {stats_of(session)} != {expected}")
        elif [m["content"] for m in messages if m["role"] == "user"] != [
            f"question {r} of {session_id} [[fake-llm:{script}]]" for r in range(rounds)
        ]:
            problems.append(f"{session_id}: user messages {[m for m in messages if m['role'] == 'user']}")
        elif session["title"] != title:
            problems.append(f"{session_id}: title {session['title']!r}")

    assert (problems, listed) == ([], sorted(sessions)), f"{len(problems)} problems: " + "\n".join(problems[:12])


@pytest.mark.covers(
    "CONCURRENCY-003",
    "STATS-001",
    "STATS-002",
    "STATS-003",
    "STATS-004",
    "HISTORY-005",
    "LIST-001",
    "SESSION-005",
    "TITLE-004",
)
async def test_32_concurrent_sessions_in_process(lab):
    await check_concurrent_sessions(lab, "in-process")


@pytest.mark.covers(
    "CONCURRENCY-003",
    "STATS-001",
    "STATS-002",
    "STATS-003",
    "STATS-004",
    "HISTORY-005",
    "LIST-001",
    "SESSION-005",
    "TITLE-004",
)
async def test_32_concurrent_sessions_over_socket(socket_server: LoggedServer):
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    async with httpx.AsyncClient(base_url=socket_server.base_url, timeout=30, limits=limits) as client:
        lab = await Lab(client).setup()
        await check_concurrent_sessions(lab, "over a socket")
    print(f"server log: {socket_server.log_text().count('database is locked')} 'database is locked' errors")


# --- 4. a busy session -----------------------------------------------------------------------------------------


@pytest.mark.covers("CONCURRENCY-001", "CONCURRENCY-002", "ERROR-002", "STATS-001", "HISTORY-009")
async def test_busy_session_answers_409_then_turns_stay_contiguous(lab):
    session_id = "busy-1"
    slow_message = "take your time [[fake-llm:slow]]"
    slow = asyncio.create_task(lab.stream(slow_message, session_id))
    await lab.until_listed(session_id)

    for attempt in range(3):
        busy = await lab.stream(f"me too {attempt} [[fake-llm:plain]]", session_id)
        assert busy.status == 409, busy.text
        assert busy.headers["content-type"].startswith("application/json")
        assert json.loads(busy.text)["code"] == "session_busy"
        assert not slow.done()

    first = await slow
    assert_completed(first, session_id)
    assert first.content == SLOW_ANSWER
    second = await stream_when_free(lab, "and after? [[fake-llm:plain]]", session_id)
    assert_completed(second, session_id)

    session, messages = await assert_invariants(lab, session_id)
    assert [(m["role"], m["content"]) for m in messages] == [
        ("user", slow_message),
        ("assistant", SLOW_ANSWER),
        ("user", "and after? [[fake-llm:plain]]"),
        ("assistant", PLAIN_ANSWER),
    ]
    # slow: its generation 60/10 and its title 20/2; then one plain generation.
    assert stats_of(session) == stats(4, 3, 60 + 20 + 42, 10 + 2 + 9)


@pytest.mark.covers("CONCURRENCY-001", "CONCURRENCY-002", "STATS-001")
async def test_simultaneous_streams_on_one_new_session_run_one_turn(lab):
    session_id = "race-1"
    messages_sent = [f"attempt {i} [[fake-llm:slow]]" for i in range(4)]
    streams = await asyncio.gather(*(lab.stream(message, session_id) for message in messages_sent))

    statuses = sorted(stream.status for stream in streams)
    assert statuses == [200, 409, 409, 409], [(s.status, s.text[:80]) for s in streams]
    winner = next(i for i, stream in enumerate(streams) if stream.status == 200)
    assert_completed(streams[winner], session_id)
    for stream in streams:
        if stream.status == 409:
            assert json.loads(stream.text)["code"] == "session_busy"

    session, messages = await assert_invariants(lab, session_id)
    assert [(m["role"], m["content"]) for m in messages] == [
        ("user", messages_sent[winner]),
        ("assistant", SLOW_ANSWER),
    ]
    assert stats_of(session) == stats(2, 2, 60 + 20, 10 + 2)
