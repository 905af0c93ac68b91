"""The OpenAI channel's Chat Completions stream rules, on a recorded answer, in two voices: OpenAI's own protocol
(OPENAI-PROTO-002 to -004, each sub-rule citing its source) and what the contract adds (OPENAI-002, and OPENAI-004's
in-stream error). Every chunk is validated against the `openai` package's own type (spec/channels/official/), an error
object against its `ErrorObject`. The framing helpers are shared with openai_responses.py.

Protocol (openai 3.57.0 types and client, API reference of 2026-11):
- PROTO-002: text/event-stream whose events the `openai` client can read (each has data, JSON); every chunk a
  ChatCompletionChunk; all with the same non-empty `id` and `created` ("Each chunk has the same ID", "... the same
  timestamp"); one choice, of index 0, as `n` is 1 (ChatCompletionChunk.choices: "more than one element if `n` is
  greater than 1"); `data: [DONE]` once and last (the client's Stream stops there); a turn the fake LLM completed is
  not turned into an error frame (the client raises APIError on one); tool call fragments, when a server sends
  them, one index per call, its id and name once, its arguments JSON (the client's accumulate_delta).
- PROTO-003: every choice ends with exactly one chunk with a `finish_reason` (Choice.finish_reason), no content for
  it after that; waived when an error frame ended the stream.
- PROTO-004: with include_usage one chunk with `choices: []` and the usage, the last before `[DONE]`, every other
  chunk with `usage: null` (ChatCompletionStreamOptionsParam.include_usage); without it no usage ("will only be
  present when you set include_usage", ChatCompletionChunk.usage) and no chunk with empty choices (.choices).
Contract:
- OPENAI-002: the same `model` throughout; the first delta `{"role": "assistant", "content": ""}`; no tool deltas;
  the finish chunk an empty delta with `stop`; the deltas' text the script's.
- OPENAI-004: an error frame `{"error": <ErrorObject>}` alone, once, with the turn's code `llm_error`, only in a
  failing turn, then nothing but `[DONE]`, and no finish chunk in that turn.

`judge_chat(answer, expected, include_usage)` returns Violations, each naming its requirement; `expected` None judges
the shape only. It never raises on a broken body.
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

CHAT, ERROR = "OPENAI-002", "OPENAI-004"  # the contract's
P_STREAM, P_FINISH, P_USAGE, P_ERROR = "OPENAI-PROTO-002", "OPENAI-PROTO-003", "OPENAI-PROTO-004", "OPENAI-PROTO-006"


def error_object_problems(error: Any) -> list[str]:
    """Why `error` is not an `ErrorObject` of the `openai` package (message and type strings; param, code and
    misalignment optional or null; other members allowed)."""
    return official.errors("openai_error_object", error)


def error_body_problems(payload: Any) -> list[str]:
    """Why `payload` is not an OpenAI error body `{"error": <ErrorObject>}` (OPENAI-PROTO-006): the client reads the
    object under `error` (openai._client.OpenAI._make_status_error)."""
    if not isinstance(payload, dict) or not isinstance(payload.get("error"), dict):
        return [f"the body is not {{error: <object>}}: {short(payload)}"]
    return [f"/error{line}" for line in error_object_problems(payload["error"])]


def framing(answer: ChannelAnswer, requirement: str) -> list[Violation]:
    """What keeps the `openai` client from reading the events at all: the content type, a frame left unfinished
    (an undispatched SSE event is lost), a frame with an event but no data (the client parses its empty data as
    JSON and raises). Line ends and unknown fields are the SSE format's, which the client reads in any form."""
    found = []
    content_type = answer.headers.get("content-type", "")
    if not content_type.startswith("text/event-stream"):
        found.append(Violation(requirement, f"the content type is {content_type!r}, not text/event-stream"))
    sse = answer.sse
    if sse is None:
        return [*found, Violation(requirement, "the answer is not an event stream")]
    if sse.unterminated.strip():
        found.append(Violation(requirement, f"the stream ends inside a frame: {short(sse.unterminated)}"))
    for frame in sse.messages:
        if frame.data is None:
            found.append(Violation(requirement, f"a frame without data: {short(frame.raw)}", frame.index))
    return found


def judge_chat(answer: ChannelAnswer, expected: ExpectedTurn | None, include_usage: bool = True) -> list[Violation]:
    found = framing(answer, P_STREAM)
    if answer.sse is None:
        return found
    frames = answer.sse.messages
    dones = [f.index for f in frames if f.is_done]
    if not dones:
        found.append(Violation(P_STREAM, "the stream does not end with `data: [DONE]`"))
    elif dones != [frames[-1].index]:
        found.append(Violation(P_STREAM, "`data: [DONE]` is not the last frame, or comes more than once", dones[0]))
    chunks: list[tuple[int, dict[str, Any]]] = []
    error_at = None
    for frame in frames:
        if frame.is_done or frame.data is None:
            continue
        payload = frame.json()
        if payload is INVALID or not isinstance(payload, dict):
            found.append(Violation(P_STREAM, f"a frame that is not a JSON object: {short(frame.data)}", frame.index))
        elif "error" in payload:
            if error_at is not None:
                found.append(Violation(ERROR, "a second error frame", frame.index))
            error_at = frame.index
            found += _error_frame(payload, frame.index, expected)
        else:
            if error_at is not None:
                found.append(Violation(ERROR, f"a chunk after the error frame: {short(payload)}", frame.index))
            for problem in official.errors("openai_chat_completion_chunk", payload):
                found.append(Violation(P_STREAM, f"not a ChatCompletionChunk: {problem}", frame.index))
            chunks.append((frame.index, payload))
    found += _identity(chunks) + _choices_rules(chunks, failed=error_at is not None) + _tool_call_indexes(chunks)
    found += _usage_rules(chunks, include_usage, failed=error_at is not None)
    if expected is not None:
        if expected.fails and error_at is None:
            found.append(Violation(ERROR, "the turn failed (its script fails), but no error frame was sent"))
        if not expected.fails and error_at is not None:
            # The fake LLM completed the turn; the server answered the valid request with a failure instead.
            found.append(
                Violation(P_STREAM, "an error frame where the fake LLM completed the turn: not a completion", error_at)
            )
        text = "".join(_delta_text(chunk) for _, chunk in chunks)
        if text != expected.text:
            found.append(Violation(CHAT, f"the deltas' text is {text!r}; the fake LLM streamed {expected.text!r}"))
    return found


def _error_frame(payload: dict[str, Any], index: int, expected: ExpectedTurn | None) -> list[Violation]:
    """The contract's in-stream error (OPENAI-004): `{"error": <ErrorObject>}` alone, with the turn's code."""
    error = payload.get("error")
    if not isinstance(error, dict):
        return [Violation(ERROR, f"the error frame is not {{error: <ErrorObject>}}: {short(payload)}", index)]
    found = [Violation(ERROR, f"the error frame: /error{p}", index) for p in error_object_problems(error)]
    if set(payload) != {"error"}:
        found.append(Violation(ERROR, f"the error frame holds more than `error`: {sorted(payload)}", index))
    if expected is not None and expected.fails and error.get("code") != "llm_error":
        found.append(Violation(ERROR, f"the error frame's code is {error.get('code')!r}, not the turn's `llm_error`"))
    return found


def _choices(chunk: dict[str, Any]) -> list[dict[str, Any]]:
    """A chunk's choices that are objects ([] when it has none; the schema says what else is wrong)."""
    choices = chunk.get("choices")
    return [c for c in choices if isinstance(c, dict)] if isinstance(choices, list) else []


def _delta(choice: dict[str, Any]) -> dict[str, Any]:
    return choice.get("delta") if isinstance(choice.get("delta"), dict) else {}


def _delta_text(chunk: dict[str, Any]) -> str:
    choices = _choices(chunk)
    content = _delta(choices[0]).get("content") if choices else None
    return content if isinstance(content, str) else ""


def _identity(chunks: list[tuple[int, dict[str, Any]]]) -> list[Violation]:
    """PROTO-002: one non-empty `id` and one `created` throughout; OPENAI-002: one `model`, the first delta."""
    found = []
    if not chunks:
        return found
    first = chunks[0][1]
    for index, chunk in chunks:
        if not isinstance(chunk.get("id"), str) or not chunk.get("id"):
            found.append(Violation(P_STREAM, f"a chunk has no id: {short(chunk)}", index))
            break
    for index, chunk in chunks[1:]:
        if (chunk.get("id"), chunk.get("created")) != (first.get("id"), first.get("created")):
            got, want = (chunk.get("id"), chunk.get("created")), (first.get("id"), first.get("created"))
            found.append(Violation(P_STREAM, f"id and created {got} differ from the first chunk's {want}", index))
            break
    for index, chunk in chunks[1:]:
        if chunk.get("model") != first.get("model"):
            found.append(
                Violation(CHAT, f"the model {chunk.get('model')!r} differs from {first.get('model')!r}", index)
            )
            break
    choices = _choices(first) or [{}]
    if choices[0].get("delta") != {"role": "assistant", "content": ""}:
        found.append(Violation(CHAT, f"the first delta is not {{role: assistant, content: ''}}: {short(first)}"))
    return found


def _choices_rules(chunks: list[tuple[int, dict[str, Any]]], *, failed: bool) -> list[Violation]:
    """PROTO-002: one choice, of index 0 (n is 1). PROTO-003: each choice finished once, nothing for it after.
    OPENAI-002: no tool deltas; the finish chunk an empty delta with `stop`."""
    found: list[Violation] = []
    if not chunks:
        return [] if failed else [Violation(P_STREAM, "no chunk before the end")]
    finished: dict[Any, list[tuple[int, dict[str, Any]]]] = {}
    seen: set[Any] = set()
    for index, chunk in chunks:
        listed = _choices(chunk)
        if len(listed) > 1 or any(c.get("index") != 0 for c in listed):
            found.append(Violation(P_STREAM, f"choices other than the one of index 0 (n is 1): {short(listed)}", index))
        for choice in listed:
            key, delta = choice.get("index"), _delta(choice)
            seen.add(key)
            if key in finished and (delta.get("content") or delta.get("tool_calls") or delta.get("function_call")):
                found.append(Violation(P_FINISH, f"a delta of choice {key} after its finish chunk", index))
            if choice.get("finish_reason") is not None:
                finished.setdefault(key, []).append((index, choice))
            found += _tool_delta(delta, index)
    if failed:
        if finished:
            first = min(index for ends in finished.values() for index, _ in ends)
            found.append(Violation(ERROR, "a finish chunk in a turn that ended with an error frame", first))
        return found
    for key in sorted(seen, key=str):
        ends = finished.get(key, [])
        if len(ends) != 1:
            found.append(Violation(P_FINISH, f"choice {key} has {len(ends)} finish chunks; exactly one ends it"))
    for index, choice in (end for ends in finished.values() for end in ends[:1]):
        if choice.get("finish_reason") != "stop" or _delta(choice):
            found.append(Violation(CHAT, f"the finish chunk is not an empty delta with `stop`: {short(choice)}", index))
    return found


def _tool_delta(delta: dict[str, Any], index: int) -> list[Violation]:
    """OPENAI-002: the server runs its tools; their calls are not sent (a call before its name breaks any client)."""
    if not (delta.get("tool_calls") or delta.get("function_call")):
        return []
    found = [Violation(CHAT, "a tool call delta: the server's tool calls are not sent", index)]
    calls = delta.get("tool_calls") if isinstance(delta.get("tool_calls"), list) else []
    for call in calls:
        function = call.get("function") if isinstance(call, dict) and isinstance(call.get("function"), dict) else {}
        if isinstance(call, dict) and not function.get("name") and not call.get("id"):
            found.append(Violation(CHAT, f"a tool call delta before its name: {short(call)}", index))
    return found


def _tool_call_indexes(chunks: list[tuple[int, dict[str, Any]]]) -> list[Violation]:
    """PROTO-002, for a server that streams tool calls: the `openai` client merges `delta.tool_calls` fragments by
    their `index` and concatenates every string member of one index (openai.lib.streaming._deltas.accumulate_delta),
    so one call keeps one index, its id and name come once, and its argument fragments make its JSON arguments."""
    found: list[Violation] = []
    calls: dict[Any, dict[str, Any]] = {}  # index -> the call's id, name and arguments so far
    for index, chunk in chunks:
        for choice in _choices(chunk):
            fragments = _delta(choice).get("tool_calls")
            for fragment in fragments if isinstance(fragments, list) else []:
                if isinstance(fragment, dict):
                    found += _tool_fragment(calls, fragment, index)
    for key, call in calls.items():
        try:
            json.loads(call["arguments"])
        except ValueError:
            message = f"the argument fragments of tool call {call['id']!r} (index {key}) make {call['arguments']!r}"
            found.append(Violation(P_STREAM, message + ", not JSON"))
    return found


def _tool_fragment(calls: dict[Any, dict[str, Any]], fragment: dict[str, Any], index: int) -> list[Violation]:
    function = fragment.get("function") if isinstance(fragment.get("function"), dict) else {}
    key, call_id, name = short(fragment.get("index")), fragment.get("id"), function.get("name")
    arguments = function.get("arguments") if isinstance(function.get("arguments"), str) else ""
    known = calls.get(key)
    if known is None:
        calls[key] = {"id": call_id, "arguments": arguments}
        if not call_id or not name:
            return [Violation(P_STREAM, f"the first fragment of tool call index {key} has no id or function.name: "
                              f"{short(fragment)}", index)]  # fmt: skip
        return []
    known["arguments"] += arguments
    if call_id and call_id != known["id"]:
        return [Violation(P_STREAM, f"the tool call {call_id!r} streams under index {key}, the index of the call "
                          f"{known['id']!r}: one index per call", index)]  # fmt: skip
    if call_id or name:
        return [Violation(P_STREAM, f"a later fragment of tool call {known['id']!r} (index {key}) repeats its id or "
                          "name, which the client concatenates to the first", index)]  # fmt: skip
    return []


def _usage_rules(chunks: list[tuple[int, dict[str, Any]]], include_usage: bool, *, failed: bool) -> list[Violation]:
    """PROTO-004, from ChatCompletionStreamOptionsParam.include_usage and ChatCompletionChunk.usage/.choices."""
    found = []
    usage_chunks = []
    for position, (index, chunk) in enumerate(chunks):
        empty = chunk.get("choices") == []
        if empty and chunk.get("usage") is not None:
            usage_chunks.append((position, index))
        elif chunk.get("usage") is not None:
            found.append(Violation(P_USAGE, "usage on a chunk that is not the usage chunk (it must be null)", index))
        elif include_usage and "usage" not in chunk:
            found.append(Violation(P_USAGE, "with include_usage, a chunk without `usage: null`", index))
        elif empty and not include_usage:
            found.append(Violation(P_USAGE, "a chunk with empty choices although include_usage was not set", index))
    if not include_usage:
        if usage_chunks:
            found.append(Violation(P_USAGE, "a usage chunk although include_usage was not set", usage_chunks[0][1]))
    elif not failed and (len(usage_chunks) != 1 or usage_chunks[0][0] != len(chunks) - 1):
        # An interrupted stream (an error frame) may lack it: "you may not receive the final usage chunk".
        found.append(Violation(P_USAGE, "with include_usage, one usage chunk (choices []) must end the chunks"))
    return found
