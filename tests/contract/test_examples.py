"""Golden streams conform; deliberately broken copies are rejected, each under the rule it breaks."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

import gns3_copilot_spec as spec
from conformance.rules.framing import parse_stream
from conformance.rules.stream_events import check_events

EXAMPLES = sorted(spec.EXAMPLES_DIR.glob("*.sse"))
REQUIRED_EXAMPLES = {"plain-answer", "tool-round-trip", "parallel-tool-calls", "llm-error", "heartbeat"}


def violations_of(body: str) -> list[str]:
    parsed = parse_stream(body)
    return [v.requirement for v in parsed.violations + check_events(parsed.events)]


def events_of(path: Path) -> list[dict]:
    return parse_stream(path.read_text()).events


def render(events: list[dict]) -> str:
    return "".join(f"data: {json.dumps(e)}\n\n" for e in events)


def test_every_required_example_exists():
    assert REQUIRED_EXAMPLES <= {p.stem for p in EXAMPLES}


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_golden_example_conforms(example: Path):
    assert events_of(example), "empty example"
    assert violations_of(example.read_text()) == []


# --- broken copies: (name, how to break the events, the rule that must catch it) ------------------------


def drop_done(events):
    return events[:-1]


def event_after_done(events):
    return events + [{"type": "content", "content": "late", "session_id": events[0]["session_id"]}]


def bad_type(events):
    return [{**events[0], "type": "thinking"}] + events[1:]


def two_errors(events):
    return events[:-1] + [events[-2], events[-1]]


def content_after_error(events):
    return events[:-1] + [{"type": "content", "content": "x", "session_id": events[0]["session_id"]}, events[-1]]


def done_without_session(events):
    return events[:-1] + [{"type": "done"}]


def two_session_ids(events):
    return events[:-1] + [{**events[-1], "session_id": "another-session"}]


def non_prefix_arguments(events):
    out = [dict(e) for e in events]
    second = next(i for i, e in enumerate(out) if e["type"] == "tool_call" and e["tool_call"]["function"]["arguments"])
    call = json.loads(json.dumps(out[second]))
    call["tool_call"]["function"]["arguments"] = "[not a prefix"
    out[second] = call
    return out


def never_complete(events):
    return [e for e in events if not (e["type"] == "tool_call" and e["tool_call"]["function"].get("complete"))]


def start_unknown_call(events):
    return [({**e, "tool_call_id": "call_nobody"} if e["type"] == "tool_start" else e) for e in events]


def end_before_start(events):
    starts = [e for e in events if e["type"] == "tool_start"]
    return [e for e in events if e["type"] != "tool_start"][:-1] + starts + [events[-1]]


def incomplete_json_arguments(events):
    out = json.loads(json.dumps(events))
    for e in out:
        if e["type"] == "tool_call" and e["tool_call"]["function"].get("complete"):
            e["tool_call"]["function"]["arguments"] = e["tool_call"]["function"]["arguments"][:-1]
    return out


BREAKS: list[tuple[str, Callable, str]] = [
    ("plain-answer", drop_done, "STREAM-ORDER-003"),
    ("plain-answer", event_after_done, "STREAM-ORDER-003"),
    ("plain-answer", bad_type, "EVENT-001"),
    ("plain-answer", bad_type, "STREAM-ORDER-001"),
    ("plain-answer", done_without_session, "EVENT-002"),
    ("plain-answer", two_session_ids, "EVENT-004"),
    ("llm-error", two_errors, "STREAM-ORDER-002"),
    ("llm-error", content_after_error, "STREAM-ORDER-002"),
    ("tool-round-trip", non_prefix_arguments, "TOOLCALL-002"),
    ("tool-round-trip", drop_done, "STREAM-ORDER-003"),
    ("tool-round-trip", never_complete, "TOOLCALL-003"),
    ("tool-round-trip", start_unknown_call, "TOOLCALL-004"),
    ("tool-round-trip", end_before_start, "TOOLCALL-005"),
    ("tool-round-trip", incomplete_json_arguments, "TOOLCALL-003"),
    ("parallel-tool-calls", non_prefix_arguments, "TOOLCALL-002"),
    ("parallel-tool-calls", event_after_done, "STREAM-ORDER-003"),
    ("parallel-tool-calls", bad_type, "EVENT-001"),
    ("heartbeat", drop_done, "STREAM-ORDER-003"),
    ("heartbeat", bad_type, "EVENT-001"),
]


@pytest.mark.parametrize(
    ("example", "breaker", "requirement"), BREAKS, ids=[f"{e}-{b.__name__}-{r}" for e, b, r in BREAKS]
)
def test_broken_copy_is_rejected(example: str, breaker: Callable, requirement: str):
    events = events_of(spec.EXAMPLES_DIR / f"{example}.sse")
    assert requirement in violations_of(render(breaker(events)))


@pytest.mark.parametrize(
    ("mutation", "requirement"),
    [
        (lambda body: body + "data: [DONE]\n\n", "FRAME-003"),
        (lambda body: body.replace("\n\n", "\r\n\r\n"), "FRAME-002"),
        (lambda body: "event: message\n" + body, "FRAME-002"),
        (lambda body: ": keep-alive\n\n" + body, "FRAME-002"),
        (lambda body: body.replace("data: ", "data:", 1), "FRAME-002"),
        (lambda body: body[:-1], "FRAME-002"),
        (lambda body: "data: {not json}\n\n" + body, "FRAME-003"),
    ],
    ids=["done-line", "crlf", "event-field", "comment", "no-space", "truncated", "not-json"],
)
def test_broken_framing_is_rejected(mutation: Callable[[str], str], requirement: str):
    body = (spec.EXAMPLES_DIR / "plain-answer.sse").read_text()
    assert violations_of(body) == []
    assert requirement in violations_of(mutation(body))


def test_a_call_cut_by_a_failed_generation_may_stay_incomplete():
    """TOOLCALL-003's exception: the generation failed before the arguments were whole, and the stream says so."""
    sid = "s-1"
    events = [
        {
            "type": "tool_call",
            "session_id": sid,
            "tool_call": {"id": "c1", "type": "function", "function": {"name": "t", "arguments": '{"a'}},
        },
        {"type": "error", "error": "the LLM failed", "session_id": sid},
        {"type": "done", "session_id": sid},
    ]
    assert check_events(events) == []
    assert [v.requirement for v in check_events([events[0], events[2]])] == ["TOOLCALL-003"]


def test_violations_name_the_event():
    events = events_of(spec.EXAMPLES_DIR / "tool-round-trip.sse")
    parsed = parse_stream(render(non_prefix_arguments(events)))
    found = [v for v in check_events(parsed.events) if v.requirement == "TOOLCALL-002"]
    assert found[0].index == 2 and "do not extend" in str(found[0])  # event 1 still extends ""
