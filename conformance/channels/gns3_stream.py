"""The chat client every check talks through: HTTP calls and streams under the target's chat prefix, each with
a hard deadline, each kept as evidence, and each answer observed against the contract whichever check caused it
(CONTRACT-001 and ERROR-001 for bodies, the per-event rules of stream_rules for every event)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from conformance.harness.findings import Finding, Outcome
from conformance.harness.machine_load import stretched
from conformance.rules.framing import frame_events, judge_frames
from conformance.rules.responses import response_violations
from conformance.rules.stream_events import check_events, event_violations
from conformance.rules.violations import Violation
from conformance.transport.exchanges import Exchange
from conformance.transport.http import Transport
from conformance.transport.sse import Frame

if TYPE_CHECKING:
    from conformance.harness.environment import Environment


@dataclass
class StreamResult:
    exchange: Exchange
    events: list[dict[str, Any]]
    # Seconds since the request was sent, per event: when its frame's end came (an unfinished last frame's, when the
    # body ended). The reader before the one tokenizer counted frame ends, so a frame without an event shifted the
    # times of the events after it, and the events of an unfinished last frame had none.
    arrivals: list[float]
    frame_violations: list[Violation]
    rule_violations: list[Violation]
    completed: bool  # the server closed the stream (not cut by the suite or a deadline)
    opened: float = 0.0  # seconds from sending the request to the response's headers (the stream's start)
    started: float = 0.0  # monotonic time the request was begun: `arrivals` and `opened` count from it

    @property
    def status(self) -> int | None:
        return self.exchange.status

    @property
    def types(self) -> list[str]:
        return [e.get("type") for e in self.events]

    @property
    def content(self) -> str:
        return "".join(e.get("content", "") for e in self.events if e.get("type") == "content")

    @property
    def session_id(self) -> str | None:
        return next((e.get("session_id") for e in reversed(self.events) if e.get("session_id")), None)


class ChatClient:
    """One check's HTTP side. `exchanges` is its evidence, in the order the calls were made."""

    def __init__(self, env: Environment, check_id: str) -> None:
        self.env, self.check_id = env, check_id
        self.exchanges: list[Exchange] = []
        self.transport = Transport(env, self.exchanges)
        self.observed: list[Finding] = []  # what the answers broke, judged for every check (CONTRACT-001, EVENT-001)

    def _url(self, path: str, project_id: str | None) -> str:
        return self.env.base_url + self.env.prefix(project_id) + path

    def _observe(self, exchange: Exchange, operation: str | None) -> None:
        """Judge a non-stream answer against openapi.yaml, for whichever requirement it breaks."""
        if operation is None or exchange.status is None or exchange.events:
            return
        for violation in response_violations(operation, exchange.status, exchange.content_type, exchange.body):
            self.observed.append(
                Finding(
                    violation.requirement, Outcome.FAILED, violation.message, self.check_id, [exchange.as_evidence()]
                )
            )

    def _observe_events(self, exchange: Exchange) -> None:
        """The per-event rules (EVENT-001) on every event of every stream, whichever check read it."""
        for violation in event_violations(exchange.events):
            self.observed.append(
                Finding(
                    violation.requirement,
                    Outcome.FAILED,
                    f"event {violation.index}: {violation.message}",
                    "events.schema",
                    [exchange.as_evidence()],
                )
            )

    def _observe_stream_rules(self, exchange: Exchange, violations: list[Violation]) -> None:
        """Every rule of a whole stream (framing, session ids, grammar, tool calls), on every stream the server
        closed, whichever check read it: one finding per rule broken (EVENT-001 is judged above, per event)."""
        by_rule: dict[str, list[str]] = {}
        for violation in violations:
            if violation.requirement != "EVENT-001":
                by_rule.setdefault(violation.requirement, []).append(str(violation))
        for requirement, messages in by_rule.items():
            self.observed.append(
                Finding(
                    requirement,
                    Outcome.FAILED,
                    f"a stream read by {self.check_id}: " + "; ".join(messages),
                    self.check_id,
                    [exchange.as_evidence()],
                )
            )

    def _note_sessions(self, user: str, project_id: str | None, events: list[Any], body: Any) -> None:
        """Every session a turn may have made goes in the run's ledger, with who streamed it (for the clean-up)."""
        named = {e.get("session_id") for e in events if isinstance(e, dict)}
        named.add(body.get("session_id") if isinstance(body, dict) else None)
        for session_id in named:
            self.transport.note_session(user, project_id, session_id)

    async def call(
        self,
        method: str,
        path: str,
        *,
        operation: str | None = None,
        user: str | None = "main",
        project_id: str | None = None,
        json_body: Any = None,
        content: bytes | None = None,
        params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        absolute: bool = False,
        fresh: bool = False,
    ) -> Exchange:
        """One request under the chat prefix (or at `path` itself when `absolute`), read whole; `fresh`: on a new
        connection of its own (conformance.transport.http)."""
        url = self.env.base_url + path if absolute else self._url(path, project_id)
        if json_body is not None:
            content = json.dumps(json_body).encode()
        exchange = await self.transport.send(
            method,
            url,
            user=user,
            content=content,
            params=params,
            headers=headers,
            deadline=stretched(self.env.target.stream_deadline),  # the suite's own, longer on a busy machine
            fresh=fresh,
        )
        self._observe(exchange, operation)
        return exchange

    async def stream(
        self,
        body: dict[str, Any] | bytes,
        *,
        user: str = "main",
        project_id: str | None = None,
        stop_when: Callable[[dict[str, Any]], bool] | None = None,
        deadline: float | None = None,
        fresh: bool = False,
    ) -> StreamResult:
        """POST {prefix}/stream and read it to its end, or until `stop_when(event)` (then the suite disconnects),
        never longer than its deadline (by default the scenario's own, Environment.deadline_for); `fresh`: on a
        new connection of its own (conformance.transport.http)."""
        url = self._url("/stream", project_id)
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        deadline = deadline or self.env.deadline_for(body.get("message") if isinstance(body, dict) else None)
        answer = await self.transport.stream(
            url, raw, user=user, deadline=deadline, fresh=fresh, stop_when=_on_event(stop_when)
        )
        exchange, completed = answer.exchange, answer.completed
        if exchange.status != 200 or answer.sse is None:
            self._observe(exchange, "streamChat")
            return StreamResult(exchange, [], [], [], [], completed, answer.opened, answer.started)
        parsed = judge_frames(answer.sse, finished=completed)
        exchange.events = parsed.events
        self._note_sessions(user, project_id, parsed.events, body)
        self._observe_events(exchange)
        rules = check_events(parsed.events) if completed else []
        self._observe_stream_rules(exchange, parsed.violations + rules)
        return StreamResult(
            exchange, parsed.events, parsed.arrivals, parsed.violations, rules, completed, answer.opened, answer.started
        )


def _on_event(stop_when: Callable[[dict[str, Any]], bool] | None) -> Callable[[Frame], bool] | None:
    """A stop condition on the stream's events, as one on the tokenizer's frames: on the events the framing rules
    read from the frame (a frame whose data is no JSON object stops nothing: it is FRAME-002/003's to report). The
    reader before the one tokenizer looked at `\\n\\n` frame ends only and a frame's first `data:` line: a stream
    with CR line ends was never stopped, and now is where its events say so."""
    if stop_when is None:
        return None

    def on_frame(frame: Frame) -> bool:
        return any(stop_when(event) for event in frame_events(frame))

    return on_frame
