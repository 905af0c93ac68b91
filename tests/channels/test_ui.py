"""The UI message stream channel (UI-001..004): the translator alone, then a live server read by npm `ai` itself
(`readUIMessageStream`, the `Chat` + `DefaultChatTransport` pair of `useChat`, `validateUIMessages`), every chunk
checked against the `ai` package's official chunk schema (spec/channels/official/ai_ui_message_chunk.json)."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import httpx
import pytest

from conformance.harness.machine_load import stretched
from conformance.rules.official import errors
from gns3_copilot_generated.constants import CHANNEL_PATHS
from reference_server.channels.ui_messages import history_to_ui_messages
from reference_server.channels.ui_stream import TurnOutcome, UiMessageStream
from tools.channel_requests import ui

from .conftest import LiveLab
from .node_clients import request_bodies, ui_chat, ui_read, ui_validate

S = "ui-unit"
UI_PATH = CHANNEL_PATHS["ui"]  # the channel under the chat prefix (CHANNEL-001)
ARGS = '{"detail":"summary"}'


def call(arguments: str, complete: bool = False, call_id: str = "call_1", name: str = "get_topology") -> dict:
    function: dict[str, Any] = {"name": name, "arguments": arguments}
    if complete:
        function["complete"] = True
    return {
        "type": "tool_call",
        "session_id": S,
        "tool_call": {"id": call_id, "type": "function", "function": function},
    }


def text(content: str) -> dict:
    return {"type": "content", "content": content, "session_id": S}


def tool_end(output: str, call_id: str | None = "call_1", name: str = "get_topology") -> dict:
    event = {"type": "tool_end", "tool_name": name, "tool_output": output, "session_id": S}
    if call_id:
        event["tool_call_id"] = call_id
    return event


HEARTBEAT = {"type": "heartbeat", "session_id": S}
DONE = {"type": "done", "session_id": S}
TOOL_TURN = [
    [call(""), call('{"det'), call('{"detail":"su'), call(ARGS), call(ARGS, complete=True)],
    [{"type": "tool_start", "tool_name": "get_topology", "tool_call_id": "call_1", "session_id": S}],
    [HEARTBEAT],
    [tool_end('{"nodes": 2}')],
    [text("The topology has "), text("two routers.")],
    [DONE],
]


USAGE = TurnOutcome(300, 25)
# The contract events of a call whose first delta held its whole arguments, and of two calls of one chunk.
WHOLE_CALL_TURN = [[call(ARGS)], [call(ARGS, True)], [tool_end('{"nodes": 2}')], [text("Two.")], [DONE]]
ONE_CHUNK_TURN = [
    [call('{"d":1}', call_id="a", name="show"), call('{"d":2}', call_id="b", name="show")],
    [call('{"d":1}', True, "a", "show"), call('{"d":2}', True, "b", "show")],
    [tool_end("one", "a", "show"), tool_end("two", "b", "show")],
    [DONE],
]


def render(batches: list[list[dict]], outcome: TurnOutcome = USAGE) -> str:
    stream = UiMessageStream(session_id=S, outcome=lambda: outcome)
    return stream.opening() + "".join(stream.feed(batch) for batch in batches)


def frames(body: str) -> list[str]:
    assert body.endswith("\n\n") and "\r" not in body
    return body[:-2].split("\n\n")


def chunks(body: str) -> list[dict[str, Any]]:
    """Every chunk of a UI stream, each checked against the official schema and for nulls (UI-002)."""
    found = []
    parts = frames(body)
    assert parts[-1] == "data: [DONE]", parts[-3:]
    for frame in parts[:-1]:
        if frame == ": heartbeat":  # CHANNEL-007: a comment, never a chunk
            continue
        assert frame.startswith("data: ") and "\n" not in frame, frame
        chunk = json.loads(frame[6:])
        assert errors("ai_ui_message_chunk", chunk) == [], chunk
        assert "null" not in json.dumps(chunk), chunk  # optional fields omitted, never null
        found.append(chunk)
    return found


def types(found: list[dict[str, Any]]) -> list[str]:
    return [chunk["type"] for chunk in found]


# --- The translator alone (UI-002, UI-003) ---


@pytest.mark.covers("UI-002", "UI-003", "CHANNEL-007", "CHANNEL-008")
@pytest.mark.covers("UI-PROTO-001", "UI-PROTO-002", "UI-PROTO-003", "UI-PROTO-004")
def test_a_tool_turn_is_one_assistant_message_that_ai_assembles():
    body = render(TOOL_TURN)
    found = chunks(body)
    assert types(found) == [
        "start",
        "start-step",
        "tool-input-start",
        "tool-input-delta",
        "tool-input-delta",
        "tool-input-delta",
        "tool-input-available",
        "tool-output-available",
        "finish-step",  # the tool results of a generation, then the next one's text (UI-003)
        "start-step",
        "text-start",
        "text-delta",
        "text-delta",
        "text-end",
        "finish-step",
        "finish",
    ]
    assert ": heartbeat" in frames(body)
    assert found[0]["messageMetadata"] == {"sessionId": S}
    deltas = [c["inputTextDelta"] for c in found if c["type"] == "tool-input-delta"]
    assert "".join(deltas) == ARGS  # each growth once, as its new suffix
    assert all(
        c["providerExecuted"] is True for c in found if c["type"].startswith("tool-") and "delta" not in c["type"]
    )
    assert found[-1]["messageMetadata"] == {
        "sessionId": S,
        "usage": {"inputTokens": 300, "outputTokens": 25, "totalTokens": 325},
    }

    result = ui_read([{"body": body}])[0]
    assert result["ok"], result["error"]
    message = result["message"]
    assert message["role"] == "assistant" and message["id"] == found[0]["messageId"]
    assert message["metadata"]["usage"]["totalTokens"] == 325
    parts = [p for p in message["parts"] if p["type"] != "step-start"]
    assert parts == [
        {
            "type": "tool-get_topology",
            "toolCallId": "call_1",
            "state": "output-available",
            "input": {"detail": "summary"},
            "output": '{"nodes": 2}',
            "providerExecuted": True,
        },
        {"type": "text", "text": "The topology has two routers.", "state": "done"},
    ]


@pytest.mark.covers("UI-PROTO-005")
def test_calls_whole_or_several_in_one_chunk_each_get_their_input_before_any_output():
    """A call whose first delta holds its whole arguments, and several calls of one chunk: each tool part gets its
    tool-input-available with the call's input before the first output, and `ai` shows every call with its input."""
    whole, one_chunk = render(WHOLE_CALL_TURN), render(ONE_CHUNK_TURN)
    found = chunks(one_chunk)
    first_output = types(found).index("tool-output-available")
    inputs = {c["toolCallId"]: c["input"] for c in found[:first_output] if c["type"] == "tool-input-available"}
    assert inputs == {"a": {"d": 1}, "b": {"d": 2}}
    whole_chunks = chunks(whole)
    assert [c["input"] for c in whole_chunks if c["type"] == "tool-input-available"] == [{"detail": "summary"}]
    read_whole, read_chunk = ui_read([{"body": whole}, {"body": one_chunk}])
    for read, want in ((read_whole, [{"detail": "summary"}]), (read_chunk, [{"d": 1}, {"d": 2}])):
        assert read["ok"], read["error"]
        tools = [p for p in read["message"]["parts"] if p["type"].startswith("tool-")]
        assert [(p["input"], p["state"]) for p in tools] == [(each, "output-available") for each in want]


@pytest.mark.covers("UI-002", "UI-003", "CHANNEL-009", "CHANNEL-010")
@pytest.mark.covers("UI-PROTO-002", "UI-PROTO-003", "UI-PROTO-004")
def test_errors_aborts_parallel_and_cut_calls_close_every_part():
    failed = render([[text("Let me check")], [{"type": "error", "error": "upstream reset", "code": "llm_error"}, DONE]])
    aborted = render([[text("Sorry for")], [DONE]], TurnOutcome(60, 10, aborted=True))
    cut = render([[text("Checking."), call('{"dev')], [DONE]], TurnOutcome(5, 1, aborted=True))
    parallel = render(
        [
            [text("Both."), call("", call_id="a", name="show"), call("", call_id="b", name="show")],
            [call('{"d":1}', call_id="a", name="show"), call('{"d":2}', call_id="b", name="show")],
            [call('{"d":1}', True, "a", "show"), call('{"d":2}', True, "b", "show")],
            # the second result without its id (TOOLCALL-007 is a SHOULD): the oldest waiting call of that tool
            [tool_end("one", "a", "show"), tool_end("two", None, "show")],
            [text("Done.")],
            [DONE],
        ]
    )
    assert types(chunks(failed))[2:] == [
        "text-start",
        "text-delta",
        "text-end",  # closed before the error (every part closed before finish-step)
        "error",
        "finish-step",
        "finish",
    ]
    assert chunks(failed)[5]["errorText"] == "upstream reset"
    assert types(chunks(aborted))[-4:] == ["text-end", "abort", "finish-step", "finish"]
    cut_chunks = chunks(cut)
    assert types(cut_chunks)[-4:] == ["tool-input-error", "abort", "finish-step", "finish"]
    assert [c["type"] for c in cut_chunks if c["type"].startswith(("text", "tool"))] == [
        "text-start",
        "text-delta",
        "text-end",
        "tool-input-start",
        "tool-input-delta",
        "tool-input-error",
    ]
    outputs = {c["toolCallId"]: c["output"] for c in chunks(parallel) if c["type"] == "tool-output-available"}
    assert outputs == {"a": "one", "b": "two"}

    read_failed, read_aborted, read_cut, read_parallel = ui_read(
        [{"body": failed}, {"body": aborted}, {"body": cut}, {"body": parallel}]
    )
    assert not read_failed["ok"] and read_failed["error"]["message"] == "upstream reset"
    assert read_failed["message"]["parts"][-1] == {"type": "text", "text": "Let me check", "state": "done"}
    assert read_aborted["ok"], read_aborted["error"]
    assert read_aborted["message"]["parts"][-1]["text"] == "Sorry for"
    assert read_cut["ok"], read_cut["error"]
    assert read_cut["message"]["parts"][-1]["state"] == "output-error"
    assert read_parallel["ok"], read_parallel["error"]
    tools = [p for p in read_parallel["message"]["parts"] if p["type"] == "tool-show"]
    assert [(p["toolCallId"], p["state"], p["input"], p["output"]) for p in tools] == [
        ("a", "output-available", {"d": 1}, "one"),
        ("b", "output-available", {"d": 2}, "two"),
    ]


@pytest.mark.covers("UI-004")
def test_history_is_grouped_into_ui_messages_with_the_history_ids():
    history = [
        {"id": "u1", "role": "user", "content": "hi"},
        {"id": "a1", "role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_topology", "arguments": ARGS}},
        ]},
        {"id": "t1", "role": "tool", "content": "{}", "tool_call_id": "c1", "name": "get_topology"},
        {"id": "a2", "role": "assistant", "content": "Two routers."},
        {"id": "u2", "role": "user", "content": "thanks"},
        {"id": "a3", "role": "assistant", "content": "You're welcome."},
    ]  # fmt: skip
    messages = history_to_ui_messages(history)
    assert [(m["id"], m["role"]) for m in messages] == [
        ("u1", "user"),
        ("a1", "assistant"),
        ("u2", "user"),
        ("a3", "assistant"),
    ]
    assert messages[1]["parts"] == [
        {"type": "step-start"},
        {
            "type": "tool-get_topology",
            "toolCallId": "c1",
            "state": "output-available",
            "input": {"detail": "summary"},
            "providerExecuted": True,
            "output": "{}",
        },
        {"type": "step-start"},
        {"type": "text", "text": "Two routers.", "state": "done"},
    ]
    assert errors("ai_ui_messages", messages) == []


# --- A live server (UI-001..004) ---


def post_ui(live: LiveLab, body: dict, token: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token or live.token}"}
    return live.client.post(live.url(UI_PATH), json=body, headers=headers)


def tokens(live: LiveLab, session_id: str) -> tuple[int, int]:
    session = live.sessions().get(session_id)
    return (session["input_tokens"], session["output_tokens"]) if session else (0, 0)


@pytest.mark.covers("UI-001", "UI-002", "UI-003", "CHANNEL-002", "CHANNEL-008", "UI-PROTO-001")
def test_ai_reads_a_live_tool_turn_and_its_usage_is_the_sessions_increase(live: LiveLab):
    session_id = f"ui-tool-{uuid.uuid4().hex[:8]}"
    path, body = ui(session_id, "the topology? [[fake-llm:tool-round-trip]]")
    response = post_ui(live, body)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    for name, value in {
        "x-vercel-ai-ui-message-stream": "v1",
        "cache-control": "no-cache",
        "x-accel-buffering": "no",
        "x-copilot-session-id": session_id,
    }.items():
        assert response.headers.get(name) == value, name
    found = chunks(response.text)
    first_usage = found[-1]["messageMetadata"]["usage"]
    after_first = tokens(live, session_id)
    assert (first_usage["inputTokens"], first_usage["outputTokens"]) == after_first  # a new session: from 0
    assert first_usage["totalTokens"] == sum(after_first)

    # The same session continued over a socket by the `ai` reader itself (fetch, then readUIMessageStream).
    _, again = ui(session_id, "and again? [[fake-llm:tool-round-trip]]")
    recorded, fetched = ui_read(
        [{"body": response.text}, {"url": live.url(UI_PATH), "request": again, "headers": live.headers}]
    )
    for result in (recorded, fetched):
        assert result["ok"], result["error"]
        parts = [p for p in result["message"]["parts"] if p["type"] != "step-start"]
        assert [p["type"] for p in parts] == ["tool-get_topology", "text"]
        assert parts[0]["state"] == "output-available" and parts[0]["input"] == {"detail": "summary"}
        assert parts[0]["toolCallId"] == "call_rt_1"  # the contract's tool call id
        assert parts[1]["text"] == "The topology has two routers."
    assert fetched["status"] == 200 and fetched["headers"]["x-copilot-session-id"] == session_id
    usage = fetched["message"]["metadata"]["usage"]
    after_second = tokens(live, session_id)
    assert (usage["inputTokens"], usage["outputTokens"]) == (
        after_second[0] - after_first[0],
        after_second[1] - after_first[1],
    )
    assert [m["role"] for m in live.history(session_id)].count("user") == 2


@pytest.mark.covers("UI-001", "UI-004", "CHANNEL-002", "CHANNEL-004")
def test_use_chat_drives_two_turns_and_the_history_shows_both(live: LiveLab):
    session_id = f"ui-chat-{uuid.uuid4().hex[:8]}"
    texts = ["hello [[fake-llm:plain]]", "the topology? [[fake-llm:tool-round-trip]]"]
    chat = ui_chat([{"url": live.url(UI_PATH), "token": live.token, "id": session_id, "messages": texts}])[0]
    assert chat["ok"], (chat["error"], chat["stderr"])
    assert [r["status"] for r in chat["responses"]] == [200, 200]
    assert chat["requests"][1]["id"] == session_id and len(chat["requests"][1]["messages"]) == 3  # carries history
    assert [m["role"] for m in chat["messages"]] == ["user", "assistant", "user", "assistant"]

    response = live.client.get(live.url(f"{UI_PATH}/{session_id}/messages"), headers=live.headers)
    assert response.status_code == 200, response.text
    messages = response.json()
    history = live.history(session_id)
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]
    assert [m["parts"] for m in messages if m["role"] == "user"] == [[{"type": "text", "text": t}] for t in texts]
    answer_ids = [m["id"] for m in history if m["role"] == "assistant"]
    assert [m["id"] for m in messages] == [
        history[0]["id"],
        answer_ids[0],
        next(m["id"] for m in history[1:] if m["role"] == "user"),
        answer_ids[1],
    ]
    # What the history shows is what useChat assembled from the streams (ids aside).
    for live_message, stored in zip(chat["messages"][1::2], messages[1::2], strict=True):
        assert stored["parts"] == live_message["parts"]
    assert errors("ai_ui_messages", messages) == []
    validated = ui_validate([{"messages": messages}])[0]
    assert validated["ok"], validated["error"]


@pytest.mark.covers("UI-PROTO-006", "UI-001", "CHANNEL-004")
def test_the_bodies_default_chat_transport_builds_are_served_a_resubmitted_edit_too(live: LiveLab):
    """`ai`'s own transport builds each body: a new chat's message, then the chat's last user message resubmitted
    edited (`messageId` names it, as after a failed request); both are served, the second continuing the session."""
    session_id = f"ui-bodies-{uuid.uuid4().hex[:8]}"
    (first,) = request_bodies([{"protocol": "ui", "id": session_id, "text": "hello [[fake-llm:plain]]"}])
    assert set(first["request"]) == {"id", "messages", "trigger"}, first
    response = post_ui(live, first["request"])
    assert response.status_code == 200 and response.headers["x-copilot-session-id"] == session_id, response.text
    assistant = ui_read([{"body": response.text}])[0]["message"]
    draft = {"id": "draft-1", "role": "user", "parts": [{"type": "text", "text": "a draft"}]}
    chat = [*first["request"]["messages"], assistant, draft]
    (second,) = request_bodies(
        [
            {
                "protocol": "ui",
                "id": session_id,
                "messages": chat,
                "text": "again [[fake-llm:plain]]",
                "messageId": "draft-1",
            }
        ]
    )
    assert second["request"]["messageId"] == "draft-1" and second["request"]["trigger"] == "submit-message"
    again = post_ui(live, second["request"])
    assert again.status_code == 200 and again.headers["x-copilot-session-id"] == session_id, again.text
    assert types(chunks(again.text))[-1] == "finish"
    assert [m["content"] for m in live.history(session_id) if m["role"] == "user"] == [
        "hello [[fake-llm:plain]]",
        "again [[fake-llm:plain]]",
    ]


@pytest.mark.covers("UI-003", "CHANNEL-005", "CHANNEL-007", "CHANNEL-009", "CONCURRENCY-001")
def test_a_busy_session_is_refused_then_an_abort_ends_the_stream(live: LiveLab):
    session_id = f"ui-slow-{uuid.uuid4().hex[:8]}"
    _, body = ui(session_id, "wait [[fake-llm:slow]]")
    received = ""
    with live.client.stream("POST", live.url(UI_PATH), json=body, headers=live.headers) as running:
        assert running.status_code == 200
        lines = running.iter_text()
        received += next(lines)  # the stream began: the turn holds the session
        refused = post_ui(live, ui(session_id, "me too [[fake-llm:plain]]")[1])
        assert refused.status_code == 409 and refused.json()["code"] == "session_busy"
        assert refused.headers["content-type"].startswith("application/json")
        while received.count(": heartbeat") < 2:  # heartbeat interval 0.2 s
            received += next(lines)
        abort = live.client.post(live.url(f"/sessions/{session_id}/abort"), headers=live.headers)
        assert abort.status_code == 200
        started = time.monotonic()
        received += "".join(lines)
        assert time.monotonic() - started < stretched(5)  # the test's own bound, longer on a busy machine
    found = chunks(received)
    assert types(found)[-3:] == ["abort", "finish-step", "finish"]
    assert found[-1]["messageMetadata"]["usage"]["inputTokens"] == tokens(live, session_id)[0]
    result = ui_read([{"body": received}])[0]
    assert result["ok"], result["error"]


@pytest.mark.covers("UI-003", "CHANNEL-010")
def test_an_llm_error_is_an_error_chunk_and_the_turn_is_kept(live: LiveLab):
    session_id = f"ui-err-{uuid.uuid4().hex[:8]}"
    response = post_ui(live, ui(session_id, "fail [[fake-llm:llm-error]]")[1])
    assert response.status_code == 200
    found = chunks(response.text)
    assert types(found)[-3:] == ["error", "finish-step", "finish"]
    assert found[-3]["errorText"]
    assert live.session(session_id)["message_count"] == len(live.history(session_id)) >= 1


@pytest.mark.covers("UI-001", "UI-004", "CHANNEL-004", "CHANNEL-005", "CHANNEL-006", "ISOLATION-001")
def test_refusals(live: LiveLab):
    owned = f"ui-owned-{uuid.uuid4().hex[:8]}"
    live.stream("mine [[fake-llm:plain]]", owned)
    other = live.users.get("uma") or live.add_user("uma")

    def code(response: httpx.Response) -> tuple[int, str]:
        return response.status_code, response.json()["code"]

    messages_url = live.url(f"{UI_PATH}/{owned}/messages")
    assert code(live.client.get(messages_url, headers={"Authorization": f"Bearer {other}"})) == (
        404,
        "session_not_found",
    )
    unknown = live.url(f"{UI_PATH}/never-{uuid.uuid4().hex[:8]}/messages")
    assert code(live.client.get(unknown, headers=live.headers)) == (404, "session_not_found")
    assert live.client.get(messages_url).status_code == 401

    fresh = f"ui-new-{uuid.uuid4().hex[:8]}"
    _, body = ui(fresh, "again [[fake-llm:plain]]")
    assistant = {"id": "a", "role": "assistant", "parts": [{"type": "text", "text": "earlier"}]}
    user = body["messages"][0]
    assert code(post_ui(live, {**body, "trigger": "regenerate-message"})) == (422, "regenerate_not_supported")
    assert code(post_ui(live, {**body, "messages": [user, assistant, user]})) == (422, "unknown_conversation")
    assert code(post_ui(live, {**body, "messages": [user, assistant]})) == (422, "validation_error")
    assert code(post_ui(live, {"messages": body["messages"]})) == (422, "validation_error")  # no id
    assert code(post_ui(live, {**body, "temperature": 3})) == (422, "validation_error")
    empty = {**user, "parts": [{"type": "text", "text": ""}]}
    assert code(post_ui(live, {**body, "messages": [empty]})) == (422, "validation_error")
    assert code(post_ui(live, {**body, "id": "bad id!"})) == (422, "validation_error")
    assert fresh not in live.sessions()
    # Another user's session is not found, and the turn never starts (ISOLATION-002)
    refused = post_ui(live, ui(owned, "let me in [[fake-llm:plain]]")[1], token=other)
    assert code(refused) == (404, "session_not_found")


@pytest.mark.covers("CHANNEL-009")
def test_a_client_that_disconnects_stops_the_turn_which_is_kept(live: LiveLab):
    session_id = f"ui-gone-{uuid.uuid4().hex[:8]}"
    with live.client.stream(
        "POST", live.url(UI_PATH), json=ui(session_id, "wait [[fake-llm:slow]]")[1], headers=live.headers
    ) as running:
        assert running.status_code == 200
        next(running.iter_text())
    deadline = time.monotonic() + stretched(5)
    while (answer := post_ui(live, ui(session_id, "still there? [[fake-llm:plain]]")[1])).status_code == 409:
        assert time.monotonic() < deadline, "the turn still holds the session 5 s after the client left"
        time.sleep(0.05)
    assert answer.status_code == 200, answer.text
    users = [m["content"] for m in live.history(session_id) if m["role"] == "user"]
    assert users == ["wait [[fake-llm:slow]]", "still there? [[fake-llm:plain]]"]  # the stopped turn is kept
    assert live.session(session_id)["message_count"] == len(live.history(session_id))
