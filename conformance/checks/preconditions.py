"""What a chat endpoint answers before any work starts: authentication, projects, LLM configuration, input
validation, error bodies and codes, busy sessions (AUTH-*, PROJECT-*, LLM-001, PRECHECK-001, INPUT-*, ERROR-*,
CONCURRENCY-*)."""

from __future__ import annotations

import asyncio
import base64
import json
import math
import secrets
import time
import uuid
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any, TypeVar

import spec

from ..context import CheckContext, NotTestable, StreamResult
from ..exchanges import Exchange, json_or_none
from . import check

T = TypeVar("T")


@dataclass(frozen=True)
class Endpoint:
    method: str
    path: str  # with {sid} for the session id
    operation: str
    body: str | None = None  # "stream" or "rename": the valid body the endpoint takes

    def url(self, session_id: str) -> str:
        return self.path.format(sid=session_id)


ENDPOINTS = (
    Endpoint("POST", "/stream", "streamChat", "stream"),
    Endpoint("GET", "/sessions", "listSessions"),
    Endpoint("GET", "/sessions/{sid}/history", "getSessionHistory"),
    Endpoint("PATCH", "/sessions/{sid}", "renameSession", "rename"),
    Endpoint("DELETE", "/sessions/{sid}", "deleteSession"),
    Endpoint("PUT", "/sessions/{sid}/pin", "pinSession"),
    Endpoint("DELETE", "/sessions/{sid}/pin", "unpinSession"),
    Endpoint("POST", "/sessions/{sid}/abort", "abortSessionTurn"),
)


def _endpoints(ctx: CheckContext) -> list[Endpoint]:
    """Every chat endpoint; abort only when declared (without the capability it may answer 404 or 501)."""
    return [e for e in ENDPOINTS if e.operation != "abortSessionTurn" or "abort" in ctx.target.capabilities]


def _valid_body(ctx: CheckContext, endpoint: Endpoint, session_id: str) -> Any:
    if endpoint.body == "stream":
        return {"message": ctx.message("cs-plain"), "session_id": session_id}
    if endpoint.body == "rename":
        return {"title": "Renamed by the conformance suite"}
    return None


async def _call(
    ctx: CheckContext,
    endpoint: Endpoint,
    session_id: str,
    *,
    json_body: Any = None,
    content: bytes | None = None,
    **kwargs: Any,
) -> Exchange:
    if json_body is None and content is None:
        json_body = _valid_body(ctx, endpoint, session_id)
    return await ctx.call(
        endpoint.method,
        endpoint.url(session_id),
        operation=endpoint.operation,
        json_body=json_body,
        content=content,
        **kwargs,
    )


def _got(exchange: Exchange) -> str:
    status = exchange.status if exchange.status is not None else exchange.error
    body = exchange.body if len(exchange.body) <= 300 else exchange.body[:300] + "..."
    return f"{status} {body}".strip()


def _code(exchange: Exchange) -> Any:
    body = json_or_none(exchange.body)
    return body.get("code") if isinstance(body, dict) else None


def _is_stream(exchange: Exchange) -> bool:
    return exchange.status == 200 and (exchange.content_type or "").startswith("text/event-stream")


def _events(exchange: Exchange) -> list[dict[str, Any]]:
    """The events of a stream answer, parsed leniently (also from a body read by `ctx.call`)."""
    if exchange.events or not _is_stream(exchange):
        return exchange.events
    events = []
    for line in exchange.body.splitlines():
        if line.startswith("data:"):
            event = json_or_none(line[5:].strip())
            if isinstance(event, dict):
                events.append(event)
    return events


def served(ctx: CheckContext, result: StreamResult, script: str = "cs-plain") -> bool:
    """The turn was served normally: a stream the server closed, no `error` event, the script's whole text."""
    return (
        result.status == 200
        and result.completed
        and "error" not in result.types
        and result.content == script_text(ctx, script)
    )


def describe(result: StreamResult) -> str:
    return f"{_got(result.exchange)} events {result.types[-5:]}"


async def setup_turn(ctx: CheckContext, requirement: str, session_id: str, script: str = "cs-plain") -> StreamResult:
    """A turn the check needs as a precondition (the session exists afterwards); stops the check if it fails."""
    result = await ctx.stream({"message": ctx.message(script), "session_id": session_id})
    ctx.require(
        served(ctx, result, script),
        requirement,
        f"a {script} turn the check needs first was not served normally: {describe(result)}",
        result.exchange,
    )
    return result


def script_text(ctx: CheckContext, script: str) -> str:
    return "".join(chunk for step in ctx.env.scripts[script]["steps"] for chunk in step.get("text_chunks", []))


# --- authentication -------------------------------------------------------------------------------------------


def _b64(data: dict[str, Any] | bytes) -> str:
    raw = data if isinstance(data, bytes) else json.dumps(data, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _unb64(part: str) -> Any:
    try:
        return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    except ValueError:
        return None


def _forged_tokens(real: str) -> dict[str, str]:
    """Bearer tokens that look right and are not: a JWT with the real token's claims and a signature of our own,
    the same claims unsigned (`alg: none`), and the real signature over claims that expired an hour ago."""
    parts = real.split(".")
    header = _unb64(parts[0]) if len(parts) == 3 else None
    claims = _unb64(parts[1]) if len(parts) == 3 else None
    if not isinstance(header, dict) or not isinstance(claims, dict):  # not a JWT: forge one from nothing
        header = {"alg": "HS256", "typ": "JWT"}
        claims = {"sub": str(uuid.uuid4()), "exp": int(time.time()) + 3600}
        parts = [_b64(header), _b64(claims), _b64(secrets.token_bytes(32))]
    signature = _b64(secrets.token_bytes(32))
    expired = {**claims, "iat": int(time.time()) - 7200, "exp": int(time.time()) - 3600}
    return {
        "a JWT with the user's real claims and a forged signature": f"{parts[0]}.{parts[1]}.{signature}",
        "the same claims unsigned (alg none)": f"{_b64({**header, 'alg': 'none'})}.{parts[1]}.",
        "the real signature over claims changed to have expired an hour ago": f"{parts[0]}.{_b64(expired)}.{parts[2]}",
    }


def _bad_authorizations(ctx: CheckContext) -> dict[str, str | None]:
    """What to send as Authorization (None: no header), by description."""
    bad: dict[str, str | None] = {
        "no Authorization header": None,
        "Basic credentials": "Basic " + base64.b64encode(b"admin:admin").decode(),
        "the scheme `Bearer` without a token": "Bearer",
        "`Bearer garbage`": "Bearer garbage",
    }
    for what, token in _forged_tokens(ctx.user("main").token).items():
        bad[what] = f"Bearer {token}"
    return bad


def _judge_401(ctx: CheckContext, exchange: Exchange, what: str) -> None:
    ctx.expect(
        "AUTH-001",
        exchange.status == 401,
        f"{exchange.method} {exchange.url} with {what}: answered {_got(exchange)}, expected 401",
        exchange,
    )
    if exchange.status == 401:
        value = exchange.headers.get("www-authenticate", "")
        ctx.expect(
            "AUTH-002",
            value.startswith("Bearer"),
            f"{exchange.method} {exchange.url} with {what}: the 401 carries WWW-Authenticate {value!r}, "
            "expected a value starting with `Bearer`",
            exchange,
        )


def refused_in_stream(events: list[dict[str, Any]]) -> bool:
    """A request refused inside a stream: an `error` event, and no work (content or tool events) before it."""
    types = [e.get("type") for e in events]
    return "error" in types and not {"content", "tool_call", "tool_start", "tool_end"} & set(types)


def _judge_not_streamed(ctx: CheckContext, exchange: Exchange, what: str, events=None) -> None:
    """PRECHECK-001: a refusal is an HTTP status, never an in-stream `error`. A request that is served instead
    of refused fails the rule about the refusal (AUTH-001, PROJECT-002...), not this one."""
    events = _events(exchange) if events is None else events
    ctx.expect(
        "PRECHECK-001",
        not refused_in_stream(events),
        f"{what}: {exchange.method} {exchange.url} was refused inside a 200 stream "
        f"({[e.get('type') for e in events]}: {next((e for e in events if e.get('type') == 'error'), None)}); a "
        "refusal must be an HTTP status answered before any stream begins",
        exchange,
    )


@check("auth.token_required")
async def token_required(ctx: CheckContext) -> None:
    session = ctx.session_id()
    await setup_turn(ctx, "AUTH-001", session)  # an existing session: a valid token would succeed everywhere
    for what, authorization in _bad_authorizations(ctx).items():
        headers = {} if authorization is None else {"Authorization": authorization}
        for endpoint in _endpoints(ctx):
            exchange = await _call(ctx, endpoint, session, user=None, headers=headers)
            _judge_401(ctx, exchange, what)
            if endpoint.operation == "streamChat":
                _judge_not_streamed(ctx, exchange, what)
    # 401 before any other check: an unknown project, a closed one, an invalid body, an invalid query at once.
    problems = {
        "streamChat": ({"json_body": {"message": "", "temperature": "hot"}}, "an invalid body"),
        "renameSession": ({"json_body": {"title": ""}}, "an invalid body"),
        "getSessionHistory": ({"params": {"limit": 0}}, "limit=0"),
    }
    missing = ctx.session_id("missing")
    for what, authorization in (("no Authorization header", None), ("`Bearer garbage`", "Bearer garbage")):
        headers = {} if authorization is None else {"Authorization": authorization}
        for project, project_what in (
            (str(uuid.uuid4()), "an unknown project"),
            (ctx.env.closed_project_id, "a closed project"),
        ):
            for endpoint in _endpoints(ctx):
                extra, invalid = problems.get(endpoint.operation, ({}, None))
                exchange = await _call(ctx, endpoint, missing, user=None, headers=headers, project_id=project, **extra)
                also = ", ".join(
                    [project_what] + (["an unknown session"] if "{sid}" in endpoint.path else []) + [invalid or ""]
                ).rstrip(", ")
                _judge_401(ctx, exchange, f"{what}, {also}")
                if endpoint.operation == "streamChat":
                    _judge_not_streamed(ctx, exchange, f"{what}, {also}")


# --- projects ---------------------------------------------------------------------------------------------------


async def _every_endpoint(ctx: CheckContext, project_id: str, status: int, requirement: str, what: str) -> None:
    session = ctx.session_id()
    for endpoint in _endpoints(ctx):
        exchange = await _call(ctx, endpoint, session, project_id=project_id)
        ctx.expect(
            requirement,
            exchange.status == status,
            f"{exchange.method} {exchange.url} for {what}: answered {_got(exchange)}, expected {status}",
            exchange,
        )
        if endpoint.operation == "streamChat":
            _judge_not_streamed(ctx, exchange, f"a stream request for {what}")


@check("projects.unknown")
async def unknown_project(ctx: CheckContext) -> None:
    await _every_endpoint(ctx, str(uuid.uuid4()), 404, "PROJECT-001", "a project that does not exist")


@check("projects.closed")
async def closed_project(ctx: CheckContext) -> None:
    await _every_endpoint(ctx, ctx.env.closed_project_id, 403, "PROJECT-002", "a closed project")


# --- LLM configuration ------------------------------------------------------------------------------------------


@check("llm.not_configured")
async def not_configured(ctx: CheckContext) -> None:
    if "no_llm" not in ctx.env.users:
        raise NotTestable("the target provides no user without an LLM configuration (`no_llm`)")
    result = await ctx.stream({"message": ctx.message("cs-plain")}, user="no_llm")
    exchange = result.exchange
    ctx.expect(
        "LLM-001",
        exchange.status == 400 and _code(exchange) == "llm_not_configured",
        f"a stream request by a user with no LLM configuration answered {_got(exchange)}; expected 400 with code "
        "llm_not_configured",
        exchange,
    )
    # Without an LLM configuration no turn can be served: any stream is a refusal inside the stream.
    ctx.expect(
        "PRECHECK-001",
        not _is_stream(exchange),
        f"a stream request by a user with no LLM configuration answered a 200 stream {result.types}; expected an "
        "HTTP error before any stream begins",
        exchange,
    )


# --- input ------------------------------------------------------------------------------------------------------


def _fields_of(entry: dict[str, Any]) -> list[str]:
    loc = entry.get("loc") if isinstance(entry, dict) else None
    if not isinstance(loc, list):
        return []
    parts = loc[1:] if loc[:1] == ["body"] else loc
    return [p for p in parts[:1] if isinstance(p, str)]


def _validation_problems(exchange: Exchange, fields: list[str] | None) -> list[str]:
    """INPUT-007 for one 422: the code, and details.errors with one entry per invalid field (`fields`; None
    when the body as a whole is invalid), each with `loc` and `msg`."""
    body = json_or_none(exchange.body)
    if not isinstance(body, dict):
        return [f"the 422 body is not a JSON object: {exchange.body[:200]!r}"]
    problems = []
    if body.get("code") != "validation_error":
        problems.append(f"code {body.get('code')!r}, expected 'validation_error'")
    errors = (body.get("details") or {}).get("errors") if isinstance(body.get("details"), dict) else None
    if not isinstance(errors, list) or not errors:
        return [*problems, f"details.errors is not a non-empty list: details {body.get('details')!r}"]
    for entry in errors:
        ok = (
            isinstance(entry, dict)
            and isinstance(entry.get("loc"), list)
            and bool(entry["loc"])
            and isinstance(entry.get("msg"), str)
            and bool(entry["msg"])
        )
        if not ok:
            problems.append(f"the entry {entry!r} lacks a non-empty `loc` list or `msg` string")
    if fields is not None:
        named = [f for entry in errors for f in _fields_of(entry)]
        per_field = {f: named.count(f) for f in fields}
        if any(count != 1 for count in per_field.values()) or len(errors) != len(fields):
            problems.append(
                f"expected one entry per invalid field {fields}, got {len(errors)} entries with locations "
                f"{[e.get('loc') if isinstance(e, dict) else e for e in errors]}"
            )
    return problems


async def _judge_422(
    ctx: CheckContext,
    requirement: str | None,
    body: Any,
    fields: list[str] | None,
    what: str,
    *,
    precheck: bool = True,
) -> StreamResult:
    result = await ctx.stream(body)
    exchange = result.exchange
    if requirement is not None:
        ctx.expect(requirement, exchange.status == 422, f"{what}: answered {_got(exchange)}, expected 422", exchange)
    if precheck:
        _judge_not_streamed(ctx, exchange, what)
    if exchange.status == 422:
        problems = _validation_problems(exchange, fields)
        ctx.expect("INPUT-007", not problems, f"{what}: " + "; ".join(problems), exchange)
    return result


@check("input.validation")
async def validation(ctx: CheckContext) -> None:
    tagged = ctx.message("cs-plain")
    cases: list[tuple[str | None, Any, list[str] | None, str]] = [
        ("INPUT-001", {}, ["message"], "a body without `message`"),
        ("INPUT-001", {"message": ""}, ["message"], "an empty `message`"),
        ("INPUT-001", {"message": "x" * 100_001}, ["message"], "a `message` of 100001 characters"),
        ("INPUT-001", {"message": 42}, ["message"], "`message` 42 (a number)"),
        ("INPUT-001", {"message": None}, ["message"], "`message` null"),
        ("INPUT-002", {"message": tagged, "mode": "voice"}, ["mode"], '`mode` "voice"'),
        ("INPUT-003", {"message": tagged, "temperature": 2.5}, ["temperature"], "`temperature` 2.5"),
        ("INPUT-003", {"message": tagged, "temperature": -0.1}, ["temperature"], "`temperature` -0.1"),
        ("INPUT-003", {"message": tagged, "temperature": "hot"}, ["temperature"], '`temperature` "hot"'),
        # SESSION-003 (sessions.id_validation) judges its status; here only the shape of its 422.
        (None, {"message": tagged, "session_id": 7}, ["session_id"], "`session_id` 7 (a number)"),
        ("INPUT-006", b"[]", None, "a JSON array `[]`"),
        ("INPUT-006", json.dumps([{"message": tagged}]).encode(), None, "a JSON array holding a valid request"),
        ("INPUT-006", json.dumps(tagged).encode(), None, "a JSON string"),
        ("INPUT-006", b"null", None, "JSON `null`"),
        ("INPUT-006", {"text": tagged}, ["message"], "an object without the required `message`"),
    ]
    # INPUT-007's "one entry per invalid field" is judged on a body combining values that the server refused one by
    # one: a value it accepts is INPUT-001..003's failure, not a second one here.
    refused: dict[str, Any] = {}
    for requirement, body, fields, what in cases:
        result = await _judge_422(ctx, requirement, body, fields, f"a stream request with {what}")
        if fields is not None and result.exchange.status == 422 and isinstance(body, dict) and fields[0] in body:
            refused.setdefault(fields[0], body[fields[0]])
    if len(refused) >= 2:
        combined = {"message": tagged, **refused}
        await _judge_422(
            ctx,
            None,
            combined,
            sorted(refused),
            f"a stream request with {len(refused)} invalid members at once ({', '.join(sorted(refused))})",
        )
    await _judge_422(
        ctx,
        "INPUT-004",
        {"message": tagged, "stream": False},
        ["stream"],
        "a stream request with `stream` false",
        precheck=False,
    )
    # The limits themselves are accepted: 100000 characters, mode text, stream true, temperature null, 0 and 2.0.
    long_text = ctx.message("cs-plain", "")
    long_text = "x" * (100_000 - len(long_text)) + long_text
    accepted = [
        ("INPUT-001", {"message": long_text, "mode": "text", "stream": True}, "a `message` of 100000 characters"),
        ("INPUT-003", {"message": tagged, "temperature": None}, "`temperature` null"),
        ("INPUT-003", {"message": tagged, "temperature": 0}, "`temperature` 0"),
        ("INPUT-003", {"message": tagged, "temperature": 2.0}, "`temperature` 2.0"),
    ]
    for requirement, body, what in accepted:
        result = await ctx.stream(body)
        ctx.expect(
            requirement,
            served(ctx, result),
            f"a valid stream request with {what} was not served as a normal turn: {describe(result)}",
            result.exchange,
        )


@check("input.malformed_json")
async def malformed_json(ctx: CheckContext) -> None:
    session = ctx.session_id()
    await setup_turn(ctx, "INPUT-009", session)  # so that renaming it would succeed with a valid body
    bodies = {
        "`{not json`": b"{not json",
        "an empty body": b"",
        "invalid UTF-8 bytes": b'{"message": "caf\xe9 \xff\xfe"}',
        "a truncated object": b'{"message": "unfinished',
    }
    for what, raw in bodies.items():
        for endpoint in (ENDPOINTS[0], ENDPOINTS[3]):
            exchange = await _call(ctx, endpoint, session, content=raw)
            ctx.expect(
                "INPUT-009",
                exchange.status in (400, 422),
                f"{exchange.method} {exchange.url} with {what} as the body: answered {_got(exchange)}; expected 400 "
                "or 422",
                exchange,
            )


@check("input.unknown_members")
async def unknown_members(ctx: CheckContext) -> None:
    body = {
        "message": ctx.message("cs-plain"),
        "unknown_member": 1,
        "nested_unknown": {"a": [1, 2, {"b": None}]},
        "x-vendor": "conformance",
    }
    result = await ctx.stream(body)
    ctx.expect(
        "INPUT-008",
        served(ctx, result),
        f"a valid request with unknown members was not served as a normal turn: {describe(result)} (expected the "
        f"content {script_text(ctx, 'cs-plain')!r} and no error)",
        result.exchange,
    )


@check("input.temperature_override")
async def temperature_override(ctx: CheckContext) -> None:
    if "temperature_override" not in ctx.target.capabilities:
        raise NotTestable("the target does not declare temperature_override")
    configured = (ctx.target.section("llm", {}).get("config") or {}).get("temperature")
    override = 0.3 if configured is None or not math.isclose(float(configured), 0.3) else 1.3
    session = ctx.session_id()
    runs = (f"{ctx.run}-override", f"{ctx.run}-default")
    first = await ctx.stream(
        {"message": ctx.message("cs-plain", run=runs[0]), "session_id": session, "temperature": override}
    )
    ctx.require(served(ctx, first), "INPUT-005", f"the turn with a temperature failed: {describe(first)}")
    second = await ctx.stream({"message": ctx.message("cs-plain", run=runs[1]), "session_id": session})
    ctx.require(served(ctx, second), "INPUT-005", f"the next turn failed: {describe(second)}")
    used = []
    for run in runs:
        used.append([r.get("temperature") for r in await ctx.llm_requests(run) if r.get("step") is not None])
    ctx.require(
        bool(used[0]) and bool(used[1]), "INPUT-005", f"the fake LLM received no main request for a turn: {used}"
    )
    ctx.expect(
        "INPUT-005",
        all(isinstance(t, int | float) and math.isclose(t, override) for t in used[0]),
        f"a turn sent with temperature {override} reached the LLM with temperature(s) {used[0]}",
        first.exchange,
    )
    if configured is not None:
        ok = all(isinstance(t, int | float) and math.isclose(t, float(configured)) for t in used[1])
        expected = f"the configured {configured}"
    else:
        ok = all(t is None or not math.isclose(t, override) for t in used[1])
        expected = "the configuration's value"
    ctx.expect(
        "INPUT-005",
        ok,
        f"the next turn of the session, sent without temperature, reached the LLM with temperature(s) {used[1]}; "
        f"expected {expected}, not the previous turn's {override}",
        second.exchange,
    )


# --- error bodies and codes ---------------------------------------------------------------------------------------


def _error_body_problems(exchange: Exchange) -> list[str]:
    if not (exchange.content_type or "").startswith("application/json"):
        return [f"content type {exchange.content_type!r}, not application/json"]
    payload = json_or_none(exchange.body)
    if payload is None and exchange.body.strip() != "null":
        return [f"the body is not JSON: {exchange.body[:200]!r}"]
    validator = spec.schema_validator(spec.SCHEMAS_DIR / "error-body.json")
    return [
        f"{error.message} at /{'/'.join(map(str, error.absolute_path))}" for error in validator.iter_errors(payload)
    ]


@check("errors.codes")
async def codes(ctx: CheckContext) -> None:
    missing = ctx.session_id("missing")
    history = f"/sessions/{missing}/history"
    cases = [
        (
            "a request without a bearer token",
            await ctx.call("GET", "/sessions", operation="listSessions", user=None),
            {401: "unauthorized"},
        ),
        (
            "a request for an unknown project",
            await ctx.call("GET", "/sessions", operation="listSessions", project_id=str(uuid.uuid4())),
            {404: "project_not_found"},
        ),
        (
            "a request for a closed project",
            await ctx.call("GET", "/sessions", operation="listSessions", project_id=ctx.env.closed_project_id),
            {403: "project_not_opened"},
        ),
        (
            "the history of an unknown session",
            await ctx.call("GET", history, operation="getSessionHistory"),
            {404: "session_not_found"},
        ),
        (
            "a stream request without `message`",
            await ctx.call("POST", "/stream", operation="streamChat", json_body={}),
            {422: "validation_error"},
        ),
        (
            "a stream request whose body is not JSON",
            await ctx.call("POST", "/stream", operation="streamChat", content=b"{not json"),
            {400: "invalid_json", 422: "validation_error"},  # INPUT-009 allows either
        ),
    ]
    skipped = []
    for what, exchange, expected in cases:
        if exchange.status not in expected:  # the status itself is other checks' business (AUTH-001, ...)
            skipped.append(f"{what}: {_got(exchange)}")
            continue
        ctx.expect(
            "ERROR-002",
            _code(exchange) == expected[exchange.status],
            f"{what} ({exchange.method} {exchange.url}): answered {exchange.status} with code {_code(exchange)!r}; "
            f"expected {expected[exchange.status]!r}",
            exchange,
        )
    if len(skipped) == len(cases):
        ctx.not_testable(
            "ERROR-002", "no request was answered with the status whose code is checked: " + "; ".join(skipped)
        )


@check("errors.body")
async def body(ctx: CheckContext) -> None:
    session = ctx.session_id()
    missing = ctx.session_id("missing")
    unknown_project = str(uuid.uuid4())
    await setup_turn(ctx, "ERROR-001", session)  # an existing session: only the provoked problem is wrong
    exchanges: list[tuple[str, Exchange]] = []
    for endpoint in _endpoints(ctx):
        exchanges.append(("no bearer token", await _call(ctx, endpoint, session, user=None)))
        exchanges.append(("an unknown project", await _call(ctx, endpoint, session, project_id=unknown_project)))
        exchanges.append(
            ("a closed project", await _call(ctx, endpoint, session, project_id=ctx.env.closed_project_id))
        )
        if "{sid}" in endpoint.path:
            exchanges.append(("an unknown session", await _call(ctx, endpoint, missing)))
            exchanges.append(("a session id of 129 characters", await _call(ctx, endpoint, "s" * 129)))
    stream, rename = ENDPOINTS[0], ENDPOINTS[3]
    exchanges += [
        ("an empty object as the body", await _call(ctx, stream, session, json_body={})),
        ("`{not json` as the body", await _call(ctx, stream, session, content=b"{not json")),
        ("an empty title", await _call(ctx, rename, session, json_body={"title": ""})),
        ("`{not json` as the body", await _call(ctx, rename, session, content=b"{not json")),
        (
            "limit=0",
            await ctx.call("GET", f"/sessions/{session}/history", operation="getSessionHistory", params={"limit": 0}),
        ),
    ]
    if "no_llm" in ctx.env.users:
        exchanges.append(("a user with no LLM configuration", await _call(ctx, stream, session, user="no_llm")))
    judged = 0
    for what, exchange in exchanges:
        if exchange.status is None or not 400 <= exchange.status < 500:
            continue  # other checks judge the status; this one judges 4xx bodies
        judged += 1
        problems = _error_body_problems(exchange)
        ctx.expect(
            "ERROR-001",
            not problems,
            f"{exchange.method} {exchange.url} with {what} answered {exchange.status} with a body that is not "
            f"{{message, code, details?}}: {'; '.join(problems)}",
            exchange,
        )
    ctx.require(judged > 0, "ERROR-001", f"none of the {len(exchanges)} requests meant to be refused was answered 4xx")


# --- concurrency -------------------------------------------------------------------------------------------------


async def _timed(awaitable: Awaitable[T]) -> tuple[T, float]:
    value = await awaitable
    return value, time.monotonic()


async def _generation_started(ctx: CheckContext, runs: list[str], seconds: float = 10) -> bool:
    """The fake LLM has received the first main request of one of the runs: that turn is running."""

    async def probe() -> bool:
        for run in runs:
            if any(r.get("step") == 0 for r in await ctx.llm_requests(run)):
                return True
        return False

    return bool(await ctx.wait_for(probe, seconds=seconds, interval=0.05))


def _turn_texts(history: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(user text, concatenated assistant text) per turn, in history order."""
    turns: list[tuple[str, str]] = []
    for message in history:
        if message.get("role") == "user":
            turns.append((message.get("content"), ""))
        elif message.get("role") == "assistant" and turns:
            turns[-1] = (turns[-1][0], turns[-1][1] + (message.get("content") or ""))
    return turns


@dataclass
class _Request:
    label: str
    script: str
    message: str
    run: str
    result: StreamResult | None = None
    answered_at: float = 0.0  # monotonic time the answer (or the stream) ended


@check("concurrency.busy", slow=True)
async def busy(ctx: CheckContext) -> None:
    session = ctx.session_id()
    deadline = ctx.target.stream_deadline

    def request(label: str, script: str, text: str) -> _Request:
        run = f"{ctx.run}-{label}"
        return _Request(label, script, ctx.message(script, text, run=run), run)

    async def send(item: _Request) -> None:
        item.result, item.answered_at = await _timed(
            ctx.stream({"message": item.message, "session_id": session}, deadline=deadline)
        )

    first = request("setup", "cs-plain", "Before the slow turns")
    await send(first)
    ctx.require(
        served(ctx, first.result), "CONCURRENCY-002", f"the first turn was not served: {describe(first.result)}"
    )
    # Two slow turns for the idle session at the same moment: one runs, the other is busy.
    racing = [
        request("race-1", "cs-slow", "First of two at once"),
        request("race-2", "cs-slow", "Second of two at once"),
    ]
    tasks = [asyncio.create_task(send(item)) for item in racing]
    # And one more once a slow turn is surely inside its silent generation.
    late = request("late", "cs-plain", "While a slow turn runs")
    running = await _generation_started(ctx, [item.run for item in racing])
    if running:
        await send(late)
    await asyncio.gather(*tasks)
    last = request("after", "cs-plain", "After the slow turn")
    await send(last)

    accepted = [item for item in racing if item.result.status == 200]
    ctx.expect(
        "CONCURRENCY-001",
        len(accepted) == 1,
        f"two stream requests for one idle session sent at the same moment answered {racing[0].result.status} and "
        f"{racing[1].result.status}; expected one stream and one 409 session_busy",
        *(item.result.exchange for item in racing),
    )
    if accepted:
        ends = max(item.answered_at for item in accepted)
        refused = [item for item in racing if item not in accepted]
        checked = [(item, "the second of two stream requests sent at the same moment") for item in refused]
        if running:
            checked.append((late, "a stream request while the session's turn was running"))
        else:
            ctx.expect("CONCURRENCY-001", False, "the slow turn's generation never reached the fake LLM within 10 s")
        for item, what in checked:
            exchange = item.result.exchange
            ok = exchange.status == 409 and _code(exchange) == "session_busy"
            ctx.expect(
                "CONCURRENCY-001",
                ok,
                f"{what}: answered {_got(exchange)}; expected 409 with code session_busy",
                exchange,
            )
            if ok:
                ctx.expect(
                    "CONCURRENCY-001",
                    item.answered_at < ends,
                    f"{what}: the 409 came {item.answered_at - ends:.2f} s after the running turn ended (it took "
                    f"{exchange.elapsed:.2f} s); it must be answered while the turn runs",
                    exchange,
                )
    refused_inside = set()
    for item in [*racing, late]:
        if item.result is None:
            continue
        # A refusal inside the stream makes no LLM request for its run (a served turn does).
        if refused_in_stream(item.result.events) and not await ctx.llm_requests(item.run):
            refused_inside.add(item.label)
        ctx.expect(
            "PRECHECK-001",
            item.label not in refused_inside,
            f"a stream request for a busy session was refused inside a 200 stream: {item.result.types}",
            item.result.exchange,
        )

    # CONCURRENCY-002: every served turn's messages together in the history, in one piece each.
    sent = [first, *racing, late, last]
    expected = sorted(
        (item.message, script_text(ctx, item.script))
        for item in sent
        if item.result is not None and item.result.status == 200 and item.label not in refused_inside
    )
    turns = _turn_texts((await ctx.history(session, limit=1000))["messages"])
    ctx.expect(
        "CONCURRENCY-002",
        sorted(turns) == expected,
        f"the history's turns (user text, assistant text) are {turns!r}; expected each served turn's messages "
        f"together and nothing of the refused requests: {expected!r}",
    )


@check("concurrency.parallel_sessions", slow=True)
async def parallel_sessions(ctx: CheckContext) -> None:
    deadline = ctx.target.stream_deadline

    async def one(label: str) -> tuple[StreamResult, float]:
        started = time.monotonic()
        result = await ctx.stream(
            {"message": ctx.message("cs-slow"), "session_id": ctx.session_id(label)}, deadline=deadline
        )
        ctx.require(
            served(ctx, result, "cs-slow"),
            "CONCURRENCY-003",
            f"a slow turn was not served: {describe(result)}",
            result.exchange,
        )
        return result, time.monotonic() - started

    _, alone = await one("alone")
    started = time.monotonic()
    results = await asyncio.gather(one("a"), one("b"))
    together = time.monotonic() - started
    ctx.expect(
        "CONCURRENCY-003",
        together < 1.6 * alone,
        f"one slow turn took {alone:.2f} s alone; two slow turns of two sessions, started together, took "
        f"{together:.2f} s (each {results[0][1]:.2f} s and {results[1][1]:.2f} s); expected less than "
        f"{1.6 * alone:.2f} s (1.6 x alone) if the turns run concurrently",
        results[0][0].exchange,
        results[1][0].exchange,
    )
