"""Scenario helpers shared by the check areas, each written once.

A helper that reads an answer validates the part of it the checks rely on (the JSON shape) before using it: a
bad answer stops the check as the failure of the requirement the caller names, never as the suite's own ERROR.
Every other field is judged against the whole documented schema by CONTRACT-001, on every exchange.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from conformance.channels.gns3_stream import StreamResult
from conformance.checks.blame import raise_if_blocked, require_turn, unless_stream_blocked
from conformance.checks.context import CheckContext
from conformance.checks.turns import describe, served
from conformance.errors import BlockedBy, NotTestable
from conformance.harness.machine_load import stretched
from conformance.rules.operations import Operation
from conformance.rules.scenarios import TURNS
from conformance.transport.exchanges import Exchange, json_or_none
from conformance.transport.sse import parse

STATS_FIELDS = ("message_count", "llm_calls_count", "input_tokens", "output_tokens", "total_tokens")
RENAMED_TITLE = "Renamed by the conformance suite"

# --- the target's declarations -------------------------------------------------------------------------------


def require_capability(ctx: CheckContext, capability: str, why: str = "") -> None:
    if capability not in ctx.target.capabilities:
        raise NotTestable(f"the target does not declare the capability {capability}" + (f": {why}" if why else ""))


def require_db_access(ctx: CheckContext) -> None:
    require_capability(ctx, "db_access", "the suite cannot read the project database")


def require_controller(ctx: CheckContext) -> None:
    if ctx.env.controller is None:
        raise NotTestable("the target has no GNS3-style controller: the suite cannot create, close or delete projects")


def scenario_or(ctx: CheckContext, preferred: str, fallback: str) -> str:
    """`preferred` when the target's declared tools allow that scenario, else `fallback`."""
    return preferred if preferred in ctx.env.scripts else fallback


def expected_roles(script: dict[str, Any]) -> list[str]:
    """user, then per LLM step one assistant message and one tool message per tool call."""
    roles = ["user"]
    for step in script["steps"]:
        roles += ["assistant"] + ["tool"] * len(step.get("tool_calls", []))
    return roles


# --- describing answers ----------------------------------------------------------------------------------------


def answered(exchange: Exchange) -> str:
    return f"{exchange.method} {exchange.url} answered {exchange.excerpt()}"


def worker_name(exchange: Exchange) -> str | None:
    """The process of a server of several that made the answer, when it names it (X-Copilot-Worker)."""
    return exchange.headers.get("x-copilot-worker")


def worker(exchange: Exchange) -> str:
    """` (worker W)` when the answer names the process that made it (worker_name)."""
    name = worker_name(exchange)
    return f" (worker {name})" if name else ""


def error_code(exchange: Exchange) -> Any:
    body = json_or_none(exchange.body)
    return body.get("code") if isinstance(body, dict) else None


def differences(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    keys = sorted(set(before) | set(after))
    return [f"{k}: {before.get(k)!r} -> {after.get(k)!r}" for k in keys if before.get(k) != after.get(k)]


def message_keys(messages: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """What identifies a message apart from its id (id stability is HISTORY-003's alone)."""
    return [(m.get("role"), m.get("content"), m.get("tool_call_id"), m.get("name")) for m in messages]


# --- turns -----------------------------------------------------------------------------------------------------

CREATED_WITH_ID = "SESSION-002"  # a set-up turn names its session: a new session under a client id


async def turn(
    ctx: CheckContext,
    requirement: str,
    session_id: str | None,
    script: str = "cs-plain",
    text: str = "Conformance check",
    *,
    user: str = "main",
    project_id: str | None = None,
) -> StreamResult:
    """One turn the check's scenario is made of (the session exists afterwards); stops the check, failing
    `requirement`, when it does not complete (or blocked, when a more basic turn fails too)."""
    body: dict[str, Any] = {"message": ctx.message(script, text)}
    if session_id is not None:
        body["session_id"] = session_id
    result = await ctx.client.stream(body, user=user, project_id=project_id)
    await require_turn(ctx, result, requirement)
    return result


async def setup_turn(ctx: CheckContext, session_id: str) -> StreamResult:
    """A plain turn the check needs before its scenario (so that the session exists). When it is not served
    normally the check blames nothing: SERVED_TURN is judged by its own check, and the rest is blocked by it."""
    result = await ctx.client.stream({"message": ctx.message("cs-plain"), "session_id": session_id})
    if not served(ctx, result):
        why = f"a plain turn the check needs first was not served normally: {describe(result)}"
        await raise_if_blocked(ctx, None, ["cs-plain"], CREATED_WITH_ID, why)
        # Plain turns are served in new sessions: what failed is creating the session under the check's id.
        ctx.findings.require(CREATED_WITH_ID not in ctx.findings.requirements, CREATED_WITH_ID, why, result.exchange)
        raise BlockedBy(CREATED_WITH_ID, f"{why}, although plain turns are served in new sessions")
    return result


# --- reading sessions and history ----------------------------------------------------------------------------


async def listing(ctx: CheckContext, requirement: str, user: str = "main", project_id: str | None = None) -> list:
    """GET {prefix}/sessions: a JSON array of objects, or the check stops failing `requirement`."""
    exchange = await ctx.client.call("GET", "/sessions", operation="listSessions", user=user, project_id=project_id)
    ctx.findings.require_status(exchange, 200, requirement)
    sessions = json_or_none(exchange.body)
    ctx.findings.require(
        isinstance(sessions, list) and all(isinstance(s, dict) for s in sessions),
        requirement,
        f"the listing is not a JSON array of session objects: {exchange.body[:300]}",
        exchange,
    )
    return sessions


async def find_session(ctx: CheckContext, session_id: str, requirement: str, user: str = "main") -> dict | None:
    """The listed session `session_id` of `user`, or None when it is not listed."""
    return next((s for s in await listing(ctx, requirement, user) if s.get("thread_id") == session_id), None)


async def listed(ctx: CheckContext, session_id: str, requirement: str, user: str = "main") -> dict[str, Any]:
    """The listed session `session_id` of `user`; stops the check when it is not listed exactly once."""
    found = [s for s in await listing(ctx, requirement, user) if s.get("thread_id") == session_id]
    ctx.findings.require(
        len(found) == 1, requirement, f"session {session_id} is listed {len(found)} time(s) for {user}"
    )
    return found[0]


async def history(ctx: CheckContext, session_id: str, requirement: str, user: str = "main", **params: Any) -> dict:
    """GET {prefix}/sessions/{id}/history: an object with a `messages` array of objects, or the check stops."""
    exchange = await ctx.client.call(
        "GET", f"/sessions/{session_id}/history", operation="getSessionHistory", user=user, params=params or None
    )
    ctx.findings.require_status(exchange, 200, requirement)
    data = json_or_none(exchange.body)
    ctx.findings.require(
        isinstance(data, dict)
        and isinstance(data.get("messages"), list)
        and all(isinstance(m, dict) for m in data["messages"]),
        requirement,
        f"the history is not an object with a `messages` array of objects: {exchange.body[:300]}",
        exchange,
    )
    return data


# --- endpoints -------------------------------------------------------------------------------------------------


def valid_body(ctx: CheckContext, operation: Operation, session_id: str) -> Any:
    """A body the operation accepts: a stream request of the quick scenario, a rename; None for the others."""
    if operation.id == "streamChat":
        return {"message": ctx.message("cs-plain"), "session_id": session_id}
    if operation.id == "renameSession":
        return {"title": RENAMED_TITLE}
    return None


async def call_operation(
    ctx: CheckContext,
    operation: Operation,
    session_id: str,
    *,
    json_body: Any = None,
    content: bytes | None = None,
    **kwargs: Any,
) -> Exchange:
    """Call one chat operation for `session_id`, with a valid body unless one is given."""
    if json_body is None and content is None:
        json_body = valid_body(ctx, operation, session_id)
    return await ctx.client.call(
        operation.method,
        operation.url(session_id),
        operation=operation.id,
        json_body=json_body,
        content=content,
        **kwargs,
    )


async def controller_call(
    ctx: CheckContext, method: str, path: str, expected: tuple[int, ...], requirement: str
) -> Exchange:
    """A judged call of the GNS3-style controller (absolute path, the admin's token), kept as evidence."""
    exchange = await ctx.client.call(
        method,
        path,
        user=None,
        absolute=True,
        headers={"Authorization": f"Bearer {ctx.env.controller.admin_token}"},
    )
    ctx.findings.require(
        exchange.status in expected,
        requirement,
        f"{method} {path} answered {exchange.outcome}, expected "
        f"{' or '.join(map(str, expected))}: {exchange.body[:300]}",
        exchange,
    )
    return exchange


# --- refusals (PRECHECK-001) -------------------------------------------------------------------------------------


def is_stream(exchange: Exchange) -> bool:
    return exchange.status == 200 and (exchange.content_type or "").startswith("text/event-stream")


def events_of(exchange: Exchange) -> list[dict[str, Any]]:
    """The events of a stream answer, parsed leniently (also from a body read by `ctx.client.call`)."""
    if exchange.events or not is_stream(exchange):
        return exchange.events
    # Leniently, as this reading always was: each `data:` line an event, an unterminated last frame's too (the
    # framing rules judge the framing, not this reading).
    sse = parse(exchange.body)
    frames = [*sse.frames, *([sse.unfinished] if sse.unfinished else [])]
    events = (json_or_none(value.strip()) for frame in frames for value in frame.data_lines)
    return [event for event in events if isinstance(event, dict)]


def refused_in_stream(events: list[dict[str, Any]]) -> bool:
    """A request refused inside a stream: an `error` event, and no work (content or tool events) before it."""
    types = [e.get("type") for e in events]
    return "error" in types and not {"content", "tool_call", "tool_start", "tool_end"} & set(types)


def judge_not_streamed(ctx: CheckContext, exchange: Exchange, what: str, events: list | None = None) -> None:
    """PRECHECK-001: a refusal is an HTTP status, never an in-stream `error`. A request that is served instead
    of refused fails the rule about the refusal (AUTH-001, PROJECT-002...), not this one."""
    events = events_of(exchange) if events is None else events
    ctx.findings.expect(
        "PRECHECK-001",
        not refused_in_stream(events),
        f"{what}: {exchange.method} {exchange.url} was refused inside a 200 stream "
        f"({[e.get('type') for e in events]}: {next((e for e in events if e.get('type') == 'error'), None)}); a "
        "refusal must be an HTTP status answered before any stream begins",
        exchange,
    )


# --- waiting -----------------------------------------------------------------------------------------------------


async def wait_for(probe: Callable[[], Awaitable[Any]], *, seconds: float, interval: float = 0.2) -> Any:
    """Poll `probe` until it returns a truthy value; None (or its last value) when the time is up: `seconds` on a
    quiet machine, stretched on a busy one (the suite's own wait: conformance.harness.machine_load)."""
    deadline = time.monotonic() + stretched(seconds)
    while True:
        value = await probe()
        if value or time.monotonic() >= deadline:
            return value
        await asyncio.sleep(interval)


async def generation_started(ctx: CheckContext, runs: list[str]) -> bool:
    """The fake LLM has received the first main request of one of the runs: that turn is running."""
    for run in runs:
        if any(r.get("step") == 0 for r in await ctx.llm.requests(run)):
            return True
    return False


async def timed(awaitable: Awaitable[Any]) -> tuple[Any, float]:
    """The awaitable's value and the monotonic time it ended."""
    value = await awaitable
    return value, time.monotonic()


# --- judging whole streams by the rules of conformance.rules.stream_events --------------------------------------------

# The shapes (conformance.rules.scenarios.SHAPES) too: a server that serves a provider's other cut of the deltas
# otherwise is judged here as in every other turn.
SCENARIOS = TURNS


async def scenario_streams(ctx: CheckContext, names: list[str] = SCENARIOS) -> list[StreamResult]:
    """One turn of each named scenario the target's declarations allow (blocked when one cannot happen)."""
    results = []
    for name in names:
        if name in ctx.env.scripts:
            results.append(await ctx.client.stream({"message": ctx.message(name)}))
            await unless_stream_blocked(ctx, results[-1], name)
    return results


def rule_problems(results: list[StreamResult], requirement: str) -> list[str]:
    return [
        f"{r.exchange.request_body}: {v}"
        for r in results
        for v in r.frame_violations + r.rule_violations
        if v.requirement == requirement
    ]


def judge_stream_rules(ctx: CheckContext, results: list[StreamResult], requirements: list[str]) -> None:
    """Each requirement over every stream: failed with the first problems found, with the streams that broke it."""
    for result in results:  # error scenarios included: only an answered, finished stream can be judged
        ctx.findings.require(
            result.status == 200 and bool(result.events) and result.completed,
            requirements[0],
            f"no complete stream to judge: {result.exchange.describe()}",
            result.exchange,
        )
    for requirement in requirements:
        problems = rule_problems(results, requirement)
        offending = [
            r.exchange
            for r in results
            if any(v.requirement == requirement for v in r.frame_violations + r.rule_violations)
        ]
        ctx.findings.expect(requirement, not problems, "; ".join(problems), *(offending or [results[0].exchange]))
