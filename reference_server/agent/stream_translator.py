"""From the graph's callbacks to the contract's SSE events, collecting the turn's statistics on the way.

GraphEvents hands the graph's callbacks on as the raw events of `astream_events(version="v2")`, which
StreamTranslator reads. Events are built with the models generated from spec/events, so that each validates
against the event union (EVENT-001); `content` events alone are plain dicts of the same shape, on the hot path.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessageChunk

from gns3_copilot_generated.events.tool_call import StreamedToolCall, StreamedToolCallFunction, ToolCallEvent
from gns3_copilot_generated.events.tool_end import ToolEndEvent
from gns3_copilot_generated.events.tool_start import ToolStartEvent

from .graph import LLM_NODE, TITLE_NODE

Event = dict[str, Any]


class GraphEvents(BaseCallbackHandler):
    """The callbacks of a graph run handed to `sink` as the raw events `astream_events(version="v2")` makes, in the
    order they happen. Called inline by the run itself: astream_events paid a task per handler and token, a memory
    stream and a wake-up of its consumer per event (issue 33).

    The tap_output methods make it a streaming handler, as astream_events' is, so that a model streams (and calls
    back per token) exactly when it did under astream_events."""

    run_inline = True  # called in the model's own task, never through a task or an executor
    raise_error = True  # a failure here fails the turn, as it failed astream_events' consumer

    def __init__(self, sink: Callable[[dict[str, Any]], None]) -> None:
        self.sink = sink
        self._nodes: dict[UUID, Any] = {}  # the node of each running model call, which its tokens do not carry

    def tap_output_aiter(self, run_id: UUID, output: AsyncIterator[Any]) -> AsyncIterator[Any]:
        return output

    def tap_output_iter(self, run_id: UUID, output: Iterator[Any]) -> Iterator[Any]:
        return output

    def on_chat_model_start(
        self, serialized: Any, messages: Any, *, run_id: UUID, metadata: dict[str, Any] | None = None, **_: Any
    ) -> None:
        node = (metadata or {}).get("langgraph_node")
        self._nodes[run_id] = node
        self.sink({"event": "on_chat_model_start", "metadata": {"langgraph_node": node}, "data": {}})

    def on_llm_new_token(self, token: Any, *, chunk: Any = None, run_id: UUID, **_: Any) -> None:
        message = chunk.message if chunk is not None else AIMessageChunk(content=token)
        metadata = {"langgraph_node": self._nodes.get(run_id)}
        self.sink({"event": "on_chat_model_stream", "metadata": metadata, "data": {"chunk": message}})

    def on_llm_end(self, response: Any, *, run_id: UUID, **_: Any) -> None:
        output = next((gen[0].message for gen in response.generations if gen), {})
        metadata = {"langgraph_node": self._nodes.pop(run_id, None)}
        self.sink({"event": "on_chat_model_end", "metadata": metadata, "data": {"output": output}})

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **_: Any) -> None:
        self._nodes.pop(run_id, None)

    def on_custom_event(self, name: str, data: Any, *, run_id: UUID, **_: Any) -> None:
        self.sink({"event": "on_custom_event", "name": name, "metadata": {}, "data": data})


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
