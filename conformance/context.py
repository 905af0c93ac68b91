"""What a check works with: the target's users and projects, a chat client that keeps evidence and enforces
deadlines, the fake LLM's request log, and the calls that record findings."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

import spec

from .exchanges import Exchange
from .findings import FAILED, PASSED, UNTESTABLE, Finding
from .framing import parse_stream
from .responses import response_violations
from .scenarios import usage_of
from .stream_rules import check_events
from .violations import Violation


class Blocked(Exception):
    """A check cannot go on because the implementation failed a step: the named requirement fails."""

    def __init__(self, requirement: str, message: str, exchanges: tuple[Exchange, ...] = ()) -> None:
        super().__init__(message)
        self.requirement, self.message, self.exchanges = requirement, message, exchanges


class NotTestable(Exception):
    """The target cannot be made to exercise what the check needs (undeclared tool, no database access...)."""


@dataclass
class User:
    name: str
    token: str
    user_id: str | None = None


@dataclass
class Environment:
    """Shared by every check of a run."""

    target: Any  # conformance.target.Target
    base_url: str
    fake_llm_url: str  # .../v1
    scripts: dict[str, dict[str, Any]]
    users: dict[str, User]  # main, other, and no_llm when the target has one
    project_id: str  # an opened project
    closed_project_id: str
    controller: Any | None  # conformance.controller.Controller, when the target has a GNS3-style controller
    workdir: Any
    client: httpx.AsyncClient
    observed: list[Finding] = field(default_factory=list)  # findings of every exchange, for the global checks
    api_keys: list[str] = field(default_factory=list)  # the LLM API keys the suite configured (SECRET-001)

    def prefix(self, project_id: str | None = None) -> str:
        return self.target.data["chat_prefix"].format(project_id=project_id or self.project_id)

    def database_path(self, project_id: str | None = None) -> Path:
        """A project's database file (DB-001): the declared project directory, then the contract's location."""
        project_dir = self.target.declarations["database"]["project_dir"]
        project_dir = project_dir.replace("{workdir}", str(self.workdir)).replace(
            "{project_id}", project_id or self.project_id
        )
        location = spec.load_document(spec.DB_DIR / "contract.yaml")["location"]
        return Path(location.replace("{project_dir}", project_dir))


@dataclass
class StreamResult:
    exchange: Exchange
    events: list[dict[str, Any]]
    arrivals: list[float]  # seconds since the request was sent, per event
    frame_violations: list[Violation]
    rule_violations: list[Violation]
    completed: bool  # the server closed the stream (not cut by the suite or a deadline)

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


class CheckContext:
    def __init__(self, env: Environment, check_id: str, requirements: list[str]) -> None:
        self.env = env
        self.check_id = check_id
        self.requirements = requirements
        self.run = f"{check_id.replace('.', '-')}-{uuid.uuid4().hex[:8]}"
        self.findings: list[Finding] = []
        self.exchanges: list[Exchange] = []

    # --- identities and names ---------------------------------------------------------------------------

    @property
    def target(self):
        return self.env.target

    def session_id(self, label: str = "s") -> str:
        return f"cs-{self.run}-{label}"

    def message(self, script: str, text: str = "Conformance check", *, run: str | None = None) -> str:
        if script not in self.env.scripts:
            raise NotTestable(f"scenario {script!r} needs a tool the target did not declare")
        return f"{text} [[fake-llm:{script}:{run or self.run}]]"

    def user(self, name: str) -> User:
        if name not in self.env.users:
            raise NotTestable(f"the target provides no {name!r} user")
        return self.env.users[name]

    # --- HTTP -------------------------------------------------------------------------------------------

    def _url(self, path: str, project_id: str | None) -> str:
        return self.env.base_url + self.env.prefix(project_id) + path

    def _shown_authorization(self, header: str | None) -> str | None:
        """The Authorization header as a reproduction shows it: a user's real token becomes $TOKEN."""
        if header is not None and any(header == f"Bearer {u.token}" for u in self.env.users.values()):
            return "Bearer $TOKEN"
        return header

    def _observe(self, exchange: Exchange, operation: str | None) -> None:
        if operation is None or exchange.status is None or exchange.events:
            return
        for violation in response_violations(operation, exchange.status, exchange.content_type, exchange.body):
            self.env.observed.append(
                Finding(violation.requirement, FAILED, violation.message, self.check_id, [exchange.as_evidence()])
            )

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
    ) -> Exchange:
        url = self.env.base_url + path if absolute else self._url(path, project_id)
        sent = dict(headers or {})
        if user is not None:
            sent.setdefault("Authorization", f"Bearer {self.user(user).token}")
        body_text = None
        if json_body is not None:
            content = json.dumps(json_body).encode()
            sent.setdefault("Content-Type", "application/json")
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
        try:
            async with asyncio.timeout(self.target.stream_deadline):
                response = await self.env.client.request(method, url, content=content, params=params, headers=sent)
        except (httpx.TransportError, TimeoutError) as exc:
            exchange.error = f"{type(exc).__name__}" + (
                " (the suite's deadline)" if isinstance(exc, TimeoutError) else f": {exc}" if str(exc) else ""
            )
        else:
            exchange.status = response.status_code
            exchange.content_type = response.headers.get("content-type")
            exchange.headers = {
                k: v
                for k, v in response.headers.items()
                if k.lower() in ("www-authenticate", "cache-control", "content-type", "allow")
            }
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
    ) -> StreamResult:
        """POST {prefix}/stream and read it to its end, or until `stop_when(event)` (then the suite disconnects),
        never longer than the deadline."""
        url = self._url("/stream", project_id)
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        exchange = Exchange("POST", url, raw.decode("utf-8", "replace"), user=user)
        headers = {"Authorization": f"Bearer {self.user(user).token}", "Content-Type": "application/json"}
        chunks: list[str] = []
        arrivals: list[float] = []
        completed = False
        started = time.monotonic()
        try:
            async with asyncio.timeout(deadline or self.target.stream_deadline):
                async with self.env.client.stream("POST", url, content=raw, headers=headers) as response:
                    exchange.status = response.status_code
                    exchange.content_type = response.headers.get("content-type")
                    exchange.headers = {
                        k: v
                        for k, v in response.headers.items()
                        if k.lower() in ("cache-control", "content-type", "www-authenticate")
                    }
                    if response.status_code != 200 or not (exchange.content_type or "").startswith("text/event-stream"):
                        exchange.body = (await response.aread()).decode("utf-8", "replace")
                        completed = True
                    else:
                        buffer = ""
                        stop = False
                        async for text in response.aiter_text():
                            chunks.append(text)
                            buffer += text
                            while "\n\n" in buffer:
                                frame, buffer = buffer.split("\n\n", 1)
                                arrivals.append(time.monotonic() - started)
                                if stop_when is not None and frame.startswith("data: "):
                                    try:
                                        stop = stop_when(json.loads(frame[6:]))
                                    except ValueError:
                                        stop = False
                                if stop:
                                    break
                            if stop:
                                break
                        completed = not stop
        except (httpx.TransportError, TimeoutError) as exc:
            deadline_hit = isinstance(exc, TimeoutError)
            exchange.error = f"{type(exc).__name__} after {time.monotonic() - started:.1f} s" + (
                " (the suite's deadline)" if deadline_hit else f": {exc}" if str(exc) else ""
            )
        exchange.elapsed = time.monotonic() - started
        text = "".join(chunks)
        if exchange.status != 200 or not chunks:
            self.exchanges.append(exchange)
            self._observe(exchange, "streamChat")
            return StreamResult(exchange, [], arrivals, [], [], completed)
        parsed = parse_stream(text if completed else text[: text.rfind("\n\n") + 2])
        exchange.events = parsed.events
        self.exchanges.append(exchange)
        for event_index, event in enumerate(parsed.events):
            for error in spec.validate_event(event):
                self.env.observed.append(
                    Finding(
                        "EVENT-001",
                        FAILED,
                        f"event {event_index}: {error}",
                        "stream.event_schema",
                        [exchange.as_evidence()],
                    )
                )
        rules = check_events(parsed.events) if completed else []
        return StreamResult(
            exchange, parsed.events, arrivals[: len(parsed.events)], parsed.violations, rules, completed
        )

    async def sessions(self, user: str = "main", project_id: str | None = None) -> list[dict[str, Any]]:
        exchange = await self.call("GET", "/sessions", operation="listSessions", user=user, project_id=project_id)
        self.require_status(exchange, 200, "LIST-001")
        return json.loads(exchange.body)

    async def session(self, session_id: str, user: str = "main") -> dict[str, Any] | None:
        return next((s for s in await self.sessions(user) if s.get("thread_id") == session_id), None)

    async def history(self, session_id: str, user: str = "main", **params: Any) -> dict[str, Any]:
        exchange = await self.call(
            "GET", f"/sessions/{session_id}/history", operation="getSessionHistory", user=user, params=params or None
        )
        self.require_status(exchange, 200, "HISTORY-001")
        return json.loads(exchange.body)

    # --- the fake LLM's log -------------------------------------------------------------------------------

    async def llm_requests(self, run: str | None = None) -> list[dict[str, Any]]:
        url = self.env.fake_llm_url.removesuffix("/v1") + "/control/requests"
        response = await self.env.client.get(url, params={"run": run or self.run})
        response.raise_for_status()
        return response.json()["requests"] if isinstance(response.json(), dict) else response.json()

    async def expected_usage(self, run: str | None = None) -> tuple[int, int, int]:
        """(generations, input tokens, output tokens) the target should have counted for a run (STATS-002/003)."""
        calls = inputs = outputs = 0
        for record in await self.llm_requests(run):
            if record.get("script") is None or (record["step"] is None and not self.target.title_counts_in_stats):
                continue
            calls += 1
            if record["outcome"] == "ok":
                i, o = usage_of(self.env.scripts, record["script"], record["step"])
                inputs, outputs = inputs + i, outputs + o
        return calls, inputs, outputs

    # --- findings -----------------------------------------------------------------------------------------

    def _record(self, requirement: str, outcome: str, message: str, exchanges: tuple[Exchange, ...]) -> None:
        if requirement not in self.requirements and requirement not in _GLOBAL:
            raise AssertionError(f"check {self.check_id} judged {requirement}, which it does not list")
        shown = exchanges or tuple(self.exchanges[-2:])
        self.findings.append(Finding(requirement, outcome, message, self.check_id, [e.as_evidence() for e in shown]))

    def expect(self, requirement: str, ok: bool, message: str, *exchanges: Exchange) -> bool:
        """Judge a requirement: failed with `message` unless `ok`; several calls may judge one requirement."""
        self._record(requirement, PASSED if ok else FAILED, "ok" if ok else message, exchanges)
        return ok

    def passed(self, requirement: str, *exchanges: Exchange) -> None:
        self._record(requirement, PASSED, "ok", exchanges)

    def not_testable(self, requirement: str, reason: str) -> None:
        self._record(requirement, UNTESTABLE, reason, ())

    def require(self, ok: bool, requirement: str, message: str, *exchanges: Exchange) -> None:
        """Like expect, but stop the check when it fails: what follows depends on it."""
        if not ok:
            raise Blocked(requirement, message, exchanges)

    def require_status(self, exchange: Exchange, status: int, requirement: str) -> None:
        if exchange.status != status:
            got = exchange.status if exchange.status is not None else exchange.error
            raise Blocked(
                requirement,
                f"{exchange.method} {exchange.url} answered {got}, expected {status}: {exchange.body[:300]}",
                (exchange,),
            )

    def require_stream(self, result: StreamResult, requirement: str) -> None:
        """The turn completed: 200, events, no `error`, and the server closed the stream. Whether `done` ends it is
        the grammar's business (STREAM-ORDER-003), judged by the stream checks, not here."""
        if result.status != 200 or not result.events or "error" in result.types or not result.completed:
            got = result.exchange.status if result.exchange.status is not None else result.exchange.error
            raise Blocked(
                requirement,
                f"the turn did not complete: status {got}, events {result.types[-5:]}, {result.exchange.body[:300]}",
                (result.exchange,),
            )

    async def wait_for(self, probe: Callable[[], Awaitable[Any]], *, seconds: float, interval: float = 0.2) -> Any:
        """Poll `probe` until it returns a truthy value; None when the time is up."""
        deadline = time.monotonic() + seconds
        while True:
            value = await probe()
            if value or time.monotonic() >= deadline:
                return value
            await asyncio.sleep(interval)


_GLOBAL = {"EVENT-001", "CONTRACT-001", "ERROR-001"}  # judged from every exchange of every check
