"""From LangGraph's `astream_events` to the contract's SSE events, collecting the turn's statistics on the way.

Events are built with the models generated from spec/events, so that each validates against the event union
(EVENT-001); `content` events alone are plain dicts of the same shape, on the hot path.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from gns3_copilot_generated.events.tool_call import StreamedToolCall, StreamedToolCallFunction, ToolCallEvent
from gns3_copilot_generated.events.tool_end import ToolEndEvent
from gns3_copilot_generated.events.tool_start import ToolStartEvent

from .graph import LLM_NODE, TITLE_NODE

Event = dict[str, Any]


@dataclass
class _PendingCall:
    id: str
    name: str
    arguments: str = ""


class ToolCallStreamAccumulator:
    """Prefix-growing `tool_call` events per call, then one `complete` event per call (TOOLCALL-001..003).

    Chunks of parallel calls are told apart by their `index`; the first chunk of a call carries its id and name.
    """

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self._calls: dict[int, _PendingCall] = {}

    def _event(self, call: _PendingCall, complete: bool = False) -> Event:
        function = StreamedToolCallFunction(name=call.name, arguments=call.arguments, complete=complete or None)
        event = ToolCallEvent(
            type="tool_call",
            session_id=self.session_id,
            tool_call=StreamedToolCall(id=call.id, type="function", function=function),
        )
        return event.model_dump(exclude_none=True)

    def add_chunks(self, chunks: list[dict[str, Any]]) -> list[Event]:
        events: list[Event] = []
        for position, chunk in enumerate(chunks):
            index = chunk.get("index")
            index = position if index is None else index
            call = self._calls.get(index)
            if call is None:
                if not chunk.get("id") or not chunk.get("name"):
                    continue  # a fragment before its call's header: nothing to show yet
                call = self._calls[index] = _PendingCall(chunk["id"], chunk["name"])
                call.arguments = chunk.get("args") or ""
                events.append(self._event(call))
            elif chunk.get("args"):
                call.arguments += chunk["args"]
                events.append(self._event(call))
        return events

    def complete(self, final_calls: list[dict[str, Any]]) -> list[Event]:
        """Close every call of the generation, parallel ones included, each under its own id (TOOLCALL-006);
        calls that never streamed are shown from the final message."""
        events: list[Event] = []
        streamed_ids = {call.id for call in self._calls.values()}
        for final in final_calls:
            if final.get("id") and final["id"] not in streamed_ids:
                index = max(self._calls, default=-1) + 1
                self._calls[index] = _PendingCall(final["id"], final["name"])
                events.append(self._event(self._calls[index]))
        for index in sorted(self._calls):
            call = self._calls[index]
            if not _is_json_object(call.arguments):
                final = next((f for f in final_calls if f.get("id") == call.id), None)
                whole = json.dumps(final.get("args", {}) if final else {})
                call.arguments = whole if whole.startswith(call.arguments) else call.arguments
                if not _is_json_object(call.arguments):
                    call.arguments = "{}" if not call.arguments else call.arguments
            events.append(self._event(call, complete=True))
        self._calls.clear()
        return events


def _is_json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


@dataclass
class TurnStatistics:
    """Counted from the events of one turn (STATS-002, STATS-003)."""

    llm_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    def add_usage(self, usage: dict[str, Any] | None) -> None:
        if usage:
            self.input_tokens += int(usage.get("input_tokens") or 0)
            self.output_tokens += int(usage.get("output_tokens") or 0)


@dataclass
class StreamTranslator:
    session_id: str  # carried by every event it makes (EVENT-002, EVENT-003)
    title_counts_in_stats: bool
    stats: TurnStatistics = field(default_factory=TurnStatistics)
    streamed: list[str] = field(default_factory=list)  # every `content` sent: a cut-short turn keeps it

    def __post_init__(self) -> None:
        self._tool_calls = ToolCallStreamAccumulator(self.session_id)

    @property
    def streamed_text(self) -> str:
        return "".join(self.streamed)

    def _counted(self, node: str | None) -> bool:
        return node == LLM_NODE or (node == TITLE_NODE and self.title_counts_in_stats)

    def translate(self, raw: dict[str, Any]) -> list[Event]:
        """Only `content`, `tool_call`, `tool_start` and `tool_end` come from the graph; `heartbeat`, `error` and
        `done` are the Turn's (STREAM-ORDER-001)."""
        kind, node = raw["event"], raw.get("metadata", {}).get("langgraph_node")
        data = raw.get("data", {})
        if kind == "on_chat_model_start" and self._counted(node):
            self.stats.llm_calls += 1
        elif kind == "on_chat_model_end" and self._counted(node):
            self.stats.add_usage(getattr(data.get("output"), "usage_metadata", None))
            if node == LLM_NODE:
                return self._tool_calls.complete(list(getattr(data.get("output"), "tool_calls", None) or []))
        elif kind == "on_chat_model_stream" and node == LLM_NODE:  # title tokens are never content
            return self._on_chunk(data["chunk"])
        elif kind == "on_custom_event" and raw["name"] == "tool_start":
            return [ToolStartEvent(type="tool_start", session_id=self.session_id, **data).model_dump()]
        elif kind == "on_custom_event" and raw["name"] == "tool_end":
            return [ToolEndEvent(type="tool_end", session_id=self.session_id, **data).model_dump()]
        return []

    def _on_chunk(self, chunk: Any) -> list[Event]:
        events: list[Event] = []
        text = chunk.content if isinstance(chunk.content, str) else chunk.text
        if text:
            self.streamed.append(text)
            # The hot path, one per token: ContentEvent's shape as a plain dict, not validated token by token
            # (tests validate every event of every stream against spec/events).
            events.append({"type": "content", "content": text, "session_id": self.session_id})
        if chunk.tool_call_chunks:
            events.extend(self._tool_calls.add_chunks(list(chunk.tool_call_chunks)))
        return events
