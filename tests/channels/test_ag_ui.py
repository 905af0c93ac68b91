"""The AG-UI channel (AGUI-001..003): the translator alone, then a live server run by `@ag-ui/client`'s
`HttpAgent` (its SSE parser, `verifyEvents` and message assembly), every event checked against `@ag-ui/core`'s
official event schema (spec/channels/official/ag_ui_event.json)."""

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
from reference_server.channels.ag_ui import AgUiStream
from reference_server.channels.ui_stream import TurnOutcome
from tools.channel_requests import ag_ui

from .conftest import LiveLab
from .node_clients import ag_ui_run
from .test_ui import ARGS, DONE, ONE_CHUNK_TURN, TOOL_TURN, WHOLE_CALL_TURN, call, text, tool_end

CHANNEL = CHANNEL_PATHS["ag_ui"]  # the channel under the chat prefix (CHANNEL-001)
USAGE = TurnOutcome(300, 25)
USER = {"id": "u1", "role": "user", "content": "the topology?"}


def render(batches: list[list[dict]], outcome: TurnOutcome = USAGE) -> str:
    stream = AgUiStream(thread_id="t1", run_id="r1", outcome=lambda: outcome)
    return stream.opening() + "".join(stream.feed(batch) for batch in batches)


def events(body: str) -> list[dict[str, Any]]:
    """Every event of an AG-UI stream, each checked against the official schema (AGUI-002): LF framing only,
    no `[DONE]`, heartbeats as comments (CHANNEL-007), no nulls."""
    assert body.endswith("\n\n") and "\r" not in body and "[DONE]" not in body
    found = []
    for frame in body[:-2].split("\n\n"):
        if frame == ": heartbeat":
            continue
        assert frame.startswith("data: ") and "\n" not in frame, frame
        event = json.loads(frame[6:])
        assert errors("ag_ui_event", event) == [], event
        assert "null" not in json.dumps(event), event
        found.append(event)
    return found


def types(found: list[dict[str, Any]]) -> list[str]:
    return [event["type"] for event in found]


def recorded(body: str, **case: Any) -> dict[str, Any]:
    return {"body": body, "threadId": "t1", "runId": "r1", "messages": [USER], **case}


# --- The translator alone (AGUI-002, AGUI-003) ---


@pytest.mark.covers("AGUI-002", "AGUI-003", "CHANNEL-007", "CHANNEL-008")
@pytest.mark.covers("AGUI-PROTO-001", "AGUI-PROTO-002", "AGUI-PROTO-003", "AGUI-PROTO-004", "AGUI-PROTO-005")
def test_a_tool_turn_is_a_run_that_the_official_client_accepts():
    body = render(TOOL_TURN)
    assert ": heartbeat\n\n" in body
    found = events(body)
    assert types(found) == [
        "RUN_STARTED",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_RESULT",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    assert found[0] == {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"}
    assert "".join(e["delta"] for e in found if e["type"] == "TOOL_CALL_ARGS") == '{"detail":"summary"}'
    assert found[6]["role"] == "tool" and found[6]["toolCallId"] == "call_1"
    assert found[7]["role"] == "assistant"
    assert found[-1] == {
        "type": "RUN_FINISHED",
        "threadId": "t1",
        "runId": "r1",
        "usage": [{"inputTokens": 300, "outputTokens": 25, "totalTokens": 325}],
    }

    result = ag_ui_run([recorded(body)])[0]
    assert result["ok"], (result["error"], result["stderr"])
    assert types(result["events"]) == types(found)
    assert [(m["role"], m.get("content"), m.get("toolCalls")) for m in result["messages"]] == [
        ("user", "the topology?", None),
        (
            "assistant",
            None,
            [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_topology", "arguments": '{"detail":"summary"}'},
                }
            ],
        ),
        ("tool", '{"nodes": 2}', None),
        ("assistant", "The topology has two routers.", None),
    ]


@pytest.mark.covers("AGUI-002", "AGUI-003", "CHANNEL-009", "CHANNEL-010")
@pytest.mark.covers("AGUI-PROTO-002", "AGUI-PROTO-003", "AGUI-PROTO-004", "AGUI-PROTO-005")
def test_errors_aborts_parallel_and_cut_calls_end_the_run_with_everything_closed():
    failed = render([[text("Let me check")], [{"type": "error", "error": "upstream reset", "code": "llm_error"}, DONE]])
    aborted = render([[text("Sorry for")], [DONE]], TurnOutcome(60, 10, aborted=True))
    cut = render([[text("Checking."), call('{"dev')], [DONE]], TurnOutcome(5, 1, aborted=True))
    parallel = render(
        [
            [text("Both."), call("", call_id="a", name="show"), call("", call_id="b", name="show")],
            [call('{"d":1}', call_id="a", name="show"), call('{"d":2}', call_id="b", name="show")],
            [call('{"d":1}', True, "a", "show"), call('{"d":2}', True, "b", "show")],
            [tool_end("one", "a", "show"), tool_end("two", None, "show")],  # an end without its id: the oldest call
            [text("Done.")],
            [DONE],
        ]
    )
    failed_events = events(failed)
    assert types(failed_events)[-2:] == ["TEXT_MESSAGE_END", "RUN_ERROR"]  # nothing follows RUN_ERROR
    assert failed_events[-1] == {
        "type": "RUN_ERROR",
        "message": "upstream reset",
        "code": "llm_error",
        "usage": [{"inputTokens": 300, "outputTokens": 25, "totalTokens": 325}],
    }
    aborted_events = events(aborted)
    assert types(aborted_events)[-2:] == ["TEXT_MESSAGE_END", "RUN_FINISHED"]
    assert aborted_events[-1]["outcome"] == {"type": "cancelled"}
    assert aborted_events[-1]["usage"] == [{"inputTokens": 60, "outputTokens": 10, "totalTokens": 70}]
    assert types(events(cut))[-4:] == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "RUN_FINISHED"]
    results = {e["toolCallId"]: e["content"] for e in events(parallel) if e["type"] == "TOOL_CALL_RESULT"}
    assert results == {"a": "one", "b": "two"}

    run_failed, run_aborted, run_cut, run_parallel = ag_ui_run(
        [recorded(failed), recorded(aborted), recorded(cut), recorded(parallel)]
    )
    assert run_failed["ok"] and run_failed["runError"]["message"] == "upstream reset"  # RUN_ERROR resolves the run
    for result in (run_aborted, run_cut, run_parallel):
        assert result["ok"], (result["error"], result["stderr"])
    assistant = next(m for m in run_parallel["messages"] if m.get("toolCalls"))
    assert assistant["content"] == "Both." and [c["id"] for c in assistant["toolCalls"]] == ["a", "b"]
    assert [m["role"] for m in run_parallel["messages"]] == ["user", "assistant", "tool", "tool", "assistant"]


@pytest.mark.covers("AGUI-PROTO-006")
def test_calls_whole_or_several_in_one_chunk_are_each_streamed_with_their_arguments_before_any_result():
    """A call whose first delta holds its whole arguments still gets its TOOL_CALL_ARGS; several calls of one chunk
    are all started, given their arguments and ended before the first result (the shapes ag-ui-langgraph 0.0.47
    breaks: ag-ui issues 2463, 871 and 1016)."""
    whole, one_chunk = render(WHOLE_CALL_TURN), render(ONE_CHUNK_TURN)
    whole_events = events(whole)
    assert types(whole_events)[1:4] == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END"]
    assert whole_events[2]["delta"] == ARGS
    found = events(one_chunk)
    first_result = types(found).index("TOOL_CALL_RESULT")
    for call_id, arguments in (("a", '{"d":1}'), ("b", '{"d":2}')):
        mine = [(n, e) for n, e in enumerate(found) if e.get("toolCallId") == call_id and n < first_result]
        assert [e["type"] for _, e in mine] == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END"], mine
        assert mine[1][1]["delta"] == arguments
    read_whole, read_chunk = ag_ui_run([recorded(whole), recorded(one_chunk)])
    calls = [c["function"] for m in read_chunk["messages"] for c in m.get("toolCalls") or []]
    assert calls == [{"name": "show", "arguments": '{"d":1}'}, {"name": "show", "arguments": '{"d":2}'}]
    assert [c["function"]["arguments"] for m in read_whole["messages"] for c in m.get("toolCalls") or []] == [ARGS]


# --- A live server (AGUI-001..003) ---


def post(live: LiveLab, body: dict, token: str | None = None) -> httpx.Response:
    return live.client.post(live.url(CHANNEL), json=body, headers={"Authorization": f"Bearer {token or live.token}"})


def tokens(live: LiveLab, session_id: str) -> tuple[int, int]:
    session = live.sessions().get(session_id)
    return (session["input_tokens"], session["output_tokens"]) if session else (0, 0)


@pytest.mark.covers(
    "AGUI-001", "AGUI-002", "AGUI-003", "CHANNEL-002", "CHANNEL-008", "AGUI-PROTO-001", "AGUI-PROTO-007"
)
def test_http_agent_runs_live_tool_turns_and_the_usage_is_the_sessions_increase(live: LiveLab):
    thread = f"agui-{uuid.uuid4().hex[:8]}"
    first_user = {"id": "u1", "role": "user", "content": "the topology? [[fake-llm:tool-round-trip]]"}
    # The second run is what the agent sends after the first: its own copy of the conversation, then the new
    # message (the server keeps the conversation, CHANNEL-004); the text comes as content parts this time.
    earlier = [first_user, {"id": "a1", "role": "assistant", "content": "The topology has two routers."}]
    second_user = {
        "id": "u2",
        "role": "user",
        "content": [{"type": "text", "text": "again [[fake-llm:tool-round-trip]]"}],
    }
    base = {"url": live.url(CHANNEL), "headers": live.headers, "threadId": thread}
    # The first run carries a state, context entries and forwardedProps the server does not read: run all the same
    # (AGUI-PROTO-007); the temperature among the props is the contract's (AGUI-001).
    unread = {
        "state": {"selectedRouter": "r1"},
        "context": [{"description": "the user's locale", "value": "en-GB"}],
        "forwardedProps": {"temperature": 0.5, "theme": "dark"},
    }
    first, second = ag_ui_run(
        [
            {**base, "runId": "run-1", "messages": [first_user], **unread},
            {**base, "runId": "run-2", "messages": [*earlier, second_user]},
        ]
    )
    assert first["request"]["state"] == unread["state"] and first["request"]["context"] == unread["context"]
    usages = []
    for result, run_id in ((first, "run-1"), (second, "run-2")):
        assert result["ok"], (result["error"], result["stderr"])
        assert "Warning" not in result["stderr"] and "warn" not in result["stderr"].lower(), result["stderr"]
        assert result["status"] == 200 and result["headers"]["x-copilot-session-id"] == thread
        assert errors("ag_ui_run_agent_input", result["request"]) == []  # what the real client sends
        for event in result["events"]:
            assert errors("ag_ui_event", event) == [], event
        assert result["events"][0] == {"type": "RUN_STARTED", "threadId": thread, "runId": run_id}
        finished = result["events"][-1]
        assert finished["type"] == "RUN_FINISHED" and (finished["threadId"], finished["runId"]) == (thread, run_id)
        usages.append(finished["usage"][0])
        new = [
            (m["role"], m.get("content"), [c["id"] for c in m.get("toolCalls") or []]) for m in result["newMessages"]
        ]
        assert new == [
            ("assistant", None, ["call_rt_1"]),
            ("tool", new[1][1], []),
            ("assistant", "The topology has two routers.", []),
        ]
    session = live.session(thread)
    assert sum(u["inputTokens"] for u in usages) == session["input_tokens"]
    assert sum(u["outputTokens"] for u in usages) == session["output_tokens"]
    assert all(u["totalTokens"] == u["inputTokens"] + u["outputTokens"] for u in usages)
    history = live.history(thread)
    assert [m["content"] for m in history if m["role"] == "user"] == [
        "the topology? [[fake-llm:tool-round-trip]]",
        "again [[fake-llm:tool-round-trip]]",
    ]
    assert next(m for m in history if m["role"] == "tool")["content"] == first["newMessages"][1]["content"]


@pytest.mark.covers("AGUI-002", "AGUI-003", "CHANNEL-005", "CHANNEL-007", "CHANNEL-009", "CONCURRENCY-001")
def test_a_busy_thread_is_refused_then_an_abort_finishes_the_run_as_cancelled(live: LiveLab):
    thread = f"agui-slow-{uuid.uuid4().hex[:8]}"
    _, body = ag_ui(thread, "wait [[fake-llm:slow]]")
    received = ""
    with live.client.stream("POST", live.url(CHANNEL), json=body, headers=live.headers) as running:
        assert running.status_code == 200 and running.headers["x-copilot-session-id"] == thread
        chunks = running.iter_text()
        received += next(chunks)
        refused = post(live, ag_ui(thread, "me too [[fake-llm:plain]]")[1])
        assert refused.status_code == 409 and refused.json()["code"] == "session_busy"
        assert refused.headers["content-type"].startswith("application/json")
        while received.count(": heartbeat") < 2:
            received += next(chunks)
        assert live.client.post(live.url(f"/sessions/{thread}/abort"), headers=live.headers).status_code == 200
        started = time.monotonic()
        received += "".join(chunks)
        assert time.monotonic() - started < stretched(5)  # the test's own bound, longer on a busy machine
    found = events(received)
    assert found[0]["type"] == "RUN_STARTED" and found[-1]["type"] == "RUN_FINISHED"
    assert found[-1]["outcome"] == {"type": "cancelled"}
    assert found[-1]["usage"][0]["inputTokens"] == tokens(live, thread)[0]
    result = ag_ui_run([recorded(received, threadId=thread)])[0]
    assert result["ok"], (result["error"], result["stderr"])


@pytest.mark.covers("AGUI-003", "CHANNEL-010")
def test_an_llm_error_ends_the_run_with_run_error(live: LiveLab):
    thread = f"agui-err-{uuid.uuid4().hex[:8]}"
    result = ag_ui_run(
        [{"url": live.url(CHANNEL), "headers": live.headers, "threadId": thread, "messages": [
            {"id": "u1", "role": "user", "content": "fail [[fake-llm:llm-error]]"}
        ]}]
    )[0]  # fmt: skip
    assert result["ok"], result["error"]  # RUN_ERROR resolves runAgent
    assert result["events"][-1]["type"] == "RUN_ERROR" and result["runError"]["code"] == "llm_error"
    assert result["runError"]["message"]
    assert live.session(thread)["message_count"] == len(live.history(thread)) >= 1


@pytest.mark.covers("AGUI-001", "CHANNEL-004", "CHANNEL-005", "CHANNEL-006")
def test_refusals(live: LiveLab):
    thread = f"agui-new-{uuid.uuid4().hex[:8]}"
    _, body = ag_ui(thread, "hello [[fake-llm:plain]]")
    user = body["messages"][0]
    assistant = {"id": "a", "role": "assistant", "content": "earlier"}
    tool = {"name": "confirm", "description": "Ask the user", "parameters": {"type": "object"}}

    def code(response: httpx.Response) -> tuple[int, str]:
        return response.status_code, response.json()["code"]

    assert code(post(live, {**body, "tools": [tool]})) == (422, "client_tools_not_supported")
    assert code(post(live, {**body, "messages": [user, assistant, user]})) == (422, "unknown_conversation")
    assert code(post(live, {**body, "messages": [user, assistant]})) == (422, "validation_error")
    assert code(post(live, {**body, "messages": []})) == (422, "validation_error")
    assert code(post(live, {**body, "forwardedProps": {"temperature": 2.5}})) == (422, "validation_error")
    assert code(post(live, {**body, "forwardedProps": {"temperature": "hot"}})) == (422, "validation_error")
    without_run = {k: v for k, v in body.items() if k != "runId"}
    assert code(post(live, without_run)) == (422, "validation_error")
    assert code(post(live, {**body, "messages": [{**user, "content": ""}]})) == (422, "validation_error")
    assert code(post(live, {**body, "threadId": "not a session id"})) == (422, "validation_error")
    assert thread not in live.sessions()
    # The official client sees the refusal as a failed run with the status and the contract's body.
    refused = ag_ui_run([{"url": live.url(CHANNEL), "headers": live.headers, "threadId": thread, "tools": [tool]}])[0]
    assert not refused["ok"] and refused["status"] == 422, refused["error"]
