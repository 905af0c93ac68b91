"""One turn of one session: runs the graph in its own task, feeds a queue of contract events, and always
finishes with statistics written and `done` queued, however it ends (STATS-005, ERRSTREAM-001, ABORT-002).

The HTTP response only reads the queue. A client that disconnects, or an abort, stops the graph task; the
turn task itself is never cancelled, so the finishing work cannot be cut short.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import openai

from gns3_copilot_generated.events.done import DoneEvent
from gns3_copilot_generated.events.error import ErrorEvent
from gns3_copilot_generated.events.heartbeat import HeartbeatEvent
from gns3_copilot_generated.events.tool_end import ToolEndEvent
from reference_server.storage_faults import storage_fault

from .stream_translator import Event, StreamTranslator, TurnStatistics

log = logging.getLogger(__name__)


def client_message(error: BaseException) -> str:
    """What a failed turn's `error` event says. Never an upstream's own text (issue 34): a user's LLM configuration
    may point at any server, whose answer (an internal service's error page, say) must not come back through ours;
    the client gets the status or the kind of failure, the server log (above) the whole error. The in-process fake
    LLM's failures keep their text: they name the script step that asked for them."""
    if isinstance(error, openai.APIStatusError):
        return f"The LLM provider answered HTTP {error.status_code}"
    if isinstance(error, openai.APITimeoutError | httpx.TimeoutException):
        return "The LLM provider did not answer in time"
    if isinstance(error, openai.APIError | httpx.HTTPError):
        return "The LLM provider could not be reached, or its answer could not be read"
    return str(error) or type(error).__name__


_END = object()
COALESCE_SECONDS = 0.004
CANCELLED_TOOL_OUTPUT = "Cancelled: the turn was stopped before this tool call finished."


class Turn:
    def __init__(
        self,
        *,
        session_id: str,
        user_message_id: str,
        events: Callable[[], AsyncIterator[dict[str, Any]]],
        translator: StreamTranslator,
        finish: Callable[[Turn], Awaitable[None]],
        heartbeat_interval: float,
    ) -> None:
        self.session_id = session_id  # heartbeat, error and done carry it (EVENT-002)
        self.user_message_id = user_message_id
        self.user_message: Any = None  # the HumanMessage itself, kept if the graph never stored it
        self.final_values: dict[str, Any] | None = None  # the graph's final state, when it ran to its end
        self._events = events
        self.translator = translator
        self._finish = finish
        self.heartbeat_interval = heartbeat_interval
        # The events ready to send, and the stream's wait for the next one: a plain deque and one future per wait
        # (asyncio.Queue with wait_for made a task per wait).
        self._ready: deque[Any] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._taking = True  # the graph's events are taken until its task ends
        self._graph_task: asyncio.Task[None] | None = None
        self._task: asyncio.Task[None] | None = None
        self.stop_reason: str | None = None
        self.finished = asyncio.Event()
        self._running_tools: dict[str, str] = {}  # tool_call_id -> tool_name: started, not yet ended

    @property
    def stats(self) -> TurnStatistics:
        return self.translator.stats

    def start(self) -> None:
        # A task of its own: turns of different sessions run concurrently (CONCURRENCY-003).
        self._task = asyncio.create_task(self._run(), name=f"turn:{self.session_id}")

    def stop(self, reason: str) -> None:
        """Stop the graph at its next await; the turn still finishes normally (ABORT-001, disconnects)."""
        if self.stop_reason is None:
            self.stop_reason = reason
        if self._graph_task is not None and not self._graph_task.done():
            self._graph_task.cancel()

    def _put(self, item: Any) -> None:
        self._ready.append(item)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def take(self, raw: dict[str, Any]) -> None:
        """One raw graph event, as `astream_events(version="v2")` makes it: from the events iterator, or from the
        graph's callbacks as they happen (GraphEvents). Nothing of a graph task that ended is taken: a part of the
        run still going after a stop would otherwise add events after `done`."""
        if not self._taking:
            return
        for event in self.translator.translate(raw):
            if event["type"] == "tool_start":
                self._running_tools[event["tool_call_id"]] = event["tool_name"]
            elif event["type"] == "tool_end":
                self._running_tools.pop(event.get("tool_call_id"), None)
            self._put(event)

    async def _drive(self) -> None:
        async for raw in self._events():
            self.take(raw)

    def _end_running_tools(self) -> None:
        """A call started and cut short by an abort or a failure still ends, once, before `error` and `done`
        (TOOLCALL-005), with the output its tool message keeps in the history."""
        for call_id, name in self._running_tools.items():
            end = ToolEndEvent(
                type="tool_end",
                tool_name=name,
                tool_output=CANCELLED_TOOL_OUTPUT,
                tool_call_id=call_id,
                session_id=self.session_id,
            )
            self._put(end.model_dump())
        self._running_tools.clear()

    async def _run(self) -> None:
        self._graph_task = asyncio.create_task(self._drive(), name=f"graph:{self.session_id}")
        if self.stop_reason is not None:
            self._graph_task.cancel()
        await asyncio.wait([self._graph_task])
        self._taking = False
        self._end_running_tools()
        # At most one error, after the graph's last event. It is queued together with done, once the turn is
        # finished: a heartbeat sent while finishing takes long then comes before it, never between the two
        # (after `error` only `done` may follow, STREAM-ORDER-002).
        failure = None
        if not self._graph_task.cancelled() and (error := self._graph_task.exception()) is not None:
            log.warning("turn of session %s failed: %r", self.session_id, error)
            message = client_message(error)
            code = "storage_unavailable" if storage_fault(error) else "llm_error"  # e.g. a full disk mid-turn
            failure = ErrorEvent(type="error", error=message, code=code, session_id=self.session_id)
        try:
            await self._finish(self)
        except Exception:  # the stream still ends with done; the log tells what went wrong
            log.exception("finishing the turn of session %s failed", self.session_id)
        finally:  # exactly one done, and nothing after it: the stream ends there (STREAM-ORDER-003)
            if failure is not None:
                self._put(failure.model_dump())
            self._put(DoneEvent(type="done", session_id=self.session_id).model_dump())
            self._put(_END)
            self.finished.set()

    async def stream(self) -> AsyncIterator[list[Event]]:
        """The turn's events in batches, with a heartbeat whenever nothing came for the interval (HEARTBEAT-001),
        so that no gap between frames is longer than the interval and a few milliseconds (HEARTBEAT-003).

        An event that comes after a quiet spell (the turn's first, the first text after a tool ran) goes out at
        once; while events keep coming, those that arrive within COALESCE_SECONDS of the last write go out
        together in the next: one socket write per batch instead of one per token, at the cost of at most a few
        milliseconds of latency per token, and none for the first of a burst (issue 33: the first text after a
        tool call waited for the window).
        """
        last_sent = float("-inf")
        ready = self._ready
        loop = asyncio.get_running_loop()
        while True:
            if not ready:
                self._waiter = waiter = loop.create_future()
                timer = loop.call_later(self.heartbeat_interval, _wake, waiter)
                try:
                    await waiter
                finally:
                    timer.cancel()
                    self._waiter = None
                if not ready:  # nothing came for the interval
                    yield [HeartbeatEvent(type="heartbeat", session_id=self.session_id).model_dump()]
                    continue
            wait = last_sent + COALESCE_SECONDS - loop.time()
            if wait > 0 and ready[0] is not _END:
                await asyncio.sleep(wait)
            batch = list(ready)
            ready.clear()
            events = [item for item in batch if item is not _END]
            if events:
                last_sent = loop.time()
                yield events
            if _END in batch:
                return


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
