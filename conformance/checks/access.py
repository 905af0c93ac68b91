"""Project access (ACCESS-*): a user without access to a project is refused everywhere, the same way whatever
else is true of the project or the request (before its LLM configuration and a busy session too), a grant works
from the next request and its removal too, a grant on a parent path only when it propagates, a denying entry
overrides a parent's grant, and the controller's project endpoints refuse such a user as well. The entries beyond a
grant on the project (parent paths, denies) are access_entries.py's, creating projects access_creation.py's.

They need a user without access, which the suite makes only where the target file declares `access_control`
(GNS3-style RBAC through the controller): elsewhere they are NOT TESTABLE. The checks that write entries write them
for a user of their own (the `stranger` is every access check's), as the administrator, in the evidence.
"""

from __future__ import annotations

import asyncio
import secrets
import uuid
from typing import Any

from conformance.checks import check
from conformance.checks.context import CheckContext
from conformance.checks.support import (
    call_operation,
    error_code,
    generation_started,
    history,
    judge_not_streamed,
    message_keys,
    setup_turn,
    wait_for,
)
from conformance.checks.turns import completed_turn, describe
from conformance.errors import NotTestable
from conformance.harness.controller import Controller
from conformance.harness.environment import User
from conformance.rules.operations import chat_endpoints
from conformance.transport.exchanges import Exchange, json_or_none


def require_stranger(ctx: CheckContext) -> None:
    if "stranger" not in ctx.env.users or ctx.env.controller is None:
        raise NotTestable(
            "the target file declares no access_control: the suite cannot make a user without access to a project"
        )


def _judge_denied(ctx: CheckContext, requirement: str, exchange: Exchange, what: str, *, stream: bool) -> None:
    ctx.findings.expect(
        requirement,
        denied(exchange),
        f"{exchange.method} {exchange.url} by a user without access to the project, {what}: answered "
        f"{exchange.excerpt()} "
        f"with code {error_code(exchange)!r}; expected 403 with code project_access_denied",
        exchange,
    )
    if stream:
        judge_not_streamed(ctx, exchange, f"a stream request by a user without access, {what}")


DENIED = (403, "project_access_denied")


def denied(exchange: Exchange) -> bool:
    return (exchange.status, error_code(exchange)) == DENIED


async def as_admin(ctx: CheckContext, method: str, path: str, json_body: Any = None) -> Exchange:
    headers = {"Authorization": f"Bearer {ctx.env.controller.admin_token}"}
    return await ctx.client.call(method, path, user=None, absolute=True, headers=headers, json_body=json_body)


async def own_user(ctx: CheckContext, label: str, *, with_llm: bool) -> str:
    """A new user of the check's, logged in, without any entry (so without access to the check's project), with an
    LLM configuration pointed at the fake LLM when `with_llm`; returns its name among the run's users."""
    controller, env = ctx.env.controller, ctx.env
    password = env.target.section("auth", {}).get("user_password", "conformance-pass-1")
    username = f"cs-{label}-{secrets.token_hex(4)}"
    user_id = await controller.create_user(username, password)
    token = await Controller.login(env.client, env.base_url, username, password)
    llm = env.target.section("llm", {"mode": "preconfigured"})
    if with_llm and llm.get("mode") == "controller":
        key = f"sk-conformance-{label}-{secrets.token_hex(12)}"
        env.api_keys.append(key)  # redacted from the reports with the run's other keys
        await controller.configure_llm(user_id, llm["config"], env.fake_llm_url, key)
    name = f"{label}-{ctx.run}"
    env.users[name] = User(name, token, user_id, username)  # its token then shows as $TOKEN in the evidence
    return name


async def role_named(ctx: CheckContext, name: str) -> str | None:
    """The id of the role `name` in GET /v3/access/roles, or None when none has that name."""
    exchange = await as_admin(ctx, "GET", "/v3/access/roles")
    roles = json_or_none(exchange.body) if exchange.status == 200 else None
    found = [r.get("role_id") for r in roles or [] if isinstance(r, dict) and r.get("name") == name]
    return str(found[0]) if found else None


async def write_entry(
    ctx: CheckContext, requirement: str, user: str, path: str, role_id: str, *, propagate: bool, allowed: bool
) -> str:
    """An entry giving (or, `allowed` false, denying) `user` the role on `path`; the check stops, failing
    `requirement`, when the controller refuses to write it."""
    body = {
        "ace_type": "user",
        "path": path,
        "user_id": ctx.user(user).user_id,
        "role_id": role_id,
        "propagate": propagate,
        "allowed": allowed,
    }
    exchange = await as_admin(ctx, "POST", "/v3/access/acl", body)
    ace_id = (json_or_none(exchange.body) or {}).get("ace_id") if exchange.status == 201 else None
    ctx.findings.require(
        isinstance(ace_id, str),
        requirement,
        f"POST /v3/access/acl {body} by the administrator answered {exchange.excerpt()}, expected 201 with an ace_id",
        exchange,
    )
    ctx.env.ledger.aces[ace_id] = f"role {role_id} on {path} for user {body['user_id']}"
    return ace_id


async def remove_entries(ctx: CheckContext, ace_ids: list[str]) -> None:
    for ace_id in ace_ids:
        exchange = await as_admin(ctx, "DELETE", f"/v3/access/acl/{ace_id}")
        if exchange.status in (200, 204):
            ctx.env.ledger.aces.pop(ace_id, None)


async def uses_every_endpoint(ctx: CheckContext, requirement: str, user: str, session_id: str, what: str) -> None:
    """ACCESS-003: the user, with access, plays a turn in a session of their own, then calls every other chat
    endpoint on it (the session's delete last, so that every other endpoint finds it)."""
    result = await ctx.client.stream({"message": ctx.message("cs-plain"), "session_id": session_id}, user=user)
    ctx.findings.expect(
        requirement,
        completed_turn(result),
        f"a turn of the user with {what} was not served: {describe(result)}",
        result.exchange,
    )
    for endpoint in sorted(chat_endpoints(ctx.target.capabilities), key=lambda e: e.id == "deleteSession"):
        if endpoint.id == "streamChat":
            continue
        exchange = await call_operation(ctx, endpoint, session_id, user=user)
        ctx.findings.expect(
            requirement,
            exchange.status is not None and 200 <= exchange.status < 300,
            f"{exchange.method} {exchange.url} by the user with {what}, on a session of their own: answered "
            f"{exchange.excerpt()}",
            exchange,
        )


async def refused_everywhere(
    ctx: CheckContext, requirement: str, user: str, session_id: str, what: str, *, project_id: str | None = None
) -> None:
    """Every chat endpoint, with a valid request naming `session_id`, answers 403 project_access_denied."""
    for endpoint in chat_endpoints(ctx.target.capabilities):
        exchange = await call_operation(ctx, endpoint, session_id, user=user, project_id=project_id)
        ctx.findings.expect(
            requirement,
            denied(exchange),
            f"{exchange.method} {exchange.url} by a user with {what}: answered {exchange.excerpt()} with code "
            f"{error_code(exchange)!r}; expected 403 with code project_access_denied",
            exchange,
        )


@check("access.chat_endpoints")
async def chat_endpoints_refuse_a_stranger(ctx: CheckContext) -> None:
    require_stranger(ctx)
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
    require_stranger(ctx)
    controller = ctx.env.controller
    await setup_turn(ctx, ctx.session_id("owned"))  # the project is in use: its owner has a session there
    role = (ctx.target.data.get("access_control") or {}).get("role", "User")
    ace_id = await controller.grant(
        ctx.user("stranger").user_id, f"/projects/{ctx.env.project_id}", await controller.role_id(role)
    )
    try:
        await uses_every_endpoint(ctx, "ACCESS-003", "stranger", ctx.session_id("granted"), "a grant on the project")
    finally:
        await controller.revoke(ace_id)
    for endpoint in chat_endpoints(ctx.target.capabilities):
        exchange = await call_operation(ctx, endpoint, ctx.session_id("after"), user="stranger")
        ctx.findings.expect(
            "ACCESS-003",
            denied(exchange),
            f"{exchange.method} {exchange.url} right after the grant was removed: answered "
            f"{exchange.excerpt()} with code "
            f"{error_code(exchange)!r}; expected 403 with code project_access_denied",
            exchange,
        )


@check("access.precedence", slow=True)
async def access_comes_before_the_llm_and_the_busy_session(ctx: CheckContext) -> None:
    """ACCESS-002 in the states the stranger of access.chat_endpoints cannot make: a user without access who has no
    LLM configuration either (403, not LLM-001's 400), and a session busy with its owner's turn (403, not 409)."""
    require_stranger(ctx)
    if ctx.target.section("llm", {"mode": "preconfigured"}).get("mode") == "controller":
        bare = await own_user(ctx, "nollm", with_llm=False)
        what = "no access and no LLM configuration"
        await refused_everywhere(ctx, "ACCESS-002", bare, ctx.session_id("bare"), what)
    else:
        ctx.findings.not_testable(
            "ACCESS-002", "the target's LLM is not configured through the controller: no user without one is made"
        )
    busy, run = ctx.session_id("busy"), f"{ctx.run}-busy"
    owner = asyncio.create_task(
        ctx.client.stream({"message": ctx.message("cs-slow", "A slow turn", run=run), "session_id": busy})
    )
    try:
        running = await wait_for(lambda: generation_started(ctx, [run]), seconds=10, interval=0.05)
        if running and not owner.done():
            what = "no access, on a session busy with its owner's turn"
            await refused_everywhere(ctx, "ACCESS-002", "stranger", busy, what)
        if not running or owner.done():
            ctx.findings.not_testable(
                "ACCESS-002",
                f"the owner's slow turn was not running throughout the requests (it reached the fake LLM: "
                f"{bool(running)}): the session was not busy",
            )
    finally:
        await owner


async def admin_view(ctx: CheckContext, project_id: str) -> dict[str, Any]:
    """The project as the administrator's GET /v3/projects/{project_id} shows it ({} when it shows none)."""
    exchange = await as_admin(ctx, "GET", f"/v3/projects/{project_id}")
    body = json_or_none(exchange.body) if exchange.status == 200 else None
    return body if isinstance(body, dict) else {}


@check("access.controller")
async def controller_refuses_a_stranger(ctx: CheckContext) -> None:
    require_stranger(ctx)
    opened = ctx.env.project_id
    owned = ctx.session_id("owned")
    await setup_turn(ctx, owned)
    before = await history(ctx, owned, "ACCESS-004")
    closed = await ctx.env.controller.create_project(f"conformance-access-closed-{secrets.token_hex(3)}")
    await ctx.env.controller.close_project(closed)

    await judge_controller_refusals(ctx, "stranger", opened, closed, "a user without access")
    after = await history(ctx, owned, "ACCESS-004")
    ctx.findings.expect(
        "ACCESS-004",
        message_keys(after["messages"]) == message_keys(before["messages"]),
        f"the owner's history changed: {len(before['messages'])} messages before, {len(after['messages'])} after",
    )


async def judge_controller_refusals(ctx: CheckContext, user: str, opened: str, closed: str, who: str) -> None:
    """ACCESS-004 for `user`, without access to the `opened` and `closed` projects: neither listed, read, closed,
    opened nor deleted, and each project's status unchanged (the administrator's GET)."""

    async def as_user(method: str, path: str) -> Exchange:
        return await ctx.client.call(method, path, user=user, absolute=True)

    listing = await as_user("GET", "/v3/projects")
    listed = {p.get("project_id") for p in json_or_none(listing.body) or [] if isinstance(p, dict)}
    ctx.findings.expect(
        "ACCESS-004",
        listing.status == 403 or (listing.status == 200 and not {opened, closed} & listed),
        f"GET /v3/projects by {who} answered {listing.excerpt()} and lists {sorted({opened, closed} & listed)}",
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
        exchange = await as_user(method, path)
        ctx.findings.expect(
            "ACCESS-004",
            exchange.status == 403,
            f"{method} {path} by {who}: answered {exchange.excerpt()}, expected 403",
            exchange,
        )
        now = (await admin_view(ctx, project_id)).get("status")
        ctx.findings.expect(
            "ACCESS-004",
            now == status,
            f"after {method} {path} by {who}, the project's status is {now!r} (the administrator's "
            f"GET /v3/projects/{project_id}), expected {status!r}",
        )
