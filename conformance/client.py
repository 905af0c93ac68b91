"""The chat client every check talks through: HTTP calls and streams under the target's chat prefix, each with
a hard deadline, each kept as evidence, and each answer observed against the contract whichever check caused it
(CONTRACT-001 and ERROR-001 for bodies, the per-event rules of stream_rules for every event)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import ssl
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx

from .exchanges import Exchange
from .findings import Finding, Outcome
from .framing import parse_stream
from .machine_load import stretched
from .responses import response_violations
from .stream_rules import check_events, event_violations
from .violations import Violation

if TYPE_CHECKING:
    from .context import Environment

# The headers a rule is about, and X-Copilot-Worker: the process of a server of several that answered (the reference
# server's, with --workers), shown in the evidence of a rule broken across processes.
_KEPT_HEADERS = ("www-authenticate", "cache-control", "content-type", "allow", "x-copilot-worker")


@dataclass
class StreamResult:
    exchange: Exchange
    events: list[dict[str, Any]]
    arrivals: list[float]  # seconds since the request was sent, per event
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


def _transport_error(exc: Exception, started: float | None = None) -> str:
    after = f" after {time.monotonic() - started:.1f} s" if started is not None else ""
    if isinstance(exc, TimeoutError):
        return f"{type(exc).__name__}{after} (the suite's deadline)"
    return f"{type(exc).__name__}{after}" + (f": {exc}" if str(exc) else "")


@contextlib.asynccontextmanager
async def _connection(shared: httpx.AsyncClient, fresh: bool) -> AsyncIterator[httpx.AsyncClient]:
    """The run's client, or with `fresh` a client of its own that opens one new TCP connection for the one request
    and closes it after: a server of several processes behind one port then gets each such request on whichever
    process the kernel gives that connection, whatever the run's client keeps alive."""
    if not fresh:
        yield shared
        return
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=0)
    async with httpx.AsyncClient(
        timeout=shared.timeout, limits=limits, trust_env=False, verify=_ssl_context()
    ) as client:
        yield client


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """One for every fresh client: making one per client (httpx's default) costs some 20 ms of CPU, which would
    spread requests meant to go at once over the run's event loop."""
    return ssl.create_default_context()


class ChatClient:
    """One check's HTTP side. `exchanges` is its evidence, in the order the calls were made."""

    def __init__(self, env: Environment, check_id: str) -> None:
        self.env, self.check_id = env, check_id
        self.exchanges: list[Exchange] = []
        self.observed: list[Finding] = []  # what the answers broke, judged for every check (CONTRACT-001, EVENT-001)

    def _url(self, path: str, project_id: str | None) -> str:
        return self.env.base_url + self.env.prefix(project_id) + path

    def _shown_authorization(self, header: str | None) -> str | None:
        """The Authorization header as a reproduction shows it: a user's real token becomes $TOKEN."""
        if header is not None and any(header == f"Bearer {u.token}" for u in self.env.users.values() if u.token):
            return "Bearer $TOKEN"
        if (
            header is not None
            and self.env.controller is not None
            and header == f"Bearer {self.env.controller.admin_token}"
        ):
            return "Bearer $ADMIN_TOKEN"
        return header

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
            more = f" (and {len(messages) - 3} more)" if len(messages) > 3 else ""
            self.observed.append(
                Finding(
                    requirement,
                    Outcome.FAILED,
                    f"a stream read by {self.check_id}: " + "; ".join(messages[:3]) + more,
                    self.check_id,
                    [exchange.as_evidence()],
                )
            )

    def _note_sessions(self, user: str, project_id: str | None, events: list[Any], body: Any) -> None:
        """Every session a turn may have made goes in the run's ledger, with who streamed it (for the clean-up)."""
        named = {e.get("session_id") for e in events if isinstance(e, dict)}
        named.add(body.get("session_id") if isinstance(body, dict) else None)
        for session_id in named:
            if isinstance(session_id, str) and session_id:
                self.env.ledger.session(user, project_id or self.env.project_id, session_id)

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
        connection of its own (_connection)."""
        url = self.env.base_url + path if absolute else self._url(path, project_id)
        sent = dict(headers or {})
        if user is not None:
            sent = {**self.env.authorization(user), **sent}
        body_text = None
        if json_body is not None:
            content = json.dumps(json_body).encode()
        if content is not None:
            body_text = content.decode("utf-8", "replace")
            sent.setdefault("Content-Type", "application/json")
        exchange = Exchange(
            method,
            str(httpx.URL(url, params=params)),
            body_text,
            user=user or "(none)",
            authorization=self._shown_authorization(sent.get("Authorization")),
        )
        started = time.monotonic()
        deadline = stretched(self.env.target.stream_deadline)  # the suite's own, longer on a busy machine
        try:
            async with asyncio.timeout(deadline), _connection(self.env.client, fresh) as client:
                response = await client.request(method, url, content=content, params=params, headers=sent)
        except (httpx.TransportError, TimeoutError) as exc:
            exchange.error = _transport_error(exc)
        else:
            exchange.status = response.status_code
            exchange.content_type = response.headers.get("content-type")
            exchange.headers = {k: v for k, v in response.headers.items() if k.lower() in _KEPT_HEADERS}
            exchange.body = response.text
        exchange.elapsed = time.monotonic() - started
        self.exchanges.append(exchange)
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
        new connection of its own (_connection)."""
        url = self._url("/stream", project_id)
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        deadline = deadline or self.env.deadline_for(body.get("message") if isinstance(body, dict) else None)
        exchange = Exchange("POST", url, raw.decode("utf-8", "replace"), user=user)
        headers = {**self.env.authorization(user), "Content-Type": "application/json"}
        chunks: list[str] = []
        arrivals: list[float] = []
        completed = False
        opened = 0.0
        started = time.monotonic()
        try:
            async with asyncio.timeout(deadline), _connection(self.env.client, fresh) as client:
                async with client.stream("POST", url, content=raw, headers=headers) as response:
                    opened = time.monotonic() - started
                    exchange.status = response.status_code
                    exchange.content_type = response.headers.get("content-type")
                    exchange.headers = {k: v for k, v in response.headers.items() if k.lower() in _KEPT_HEADERS}
                    if response.status_code != 200 or not (exchange.content_type or "").startswith("text/event-stream"):
                        exchange.body = (await response.aread()).decode("utf-8", "replace")
                        completed = True
                    else:
                        completed = await _read_frames(response, chunks, arrivals, started, stop_when)
        except (httpx.TransportError, TimeoutError) as exc:
            exchange.error = _transport_error(exc, started)
        exchange.elapsed = time.monotonic() - started
        self.exchanges.append(exchange)
        text = "".join(chunks)
        if exchange.status != 200 or not chunks:
            self._observe(exchange, "streamChat")
            return StreamResult(exchange, [], arrivals, [], [], completed, opened, started)
        parsed = parse_stream(text if completed else text[: text.rfind("\n\n") + 2])
        exchange.events = parsed.events
        self._note_sessions(user, project_id, parsed.events, body)
        self._observe_events(exchange)
        rules = check_events(parsed.events) if completed else []
        self._observe_stream_rules(exchange, parsed.violations + rules)
        # Checks read events as objects; anything else is EVENT-001's to report (above), not a reason to crash.
        objects = [i for i, event in enumerate(parsed.events) if isinstance(event, dict)]
        events = [parsed.events[i] for i in objects]
        times = [arrivals[i] for i in objects if i < len(arrivals)]
        return StreamResult(exchange, events, times, parsed.violations, rules, completed, opened, started)


async def _read_frames(
    response: httpx.Response,
    chunks: list[str],
    arrivals: list[float],
    started: float,
    stop_when: Callable[[dict[str, Any]], bool] | None,
) -> bool:
    """Read the stream into `chunks`, noting when each frame arrived; False when `stop_when` cut it short."""
    buffer = ""
    async for text in response.aiter_text():
        chunks.append(text)
        buffer += text
        while "\n\n" in buffer:
            frame, buffer = buffer.split("\n\n", 1)
            arrivals.append(time.monotonic() - started)
            # The frame's data line, even in a frame that breaks FRAME-002 (judged on the whole text afterwards).
            data = next((line[5:].strip() for line in frame.splitlines() if line.startswith("data:")), None)
            if stop_when is not None and data is not None:
                try:
                    stop = stop_when(json.loads(data))
                except ValueError:
                    stop = False
                if stop:
                    return False
    return True
