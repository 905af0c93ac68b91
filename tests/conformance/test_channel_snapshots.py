"""snapshot_text for the channels' protocols: two streams of the same turn that differ only in their ids and times
give the same text, each protocol's framing kept ([DONE] where it sends one, event: lines), an identity change
still shows."""

from __future__ import annotations

import json

import pytest

from conformance.reports.sse_snapshot import snapshot_text


def _sse(*frames: dict | str, event: str | None = None) -> str:
    out = []
    for frame in frames:
        data = frame if isinstance(frame, str) else json.dumps(frame)
        out.append((f"event: {event}\n" if event else "") + f"data: {data}\n\n")
    return ": heartbeat\n\n".join(out)


def _run(n: int) -> dict[str, str]:
    """One turn per protocol, its ids and times numbered `n`."""
    return {
        "openai_chat": _sse(
            {"id": f"chatcmpl-{n}", "created": 1700000000 + n, "choices": [{"delta": {"role": "assistant"}}]},
            {
                "id": f"chatcmpl-{n}",
                "created": 1700000000 + n,
                "choices": [{"delta": {"tool_calls": [{"id": f"c{n}"}]}}],
            },
            "[DONE]",
        ),
        "openai_responses": _sse(
            {"type": "response.created", "response": {"id": f"resp_{n}", "created_at": n, "metadata": {}}},
            {"type": "response.output_item.added", "item": {"id": f"fc_{n}", "call_id": f"call_{n}"}},
            event="response.created",
        ),
        "ui": _sse(
            {"type": "start", "messageId": f"m{n}"},
            {"type": "tool-input-start", "toolCallId": f"t{n}", "toolName": "get_topology"},
            {"type": "text-start", "id": f"x{n}"},
            "[DONE]",
        ),
        "ag_ui": _sse(
            {"type": "RUN_STARTED", "threadId": f"s{n}", "runId": f"r{n}", "timestamp": 1700000000000 + n},
            {"type": "TOOL_CALL_START", "toolCallId": f"t{n}", "parentMessageId": f"m{n}"},
            {"type": "RUN_FINISHED", "threadId": f"s{n}", "runId": f"r{n}"},
        ),
    }


@pytest.mark.parametrize("protocol", ["openai_chat", "openai_responses", "ui", "ag_ui"])
def test_two_runs_of_a_turn_snapshot_alike_with_the_protocol_s_framing(protocol):
    first, second = snapshot_text(_run(1)[protocol], protocol), snapshot_text(_run(2)[protocol], protocol)
    assert first == second
    assert "heartbeat" not in first and "1700000000" not in first
    assert first.rstrip().endswith("data: [DONE]") == (protocol in ("openai_chat", "ui"))
    assert ("event: response.created" in first) == (protocol == "openai_responses")


def test_a_changed_identity_still_shows():
    same = _sse({"type": "RUN_STARTED", "threadId": "s", "runId": "r"}, {"type": "RUN_FINISHED", "threadId": "s"})
    other = _sse({"type": "RUN_STARTED", "threadId": "s", "runId": "r"}, {"type": "RUN_FINISHED", "threadId": "t"})
    assert snapshot_text(same, "ag_ui") != snapshot_text(other, "ag_ui")
    assert '"threadId": "<threadId:2>"' in snapshot_text(other, "ag_ui")


def test_an_unknown_protocol_is_refused_with_the_known_ones():
    with pytest.raises(ValueError, match="gns3, openai_chat, openai_responses, ui, ag_ui"):
        snapshot_text("data: {}\n\n", "websocket")
