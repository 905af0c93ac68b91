"""Each protocol's real client, fed recorded bodies (no server), accepts a valid stream and rejects broken ones,
so that a channel test asserting "the real client accepts what the server sent" can fail both ways.

    npm ai 6.0.325             ui-read.mjs: parseJsonEventStream(uiMessageChunkSchema) + readUIMessageStream
    npm @ag-ui/client 1.0.0    ag-ui-run.mjs: HttpAgent.runAgent over a custom fetch
    PyPI openai 3.57.0         OpenAI(http_client=httpx.Client(transport=httpx.MockTransport(...)))

One node process per JavaScript client for the whole module (module-scoped fixtures).
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest
from openai.lib.streaming.chat import ChatCompletionStreamState

from conformance.rules.official import errors
from tests.channels import node_clients


def sse(*payloads: Any, done: bool = False) -> str:
    text = "".join(f"data: {json.dumps(payload)}\n\n" for payload in payloads)
    return text + ("data: [DONE]\n\n" if done else "")


# --- Vercel AI SDK UI message stream, read by npm `ai` ---------------------------------------------------------

UI_TEXT = [
    {"type": "start", "messageId": "msg-1"},
    {"type": "start-step"},
    {"type": "text-start", "id": "t1"},
    {"type": "text-delta", "id": "t1", "delta": "Hello"},
    {"type": "text-delta", "id": "t1", "delta": " world"},
    {"type": "text-end", "id": "t1"},
    {"type": "finish-step"},
    {"type": "finish", "finishReason": "stop"},
]
UI_SERVER_TOOL = [
    {"type": "start", "messageId": "msg-2"},
    {"type": "start-step"},
    {"type": "tool-input-start", "toolCallId": "c1", "toolName": "list_nodes", "providerExecuted": True},
    {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": '{"project": "p"}'},
    {
        "type": "tool-input-available",
        "toolCallId": "c1",
        "toolName": "list_nodes",
        "input": {"project": "p"},
        "providerExecuted": True,
    },
    {"type": "tool-output-available", "toolCallId": "c1", "output": {"nodes": []}, "providerExecuted": True},
    {"type": "finish-step"},
    {"type": "finish"},
]
UI_DYNAMIC_TOOL = [
    {"type": "start"},
    {"type": "tool-input-start", "toolCallId": "c1", "toolName": "x", "providerExecuted": True, "dynamic": True},
    {
        "type": "tool-input-available",
        "toolCallId": "c1",
        "toolName": "x",
        "input": {},
        "providerExecuted": True,
        "dynamic": True,
    },
    {"type": "tool-output-available", "toolCallId": "c1", "output": 1, "providerExecuted": True, "dynamic": True},
    {"type": "finish"},
]

UI_ACCEPTED: dict[str, str] = {
    "text": sse(*UI_TEXT, done=True),
    "heartbeat comments": ": heartbeat\n\n" + sse(*UI_TEXT[:4]) + ": heartbeat\n\n" + sse(*UI_TEXT[4:], done=True),
    "server-executed tool": sse(*UI_SERVER_TOOL, done=True),
    "dynamic server-executed tool": sse(*UI_DYNAMIC_TOOL, done=True),
    "abort then finish": sse(*UI_TEXT[:4], {"type": "abort"}, {"type": "finish"}, done=True),
    "no [DONE]": sse(*UI_TEXT),
}
UI_REJECTED: dict[str, tuple[str, str]] = {
    # name: (body, the error name ai reports)
    "text-delta before text-start": (
        sse({"type": "start"}, {"type": "text-delta", "id": "t1", "delta": "x"}),
        "AI_UIMessageStreamError",
    ),
    "text-end of another id": (
        sse({"type": "start"}, {"type": "text-start", "id": "t1"}, {"type": "text-end", "id": "t2"}),
        "AI_UIMessageStreamError",
    ),
    "tool-input-delta before tool-input-start": (
        sse({"type": "start"}, {"type": "tool-input-delta", "toolCallId": "c", "inputTextDelta": "{"}),
        "AI_UIMessageStreamError",
    ),
    "tool-output-available for an unknown call": (
        sse({"type": "start"}, {"type": "tool-output-available", "toolCallId": "nope", "output": 1}),
        "AI_UIMessageStreamError",
    ),
    "unknown chunk type": (sse({"type": "start"}, {"type": "bogus-chunk"}), "AI_TypeValidationError"),
    "unknown chunk type with data (the schema's z.custom hole)": (
        sse({"type": "start"}, {"type": "bogus-chunk", "data": 1}),
        "AI_TypeValidationError",
    ),
    "messageId null on start": (sse({"type": "start", "messageId": None}), "AI_TypeValidationError"),
    "text-delta without id": (
        sse({"type": "start"}, {"type": "text-start", "id": "t"}, {"type": "text-delta", "delta": "x"}),
        "AI_TypeValidationError",
    ),
    "invalid JSON": ("data: {not json\n\n", "AI_JSONParseError"),
    "error chunk": (sse({"type": "start"}, {"type": "error", "errorText": "boom"}), "Error"),
}


@pytest.fixture(scope="module")
def ui_results() -> dict[str, dict[str, Any]]:
    names = [*UI_ACCEPTED, *UI_REJECTED]
    bodies = [*UI_ACCEPTED.values(), *(body for body, _ in UI_REJECTED.values())]
    return dict(zip(names, node_clients.ui_read([{"body": body} for body in bodies]), strict=True))


@pytest.mark.parametrize("name", list(UI_ACCEPTED))
def test_ai_accepts(ui_results: dict[str, dict[str, Any]], name: str) -> None:
    result = ui_results[name]
    assert result["ok"], result["error"]
    assert result["message"]["role"] == "assistant"


def test_ai_assembles_what_it_read(ui_results: dict[str, dict[str, Any]]) -> None:
    text = ui_results["text"]["message"]
    assert text["id"] == "msg-1"
    assert text["parts"] == [{"type": "step-start"}, {"type": "text", "text": "Hello world", "state": "done"}]
    assert ui_results["heartbeat comments"]["message"] == text
    # providerExecuted without dynamic: a static `tool-<name>` part; with dynamic: true, a `dynamic-tool` part.
    (tool,) = [p for p in ui_results["server-executed tool"]["message"]["parts"] if p["type"] != "step-start"]
    assert tool == {
        "type": "tool-list_nodes",
        "toolCallId": "c1",
        "state": "output-available",
        "input": {"project": "p"},
        "output": {"nodes": []},
        "providerExecuted": True,
    }
    (dynamic,) = ui_results["dynamic server-executed tool"]["message"]["parts"]
    assert dynamic["type"] == "dynamic-tool" and dynamic["toolName"] == "x" and dynamic["state"] == "output-available"
    # abort + finish is accepted; the open text part is left as it was ("streaming").
    assert ui_results["abort then finish"]["message"]["parts"] == [
        {"type": "step-start"},
        {"type": "text", "text": "Hello", "state": "streaming"},
    ]


@pytest.mark.parametrize("name", list(UI_REJECTED))
def test_ai_rejects(ui_results: dict[str, dict[str, Any]], name: str) -> None:
    result = ui_results[name]
    assert not result["ok"], f"ai accepted a broken stream: {result['message']}"
    assert result["error"]["name"] == UI_REJECTED[name][1], result["error"]


def test_the_schema_hole_is_closed_by_the_real_client(ui_results: dict[str, dict[str, Any]]) -> None:
    """The JSON Schema cannot express the `data-` prefix (a z.custom predicate): it accepts the chunk, ai not."""
    assert errors("ai_ui_message_chunk", {"type": "bogus-chunk", "data": 1}) == []
    assert not ui_results["unknown chunk type with data (the schema's z.custom hole)"]["ok"]


# --- AG-UI, run by @ag-ui/client's HttpAgent ---------------------------------------------------------------------

RS = {"type": "RUN_STARTED", "threadId": "thread-1", "runId": "run-1"}
RF = {"type": "RUN_FINISHED", "threadId": "thread-1", "runId": "run-1"}
AG_TURN = [
    RS,
    {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "Hi"},
    {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
    {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "list_nodes", "parentMessageId": "m1"},
    {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": "{}"},
    {"type": "TOOL_CALL_END", "toolCallId": "c1"},
    {"type": "TOOL_CALL_RESULT", "messageId": "t1", "toolCallId": "c1", "content": "[]"},
    RF,
]
AG_ACCEPTED: dict[str, dict[str, Any]] = {
    "turn": {"body": sse(*AG_TURN)},
    "heartbeat comments": {"body": ": heartbeat\n\n" + sse(*AG_TURN[:3]) + ": heartbeat\n\n:\n\n" + sse(*AG_TURN[3:])},
    "RUN_ERROR (resolves the run)": {"body": sse(RS, {"type": "RUN_ERROR", "message": "boom", "code": "x"})},
}
AG_REJECTED: dict[str, tuple[dict[str, Any], str]] = {
    # name: (case, a fragment of the error message)
    "TEXT_MESSAGE_CONTENT before START": (
        {"body": sse(RS, {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "x"}, RF)},
        "No active text message found with ID 'm1'",
    ),
    "RUN_FINISHED while a tool call is open": (
        {"body": sse(RS, {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "s"}, RF)},
        "while tool calls are still active: c1",
    ),
    "first event not RUN_STARTED": (
        {"body": sse({"type": "TEXT_MESSAGE_START", "messageId": "m1"})},
        "First event must be 'RUN_STARTED'",
    ),
    "TEXT_MESSAGE_CONTENT without delta": (
        {
            "body": sse(
                RS, {"type": "TEXT_MESSAGE_START", "messageId": "m"}, {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m"}
            )
        },
        '"delta"',
    ),
    "events after RUN_FINISHED": (
        {"body": sse(RS, RF, {"type": "TEXT_MESSAGE_START", "messageId": "m1"})},
        "already finished",
    ),
    "CRLF framing": ({"body": sse(*AG_TURN).replace("\n", "\r\n")}, "JSON"),
    "data: [DONE]": ({"body": sse(*AG_TURN, done=True)}, "JSON"),
    "HTTP 401": (
        {"body": '{"error": {"message": "unauthorised"}}', "status": 401, "contentType": "application/json"},
        'HTTP 401: {"error":{"message":"unauthorised"}}',
    ),
}


@pytest.fixture(scope="module")
def ag_results() -> dict[str, dict[str, Any]]:
    common = {
        "threadId": "thread-1",
        "runId": "run-1",
        "messages": [{"id": "u1", "role": "user", "content": "list the nodes"}],
        "forwardedProps": {"projectId": "p"},
    }
    cases = {**AG_ACCEPTED, **{name: case for name, (case, _) in AG_REJECTED.items()}}
    results = node_clients.ag_ui_run([{**common, **case} for case in cases.values()])
    return dict(zip(cases, results, strict=True))


@pytest.mark.parametrize("name", list(AG_ACCEPTED))
def test_ag_ui_client_accepts(ag_results: dict[str, dict[str, Any]], name: str) -> None:
    result = ag_results[name]
    assert result["ok"], f"{result['error']}\n{result['stderr']}"
    assert result["events"][0]["type"] == "RUN_STARTED"


def test_ag_ui_client_applies_what_it_read(ag_results: dict[str, dict[str, Any]]) -> None:
    turn = ag_results["turn"]
    assert [e["type"] for e in turn["events"]] == [e["type"] for e in AG_TURN]
    assert ag_results["heartbeat comments"]["events"] == turn["events"]
    assert turn["messages"] == [
        {"id": "u1", "role": "user", "content": "list the nodes"},
        {
            "id": "m1",
            "role": "assistant",
            "content": "Hi",
            "toolCalls": [{"id": "c1", "type": "function", "function": {"name": "list_nodes", "arguments": "{}"}}],
        },
        {"id": "t1", "toolCallId": "c1", "role": "tool", "content": "[]"},
    ]
    assert turn["request"]["threadId"] == "thread-1" and turn["request"]["runId"] == "run-1"
    assert turn["request"]["forwardedProps"] == {"projectId": "p"}
    error_run = ag_results["RUN_ERROR (resolves the run)"]
    assert error_run["error"] is None and error_run["runError"]["message"] == "boom"


@pytest.mark.parametrize("name", list(AG_REJECTED))
def test_ag_ui_client_rejects(ag_results: dict[str, dict[str, Any]], name: str) -> None:
    result = ag_results[name]
    assert not result["ok"], f"@ag-ui/client accepted a broken stream: {[e['type'] for e in result['events']]}"
    assert AG_REJECTED[name][1] in result["error"]["message"], result["error"]


def test_ag_ui_client_reports_a_non_2xx_with_status_and_payload(ag_results: dict[str, dict[str, Any]]) -> None:
    error = ag_results["HTTP 401"]["error"]
    assert error["status"] == 401 and error["payload"] == {"error": {"message": "unauthorised"}}


# --- OpenAI, the official Python client --------------------------------------------------------------------------


def openai_client(body: str, status: int = 200) -> openai.OpenAI:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, headers={"content-type": "text/event-stream"}, content=body.encode())

    return openai.OpenAI(
        api_key="test",
        base_url="http://recorded.invalid/v1",
        max_retries=0,
        http_client=httpx.Client(transport=httpx.MockTransport(handler)),
    )


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "copilot",
        "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}],
    }


def tool_stream(index: bool) -> str:
    at = {"index": 0} if index else {}
    return sse(
        chunk({"role": "assistant", "content": ""}),
        chunk({"tool_calls": [{**at, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": ""}}]}),
        chunk({"tool_calls": [{**at, "function": {"arguments": '{"a": 1}'}}]}),
        chunk({}, "tool_calls"),
        done=True,
    )


def assemble(body: str) -> Any:
    state = ChatCompletionStreamState()
    for item in openai_client(body).chat.completions.create(model="copilot", messages=[], stream=True):
        state.handle_chunk(item)
    return state.get_final_completion()


def test_openai_client_accepts_a_valid_chat_stream() -> None:
    body = sse(chunk({"role": "assistant", "content": ""}), chunk({"content": "Hi"}), chunk({}, "stop"), done=True)
    assert assemble(body).choices[0].message.content == "Hi"
    (call,) = assemble(tool_stream(index=True)).choices[0].message.tool_calls
    assert (call.id, call.function.name, call.function.arguments) == ("call_1", "f", '{"a": 1}')


def test_openai_client_raises_on_an_error_chunk() -> None:
    body = sse(
        chunk({"content": "Hi"}), {"error": {"message": "boom", "type": "server_error", "param": None, "code": "x"}}
    )
    with pytest.raises(openai.APIError) as raised:
        list(openai_client(body).chat.completions.create(model="copilot", messages=[], stream=True))
    assert raised.value.message == "boom" and raised.value.code == "x" and raised.value.type == "server_error"


def test_openai_stream_state_crashes_on_a_tool_delta_without_index() -> None:
    with pytest.raises(TypeError, match="list indices must be integers"):
        assemble(tool_stream(index=False))


RESPONSE = {
    "id": "resp_1",
    "object": "response",
    "created_at": 1,
    "model": "copilot",
    "status": "in_progress",
    "output": [],
    "parallel_tool_calls": False,
    "tool_choice": "auto",
    "tools": [],
}


def responses_body(last: dict[str, Any], event_lines: bool) -> str:
    events = [{"type": "response.created", "sequence_number": 0, "response": RESPONSE}, last]
    if not event_lines:
        return sse(*events)
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)


@pytest.mark.parametrize("event_lines", [False, True], ids=["data-only", "with-event-lines"])
def test_openai_responses_stream_needs_no_event_lines_and_does_not_raise_on_failure(event_lines: bool) -> None:
    """The Responses stream is typed by the `type` in the data (`event:` lines are not read); `response.failed`
    and `error` arrive as ResponseFailedEvent / ResponseErrorEvent, not as an exception."""
    completed = {"type": "response.completed", "sequence_number": 1, "response": {**RESPONSE, "status": "completed"}}
    failed = {
        "type": "response.failed",
        "sequence_number": 1,
        "response": {**RESPONSE, "status": "failed", "error": {"code": "server_error", "message": "bad"}},
    }
    error = {"type": "error", "sequence_number": 1, "code": "server_error", "message": "boom", "param": None}
    seen = {}
    for name, last in {"completed": completed, "failed": failed, "error": error}.items():
        client = openai_client(responses_body(last, event_lines))
        seen[name] = [type(e).__name__ for e in client.responses.create(model="copilot", input="x", stream=True)]
    assert seen == {
        "completed": ["ResponseCreatedEvent", "ResponseCompletedEvent"],
        "failed": ["ResponseCreatedEvent", "ResponseFailedEvent"],
        "error": ["ResponseCreatedEvent", "ResponseErrorEvent"],
    }
    with openai_client(responses_body(completed, event_lines)).responses.stream(model="copilot", input="x") as stream:
        assert stream.get_final_response().status == "completed"
    with openai_client(responses_body(failed, event_lines)).responses.stream(model="copilot", input="x") as stream:
        with pytest.raises(RuntimeError, match="response.completed"):
            stream.get_final_response()


# --- UIMessage[]: the schema of ai_ui_messages.json and ai's own safeValidateUIMessages agree ---------------------

UI_MESSAGES: dict[str, tuple[Any, bool]] = {
    "user text": ([{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}], True),
    "assistant with a server tool": (
        [
            {
                "id": "a1",
                "role": "assistant",
                "parts": [
                    {"type": "step-start"},
                    {"type": "text", "text": "ok", "state": "done"},
                    {
                        "type": "tool-list_nodes",
                        "toolCallId": "c1",
                        "state": "output-available",
                        "input": {},
                        "output": [],
                        "providerExecuted": True,
                    },
                ],
            }
        ],
        True,
    ),
    "role tool": ([{"id": "x", "role": "tool", "parts": [{"type": "text", "text": "hi"}]}], False),
    "no parts": ([{"id": "x", "role": "user"}], False),
    "text part without text": ([{"id": "x", "role": "user", "parts": [{"type": "text"}]}], False),
    "empty list": ([], False),
    # A `.superRefine` of the package (a user message needs a part): marked by a "$comment", not in the schema.
    "user message without parts (the schema's .superRefine hole)": ([{"id": "x", "role": "user", "parts": []}], False),
}
SCHEMA_HOLES = {"user message without parts (the schema's .superRefine hole)"}


def test_ui_messages_schema_and_safe_validate_ui_messages_agree() -> None:
    results = node_clients.ui_validate([{"messages": messages} for messages, _ in UI_MESSAGES.values()])
    for (name, (messages, valid)), result in zip(UI_MESSAGES.items(), results, strict=True):
        assert result["ok"] is valid, f"{name}: {result['error']}"
        assert (errors("ai_ui_messages", messages) == []) is (valid or name in SCHEMA_HOLES), name
