"""The contract's rules of the UI message stream channel (UI-002, UI-003), judged over one recorded answer, after
the protocol's own rules (UI-PROTO-001..004, conformance/rules/ui_protocol.py).

`judge(answer, expected)` -> [Violation]: the protocol's rules, then what the contract adds: the headers
`cache-control: no-cache` and `x-accel-buffering: no` and each chunk one `data:` frame with LF line ends (UI-002),
and the contract's mapping of a turn onto the chunks (UI-003: start with its session, a step per generation, text
and provider-executed tool parts opened and closed in order, an `error` chunk for a failing turn, finish with the
session and the usage). With the script's ExpectedTurn, each step's text and tool calls (name and parsed input) are
judged exact. What the protocol itself refuses (an id no start opened, a call never announced, an invalid chunk) is
ui_protocol's to report, never worded here as the contract's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from conformance.rules import ui_protocol
from conformance.rules.expected import calls_by_generation
from conformance.rules.ui_protocol import NEEDS_TOOL_PART, ident
from conformance.rules.violations import Violation, short
from conformance.transport.exchanges import json_or_none

if TYPE_CHECKING:
    from conformance.channels.endpoints import ChannelAnswer
    from conformance.rules.expected import ExpectedTurn

__all__ = ["ident", "judge", "request_body"]  # ident: rules/ag_ui.py's too

FRAMES, CHUNKS = "UI-002", "UI-003"
RULES = frozenset({FRAMES, CHUNKS})
HEADERS = {"x-accel-buffering": "no"}  # and cache-control: no-cache (UI-002), its directives judged apart
# The chunk types whose order UI-003's mapping judges; another chunk type `ai` knows (reasoning, sources, data-*)
# is left to the protocol's rules (the contract's text does not forbid it).
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
        "tool-output-error",
        "tool-output-denied",
        "tool-approval-request",
        "error",
        "abort",
        "finish-step",
        "finish",
    }
)
USAGE_KEYS = ("inputTokens", "outputTokens", "totalTokens")


def request_body(answer: ChannelAnswer) -> dict[str, Any]:
    body = json_or_none(answer.exchange.request_body or "")
    return body if isinstance(body, dict) else {}


def headers(answer: ChannelAnswer) -> list[Violation]:
    """UI-002: what the contract's stream adds to the protocol's headers (UI-PROTO-001 judges the content-type and
    x-vercel-ai-ui-message-stream)."""
    found = []
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
    """UI-002: each chunk one frame `data: <chunk>\\n\\n`, LF line ends (SSE itself allows CR and CRLF and other
    fields; the protocol's rules judge the chunks and [DONE])."""
    if answer.sse is None:
        return []
    found = []
    odd_ends = sorted(answer.sse.line_ends - {"\n"})
    if odd_ends:
        found.append(Violation(FRAMES, f"frames must be `data: <chunk>\\n\\n`; the body has line ends {odd_ends}"))
    for frame in answer.sse.frames:
        if frame.event is not None or frame.unknown_fields:
            fields = ([f"event: {frame.event}"] if frame.event is not None else []) + frame.unknown_fields
            found.append(Violation(FRAMES, f"a frame has fields besides data: {fields}", frame.index))
    return found


@dataclass
class _Tool:
    name: Any
    state: str = "input"  # input -> available -> output, or input -> error (output: closed, however it was)
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
        self.announced: set[Any] = set()  # the calls a tool-input-start, -available or -error announced
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
                self.bad(f"the tool part {call_id} is still open at finish-step: neither tool-input-available nor "
                         "tool-input-error closed its input", index)  # fmt: skip
                tool.state = "error"
            elif tool.state in ("available", "approval-requested") and not self.ended_by:
                self.bad(f"the tool part {call_id} has its input but no tool-output-available before finish-step",
                         index)  # fmt: skip
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
            return  # a delta or end of no open part: the protocol's own rule (UI-PROTO-002) reports it
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
        announced = call_id in self.announced
        if kind in ("tool-input-start", "tool-input-available", "tool-input-error"):
            self.announced.add(call_id)
        if kind == "tool-input-start":
            if tool is not None:
                self.bad(f"a second tool-input-start of {call_id!r}", index)
            self.tools[call_id] = _Tool(chunk.get("toolName"))
            return
        if tool is None and (kind == "tool-input-delta" or (kind in NEEDS_TOOL_PART and not announced)):
            return  # a call the protocol itself never saw announced: its own rule (UI-PROTO-003) reports it
        if kind in ("tool-output-error", "tool-output-denied", "tool-approval-request"):
            self.other_end(index, chunk, kind, tool)
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

    def other_end(self, index: int, chunk: dict[str, Any], kind: str, tool: _Tool | None) -> None:
        """A tool part ended otherwise than UI-003 maps a tool's end: `tool-output-error` and `tool-output-denied`
        close the part (the protocol allows them for an announced call); `tool-approval-request` leaves it waiting
        for the client. Each is the contract's deviation, worded as what it is, not as a part left open."""
        call_id = ident(chunk.get("toolCallId"))
        if kind == "tool-approval-request":
            self.bad(f"the tool part {call_id!r} asks the client's approval (tool-approval-request); UI-003's "
                     "tools run on the server and send tool-output-available", index)  # fmt: skip
            if tool is not None:
                tool.state = "approval-requested"
            return
        ended = f"errorText {short(chunk.get('errorText'))}" if kind == "tool-output-error" else "denied"
        self.bad(f"the tool part {call_id!r} is closed by {kind} ({ended}), not by tool-output-available with its "
                 "tool's output, as UI-003 maps a tool's end", index)  # fmt: skip
        if tool is not None:
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
        # The calls themselves (name, input, when announced) are the protocol's (UI-PROTO-005): the contract judges in
        # which step each came, when the turn's calls are the model's.
        streamed = [tool for step in self.steps for tool in step.tools]
        calls_hold = streamed == [(call.name, call.arguments) for call in expected.tool_calls]
        for number, (step, generation) in enumerate(zip(self.steps, expected.generations, strict=False)):
            if step.text != generation.text:
                self.bad(
                    f"step {number} streams the text {step.text!r}; its generation {generation.text!r}", step.index
                )
            want = [(call.name, call.arguments) for call in generation.tool_calls]
            if calls_hold and step.tools != want:
                self.bad(
                    f"step {number} has the tool calls {short(step.tools)}; its generation {short(want)}", step.index
                )


def order(answer: ChannelAnswer, expected: ExpectedTurn | None = None) -> list[Violation]:
    found = ui_protocol.chunks(answer)
    return _Order(answer, expected).run(found) + _inputs_before_outputs(found, expected)


def _inputs_before_outputs(found: list[tuple[int, dict[str, Any]]], expected: ExpectedTurn | None) -> list[Violation]:
    """UI-003: a part's tool-input-available comes once its call is complete; a generation's calls are all complete
    when it ends, before any tool runs, so each comes before the first output of its generation's calls. (The
    protocol does not order them: UI-PROTO-005 asks only that each gets its input.)"""
    if expected is None or expected.fails:
        return []
    parts = ui_protocol.shown_tools(found)
    violations = []
    for number, _generation, mine in calls_by_generation(expected, list(parts)):
        first = min((parts[c]["output"] for c in mine if parts[c]["output"] is not None), default=None)
        for call_id in mine:
            ready = (
                parts[call_id]["input_at"] if parts[call_id]["input_at"] is not None else parts[call_id]["announced"]
            )
            if first is not None and ready > first:
                message = (
                    f"the tool part {call_id} gets its input at chunk {ready}, after an output of generation {number}'s"
                    f" calls (chunk {first}): each call's tool-input-available comes once the generation completes it"
                )
                violations.append(Violation(CHUNKS, message, parts[call_id]["announced"]))
    return violations


def contract(answer: ChannelAnswer, expected: ExpectedTurn | None = None) -> list[Violation]:
    """What the contract adds (UI-002, UI-003) in one recorded answer (its content exact when `expected` is given)."""
    if answer.sse is None:
        return headers(answer)
    return headers(answer) + frames(answer) + order(answer, expected)


def judge(answer: ChannelAnswer, expected: ExpectedTurn | None = None) -> list[Violation]:
    """Every violation in one recorded answer: the protocol's own (UI-PROTO-*), then the contract's (UI-002, -003)."""
    return ui_protocol.judge(answer, expected) + contract(answer, expected)
