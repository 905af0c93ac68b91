"""Project access (ACCESS-*): a user without access to a project is refused everywhere, the same way whatever
else is true of the project or the request, a grant works from the next request and its removal too, and the
controller's project endpoints refuse such a user as well.

They need a user without access, which the suite makes only where the target file declares `access_control`
(GNS3-style RBAC through the controller): elsewhere they are NOT TESTABLE.
"""

from __future__ import annotations

import secrets
import uuid

from conformance.checks import check
from conformance.checks.context import CheckContext
from conformance.checks.support import call_operation, error_code, history, judge_not_streamed, message_keys, setup_turn
from conformance.checks.turns import completed_turn, describe
from conformance.errors import NotTestable
from conformance.rules.operations import chat_endpoints
from conformance.transport.exchanges import Exchange, json_or_none

DENIED = (403, "project_access_denied")


def _require_stranger(ctx: CheckContext) -> None:
    if "stranger" not in ctx.env.users or ctx.env.controller is None:
        raise NotTestable(
            "the target file declares no access_control: the suite cannot make a user without access to a project"
        )


def _denied(exchange: Exchange) -> bool:
    return (exchange.status, error_code(exchange)) == DENIED


def _judge_denied(ctx: CheckContext, requirement: str, exchange: Exchange, what: str, *, stream: bool) -> None:
    ctx.findings.expect(
        requirement,
        _denied(exchange),
        f"{exchange.method} {exchange.url} by a user without access to the project, {what}: answered "
        f"{exchange.excerpt()} "
        f"with code {error_code(exchange)!r}; expected 403 with code project_access_denied",
        exchange,
    )
    if stream:
        judge_not_streamed(ctx, exchange, f"a stream request by a user without access, {what}")


@check("access.chat_endpoints")
async def chat_endpoints_refuse_a_stranger(ctx: CheckContext) -> None:
    _require_stranger(ctx)
    owned = ctx.session_id("owned")
    await setup_turn(ctx, owned)  # the main user's session in the check's opened project
    before = await history(ctx, owned, "ACCESS-001")
    endpoints = chat_endpoints(ctx.target.capabilities)
    # ACCESS-001: the opened project, valid requests naming the owner's session.
    for endpoint in endpoints:
        exchange = await call_operation(ctx, endpoint, owned, user="stranger")
        _judge_denied(
            ctx, "ACCESS-001", exchange, "the project opened, the request valid", stream=endpoint.id == "streamChat"
        )
    after = await history(ctx, owned, "ACCESS-001")
    ctx.findings.expect(
        "ACCESS-001",
        message_keys(after["messages"]) == message_keys(before["messages"]),
        f"the owner's history changed after the refused requests: {len(before['messages'])} messages before, "
        f"{len(after['messages'])} after",
    )
    # ACCESS-002: the same answer whatever else is true of the project or the request.
    new = ctx.session_id("new")
    invalid = {
        "streamChat": {"json_body": {"message": "", "temperature": "hot"}},
        "renameSession": {"json_body": {"title": ""}},
        "getSessionHistory": {"params": {"limit": 0}},
    }
    projects = (
        (ctx.env.project_id, "the project opened"),
        (str(uuid.uuid4()), "a project that does not exist"),
        (ctx.env.closed_project_id, "a closed project"),
    )
    for project_id, project_what in projects:
        for endpoint in endpoints:
            cases = [(new, {}, "a session that does not exist")]
            if endpoint.id in invalid:
                cases.append((owned, invalid[endpoint.id], "an invalid body or query"))
            if project_id != ctx.env.project_id:
                cases.append((owned, {}, "another user's session"))
            for session_id, extra, request_what in cases:
                exchange = await call_operation(
                    ctx, endpoint, session_id, user="stranger", project_id=project_id, **extra
                )
                what = f"{project_what}, {request_what}"
                _judge_denied(ctx, "ACCESS-002", exchange, what, stream=endpoint.id == "streamChat")


@check("access.grant")
async def a_grant_and_its_removal_apply_from_the_next_request(ctx: CheckContext) -> None:
    _require_stranger(ctx)
    controller = ctx.env.controller
    await setup_turn(ctx, ctx.session_id("owned"))  # the project is in use: its owner has a session there
    role = (ctx.target.data.get("access_control") or {}).get("role", "User")
    ace_id = await controller.grant(
        ctx.user("stranger").user_id, f"/projects/{ctx.env.project_id}", await controller.role_id(role)
    )
    mine = ctx.session_id("granted")
    try:
        result = await ctx.client.stream({"message": ctx.message("cs-plain"), "session_id": mine}, user="stranger")
        ctx.findings.expect(
            "ACCESS-003",
            completed_turn(result),
            f"a turn of the user granted access was not served: {describe(result)}",
            result.exchange,
        )
        # The session's own delete last, so that every other endpoint finds it.
        for endpoint in sorted(chat_endpoints(ctx.target.capabilities), key=lambda e: e.id == "deleteSession"):
            if endpoint.id == "streamChat":
                continue
            exchange = await call_operation(ctx, endpoint, mine, user="stranger")
            ctx.findings.expect(
                "ACCESS-003",
                exchange.status is not None and 200 <= exchange.status < 300,
                f"{exchange.method} {exchange.url} by the user granted access, on a session of their own: "
                f"answered {exchange.excerpt()}",
                exchange,
            )
    finally:
        await controller.revoke(ace_id)
    for endpoint in chat_endpoints(ctx.target.capabilities):
        exchange = await call_operation(ctx, endpoint, ctx.session_id("after"), user="stranger")
        ctx.findings.expect(
            "ACCESS-003",
            _denied(exchange),
            f"{exchange.method} {exchange.url} right after the grant was removed: answered "
            f"{exchange.excerpt()} with code "
            f"{error_code(exchange)!r}; expected 403 with code project_access_denied",
            exchange,
        )


async def _as_admin(ctx: CheckContext, method: str, path: str) -> Exchange:
    token = ctx.env.controller.admin_token
    return await ctx.client.call(method, path, user=None, absolute=True, headers={"Authorization": f"Bearer {token}"})


async def _status_of(ctx: CheckContext, project_id: str) -> str | None:
    exchange = await _as_admin(ctx, "GET", f"/v3/projects/{project_id}")
    body = json_or_none(exchange.body) if exchange.status == 200 else None
    return body.get("status") if isinstance(body, dict) else None


@check("access.controller")
async def controller_refuses_a_stranger(ctx: CheckContext) -> None:
    _require_stranger(ctx)
    opened = ctx.env.project_id
    owned = ctx.session_id("owned")
    await setup_turn(ctx, owned)
    before = await history(ctx, owned, "ACCESS-004")
    closed = await ctx.env.controller.create_project(f"conformance-access-closed-{secrets.token_hex(3)}")
    await ctx.env.controller.close_project(closed)

    async def as_stranger(method: str, path: str) -> Exchange:
        return await ctx.client.call(method, path, user="stranger", absolute=True)

    listing = await as_stranger("GET", "/v3/projects")
    listed = {p.get("project_id") for p in json_or_none(listing.body) or [] if isinstance(p, dict)}
    ctx.findings.expect(
        "ACCESS-004",
        listing.status == 403 or (listing.status == 200 and not {opened, closed} & listed),
        f"GET /v3/projects by a user without access answered {listing.excerpt()} and lists "
        f"{sorted({opened, closed} & listed)}",
        listing,
    )
    attempts = [
        ("GET", f"/v3/projects/{opened}", opened, "opened"),
        ("POST", f"/v3/projects/{opened}/close", opened, "opened"),
        ("POST", f"/v3/projects/{closed}/open", closed, "closed"),
        ("DELETE", f"/v3/projects/{opened}", opened, "opened"),
        ("DELETE", f"/v3/projects/{closed}", closed, "closed"),
    ]
    for method, path, project_id, status in attempts:
        exchange = await as_stranger(method, path)
        ctx.findings.expect(
            "ACCESS-004",
            exchange.status == 403,
            f"{method} {path} by a user without access: answered {exchange.excerpt()}, expected 403",
            exchange,
        )
        now = await _status_of(ctx, project_id)
        ctx.findings.expect(
            "ACCESS-004",
            now == status,
            f"after {method} {path} by a user without access, the project's status is {now!r} (the administrator's "
            f"GET /v3/projects/{project_id}), expected {status!r}",
        )
    after = await history(ctx, owned, "ACCESS-004")
    ctx.findings.expect(
        "ACCESS-004",
        message_keys(after["messages"]) == message_keys(before["messages"]),
        f"the owner's history changed: {len(before['messages'])} messages before, {len(after['messages'])} after",
    )
