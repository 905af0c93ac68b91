"""The OpenAI channel's stream rules, on a recorded answer: Chat Completions (OPENAI-002, and OPENAI-004's in-stream
error) and Responses (OPENAI-006). Each frame is validated against the `openai` package's own types (the official
schemas), and the order rules are judged too, the ones the `openai` client does not enforce among them: a chunk
without `id`, ids or models that change, two finish chunks, no `[DONE]`, anything after it, a usage chunk in the
wrong place, an error frame followed by a finish.

`judge_chat(answer, expected, include_usage)` and `judge_responses(answer, expected)` return Violations, each naming
its requirement; `expected` (the script's turn) adds the content rules, None judges the shape only.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..violations import Violation
from . import official
from .sse import INVALID

if TYPE_CHECKING:
    from .client import ChannelAnswer
    from .expected import ExpectedTurn

CHAT, ERROR, RESPONSES = "OPENAI-002", "OPENAI-004", "OPENAI-006"
ERROR_KEYS = {"message", "type", "param", "code"}


def _short(value: Any, limit: int = 240) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _framing(answer: ChannelAnswer, requirement: str, *, events: bool) -> list[Violation]:
    """The content type, LF framing, the fields of each frame, nothing left unfinished."""
    found = []
    content_type = answer.headers.get("content-type", "")
    if not content_type.startswith("text/event-stream"):
        found.append(Violation(requirement, f"the content type is {content_type!r}, not text/event-stream"))
    sse = answer.sse
    if sse is None:
        return [*found, Violation(requirement, "the answer is not an event stream")]
    if sse.unterminated.strip():
        found.append(Violation(requirement, f"the stream ends inside a frame: {_short(sse.unterminated)}"))
    for frame in sse.messages:
        if frame.unknown_fields:
            found.append(Violation(requirement, f"unknown SSE fields {frame.unknown_fields}", frame.index))
        if frame.data is None:
            found.append(Violation(requirement, f"a frame without data: {_short(frame.raw)}", frame.index))
        if not events and frame.event is not None:
            found.append(Violation(requirement, f"an `event:` line in a Chat Completions stream ({frame.event})"))
    return found


def judge_chat(answer: ChannelAnswer, expected: ExpectedTurn | None, include_usage: bool = True) -> list[Violation]:
    found = _framing(answer, CHAT, events=False)
    if answer.sse is None:
        return found
    frames = answer.sse.messages
    dones = [f.index for f in frames if f.is_done]
    if not dones:
        found.append(Violation(CHAT, "the stream does not end with `data: [DONE]`"))
    elif dones != [frames[-1].index]:
        found.append(Violation(CHAT, "`data: [DONE]` is not the last frame, or comes more than once", dones[0]))
    chunks: list[tuple[int, dict[str, Any]]] = []
    error_at = None
    for frame in frames:
        if frame.is_done:
            continue
        payload = frame.json()
        if payload is INVALID or not isinstance(payload, dict):
            found.append(Violation(CHAT, f"a frame that is not a JSON object: {_short(frame.data or '')}", frame.index))
        elif "error" in payload:
            if error_at is not None:
                found.append(Violation(ERROR, "a second error frame", frame.index))
            error_at = frame.index
            found += _error_frame(payload, frame.index, expected)
        else:
            if error_at is not None:
                found.append(Violation(ERROR, f"a chunk after the error frame: {_short(payload)}", frame.index))
            for problem in official.errors("openai_chat_completion_chunk", payload)[:2]:
                found.append(Violation(CHAT, f"not a ChatCompletionChunk: {problem}", frame.index))
            chunks.append((frame.index, payload))
    found += _chunk_order(chunks, include_usage, failed=error_at is not None)
    if expected is not None:
        if expected.fails and error_at is None:
            found.append(Violation(ERROR, "the turn failed (its script fails), but no error frame was sent"))
        if not expected.fails and error_at is not None:
            found.append(Violation(CHAT, "an error frame in a turn whose script does not fail", error_at))
        text = "".join(_delta_text(chunk) for _, chunk in chunks)
        if text != expected.text:
            found.append(Violation(CHAT, f"the deltas' text is {text!r}; the fake LLM streamed {expected.text!r}"))
    return found


def _error_frame(payload: dict[str, Any], index: int, expected: ExpectedTurn | None) -> list[Violation]:
    error = payload.get("error")
    if not isinstance(error, dict) or set(error) != ERROR_KEYS:
        keys = sorted(error) if isinstance(error, dict) else error
        return [Violation(ERROR, f"the error frame is not {{error: {sorted(ERROR_KEYS)}}}: {keys}", index)]
    if expected is not None and expected.fails and error.get("code") != "llm_error":
        return [Violation(ERROR, f"the error frame's code is {error.get('code')!r}, not the turn's `llm_error`", index)]
    return []


def _delta_text(chunk: dict[str, Any]) -> str:
    choices = chunk.get("choices") or []
    delta = choices[0].get("delta") if choices and isinstance(choices[0], dict) else None
    content = delta.get("content") if isinstance(delta, dict) else None
    return content if isinstance(content, str) else ""


def _chunk_order(chunks: list[tuple[int, dict[str, Any]]], include_usage: bool, *, failed: bool) -> list[Violation]:
    found = []
    if not chunks:
        return [Violation(CHAT, "no chunk before the end")]
    first_index, first = chunks[0]
    ident = (first.get("id"), first.get("created"), first.get("model"))
    if not isinstance(ident[0], str) or not ident[0]:
        found.append(Violation(CHAT, f"the chunk has no id: {_short(first)}", first_index))
    for index, chunk in chunks[1:]:
        other = (chunk.get("id"), chunk.get("created"), chunk.get("model"))
        if other != ident:
            found.append(Violation(CHAT, f"id, created and model {other} differ from the first chunk's {ident}", index))
            break
    choices = first.get("choices") or [{}]
    if not isinstance(choices[0], dict) or choices[0].get("delta") != {"role": "assistant", "content": ""}:
        found.append(Violation(CHAT, f"the first delta is not {{role: assistant, content: ''}}: {_short(first)}"))
    finishes = []
    usage_chunks = []
    for position, (index, chunk) in enumerate(chunks):
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, dict):
                continue
            delta = choice.get("delta") if isinstance(choice.get("delta"), dict) else {}
            if delta.get("tool_calls") or delta.get("function_call"):
                found.append(Violation(CHAT, "a tool call delta: the server's tool calls are not sent", index))
            if choice.get("finish_reason") is not None:
                finishes.append((position, index, choice))
        if chunk.get("choices") == [] and chunk.get("usage") is not None:
            usage_chunks.append((position, index))
        elif chunk.get("usage") is not None:
            found.append(Violation(CHAT, "usage on a chunk that is not the usage chunk (it must be null)", index))
    if failed:
        if finishes:
            found.append(Violation(ERROR, "a finish chunk in a turn that ended with an error frame", finishes[0][1]))
        return found
    if len(finishes) != 1:
        found.append(Violation(CHAT, f"{len(finishes)} finish chunks; exactly one ends the turn"))
    else:
        position, index, choice = finishes[0]
        if choice.get("finish_reason") != "stop" or choice.get("delta") not in ({}, None):
            found.append(
                Violation(CHAT, f"the finish chunk is not an empty delta with `stop`: {_short(choice)}", index)
            )
        last_content = max((p for p, (_, c) in enumerate(chunks) if _delta_text(c)), default=-1)
        if last_content > position:
            found.append(Violation(CHAT, "content after the finish chunk", chunks[last_content][0]))
    if include_usage:
        if len(usage_chunks) != 1 or usage_chunks[0][0] != len(chunks) - 1:
            found.append(Violation(CHAT, "with include_usage, one usage chunk (choices []) must end the chunks"))
    elif usage_chunks:
        found.append(Violation(CHAT, "a usage chunk although include_usage was not asked for", usage_chunks[0][1]))
    return found


# --- Responses -------------------------------------------------------------------------------------------------

OPENING = ["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"]
CLOSING = ["response.output_text.done", "response.content_part.done", "response.output_item.done"]


def judge_responses(answer: ChannelAnswer, expected: ExpectedTurn | None) -> list[Violation]:
    found = _framing(answer, RESPONSES, events=True)
    if answer.sse is None:
        return found
    events: list[tuple[int, dict[str, Any]]] = []
    for frame in answer.sse.messages:
        payload = frame.json()
        if payload is INVALID or not isinstance(payload, dict):
            found.append(Violation(RESPONSES, f"a frame that is not a JSON object: {_short(frame.raw)}", frame.index))
            continue
        if frame.event != payload.get("type"):
            found.append(
                Violation(RESPONSES, f"`event: {frame.event}` names another type than {payload.get('type')!r}")
            )
        for problem in official.errors("openai_response_stream_event", payload)[:2]:
            found.append(Violation(RESPONSES, f"not a ResponseStreamEvent: {problem}", frame.index))
        events.append((frame.index, payload))
    if not events:
        return [*found, Violation(RESPONSES, "no event")]
    numbers = [event.get("sequence_number") for _, event in events]
    if numbers != list(range(len(events))):
        found.append(Violation(RESPONSES, f"sequence_number does not count from 0 without gaps: {numbers[:12]}"))
    types = [event.get("type") for _, event in events]
    deltas = [e.get("delta") for _, e in events if e.get("type") == "response.output_text.delta"]
    text = "".join(d for d in deltas if isinstance(d, str))
    last = types[-1]
    if types[: len(OPENING)] != OPENING:
        found.append(Violation(RESPONSES, f"the stream does not open with {OPENING}: {types[:4]}"))
    if last not in ("response.completed", "response.failed"):
        found.append(Violation(RESPONSES, f"the last event is {last!r}, not response.completed or response.failed"))
    if types.count("response.completed") + types.count("response.failed") != 1:
        found.append(Violation(RESPONSES, "not exactly one response.completed or response.failed"))
    middle = [t for t in types[len(OPENING) : -1] if t != "response.output_text.delta"]
    if last == "response.completed" and middle != CLOSING:
        found.append(Violation(RESPONSES, f"between the deltas and response.completed: {middle}, not {CLOSING}"))
    done_text = [e.get("text") for _, e in events if e.get("type") == "response.output_text.done"]
    if done_text and done_text[0] != text:
        found.append(Violation(RESPONSES, f"output_text.done has {done_text[0]!r}; the deltas made {text!r}"))
    final = events[-1][1].get("response") if isinstance(events[-1][1].get("response"), dict) else {}
    if last == "response.completed" and not isinstance(final.get("usage"), dict):
        found.append(Violation(RESPONSES, "response.completed carries no usage"))
    if last == "response.failed":
        error = final.get("error") if isinstance(final.get("error"), dict) else {}
        if not isinstance(error.get("message"), str) or not error.get("message"):
            found.append(Violation(RESPONSES, "response.failed carries no response.error.message"))
    if expected is not None:
        want = "response.failed" if expected.fails else "response.completed"
        if last != want:
            found.append(Violation(RESPONSES, f"the turn ends with {last!r}; its script makes it {want}"))
        if text != expected.text:
            found.append(Violation(RESPONSES, f"the deltas' text is {text!r}; the fake LLM streamed {expected.text!r}"))
    return found
