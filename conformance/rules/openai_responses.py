"""The OpenAI channel's Responses stream rules, on a recorded answer, in two voices: OpenAI's own protocol
(OPENAI-PROTO-009) and the contract's form of it (OPENAI-006).

Protocol (openai 3.57.0 types, API reference "Streaming events" of responses, 2026-11):
- events the `openai` client can read (openai.framing), each valid against ResponseStreamEvent; an `event:` field,
  when sent, names the data's `type` (the client's Stream picks the event by it);
- `sequence_number` increasing by one ("The sequence number of this event", every event type);
- `response.created` first; one of `response.completed`, `response.failed`, `response.incomplete` last, once, its
  response of that status; one response id throughout;
- each output item announced by `response.output_item.added` before its content, each content part by
  `response.content_part.added` before its deltas, no delta after the part's `output_text.done`; in a completed
  response every added item and part closed by its `.done` event, and the done text equal to the part's deltas;
- a turn the fake LLM completed is not failed (`error` / `response.failed`).
Contract (OPENAI-006): `event:` on every frame, LF line ends, no unknown SSE field; `sequence_number` from 0; exactly
response.created, response.in_progress, output_item.added, content_part.added, the deltas, output_text.done,
content_part.done, output_item.done, then response.completed (with usage, one output message) or response.failed
(with response.error.message); one message at output_index 0, content_index 0; the deltas' text the script's, and
`response.failed` exactly when the script fails.

`judge_responses(answer, expected)` returns Violations; `expected` None judges the shape only. It never raises.
"""

from __future__ import annotations

from itertools import pairwise
from typing import TYPE_CHECKING, Any

from conformance.rules import official
from conformance.rules.openai import framing
from conformance.rules.violations import Violation, short
from conformance.transport.sse import INVALID

if TYPE_CHECKING:
    from conformance.channels.endpoints import ChannelAnswer
    from conformance.rules.expected import ExpectedTurn

RESPONSES, P_EVENTS = "OPENAI-006", "OPENAI-PROTO-009"
OPENING = ["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"]
CLOSING = ["response.output_text.done", "response.content_part.done", "response.output_item.done"]
TERMINAL = {"response.completed": "completed", "response.failed": "failed", "response.incomplete": "incomplete"}
Events = list[tuple[int, dict[str, Any]]]


def _contract_framing(answer: ChannelAnswer) -> list[Violation]:
    """OPENAI-006's frames `event: <type>\\ndata: <event>\\n\\n`: the event line, LF, nothing else."""
    sse = answer.sse
    if sse is None:
        return []
    found = []
    if sse.line_ends - {"\n"}:
        found.append(Violation(RESPONSES, f"lines end with {sorted(map(repr, sse.line_ends))}, not LF alone"))
    for frame in sse.messages:
        if frame.unknown_fields:
            found.append(Violation(RESPONSES, f"unknown SSE fields {frame.unknown_fields}", frame.index))
        if frame.event is None and frame.data is not None:
            found.append(Violation(RESPONSES, "a frame without its `event:` line", frame.index))
    return found


def judge_responses(answer: ChannelAnswer, expected: ExpectedTurn | None) -> list[Violation]:
    found = framing(answer, P_EVENTS) + _contract_framing(answer)
    if answer.sse is None:
        return found
    events: Events = []
    for frame in answer.sse.messages:
        if frame.data is None:
            continue
        payload = frame.json()
        if payload is INVALID or not isinstance(payload, dict):
            found.append(Violation(P_EVENTS, f"a frame that is not a JSON object: {short(frame.raw)}", frame.index))
            continue
        if frame.event is not None and frame.event != payload.get("type"):
            found.append(Violation(P_EVENTS, f"`event: {frame.event}` names another type than {payload.get('type')!r}"))
        for problem in official.errors("openai_response_stream_event", payload):
            found.append(Violation(P_EVENTS, f"not a ResponseStreamEvent: {problem}", frame.index))
        events.append((frame.index, payload))
    if not events:
        return [*found, Violation(P_EVENTS, "no event")]
    found += _protocol_order(events) + _contract_order(events)
    types = [event.get("type") for _, event in events]
    text = "".join(
        d for d in (e.get("delta") for _, e in _of(events, "response.output_text.delta")) if isinstance(d, str)
    )
    if expected is not None:
        failed = "response.failed" in types or "error" in types
        if expected.fails and types[-1] != "response.failed":
            found.append(Violation(RESPONSES, f"the turn ends with {types[-1]!r}; its script makes it response.failed"))
        if not expected.fails and failed:
            # The fake LLM completed the turn; the server failed the valid request instead.
            found.append(Violation(P_EVENTS, "an `error` or response.failed where the fake LLM completed the turn"))
        elif not expected.fails and types[-1] != "response.completed":
            found.append(
                Violation(RESPONSES, f"the turn ends with {types[-1]!r}; its script makes it response.completed")
            )
        if text != expected.text:
            found.append(Violation(RESPONSES, f"the deltas' text is {text!r}; the fake LLM streamed {expected.text!r}"))
    return found


def _of(events: Events, kind: str) -> Events:
    return [(index, event) for index, event in events if event.get("type") == kind]


def _protocol_order(events: Events) -> list[Violation]:
    """PROTO-009: the numbering, the first and last events, each item and part opened before use and closed."""
    found = []
    numbers = [event.get("sequence_number") for _, event in events]
    if any(not isinstance(n, int) for n in numbers) or any(b != a + 1 for a, b in pairwise(numbers)):
        found.append(Violation(P_EVENTS, f"sequence_number does not increase by one: {numbers[:12]}"))
    types = [event.get("type") for _, event in events]
    if types[0] != "response.created":
        found.append(Violation(P_EVENTS, f"the first event is {types[0]!r}, not response.created"))
    last = types[-1]
    if last not in TERMINAL:
        found.append(Violation(P_EVENTS, f"the last event is {last!r}, not response.completed, .failed or .incomplete"))
    if sum(types.count(t) for t in TERMINAL) != 1:
        found.append(Violation(P_EVENTS, "not exactly one response.completed, response.failed or response.incomplete"))
    final = events[-1][1].get("response") if isinstance(events[-1][1].get("response"), dict) else {}
    if last in TERMINAL and final.get("status") != TERMINAL[last]:
        found.append(Violation(P_EVENTS, f"{last} has the status {final.get('status')!r}"))
    responses = {str(e["response"].get("id")) for _, e in events if isinstance(e.get("response"), dict)}
    if len(responses) > 1:
        found.append(Violation(P_EVENTS, f"the events name more than one response id: {sorted(responses)}"))
    return found + _items(events, completed=last == "response.completed")


def _items(events: Events, *, completed: bool) -> list[Violation]:
    """Items by output_index, parts by (output_index, content_index): added, used, done, in that order."""
    found: list[Violation] = []
    items: dict[Any, str] = {}  # output_index -> "added" | "done"
    parts: dict[tuple[Any, Any], str] = {}
    texts: dict[tuple[Any, Any], str] = {}
    for index, event in events:
        kind, item = event.get("type"), event.get("output_index")
        part = (item, event.get("content_index"))
        if kind == "response.output_item.added":
            items[item] = "added"
        elif kind == "response.content_part.added":
            parts[part] = "added"
            if items.get(item) != "added":
                found.append(Violation(P_EVENTS, f"content_part.added for an item not open: {item!r}", index))
        elif kind == "response.output_text.delta":
            if parts.get(part) != "added":
                state = "after its output_text.done" if parts.get(part) == "text done" else "for a part not open"
                found.append(Violation(P_EVENTS, f"an output_text.delta {state}: {part}", index))
            delta = event.get("delta")
            texts[part] = texts.get(part, "") + (delta if isinstance(delta, str) else "")
        elif kind == "response.output_text.done":
            if parts.get(part) != "added":
                found.append(Violation(P_EVENTS, f"output_text.done for a part not open: {part}", index))
            parts[part] = "text done"  # its text is final: no delta after it
            if event.get("text") != texts.get(part, ""):
                done = event.get("text")
                found.append(
                    Violation(P_EVENTS, f"output_text.done has {done!r}; the deltas made {texts.get(part, '')!r}")
                )
        elif kind == "response.content_part.done":
            parts[part] = "done"
            text = (event.get("part") or {}).get("text") if isinstance(event.get("part"), dict) else None
            if text is not None and text != texts.get(part, ""):
                found.append(
                    Violation(P_EVENTS, f"content_part.done has {text!r}; the deltas made {texts.get(part, '')!r}")
                )
        elif kind == "response.output_item.done":
            items[item] = "done"
            found += _item_text(event.get("item"), item, texts, index)
    if completed:
        still = sorted(str(k) for k, v in items.items() if v != "done") + sorted(
            str(k) for k, v in parts.items() if v != "done"
        )
        if still:
            found.append(Violation(P_EVENTS, f"response.completed with items or parts never done: {still}"))
        final = events[-1][1].get("response") if isinstance(events[-1][1].get("response"), dict) else {}
        output = final.get("output") if isinstance(final.get("output"), list) else []
        for position, item in enumerate(output):
            found += _item_text(item, position, texts, events[-1][0])
    return found


def _item_text(item: Any, output_index: Any, texts: dict[tuple[Any, Any], str], index: int) -> list[Violation]:
    """A done message item holds, part by part, the text its deltas made."""
    if not isinstance(item, dict) or item.get("type") != "message" or not isinstance(item.get("content"), list):
        return []
    for position, part in enumerate(item["content"]):
        if not isinstance(part, dict) or part.get("type") != "output_text":
            continue
        made = texts.get((output_index, position), "")
        if part.get("text") != made:
            return [
                Violation(
                    P_EVENTS,
                    f"a done message holds the output_text {part.get('text')!r}; the deltas made {made!r}",
                    index,
                )
            ]
    return []


def _contract_order(events: Events) -> list[Violation]:
    """OPENAI-006: the exact sequence of one message, from 0, and what the last event carries."""
    found = []
    types = [event.get("type") for _, event in events]
    if events[0][1].get("sequence_number") != 0:
        found.append(Violation(RESPONSES, f"sequence_number starts at {events[0][1].get('sequence_number')!r}, not 0"))
    if types[: len(OPENING)] != OPENING:
        found.append(Violation(RESPONSES, f"the stream does not open with {OPENING}: {types[:4]}"))
    middle = [t for t in types[len(OPENING) : -1] if t != "response.output_text.delta"]
    first_closing = next((i for i, t in enumerate(types) if t in CLOSING), len(types))
    if any(t == "response.output_text.delta" for t in types[first_closing:]):
        found.append(Violation(RESPONSES, "an output_text.delta after output_text.done"))
    last = types[-1]
    if last == "response.completed" and middle != CLOSING:
        found.append(Violation(RESPONSES, f"between the deltas and response.completed: {middle}, not {CLOSING}"))
    if last == "response.failed" and middle not in ([], CLOSING):
        found.append(Violation(RESPONSES, f"between the deltas and response.failed: {middle}"))
    final = events[-1][1].get("response") if isinstance(events[-1][1].get("response"), dict) else {}
    if last == "response.completed":
        output = final.get("output") if isinstance(final.get("output"), list) else []
        if len(output) != 1:
            found.append(Violation(RESPONSES, f"response.completed's output has {len(output)} items, not one"))
        if not isinstance(final.get("usage"), dict):
            found.append(Violation(RESPONSES, "response.completed carries no usage"))
    if last == "response.failed":
        error = final.get("error") if isinstance(final.get("error"), dict) else {}
        if not isinstance(error.get("message"), str) or not error.get("message"):
            found.append(Violation(RESPONSES, "response.failed carries no response.error.message"))
    items = {str(e["item"].get("id")) for _, e in events if isinstance(e.get("item"), dict)}
    items |= {str(e.get("item_id")) for _, e in events if "item_id" in e}
    if len(items) > 1:
        found.append(Violation(RESPONSES, f"the events name more than one message item: {sorted(items)}"))
    for index, event in events:
        where = (event.get("output_index", 0), event.get("content_index", 0))
        if where != (0, 0):
            found.append(Violation(RESPONSES, f"an event at (output_index, content_index) {where}, not (0, 0)", index))
            break
    return found
