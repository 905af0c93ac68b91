"""The OpenAI channel's stream rules, on a recorded answer: Chat Completions (OPENAI-002, and OPENAI-004's in-stream
error) and Responses (OPENAI-006). Each frame is validated against the `openai` package's own types (the official
schemas; an error frame against spec/channels/openai-error.json), and the order rules are judged too, the ones the
`openai` client does not enforce among them.

Chat Completions: text/event-stream, LF line ends, no unknown SSE field and no `event:` line, every data frame a
JSON object; `[DONE]` once and last; every chunk with the same non-empty `id`, `created` and `model`; the first
delta `{"role": "assistant", "content": ""}`; one choice, of index 0; no tool call delta (nor one before its
name); exactly one finish chunk, an empty delta with `stop`, no content after it; with include_usage one usage
chunk (`choices: []`) last, after the finish chunk, and `usage: null` on every other chunk; without it no usage
chunk; an error frame `{"error": {message, type, param, code}}` alone, once, followed by nothing but `[DONE]`, and
no finish chunk in that turn.
Responses: `event:` naming the data's type; sequence_number 0, 1, 2...; response.created, response.in_progress,
response.output_item.added, response.content_part.added, the deltas, then output_text.done, content_part.done,
output_item.done and exactly one response.completed (status completed, with usage, one output message), or
response.failed (status failed, with error.message); the text of every done event and of the completed output
equal to the deltas; one response id, one message item id, output_index and content_index 0.
With the script's turn (`expected`): the deltas' text exact, and the turn ends in an error exactly when it fails
(a chat error frame's code `llm_error`).

`judge_chat(answer, expected, include_usage)` and `judge_responses(answer, expected)` return Violations, each naming
its requirement; `expected` None judges the shape only. They never raise on a broken body.
"""

from __future__ import annotations

import json
from functools import cache
from typing import TYPE_CHECKING, Any

from jsonschema import Draft202012Validator

from conformance.rules import official
from conformance.rules.violations import Violation, short
from conformance.transport.sse import INVALID

if TYPE_CHECKING:
    from conformance.channels.endpoints import ChannelAnswer
    from conformance.rules.expected import ExpectedTurn

CHAT, ERROR, RESPONSES = "OPENAI-002", "OPENAI-004", "OPENAI-006"
ERROR_KEYS = {"message", "type", "param", "code"}


@cache
def _error_schema() -> Draft202012Validator:
    """The OpenAI error body of the contract (spec/channels/openai-error.json), beside the official schemas."""
    return Draft202012Validator(json.loads((official.OFFICIAL.parent / "openai-error.json").read_text("utf-8")))


def error_body_problems(payload: Any) -> list[str]:
    """Why `payload` is not the OpenAI error body `{"error": {message, type, param, code}}` (OPENAI-004)."""
    found = sorted(_error_schema().iter_errors(payload), key=lambda e: list(e.absolute_path))
    return ["/" + "/".join(str(p) for p in e.absolute_path) + f": {e.message}" for e in found]


def _framing(answer: ChannelAnswer, requirement: str, *, events: bool) -> list[Violation]:
    """The content type, LF framing, the fields of each frame, nothing left unfinished."""
    found = []
    content_type = answer.headers.get("content-type", "")
    if not content_type.startswith("text/event-stream"):
        found.append(Violation(requirement, f"the content type is {content_type!r}, not text/event-stream"))
    sse = answer.sse
    if sse is None:
        return [*found, Violation(requirement, "the answer is not an event stream")]
    if sse.line_ends - {"\n"}:
        found.append(Violation(requirement, f"lines end with {sorted(map(repr, sse.line_ends))}, not LF alone"))
    if sse.unterminated.strip():
        found.append(Violation(requirement, f"the stream ends inside a frame: {short(sse.unterminated)}"))
    for frame in sse.messages:
        if frame.unknown_fields:
            found.append(Violation(requirement, f"unknown SSE fields {frame.unknown_fields}", frame.index))
        if frame.data is None:
            found.append(Violation(requirement, f"a frame without data: {short(frame.raw)}", frame.index))
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
            found.append(Violation(CHAT, f"a frame that is not a JSON object: {short(frame.data or '')}", frame.index))
        elif "error" in payload:
            if error_at is not None:
                found.append(Violation(ERROR, "a second error frame", frame.index))
            error_at = frame.index
            found += _error_frame(payload, frame.index, expected)
        else:
            if error_at is not None:
                found.append(Violation(ERROR, f"a chunk after the error frame: {short(payload)}", frame.index))
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
    if not isinstance(error, dict) or not ERROR_KEYS <= set(error):
        keys = sorted(error) if isinstance(error, dict) else error
        return [Violation(ERROR, f"the error frame is not {{error: {sorted(ERROR_KEYS)}}}: {keys}", index)]
    found = [Violation(ERROR, f"the error frame: {problem}", index) for problem in error_body_problems(payload)[:2]]
    if set(payload) != {"error"}:
        found.append(Violation(ERROR, f"the error frame holds more than `error`: {sorted(payload)}", index))
    if expected is not None and expected.fails and error.get("code") != "llm_error":
        found.append(Violation(ERROR, f"the error frame's code is {error.get('code')!r}, not the turn's `llm_error`"))
    return found


def _choices(chunk: dict[str, Any]) -> list[Any]:
    """A chunk's choices, [] when it has none or something else than a list (the schema says what is wrong)."""
    choices = chunk.get("choices")
    return choices if isinstance(choices, list) else []


def _delta_text(chunk: dict[str, Any]) -> str:
    choices = _choices(chunk)
    delta = choices[0].get("delta") if choices and isinstance(choices[0], dict) else None
    content = delta.get("content") if isinstance(delta, dict) else None
    return content if isinstance(content, str) else ""


def _tool_deltas(chunks: list[tuple[int, dict[str, Any]]]) -> list[Violation]:
    """Tool events are not sent (OPENAI-002); a tool delta before its name breaks every client that assembles."""
    found, named = [], set()
    for index, chunk in chunks:
        for choice in _choices(chunk):
            delta = choice.get("delta") if isinstance(choice, dict) else None
            if not isinstance(delta, dict) or not (delta.get("tool_calls") or delta.get("function_call")):
                continue
            found.append(Violation(CHAT, "a tool call delta: the server's tool calls are not sent", index))
            calls = delta.get("tool_calls")
            for call in calls if isinstance(calls, list) else []:
                if not isinstance(call, dict):
                    continue
                function = call.get("function") if isinstance(call.get("function"), dict) else {}
                if call.get("index") not in named and not function.get("name"):
                    found.append(Violation(CHAT, f"a tool call delta before its name: {short(call)}", index))
                named.add(call.get("index"))
    return found


def _chunk_order(chunks: list[tuple[int, dict[str, Any]]], include_usage: bool, *, failed: bool) -> list[Violation]:
    found = []
    if not chunks:
        return [] if failed else [Violation(CHAT, "no chunk before the end")]
    first_index, first = chunks[0]
    ident = (first.get("id"), first.get("created"), first.get("model"))
    for index, chunk in chunks:
        if not isinstance(chunk.get("id"), str) or not chunk.get("id"):
            found.append(Violation(CHAT, f"a chunk has no id: {short(chunk)}", index))
            break
    for index, chunk in chunks[1:]:
        other = (chunk.get("id"), chunk.get("created"), chunk.get("model"))
        if other != ident:
            found.append(Violation(CHAT, f"id, created and model {other} differ from the first chunk's {ident}", index))
            break
    choices = _choices(first) or [{}]
    if not isinstance(choices[0], dict) or choices[0].get("delta") != {"role": "assistant", "content": ""}:
        found.append(Violation(CHAT, f"the first delta is not {{role: assistant, content: ''}}: {short(first)}"))
    found += _tool_deltas(chunks)
    finishes = []
    usage_chunks = []
    for position, (index, chunk) in enumerate(chunks):
        listed = _choices(chunk)
        if len(listed) > 1 or any(isinstance(c, dict) and c.get("index") != 0 for c in listed):
            found.append(Violation(CHAT, f"choices other than the one of index 0 (n is 1): {short(listed)}", index))
        for choice in listed:
            if isinstance(choice, dict) and choice.get("finish_reason") is not None:
                finishes.append((position, index, choice))
        if chunk.get("choices") == [] and chunk.get("usage") is not None:
            usage_chunks.append((position, index))
        elif chunk.get("usage") is not None:
            found.append(Violation(CHAT, "usage on a chunk that is not the usage chunk (it must be null)", index))
        elif include_usage and "usage" not in chunk:
            found.append(Violation(CHAT, "with include_usage, a chunk without `usage: null`", index))
    if failed:
        if finishes:
            found.append(Violation(ERROR, "a finish chunk in a turn that ended with an error frame", finishes[0][1]))
        return found
    if len(finishes) != 1:
        found.append(Violation(CHAT, f"{len(finishes)} finish chunks; exactly one ends the turn"))
    else:
        position, index, choice = finishes[0]
        if choice.get("finish_reason") != "stop" or choice.get("delta") not in ({}, None):
            found.append(Violation(CHAT, f"the finish chunk is not an empty delta with `stop`: {short(choice)}", index))
        last_content = max((p for p, (_, c) in enumerate(chunks) if _delta_text(c)), default=-1)
        if last_content > position:
            found.append(Violation(CHAT, "content after the finish chunk", chunks[last_content][0]))
        if usage_chunks and usage_chunks[0][0] < position:
            found.append(Violation(CHAT, "the usage chunk comes before the finish chunk", usage_chunks[0][1]))
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
            found.append(Violation(RESPONSES, f"a frame that is not a JSON object: {short(frame.raw)}", frame.index))
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
    first_closing = next((i for i, t in enumerate(types) if t in CLOSING), len(types))
    if any(t == "response.output_text.delta" for t in types[first_closing:]):
        found.append(Violation(RESPONSES, "an output_text.delta after output_text.done"))
    if last == "response.completed" and middle != CLOSING:
        found.append(Violation(RESPONSES, f"between the deltas and response.completed: {middle}, not {CLOSING}"))
    if last == "response.failed" and middle not in ([], CLOSING):
        found.append(Violation(RESPONSES, f"between the deltas and response.failed: {middle}"))
    found += _texts_agree(events, text, last)
    found += _ids_agree(events)
    final = events[-1][1].get("response") if isinstance(events[-1][1].get("response"), dict) else {}
    if last == "response.completed":
        if not isinstance(final.get("usage"), dict):
            found.append(Violation(RESPONSES, "response.completed carries no usage"))
        if final.get("status") != "completed":
            found.append(Violation(RESPONSES, f"response.completed has the status {final.get('status')!r}"))
    if last == "response.failed":
        error = final.get("error") if isinstance(final.get("error"), dict) else {}
        if not isinstance(error.get("message"), str) or not error.get("message"):
            found.append(Violation(RESPONSES, "response.failed carries no response.error.message"))
        if final.get("status") != "failed":
            found.append(Violation(RESPONSES, f"response.failed has the status {final.get('status')!r}"))
    if expected is not None:
        want = "response.failed" if expected.fails else "response.completed"
        if last != want:
            found.append(Violation(RESPONSES, f"the turn ends with {last!r}; its script makes it {want}"))
        if text != expected.text:
            found.append(Violation(RESPONSES, f"the deltas' text is {text!r}; the fake LLM streamed {expected.text!r}"))
    return found


def _of(events: list[tuple[int, dict[str, Any]]], kind: str) -> list[dict[str, Any]]:
    return [event for _, event in events if event.get("type") == kind]


def _texts_agree(events: list[tuple[int, dict[str, Any]]], text: str, last: str) -> list[Violation]:
    """Every event that repeats the text (output_text.done, content_part.done, output_item.done, the completed
    response's output) holds exactly what the deltas made."""
    found = []
    for event in _of(events, "response.output_text.done"):
        if event.get("text") != text:
            found.append(Violation(RESPONSES, f"output_text.done has {event.get('text')!r}; the deltas made {text!r}"))
    for event in _of(events, "response.content_part.done"):
        part = event.get("part") if isinstance(event.get("part"), dict) else {}
        if part.get("text") != text:
            found.append(Violation(RESPONSES, f"content_part.done has {part.get('text')!r}; the deltas made {text!r}"))
    items = [e.get("item") for e in _of(events, "response.output_item.done")]
    final = events[-1][1].get("response") if isinstance(events[-1][1].get("response"), dict) else {}
    if last == "response.completed":
        output = final.get("output") if isinstance(final.get("output"), list) else []
        items.append(output[0] if output else None)
        if len(output) != 1:
            found.append(Violation(RESPONSES, f"response.completed's output has {len(output)} items, not one"))
    for item in items:
        content = item.get("content") if isinstance(item, dict) else None
        content = content if isinstance(content, list) else []
        texts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") == "output_text"]
        if texts != [text]:
            found.append(
                Violation(RESPONSES, f"a done message holds the output_text {texts}; the deltas made {text!r}")
            )
    return found


def _ids_agree(events: list[tuple[int, dict[str, Any]]]) -> list[Violation]:
    """One response id, one message item id, at output_index 0 and content_index 0, throughout."""
    found = []
    responses = [e["response"].get("id") for _, e in events if isinstance(e.get("response"), dict)]
    if len(set(map(str, responses))) > 1 or any(not isinstance(r, str) or not r for r in responses):
        found.append(
            Violation(RESPONSES, f"the events name more than one response id: {sorted(set(map(str, responses)))}")
        )
    items = [e["item"].get("id") for _, e in events if isinstance(e.get("item"), dict)]
    items += [e.get("item_id") for _, e in events if "item_id" in e]
    if len(set(map(str, items))) > 1:
        found.append(
            Violation(RESPONSES, f"the events name more than one message item: {sorted(set(map(str, items)))}")
        )
    for index, event in events:
        where = (event.get("output_index", 0), event.get("content_index", 0))
        if where != (0, 0):
            found.append(Violation(RESPONSES, f"an event at (output_index, content_index) {where}, not (0, 0)", index))
            break
    return found
