"""Authentication, projects and preconditions (AUTH-*, PROJECT-*, LLM-001, PRECHECK-001): what every chat
endpoint answers before any work starts, as an HTTP status and never inside a stream."""

from __future__ import annotations

import base64
import json
import secrets
import time
import uuid
from typing import Any

from conformance.checks import check
from conformance.checks.context import CheckContext
from conformance.checks.support import call_operation, error_code, is_stream, judge_not_streamed, setup_turn
from conformance.errors import NotTestable
from conformance.rules.operations import chat_endpoints
from conformance.transport.exchanges import Exchange

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
    ctx.findings.expect(
        "AUTH-001",
        exchange.status == 401,
        f"{exchange.method} {exchange.url} with {what}: answered {exchange.excerpt()}, expected 401",
        exchange,
    )
    if exchange.status == 401:
        value = exchange.headers.get("www-authenticate", "")
        ctx.findings.expect(
            "AUTH-002",
            value.startswith("Bearer"),
            f"{exchange.method} {exchange.url} with {what}: the 401 carries WWW-Authenticate {value!r}, "
            "expected a value starting with `Bearer`",
            exchange,
        )


@check("preconditions.token_required")
async def token_required(ctx: CheckContext) -> None:
    session = ctx.session_id()
    await setup_turn(ctx, session)  # an existing session: a valid token would succeed everywhere
    for what, authorization in _bad_authorizations(ctx).items():
        headers = {} if authorization is None else {"Authorization": authorization}
        for endpoint in chat_endpoints(ctx.target.capabilities):
            exchange = await call_operation(ctx, endpoint, session, user=None, headers=headers)
            _judge_401(ctx, exchange, what)
            if endpoint.id == "streamChat":
                judge_not_streamed(ctx, exchange, what)
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
            for endpoint in chat_endpoints(ctx.target.capabilities):
                extra, invalid = problems.get(endpoint.id, ({}, None))
                exchange = await call_operation(
                    ctx, endpoint, missing, user=None, headers=headers, project_id=project, **extra
                )
                also = ", ".join(
                    [project_what] + (["an unknown session"] if endpoint.names_session else []) + [invalid or ""]
                ).rstrip(", ")
                _judge_401(ctx, exchange, f"{what}, {also}")
                if endpoint.id == "streamChat":
                    judge_not_streamed(ctx, exchange, f"{what}, {also}")


# --- projects ---------------------------------------------------------------------------------------------------


async def _every_endpoint(ctx: CheckContext, project_id: str, status: int, requirement: str, what: str) -> None:
    session = ctx.session_id()
    for endpoint in chat_endpoints(ctx.target.capabilities):
        exchange = await call_operation(ctx, endpoint, session, project_id=project_id)
        ctx.findings.expect(
            requirement,
            exchange.status == status,
            f"{exchange.method} {exchange.url} for {what}: answered {exchange.excerpt()}, expected {status}",
            exchange,
        )
        if endpoint.id == "streamChat":
            judge_not_streamed(ctx, exchange, f"a stream request for {what}")


@check("preconditions.unknown_project")
async def unknown_project(ctx: CheckContext) -> None:
    await _every_endpoint(ctx, str(uuid.uuid4()), 404, "PROJECT-001", "a project that does not exist")


@check("preconditions.closed_project")
async def closed_project(ctx: CheckContext) -> None:
    await _every_endpoint(ctx, ctx.env.closed_project_id, 403, "PROJECT-002", "a closed project")


# --- LLM configuration ------------------------------------------------------------------------------------------


@check("preconditions.llm_not_configured")
async def not_configured(ctx: CheckContext) -> None:
    if "no_llm" not in ctx.env.users:
        raise NotTestable("the target provides no user without an LLM configuration (`no_llm`)")
    result = await ctx.client.stream({"message": ctx.message("cs-plain")}, user="no_llm")
    exchange = result.exchange
    ctx.findings.expect(
        "LLM-001",
        exchange.status == 400 and error_code(exchange) == "llm_not_configured",
        f"a stream request by a user with no LLM configuration answered {exchange.excerpt()}; expected 400 with code "
        "llm_not_configured",
        exchange,
    )
    # Without an LLM configuration no turn can be served: any stream is a refusal inside the stream.
    ctx.findings.expect(
        "PRECHECK-001",
        not is_stream(exchange),
        f"a stream request by a user with no LLM configuration answered a 200 stream {result.types}; expected an "
        "HTTP error before any stream begins",
        exchange,
    )
