"""The OpenAI rules of the suite (conformance/rules/openai.py, openai_responses.py): every golden stream of the
reference server passes with the ExpectedTurn of the script that recorded it (tools/record_channel_examples.py), and
each rule fails on a golden stream broken in that one way, under its own voice: the protocol's (OPENAI-PROTO-*) or
the contract's (OPENAI-00x)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance.channels.endpoints import STREAMING, ChannelAnswer
from conformance.rules import openai as rules_openai
from conformance.rules.expected import ExpectedTurn, expected_turn
from conformance.rules.openai_responses import judge_responses
from conformance.transport.exchanges import Exchange
from conformance.transport.sse import parse

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "spec" / "examples" / "channels"
SCRIPTS = {p.stem: yaml.safe_load(p.read_text()) for p in (ROOT / "fake_llm" / "scripts").glob("*.yaml")}
RECORDED_BY = {  # golden stream -> the fake-LLM script that recorded it (tools/record_channel_examples.py)
    "plain-answer": "plain",
    "tool-round-trip": "tool-round-trip",
    "parallel-tool-calls": "parallel-tools",
    "llm-error": "llm-error",
    "mid-stream-error": "mid-stream-error",
}
HEADERS = {"content-type": "text/event-stream; charset=utf-8"}
P, E = "plain-answer", "llm-error"


def golden(channel: str, name: str) -> str:
    return (EXAMPLES / channel / f"{name}.sse").read_text()


def expected(name: str) -> ExpectedTurn:
    return expected_turn(SCRIPTS, RECORDED_BY[name])


def answer(endpoint: str, body: str) -> ChannelAnswer:
    exchange = Exchange("POST", "http://target/openai/v1", "{}", status=200)
    return ChannelAnswer(STREAMING[endpoint], exchange, headers=HEADERS, sse=parse(body), completed=True, raw=body)


def chat(name: str, body: str | None = None) -> ChannelAnswer:
    return answer("openai_chat", golden("openai-chat", name) if body is None else body)


def responses(name: str, body: str | None = None) -> ChannelAnswer:
    return answer("openai_responses", golden("openai-responses", name) if body is None else body)


@pytest.mark.parametrize("name", RECORDED_BY)
def test_every_golden_chat_stream_passes(name: str):
    assert rules_openai.judge_chat(chat(name), expected(name)) == []
    assert rules_openai.judge_chat(chat(name), None) == []


@pytest.mark.parametrize("name", RECORDED_BY)
def test_every_golden_responses_stream_passes(name: str):
    assert judge_responses(responses(name), expected(name)) == []
    assert judge_responses(responses(name), None) == []


# --- broken Chat Completions streams --------------------------------------------------------------------------------


def chunks(name: str) -> list[Any]:
    """The data of every frame of a golden chat stream: chunk dicts, and "[DONE]"."""
    found = []
    for line in golden("openai-chat", name).split("\n"):
        if line.startswith("data: "):
            data = line[6:]
            found.append(data if data == "[DONE]" else json.loads(data))
    return found


def render(found: list[Any]) -> str:
    return "".join(f"data: {item if isinstance(item, str) else json.dumps(item)}\n\n" for item in found)


def broken(name: str, change: Callable[[list[Any]], Any]) -> ChannelAnswer:
    found = chunks(name)
    change(found)
    return chat(name, render(found))


def finish_index(found: list[Any]) -> int:
    return next(
        i for i, c in enumerate(found) if isinstance(c, dict) and (c.get("choices") or [{}])[0].get("finish_reason")
    )


CHAT_CASES: list[tuple[str, str, Callable[[], ChannelAnswer], str, str]] = [
    ("no [DONE]", P, lambda: broken(P, lambda f: f.pop()), "OPENAI-PROTO-002", "does not end with `data: [DONE]`"),
    ("a chunk after [DONE]", P, lambda: broken(P, lambda f: f.append(f[1])), "OPENAI-PROTO-002", "not the last frame"),
    ("a chunk without id", P, lambda: broken(P, lambda f: f[0].pop("id")), "OPENAI-PROTO-002", "has no id"),
    ("ids that differ", P, lambda: broken(P, lambda f: f[2].update(id="chatcmpl-other")), "OPENAI-PROTO-002", "differ"),
    ("a model that changes", P, lambda: broken(P, lambda f: f[1].update(model="other")), "OPENAI-002", "differ"),
    (
        "no role in the first delta",
        P,
        lambda: broken(P, lambda f: f[0]["choices"][0]["delta"].pop("role")),
        "OPENAI-002",
        "first delta",
    ),
    (
        "two finish chunks",
        P,
        lambda: broken(P, lambda f: f.insert(finish_index(f), dict(f[finish_index(f)]))),
        "OPENAI-PROTO-003",
        "2 finish chunks",
    ),
    (
        "a finish reason other than stop",
        P,
        lambda: broken(P, lambda f: f[finish_index(f)]["choices"][0].update(finish_reason="length")),
        "OPENAI-002",
        "with `stop`",
    ),
    ("no usage chunk", P, lambda: broken(P, lambda f: f.pop(-2)), "OPENAI-PROTO-004", "one usage chunk"),
    (
        "usage on a content chunk",
        P,
        lambda: broken(P, lambda f: f[1].update(usage=f[-2]["usage"])),
        "OPENAI-PROTO-004",
        "must be null",
    ),
    (
        "a tool call delta",
        P,
        lambda: broken(P, lambda f: f[1]["choices"][0]["delta"].update(tool_calls=[{"index": 0, "id": "c"}])),
        "OPENAI-002",
        "tool call delta",
    ),
    (
        "text that is not the script's",
        P,
        lambda: broken(P, lambda f: f[1]["choices"][0]["delta"].update(content="Other ")),
        "OPENAI-002",
        "deltas' text",
    ),
    (
        "a chunk that is no ChatCompletionChunk",
        P,
        lambda: broken(P, lambda f: f[1].update(object="chat.completion")),
        "OPENAI-PROTO-002",
        "not a ChatCompletionChunk",
    ),
    (
        "an error frame without its type",
        E,
        lambda: broken(E, lambda f: f[-2]["error"].pop("type")),
        "OPENAI-004",
        "the error frame: /error",
    ),
    (
        "an error frame then a finish chunk",
        E,
        lambda: broken(
            E, lambda f: f.insert(-1, {**f[0], "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        ),
        "OPENAI-004",
        "chunk after the error frame",
    ),
    (
        "another code than llm_error",
        E,
        lambda: broken(E, lambda f: f[-2]["error"].update(code="server_error")),
        "OPENAI-004",
        "not the turn's `llm_error`",
    ),
    ("no error frame in a failing turn", E, lambda: broken(E, lambda f: f.pop(-2)), "OPENAI-004", "no error frame"),
    (
        "an error type that is no string",
        E,
        lambda: broken(E, lambda f: f[-2]["error"].update(type=5)),
        "OPENAI-004",
        "the error frame: /error/type",
    ),
    (
        "an error frame with more than error",
        E,
        lambda: broken(E, lambda f: f[-2].update(id="x")),
        "OPENAI-004",
        "holds more than `error`",
    ),
    ("a second error frame", E, lambda: broken(E, lambda f: f.insert(-1, f[-2])), "OPENAI-004", "second error frame"),
    (
        "a tool call delta before its name",
        P,
        lambda: broken(
            P,
            lambda f: f[1]["choices"][0]["delta"].update(tool_calls=[{"index": 0, "function": {"arguments": "{}"}}]),
        ),
        "OPENAI-002",
        "before its name",
    ),
    (
        "a chunk without usage: null under include_usage",
        P,
        lambda: broken(P, lambda f: f[2].pop("usage")),
        "OPENAI-PROTO-004",
        "without `usage: null`",
    ),
    (
        "a second choice",
        P,
        lambda: broken(P, lambda f: f[1]["choices"].append({**f[1]["choices"][0], "index": 1})),
        "OPENAI-PROTO-002",
        "index 0",
    ),
    (
        "the usage chunk before the finish chunk",
        P,
        lambda: broken(P, lambda f: f.insert(finish_index(f), f.pop(-2))),
        "OPENAI-PROTO-004",
        "must end the chunks",
    ),
    (
        "content after the finish chunk",
        P,
        lambda: broken(P, lambda f: f.insert(finish_index(f) + 1, f.pop(finish_index(f) - 1))),
        "OPENAI-PROTO-003",
        "after its finish chunk",
    ),
]


@pytest.mark.parametrize(("case", "name", "make", "requirement", "words"), CHAT_CASES, ids=[c[0] for c in CHAT_CASES])
def test_each_chat_rule_fails_on_a_stream_broken_that_way(case, name, make, requirement, words):
    found = rules_openai.judge_chat(make(), expected(name))
    assert any(v.requirement == requirement and words in v.message for v in found), [str(v) for v in found]


def test_crlf_line_ends_and_event_lines_are_the_sse_format_s_in_a_chat_stream():
    """The `openai` client's SSE decoder reads CRLF and ignores an `event:` name (but `thread.*`): neither the
    protocol nor the contract (OPENAI-002) fixes them for Chat Completions. Responses frames are the contract's
    `event: <type>\ndata: <event>\n\n` (OPENAI-006)."""
    assert rules_openai.judge_chat(chat(P, golden("openai-chat", P).replace("\n", "\r\n")), expected(P)) == []
    tagged = golden("openai-chat", P).replace("data: [DONE]", "event: end\ndata: [DONE]")
    assert rules_openai.judge_chat(chat(P, tagged), expected(P)) == []
    found = judge_responses(responses(P, golden("openai-responses", P).replace("\n", "\r\n")), None)
    assert [v.requirement for v in found] == ["OPENAI-006"] and "not LF alone" in found[0].message


def test_a_usage_chunk_without_include_usage_is_refused():
    """ChatCompletionChunk.usage: "will only be present when you set stream_options: {"include_usage": true}"."""
    found = rules_openai.judge_chat(chat(P), None, include_usage=False)
    assert any(v.requirement == "OPENAI-PROTO-004" and "include_usage was not set" in v.message for v in found)
    without = broken(P, lambda f: (f.pop(-2), [c.pop("usage") for c in f if isinstance(c, dict)]))
    assert rules_openai.judge_chat(without, expected(P), include_usage=False) == []


def test_a_frame_with_an_event_but_no_data_is_refused():
    """The `openai` client dispatches it with empty data and fails to parse it as JSON."""
    found = rules_openai.judge_chat(
        chat(P, golden("openai-chat", P).replace("data: [DONE]", "event: x\n\ndata: [DONE]")), None
    )
    assert any(v.requirement == "OPENAI-PROTO-002" and "without data" in v.message for v in found)


# --- broken Responses streams -----------------------------------------------------------------------------------


def events(name: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in golden("openai-responses", name).split("\n") if line.startswith("data: ")]


def render_events(found: list[dict[str, Any]]) -> str:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in found)


def broken_events(name: str, change: Callable[[list[dict[str, Any]]], Any]) -> ChannelAnswer:
    found = events(name)
    change(found)
    return responses(name, render_events(found))


def renumber(found: list[dict[str, Any]]) -> None:
    for number, event in enumerate(found):
        event["sequence_number"] = number


RESPONSES_CASES: list[tuple[str, str, Callable[[], ChannelAnswer], str]] = [
    (
        "a gap in sequence_number",
        P,
        lambda: broken_events(P, lambda f: f[3].update(sequence_number=9)),
        "sequence_number",
    ),
    ("no response.completed", P, lambda: broken_events(P, lambda f: f.pop()), "the last event"),
    ("response.in_progress missing", P, lambda: broken_events(P, lambda f: (f.pop(1), renumber(f))), "does not open"),
    (
        "output_text.done that is not the deltas",
        P,
        lambda: broken_events(
            P, lambda f: next(e for e in f if e["type"] == "response.output_text.done").update(text="Other")
        ),
        "output_text.done has",
    ),
    (
        "completed without usage",
        P,
        lambda: broken_events(P, lambda f: f[-1]["response"].update(usage=None)),
        "carries no usage",
    ),
    (
        "a failed turn that completes",
        E,
        lambda: broken_events(E, lambda f: f[-1].update(type="response.completed")),
        "its script makes it",
    ),
    (
        "content_part.done that is not the deltas",
        P,
        lambda: broken_events(
            P, lambda f: next(e for e in f if e["type"] == "response.content_part.done")["part"].update(text="Other")
        ),
        "content_part.done has",
    ),
    (
        "a completed output that is not the deltas",
        P,
        lambda: broken_events(P, lambda f: f[-1]["response"]["output"][0]["content"][0].update(text="Other")),
        "a done message holds",
    ),
    (
        "a response id that changes",
        P,
        lambda: broken_events(P, lambda f: f[1]["response"].update(id="resp_other")),
        "more than one response id",
    ),
    (
        "an item id that changes",
        P,
        lambda: broken_events(
            P, lambda f: next(e for e in f if e["type"] == "response.output_text.delta").update(item_id="msg_other")
        ),
        "more than one message item",
    ),
    (
        "a second output index",
        P,
        lambda: broken_events(
            P, lambda f: next(e for e in f if e["type"] == "response.output_text.delta").update(output_index=1)
        ),
        "not (0, 0)",
    ),
    (
        "completed with another status",
        P,
        lambda: broken_events(P, lambda f: f[-1]["response"].update(status="incomplete")),
        "has the status",
    ),
    (
        "failed without an error message",
        E,
        lambda: broken_events(E, lambda f: f[-1]["response"].update(error=None)),
        "no response.error.message",
    ),
    (
        "a delta after output_text.done",
        P,
        lambda: broken_events(
            P,
            lambda f: (
                f.insert(-1, dict(next(e for e in f if e["type"] == "response.output_text.delta"), delta="")),
                renumber(f),
            ),
        ),
        "after output_text.done",
    ),
    (
        "two response.completed",
        P,
        lambda: broken_events(P, lambda f: (f.insert(-1, dict(f[-1])), renumber(f))),
        "not exactly one",
    ),
    (
        "an event line naming another type",
        P,
        lambda: responses(P, golden("openai-responses", P).replace("event: response.created", "event: created", 1)),
        "names another type",
    ),
]


# The contract's form of the stream (OPENAI-006); every other case breaks OpenAI's own rules (OPENAI-PROTO-009).
CONTRACT_CASES = {
    "response.in_progress missing",
    "completed without usage",
    "a failed turn that completes",
    "an item id that changes",
    "a second output index",
    "failed without an error message",
    "a delta after output_text.done",
}


@pytest.mark.parametrize(("case", "name", "make", "words"), RESPONSES_CASES, ids=[c[0] for c in RESPONSES_CASES])
def test_each_responses_rule_fails_on_a_stream_broken_that_way(case, name, make, words):
    found = judge_responses(make(), expected(name))
    requirement = "OPENAI-006" if case in CONTRACT_CASES else "OPENAI-PROTO-009"
    assert any(v.requirement == requirement and words in v.message for v in found), [str(v) for v in found]


GARBAGE = [
    "",
    "data: [DONE]\n\n",
    "data: not json\n\n",
    'data: {"choices": "x", "id": 1}\n\ndata: [DONE]\n\n',
    'data: {"choices": 5}\n\ndata: {"choices": [{"delta": {"tool_calls": "x"}}]}\n\n',
    'data: {"choices": [{"delta": {"tool_calls": [3, {"index": 0}]}}]}\n\ndata: {"error": "x"}\n\n',
    'data: {"error": {"message": "m", "type": "server_error", "param": null, "code": 1}}\n\ndata: [DONE]\n\n',
    'event: response.completed\ndata: {"type": "response.completed", "response": {"output": {"a": 1}}}\n\n',
    'event: x\ndata: {"type": "response.output_item.done", "item": [1], "part": 2, "response": 3}\n\n',
    'event: x\ndata: [1, 2]\n\ndata: "text"\n\n',
    "data: {}\r\n\r\ndata: {}",
]


@pytest.mark.parametrize("body", GARBAGE)
def test_the_rules_judge_any_body_without_raising(body: str):
    assert rules_openai.judge_chat(chat(P, body), expected(P)) != []
    assert rules_openai.judge_chat(chat(E, body), expected(E), include_usage=False) != []
    assert judge_responses(responses(P, body), expected(P)) != []
    assert judge_responses(responses(E, body), None) != []


def _with_tool_fragments(fragments: list[dict[str, Any]]) -> Callable[[list[Any]], None]:
    """Each fragment a chunk of its own before the finish chunk (as a server that streams its tool calls sends)."""

    def change(found: list[Any]) -> None:
        at = finish_index(found)
        for n, fragment in enumerate(fragments):
            chunk = json.loads(json.dumps(found[at]))
            chunk["choices"][0].update(delta={"tool_calls": [fragment]}, finish_reason=None)
            found.insert(at + n, chunk)

    return change


def _fragment(index: int, arguments: str, call_id: str | None = None, name: str | None = None) -> dict[str, Any]:
    fragment: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
    if call_id:
        fragment.update(id=call_id, type="function")
        fragment["function"]["name"] = name
    return fragment


def test_streamed_tool_calls_keep_one_index_per_call():
    """OPENAI-PROTO-002: the `openai` client merges tool call fragments by `index` and concatenates each index's
    strings (openai.lib.streaming._deltas.accumulate_delta): two calls on one index, a repeated id, or fragments that
    make no JSON break it. Sent at all, tool calls break the contract (OPENAI-002), never twice the protocol."""

    def proto(fragments: list[dict[str, Any]]) -> list[str]:
        found = rules_openai.judge_chat(broken(P, _with_tool_fragments(fragments)), None)
        assert any(v.requirement == "OPENAI-002" for v in found)  # the contract's server sends no tool call
        return [v.message for v in found if v.requirement == "OPENAI-PROTO-002"]

    right = [_fragment(0, "", "c1", "show"), _fragment(1, "", "c2", "show"), _fragment(0, '{"d":1}'),
             _fragment(1, '{"d":2}')]  # fmt: skip
    assert proto(right) == []
    one_index = [_fragment(0, '{"d":1}', "c1", "show"), _fragment(0, '{"d":2}', "c2", "show")]
    assert any("one index per call" in m for m in proto(one_index)), proto(one_index)
    repeated = [_fragment(0, '{"d":', "c1", "show"), _fragment(0, "1}", "c1", "show")]
    assert any("repeats its id or name" in m for m in proto(repeated)), proto(repeated)
    headless = [_fragment(0, '{"d":1}')]
    assert any("has no id or function.name" in m for m in proto(headless)), proto(headless)
