"""The rules of the Vercel AI SDK UI message stream v1 (UI-002, UI-003), judged over one recorded answer.

`judge(answer, expected)` -> [Violation]: the headers and the frames (UI-002: `data: <chunk>\\n\\n`, each chunk valid
against the official `ai` chunk schema, `[DONE]` last), then the order and content of the chunks (UI-003: start with
its session, steps per generation, text and provider-executed tool parts opened and closed in order, an `error` chunk
for a failing turn, finish with the session and the usage). With the script's ExpectedTurn, each step's text and tool
calls (name and parsed input) are judged exact. What `ai` itself does not enforce (start/finish, `[DONE]`, the header,
parts left open) is judged here; the real client (real_clients.ui) judges the rest over the same body.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from conformance.rules import official
from conformance.rules.violations import Violation, short
from conformance.transport.exchanges import json_or_none
from conformance.transport.sse import INVALID

if TYPE_CHECKING:
    from conformance.channels.endpoints import ChannelAnswer
    from conformance.rules.expected import ExpectedTurn

FRAMES, CHUNKS = "UI-002", "UI-003"
HEADERS = {"x-vercel-ai-ui-message-stream": "v1", "x-accel-buffering": "no"}
# The chunk types UI-003's mapping sends, whose order the rules judge; another chunk type `ai` knows is left to the
# schema (the rule's text does not forbid it).
MAPPED = frozenset(
    {
        "start",
        "start-step",
        "text-start",
        "text-delta",
        "text-end",
        "tool-input-start",
        "tool-input-delta",
        "tool-input-available",
        "tool-input-error",
        "tool-output-available",
        "error",
        "abort",
        "finish-step",
        "finish",
    }
)
USAGE_KEYS = ("inputTokens", "outputTokens", "totalTokens")


def ident(value: Any) -> Any:
    """An id as a key: a broken chunk's id (an object, a list) as its JSON text, so that judging never crashes."""
    return value if isinstance(value, str | int | float | bool | None) else json.dumps(value, sort_keys=True)


def request_body(answer: ChannelAnswer) -> dict[str, Any]:
    body = json_or_none(answer.exchange.request_body or "")
    return body if isinstance(body, dict) else {}


def headers(answer: ChannelAnswer) -> list[Violation]:
    found = []
    content_type = answer.headers.get("content-type", "")
    if not content_type.startswith("text/event-stream"):
        found.append(Violation(FRAMES, f"the answer's content-type is {content_type!r}, not text/event-stream"))
    for name, value in HEADERS.items():
        if answer.headers.get(name) != value:
            found.append(Violation(FRAMES, f"the header {name} is {answer.headers.get(name)!r}, expected {value!r}"))
    directives = [d.strip().lower() for d in answer.headers.get("cache-control", "").split(",")]
    if "no-cache" not in directives:
        found.append(
            Violation(FRAMES, f"the header cache-control is {answer.headers.get('cache-control')!r}, not no-cache")
        )
    return found


def frames(answer: ChannelAnswer) -> list[Violation]:
    """Each frame one `data:` line of a valid chunk, LF line ends, `[DONE]` the last frame and nothing after it."""
    if answer.sse is None:
        return [Violation(FRAMES, f"the answer is no SSE stream: {answer.describe()}")]
    found = []
    odd_ends = sorted(answer.sse.line_ends - {"\n"})
    if odd_ends:
        found.append(Violation(FRAMES, f"frames must be `data: <chunk>\\n\\n`; the body has line ends {odd_ends}"))
    done = [frame.index for frame in answer.sse.frames if frame.is_done]
    for frame in answer.sse.frames:
        if frame.event is not None or frame.unknown_fields:
            fields = ([f"event: {frame.event}"] if frame.event is not None else []) + frame.unknown_fields
            found.append(Violation(FRAMES, f"a frame has fields besides data: {fields}", frame.index))
        if done and frame.index > done[0]:
            found.append(Violation(FRAMES, f"a frame follows data: [DONE]: {short(frame.raw)}", frame.index))
        if frame.is_comment or frame.is_done:
            continue
        chunk = frame.json()
        if chunk is INVALID or not isinstance(chunk, dict):
            found.append(Violation(FRAMES, f"the frame's data is not a JSON object: {short(frame.raw)}", frame.index))
            continue
        problems = official.errors("ai_ui_message_chunk", chunk)
        if problems:
            found.append(
                Violation(
                    FRAMES, f"the chunk {short(chunk)} is invalid for `ai`: {'; '.join(problems[:2])}", frame.index
                )
            )
    if not done:
        found.append(Violation(FRAMES, "the stream does not end with data: [DONE]"))
    elif len(done) > 1:
        found.append(Violation(FRAMES, f"data: [DONE] is sent {len(done)} times", done[1]))
    if answer.sse.unterminated.strip():
        found.append(Violation(FRAMES, f"the body ends in an unfinished frame: {short(answer.sse.unterminated)}"))
    return found


def chunks(answer: ChannelAnswer) -> list[tuple[int, dict[str, Any]]]:
    """(frame index, chunk) of every JSON object frame up to [DONE]."""
    found = []
    for frame in answer.sse.messages if answer.sse else []:
        if frame.is_done:
            break
        chunk = frame.json()
        if chunk is not INVALID and isinstance(chunk, dict):
            found.append((frame.index, chunk))
    return found


@dataclass
class _Tool:
    name: Any
    state: str = "input"  # input -> available -> output, or input -> error
    arguments: str = ""
    input: Any = None


@dataclass
class _Step:
    index: int
    text: str = ""
    tools: list[tuple[Any, Any]] = field(default_factory=list)  # (toolName, input), in tool-input-available order


def _usage_problem(usage: Any) -> str | None:
    if not isinstance(usage, dict):
        return f"no usage object: {short(usage)}"
    bad = [k for k in USAGE_KEYS if not (isinstance(usage.get(k), int) and not isinstance(usage.get(k), bool))]
    bad += [k for k in USAGE_KEYS if k not in bad and usage[k] < 0]
    return f"usage {short(usage)} lacks non-negative integers {bad}" if bad else None


class _Order:
    """The chunks walked once, in order, as the client would assemble them."""

    def __init__(self, answer: ChannelAnswer, expected: ExpectedTurn | None) -> None:
        self.answer, self.expected = answer, expected
        self.found: list[Violation] = []
        self.steps: list[_Step] = []
        self.step: _Step | None = None
        self.open_texts: set[str] = set()
        self.seen_texts: set[str] = set()
        self.tools: dict[str, _Tool] = {}
        self.ended_by: str | None = None  # "error" or "abort": only finish-step and finish may follow
        self.errors: list[tuple[int, dict[str, Any]]] = []
        self.session: Any = None

    def bad(self, message: str, index: int | None = None) -> None:
        self.found.append(Violation(CHUNKS, message, index))

    def run(self, found: list[tuple[int, dict[str, Any]]]) -> list[Violation]:
        if not found:
            self.bad("the stream has no chunk")
            return self.found
        self.start(*found[0])
        if len(found) < 2 or found[1][1].get("type") != "start-step":
            self.bad(f"start-step must follow start; got {[c.get('type') for _, c in found[1:2]]}")
        for position, (index, chunk) in enumerate(found):
            kind = chunk.get("type")
            if kind not in MAPPED:
                continue  # another chunk `ai` knows (reasoning, sources, data-*): valid (the schema), not in the rule
            if self.ended_by and kind not in ("finish-step", "finish"):
                self.bad(f"{kind} follows the {self.ended_by} chunk; only finish-step and finish may", index)
            if kind == "start" and position > 0:
                self.bad("a second start chunk", index)
            elif kind == "finish":
                self.finish(index, chunk, position == len(found) - 1, found[position - 1][1] if position else {})
            elif kind in ("start-step", "finish-step"):
                getattr(self, kind.replace("-", "_"))(index)
            elif kind in ("error", "abort"):
                self.ended(index, chunk, kind)
            elif kind.startswith("text-"):
                self.text(index, chunk, kind)
            elif kind.startswith("tool-"):
                self.tool(index, chunk, kind)
        if not any(c.get("type") == "finish" for _, c in found):
            self.bad(f"the stream never sends finish; it ends with {[c.get('type') for _, c in found[-3:]]}")
        if self.expected is not None:
            self.judge_expected()
        return self.found

    def start(self, index: int, chunk: dict[str, Any]) -> None:
        if chunk.get("type") != "start":
            self.bad(f"the first chunk is {short(chunk)}, not start", index)
            return
        if not isinstance(chunk.get("messageId"), str) or not chunk["messageId"]:
            self.bad(f"start has no messageId: {short(chunk)}", index)
        metadata = chunk.get("messageMetadata")
        self.session = metadata.get("sessionId") if isinstance(metadata, dict) else None
        if not isinstance(self.session, str) or not self.session:
            self.bad(f"start's messageMetadata has no sessionId: {short(chunk)}", index)
        asked = request_body(self.answer).get("id")
        if isinstance(asked, str) and self.session != asked:
            self.bad(f"start names the session {self.session!r}; the request's chat id was {asked!r}", index)

    def start_step(self, index: int) -> None:
        if self.step is not None:
            self.bad("start-step while a step is open", index)
        self.step = _Step(index)
        self.steps.append(self.step)

    def finish_step(self, index: int) -> None:
        if self.step is None:
            self.bad("finish-step without an open step", index)
        for text_id in sorted(self.open_texts):
            self.bad(f"the text part {text_id} is still open at finish-step", index)
        self.open_texts.clear()
        for call_id, tool in self.tools.items():
            if tool.state == "input":
                self.bad(f"the tool part {call_id} has no complete input at finish-step", index)
                tool.state = "error"
            elif tool.state == "available" and not self.ended_by:
                self.bad(f"the tool part {call_id} has no tool-output-available before finish-step", index)
                tool.state = "output"
        self.step = None

    def ended(self, index: int, chunk: dict[str, Any], kind: str) -> None:
        if kind == "error":
            self.errors.append((index, chunk))
            if not isinstance(chunk.get("errorText"), str) or not chunk["errorText"].strip():
                self.bad(f"the error chunk has no errorText: {short(chunk)}", index)
        if self.ended_by:
            self.bad(f"{kind} after {self.ended_by}", index)
        self.ended_by = self.ended_by or kind

    def text(self, index: int, chunk: dict[str, Any], kind: str) -> None:
        text_id = ident(chunk.get("id"))
        if self.step is None:
            self.bad(f"{kind} outside a step (no start-step before it)", index)
        if kind == "text-start":
            if text_id in self.seen_texts:
                self.bad(f"text-start reuses the id {text_id!r}", index)
            self.open_texts.add(text_id)
            self.seen_texts.add(text_id)
            return
        if text_id not in self.open_texts:
            self.bad(f"{kind} for the text part {text_id!r}, which is not open", index)
            return
        if kind == "text-delta":
            if isinstance(chunk.get("delta"), str) and self.step is not None:
                self.step.text += chunk["delta"]
        else:
            self.open_texts.discard(text_id)

    def tool(self, index: int, chunk: dict[str, Any], kind: str) -> None:
        call_id = ident(chunk.get("toolCallId"))
        tool = self.tools.get(call_id)
        if self.step is None:
            self.bad(f"{kind} outside a step (no start-step before it)", index)
        if kind != "tool-input-delta" and chunk.get("providerExecuted") is not True:
            self.bad(f"{kind} of {call_id!r} is not providerExecuted: true", index)
        if kind == "tool-input-start":
            if tool is not None:
                self.bad(f"a second tool-input-start of {call_id!r}", index)
            self.tools[call_id] = _Tool(chunk.get("toolName"))
            return
        want = {
            "tool-input-delta": "input",
            "tool-input-available": "input",
            "tool-input-error": "input",
            "tool-output-available": "available",
        }[kind]
        if tool is None or tool.state != want:
            state = "no tool-input-start" if tool is None else f"state {tool.state}"
            self.bad(f"{kind} of {call_id!r} out of order ({state}; expected {want})", index)
            return
        if kind == "tool-input-delta":
            tool.arguments += chunk["inputTextDelta"] if isinstance(chunk.get("inputTextDelta"), str) else ""
        elif kind == "tool-input-available":
            self.available(index, chunk, tool)
        elif kind == "tool-input-error":
            tool.state = "error"
        else:
            tool.state = "output"

    def available(self, index: int, chunk: dict[str, Any], tool: _Tool) -> None:
        call_id, tool.state, tool.input = ident(chunk.get("toolCallId")), "available", chunk.get("input")
        if chunk.get("toolName") != tool.name:
            self.bad(f"tool-input-available names {chunk.get('toolName')!r}; its start named {tool.name!r}", index)
        try:
            parsed = json.loads(tool.arguments)
        except ValueError:
            self.bad(f"the tool-input-deltas of {call_id!r} make {tool.arguments!r}, not JSON", index)
        else:
            if parsed != tool.input:
                self.bad(f"the deltas of {call_id!r} parse to {short(parsed)}; the input is {short(tool.input)}", index)
        if self.step is not None:
            self.step.tools.append((tool.name, tool.input))

    def finish(self, index: int, chunk: dict[str, Any], last: bool, before: dict[str, Any]) -> None:
        if not last:
            self.bad("chunks follow finish", index)
        if before.get("type") != "finish-step":
            self.bad(f"finish must follow finish-step; it follows {before.get('type')!r}", index)
        metadata = chunk.get("messageMetadata")
        metadata = metadata if isinstance(metadata, dict) else {}
        if metadata.get("sessionId") != self.session or self.session is None:
            self.bad(f"finish names the session {metadata.get('sessionId')!r}; start named {self.session!r}", index)
        problem = _usage_problem(metadata.get("usage"))
        if problem:
            self.bad(f"finish's messageMetadata has {problem}", index)

    def judge_expected(self) -> None:
        expected = self.expected
        assert expected is not None
        if expected.fails and len(self.errors) != 1:
            self.bad(f"the turn fails ({expected.failure!r}): expected one error chunk, got {len(self.errors)}")
        if not expected.fails and self.errors:
            index, chunk = self.errors[0]
            self.bad(f"an error chunk in a turn that does not fail: {short(chunk)}", index)
        if len(self.steps) != len(expected.generations):
            self.bad(
                f"{len(self.steps)} steps (start-step ... finish-step) for {len(expected.generations)} generations "
                f"of the script {expected.script}"
            )
        for number, (step, generation) in enumerate(zip(self.steps, expected.generations, strict=False)):
            if step.text != generation.text:
                self.bad(
                    f"step {number} streams the text {step.text!r}; its generation {generation.text!r}", step.index
                )
            want = [(call.name, call.arguments) for call in generation.tool_calls]
            if step.tools != want:
                self.bad(
                    f"step {number} has the tool calls {short(step.tools)}; its generation {short(want)}", step.index
                )


def order(answer: ChannelAnswer, expected: ExpectedTurn | None = None) -> list[Violation]:
    return _Order(answer, expected).run(chunks(answer))


def judge(answer: ChannelAnswer, expected: ExpectedTurn | None = None) -> list[Violation]:
    """Every violation of UI-002 and UI-003 in one recorded answer (its content exact when `expected` is given)."""
    if answer.sse is None:
        return headers(answer) + frames(answer)
    return headers(answer) + frames(answer) + order(answer, expected)
