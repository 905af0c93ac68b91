"""The stream of a turn: framing, events, grammar, tool calls, content, in-stream errors, heartbeats."""

from __future__ import annotations

import time

import httpx
import pytest

from conformance.harness.machine_load import stretched
from conformance.rules.stream_events import check_events
from fake_llm.scripts import parse_script

pytestmark = pytest.mark.anyio

SCRIPTS = ["plain", "tool-round-trip", "parallel-tools", "failing-tool", "llm-error", "mid-stream-error"]


@pytest.mark.covers(
    "FRAME-001",
    "FRAME-002",
    "FRAME-003",
    "FRAME-004",
    "EVENT-001",
    "EVENT-002",
    "EVENT-003",
    "EVENT-004",
    "STREAM-ORDER-001",
    "STREAM-ORDER-002",
    "STREAM-ORDER-003",
    "TOOLCALL-001",
    "TOOLCALL-002",
    "TOOLCALL-003",
    "TOOLCALL-004",
    "TOOLCALL-005",
    "TOOLCALL-006",
    "TOOLCALL-007",
    "PREFIX-001",
)
@pytest.mark.parametrize("script", SCRIPTS)
async def test_every_scripted_stream_obeys_the_stream_rules(lab, script):
    stream = await lab.stream(f"check [[fake-llm:{script}]]")
    assert stream.status == 200
    assert stream.headers["content-type"].startswith("text/event-stream")
    assert stream.headers["cache-control"] == "no-cache"
    assert stream.frame_violations == []
    assert [str(v) for v in check_events(stream.events)] == []
    assert all(event.get("session_id") == stream.session_id for event in stream.events)


@pytest.mark.covers("TOOLCALL-002", "TOOLCALL-003", "TOOLCALL-006")
async def test_parallel_calls_each_grow_and_complete_with_distinct_ids(lab):
    stream = await lab.stream("[[fake-llm:parallel-tools]]")
    calls: dict[str, list[str]] = {}
    for event in stream.events:
        if event["type"] == "tool_call":
            calls.setdefault(event["tool_call"]["id"], []).append(event["tool_call"]["function"]["arguments"])
    assert sorted(calls) == ["call_par_1", "call_par_2"]
    for arguments in calls.values():
        assert len(arguments) > 2 and all(b.startswith(a) for a, b in zip(arguments, arguments[1:], strict=False))
    assert calls["call_par_1"][-1] == '{"command":"show ip route","device":"R1"}'
    completes = [
        e["tool_call"]["id"]
        for e in stream.events
        if e["type"] == "tool_call" and e["tool_call"]["function"].get("complete")
    ]
    assert sorted(completes) == ["call_par_1", "call_par_2"]
    ends = {e["tool_call_id"]: e["tool_output"] for e in stream.events if e["type"] == "tool_end"}
    assert "R1 routing table" in ends["call_par_1"] and "R2 routing table" in ends["call_par_2"]


@pytest.mark.covers("TOOLCALL-008")
async def test_a_failing_tool_is_a_tool_result_and_the_turn_goes_on(lab):
    stream = await lab.stream("[[fake-llm:failing-tool]]")
    assert "error" not in stream.types
    end = next(e for e in stream.events if e["type"] == "tool_end")
    assert end["tool_name"] == "failing_tool" and "failed on purpose" in end["tool_output"]
    assert stream.content == "The tool failed; nothing was changed."
    history = await lab.history(stream.session_id)
    tool_message = next(m for m in history["messages"] if m["role"] == "tool")
    assert "failed on purpose" in tool_message["content"]


@pytest.mark.covers("TOOLCALL-008")
async def test_a_tool_that_raises_is_a_failed_tool_result_ended_by_its_tool_end(lab):
    """raising_tool raises a RuntimeError, not a ToolException: the tool node still makes it the call's result."""
    script = {
        "name": "raising-tool",
        "steps": [
            {
                "tool_calls": [{"id": "call_raise_1", "name": "raising_tool", "arguments": {"reason": "test"}}],
                "usage": {"input_tokens": 80, "output_tokens": 10},
            },
            {"text_chunks": ["It raised."], "usage": {"input_tokens": 120, "output_tokens": 3}},
        ],
        "title": {"text_chunks": ["Raising tool"], "usage": {"input_tokens": 25, "output_tokens": 2}},
    }
    lab.app.state.services.manager.models.library.add(parse_script(script, source="test"))
    stream = await lab.stream("[[fake-llm:raising-tool]]")
    assert "error" not in stream.types and stream.types[-1] == "done"
    starts = [e for e in stream.events if e["type"] == "tool_start"]
    ends = [e for e in stream.events if e["type"] == "tool_end"]
    assert [e["tool_call_id"] for e in starts] == [e["tool_call_id"] for e in ends] == ["call_raise_1"]
    assert "raised on purpose" in ends[0]["tool_output"]
    assert stream.content == "It raised."


@pytest.mark.covers("STREAM-CONTENT-001")
@pytest.mark.parametrize("script", ["plain", "tool-round-trip", "parallel-tools", "mid-stream-error"])
async def test_streamed_content_equals_the_assistant_text_added_to_history(lab, script):
    stream = await lab.stream(f"[[fake-llm:{script}]]")
    history = await lab.history(stream.session_id)
    added = "".join(m["content"] for m in history["messages"] if m["role"] == "assistant")
    assert stream.content == added


@pytest.mark.covers("ERRSTREAM-001", "ERRSTREAM-002", "PRECHECK-001")
@pytest.mark.parametrize("script", ["llm-error", "mid-stream-error"])
async def test_llm_failure_is_one_error_then_done_and_the_session_goes_on(lab, script):
    failed = await lab.stream(f"[[fake-llm:{script}]]", "err-session")
    assert failed.status == 200
    assert failed.types[-2:] == ["error", "done"] and failed.types.count("error") == 1
    assert failed.events[-2]["error"]
    after = await lab.stream("[[fake-llm:plain]]", "err-session")
    assert after.types[-1] == "done" and "error" not in after.types
    assert after.content == "The lab looks healthy."


@pytest.mark.covers("HEARTBEAT-001", "HEARTBEAT-002", "HEARTBEAT-003")
async def test_heartbeats_fill_silences_longer_than_the_interval(make_settings):
    from tests.reference_server.conftest import in_process_lab

    settings = make_settings(heartbeat_interval=0.5)
    async with in_process_lab(settings) as lab:
        url = f"{lab.prefix()}/stream"
        arrivals: list[tuple[float, str]] = []
        started = time.monotonic()
        async with lab.client.stream("POST", url, json={"message": "[[fake-llm:slow]]"}, headers=lab.headers) as r:
            async for line in r.aiter_lines():
                if line.startswith("data: "):
                    arrivals.append((time.monotonic() - started, line))
    kinds = [line.split('"type":"')[1].split('"')[0] for _, line in arrivals]
    assert kinds.count("heartbeat") >= 4, kinds  # 3 s of silence at a 0.5 s interval
    assert kinds[-1] == "done"
    gaps = [b[0] - a[0] for a, b in zip(arrivals, arrivals[1:], strict=False)]
    assert max(gaps) <= settings.heartbeat_interval + stretched(1.0)  # the slack longer on a busy machine


@pytest.mark.covers("HEARTBEAT-001")
async def test_no_heartbeat_when_events_keep_coming(lab):
    stream = await lab.stream("[[fake-llm:tool-round-trip]]")
    assert "heartbeat" not in stream.types


@pytest.mark.covers("PREFIX-001")
async def test_the_chat_prefix_is_a_setting(make_settings):
    from tests.reference_server.conftest import in_process_lab

    settings = make_settings(chat_prefix="/v3/copilot/projects/{project_id}/chat")
    async with in_process_lab(settings) as lab:
        stream = await lab.stream("[[fake-llm:plain]]")
        assert stream.types[-1] == "done"
        old = await lab.client.post(
            f"/v3/projects/{lab.project_id}/chat/stream", json={"message": "x"}, headers=lab.headers
        )
        assert old.status_code in (404, 405)


async def test_stream_over_a_real_socket(server_process):
    from tests.reference_server.conftest import Lab

    async with httpx.AsyncClient(base_url=server_process.base_url, timeout=30) as client:
        lab = await Lab(client).setup()
        stream = await lab.stream("[[fake-llm:parallel-tools]]")
        assert stream.frame_violations == [] and check_events(stream.events) == []
