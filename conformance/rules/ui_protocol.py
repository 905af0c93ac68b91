"""The AI SDK UI message stream v1's own rules (UI-PROTO-001..005), judged over one recorded answer.

Only what the protocol itself says, from its two sources, each sub-rule naming its own:
- [page]: the stream protocol page, https://ai-sdk.dev/docs/ai-sdk-ui/stream-protocol (shipped with ai 6.0.325 as
  docs/04-ai-sdk-ui/50-stream-protocol.mdx);
- [ai]: what ai 6.0.325 itself refuses: DefaultChatTransport.processResponseStream (parseJsonEventStream with
  uiMessageChunkSchema, `[DONE]` skipped) and processUIMessageStream (dist/index.mjs), whose UIMessageStreamError
  the real client (real_clients.ui) raises over the same body; `reader_rejection` files that error under its rule.
What the contract adds (cache-control, LF-only frames, the mapping of a turn) is conformance/rules/ui.py's, never here.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from conformance.rules import official
from conformance.rules.violations import Violation, short
from conformance.transport.sse import INVALID

if TYPE_CHECKING:
    from conformance.channels.endpoints import ChannelAnswer
    from conformance.rules.expected import ExpectedTurn

STREAM, TEXT, TOOLS, ENDS, CALLS = "UI-PROTO-001", "UI-PROTO-002", "UI-PROTO-003", "UI-PROTO-004", "UI-PROTO-005"
RULES = frozenset({STREAM, TEXT, TOOLS, ENDS, CALLS})
# [page] "set the x-vercel-ai-ui-message-stream header to v1"; [page] the Data Stream Protocol is Server-Sent Events.
PROTOCOL_HEADER = ("x-vercel-ai-ui-message-stream", "v1")
# [ai] chunks whose toolCallId must name a tool part of the message: getToolInvocation throws "No tool invocation
# found for tool call ID" for tool-output-available, tool-output-error, tool-approval-request, tool-output-denied.
NEEDS_TOOL_PART = frozenset(
    {"tool-output-available", "tool-output-error", "tool-approval-request", "tool-output-denied"}
)
# [ai] the chunks that make a tool part (updateToolPart pushes one when none has the toolCallId): tool-input-error
# needs no earlier chunk of its call (ai 6.0.325 accepts it alone, as the part's only chunk).
MAKES_TOOL_PART = frozenset({"tool-input-start", "tool-input-available", "tool-input-error"})
# [ai] the UIMessageStreamError's chunkType -> the rule it breaks
_REJECTED_CHUNK = {
    "text-delta": TEXT,
    "text-end": TEXT,
    "reasoning-delta": TEXT,
    "reasoning-end": TEXT,
    "tool-input-delta": TOOLS,
    "tool-invocation": TOOLS,
}


def headers(answer: ChannelAnswer) -> list[Violation]:
    """UI-PROTO-001: `text/event-stream` [page: Server-Sent Events] with `x-vercel-ai-ui-message-stream: v1` [page]."""
    found = []
    content_type = answer.headers.get("content-type", "")
    if not content_type.startswith("text/event-stream"):
        found.append(Violation(STREAM, f"the answer's content-type is {content_type!r}, not text/event-stream"))
    name, value = PROTOCOL_HEADER
    if answer.headers.get(name) != value:
        found.append(Violation(STREAM, f"the header {name} is {answer.headers.get(name)!r}, expected {value!r}"))
    return found


def frames(answer: ChannelAnswer) -> list[Violation]:
    """UI-PROTO-001: each event's data a JSON chunk valid against uiMessageChunkSchema [ai: parseJsonEventStream],
    the stream ending with `data: [DONE]` [page: "Stream Termination"]; UI-PROTO-004: nothing after `[DONE]`."""
    if answer.sse is None:
        return [Violation(STREAM, f"the answer is no SSE stream: {answer.describe()}")]
    found = []
    done = [frame.index for frame in answer.sse.frames if frame.is_done]
    for frame in answer.sse.frames:
        if done and frame.index > done[0]:
            found.append(Violation(ENDS, f"a frame follows data: [DONE]: {short(frame.raw)}", frame.index))
            continue
        if frame.data is None or frame.is_done:
            continue  # a comment, or an event without data (SSE dispatches none): no chunk
        chunk = frame.json()
        if chunk is INVALID or not isinstance(chunk, dict):
            found.append(Violation(STREAM, f"the event's data is not a JSON chunk: {short(frame.data)}", frame.index))
            continue
        problems = official.errors("ai_ui_message_chunk", chunk)
        if problems:
            found.append(
                Violation(STREAM, f"the chunk {short(chunk)} is invalid for `ai`: {'; '.join(problems)}", frame.index)
            )
    unfinished = answer.sse.unterminated.strip()
    if done and unfinished:
        found.append(Violation(ENDS, f"an unfinished frame follows data: [DONE]: {short(unfinished)}"))
    elif not done:
        cut = f"; it ends in an unfinished frame: {short(unfinished)}" if unfinished else ""
        found.append(Violation(STREAM, f"the stream does not end with data: [DONE]{cut}"))
    return found


def chunks(answer: ChannelAnswer) -> list[tuple[int, dict[str, Any]]]:
    """(frame index, chunk) of every event whose data is a JSON object, up to `[DONE]`: what `ai` reads."""
    return answer.sse.json_objects(until_done=True) if answer.sse else []


def grammar(found: list[tuple[int, dict[str, Any]]]) -> list[Violation]:
    """UI-PROTO-002 and -003: the state processUIMessageStream keeps [ai], walked the same way."""
    violations: list[Violation] = []
    open_parts: dict[str, set[Any]] = {"text": set(), "reasoning": set()}
    started_calls: set[Any] = set()  # [ai] partialToolCalls: set by tool-input-start, never cleared
    tool_parts: set[Any] = set()  # [ai] the message's tool parts, by toolCallId
    for index, chunk in found:
        kind = chunk.get("type")
        if kind == "finish-step":  # [ai] finish-step resets activeTextParts and activeReasoningParts
            for ids in open_parts.values():
                ids.clear()
        elif kind in ("text-start", "reasoning-start"):
            open_parts[kind.split("-")[0]].add(ident(chunk.get("id")))
        elif kind in ("text-delta", "text-end", "reasoning-delta", "reasoning-end"):
            part, _ = kind.split("-")
            if ident(chunk.get("id")) not in open_parts[part]:
                violations.append(
                    Violation(
                        TEXT,
                        f"{kind} of the {part} part {short(chunk.get('id'))}, which no {part}-start of this step "
                        f"opened or which is closed (`ai`: Received {kind} for missing {part} part)",
                        index,
                    )
                )
            elif kind.endswith("-end"):
                open_parts[part].discard(ident(chunk.get("id")))
        elif kind == "tool-input-delta" and ident(chunk.get("toolCallId")) not in started_calls:
            violations.append(
                Violation(
                    TOOLS,
                    f"tool-input-delta of {short(chunk.get('toolCallId'))} before any tool-input-start of it "
                    "(`ai`: Received tool-input-delta for missing tool call)",
                    index,
                )
            )
        elif kind in NEEDS_TOOL_PART and ident(chunk.get("toolCallId")) not in tool_parts:
            violations.append(
                Violation(
                    TOOLS,
                    f"{kind} of {short(chunk.get('toolCallId'))}, a call no tool-input-start, tool-input-available "
                    "or tool-input-error announced (`ai`: No tool invocation found for tool call ID)",
                    index,
                )
            )
        if kind == "tool-input-start":
            started_calls.add(ident(chunk.get("toolCallId")))
        if kind in MAKES_TOOL_PART:
            tool_parts.add(ident(chunk.get("toolCallId")))
    return violations


def ends(found: list[tuple[int, dict[str, Any]]]) -> list[Violation]:
    """UI-PROTO-004 (SHOULD): a message begins with `start` [page: "Message Start Part ... the beginning of a new
    message"] and its last chunk is `finish` [page: "Finish Message Part ... the completion of a message"], or
    `error` or `abort` for one that did not complete [page: Error Part, Abort Part; ai's streamText ends a failed
    call with `error`]."""
    if not found:
        return [Violation(ENDS, "the stream has no chunk: a message begins with start")]
    violations = []
    first_index, first = found[0]
    if first.get("type") != "start":
        violations.append(
            Violation(ENDS, f"the first chunk is {short(first)}: a message begins with start", first_index)
        )
    last_index, last = found[-1]
    if last.get("type") not in ("finish", "error", "abort"):
        violations.append(
            Violation(
                ENDS,
                f"the last chunk before [DONE] is {short(last)}: a message ends with finish (or error, abort)",
                last_index,
            )
        )
    return violations


def reader_rejection(error: Any, error_texts: list[str]) -> Violation | None:
    """The rule `ai`'s own reader (real_clients.ui: parseJsonEventStream + readUIMessageStream) says was broken,
    quoting it; None when it read the body to its end or stopped only at the stream's own `error` chunk (one of
    `error_texts`), which is the stream's report of a failure, not a rejection."""
    if not isinstance(error, dict):
        return None
    message = str(error.get("message"))
    if error.get("name") == "Error" and message in error_texts:
        return None
    rule = STREAM  # AI_JSONParseError, AI_TypeValidationError: parseJsonEventStream refused an event's data
    if error.get("name") == "AI_UIMessageStreamError":
        rule = _REJECTED_CHUNK.get(error.get("chunkType"), STREAM)
    return Violation(rule, f"`ai`'s readUIMessageStream rejected the stream: {error.get('name')}: {short(message)}")


def judge(answer: ChannelAnswer, expected: ExpectedTurn | None = None) -> list[Violation]:
    """Every violation of the protocol's own rules (UI-PROTO-001..005; -005 with the script's turn) in one answer."""
    if answer.sse is None:
        return headers(answer) + frames(answer)
    found = chunks(answer)
    return headers(answer) + frames(answer) + grammar(found) + ends(found) + tool_calls(found, expected)


_OUTPUTS = ("tool-output-available", "tool-output-error", "tool-output-denied")


def shown_tools(found: list[tuple[int, dict[str, Any]]]) -> dict[Any, dict[str, Any]]:
    """Each tool part of the stream, in the order its first chunk announced it: its toolName, whether and where its
    input became available (or failed), the input, and where its first output came (chunk indexes)."""
    parts: dict[Any, dict[str, Any]] = {}
    for index, chunk in found:
        kind = chunk.get("type")
        if kind not in MAKES_TOOL_PART and kind not in _OUTPUTS:
            continue
        part = parts.setdefault(ident(chunk.get("toolCallId")), {"announced": index, "input_at": None, "output": None})
        if kind in ("tool-input-start", "tool-input-available", "tool-input-error"):
            part.setdefault("name", chunk.get("toolName"))
        if kind in ("tool-input-available", "tool-input-error") and part["input_at"] is None:
            part["input_at"], part["input"], part["kind"] = index, chunk.get("input"), kind
        elif kind in _OUTPUTS and part["output"] is None:
            part["output"] = index
    return parts


def tool_calls(found: list[tuple[int, dict[str, Any]]], expected: ExpectedTurn | None) -> list[Violation]:
    """UI-PROTO-005 over the calls the script's model made, in the order their parts were announced. [page] Tool
    Input Start: "Indicates the beginning of tool input streaming"; Tool Input Available: "Indicates that tool input
    is complete and ready for execution" (toolCallId, toolName, input); [ai] processUIMessageStream gives a tool part
    its input from tool-input-available only (tool-input-delta sets a partial one): an output after tool-input-start
    alone leaves the part without its input. So each call gets its tool-input-available (or tool-input-error) with
    its own input. When it comes is not the protocol's: ai's own streamText ran a tool as soon as its call was
    complete (before vercel/ai PR 13638), so an output may precede a later call's input (the contract orders them,
    UI-003)."""
    if expected is None or expected.fails:
        return []
    parts = shown_tools(found)
    order = list(parts)
    made = expected.tool_calls
    if len(order) < len(made):
        return [Violation(CALLS, f"the model made {len(made)} tool calls {[c.name for c in made]}; {len(order)} had a "
                          "tool part")]  # fmt: skip
    return [
        v for call, call_id in zip(made, order, strict=False) for v in _part_problems(call_id, parts[call_id], call)
    ]


def _part_problems(call_id: Any, part: dict[str, Any], call: Any) -> list[Violation]:
    problems = []
    if part.get("name") != call.name:
        problems.append(f"the tool part {call_id} names {part.get('name')!r}; the model called {call.name!r}")
    if part["input_at"] is None:
        problems.append(f"the tool part {call_id} ({call.name}) has no tool-input-available: its input "
                        f"{json.dumps(call.arguments, sort_keys=True)} never reached the message")  # fmt: skip
    elif part["kind"] == "tool-input-available" and part["input"] != call.arguments:
        problems.append(f"tool-input-available of {call_id} has the input {short(part['input'])}; the model's "
                        f"arguments are {json.dumps(call.arguments, sort_keys=True)}")  # fmt: skip
    return [Violation(CALLS, problem, part["announced"]) for problem in problems]


def ident(value: Any) -> Any:
    """An id as a key ([ai] keys its maps by the id itself): a broken chunk's id (an object, a list) as its JSON
    text, so that judging never crashes."""
    return value if isinstance(value, str | int | float | bool | None) else json.dumps(value, sort_keys=True)
