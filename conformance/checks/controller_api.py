"""The controller endpoints a chat client relies on (CONTROLLER-001): what every client calls before its first chat
request, answered as openapi.yaml's `controller` tag documents them (gns3-server 3.1's shapes); and a user's own
password change, which asks for the current password (CONTROLLER-002).

Each call names its operation, so that the client judges its status and body against the contract
(conformance/rules/responses.py: a controller answer's violations are CONTROLLER-001's); here each call also says which
status the scenario expects. It needs a GNS3-style controller (target file `auth: controller`): elsewhere the suite
has no administrator to make projects and configurations with, and the rule is NOT TESTABLE.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
import uuid
from pathlib import Path
from typing import Any

from conformance.checks import check
from conformance.checks.context import CheckContext
from conformance.errors import NotTestable
from conformance.harness.controller import LOGIN_PATH, Controller
from conformance.harness.environment import User
from conformance.transport.exchanges import Exchange, json_or_none

RULE = "CONTROLLER-001"
PASSWORD_RULE = "CONTROLLER-002"


def _require_controller(ctx: CheckContext) -> Any:
    if ctx.env.controller is None:
        raise NotTestable("the target file declares no GNS3-style controller (auth mode controller)")
    return ctx.env.controller


class _Calls:
    """One check's controller calls: each judged against its operation and the status its scenario expects."""

    def __init__(self, ctx: CheckContext, admin_token: str) -> None:
        self.ctx, self.admin = ctx, {"Authorization": f"Bearer {admin_token}"}

    async def __call__(
        self,
        operation: str,
        method: str,
        path: str,
        expected: int,
        *,
        who: str = "main",
        json_body: Any = None,
        token: str | None = None,
    ) -> Exchange:
        """`who`: a user of the run, `admin` (the target file's administrator) or `nobody` (no token); `token`: this
        bearer token instead (`who` then only names it)."""
        user, headers = (None, self.admin) if who == "admin" else (None, None) if who == "nobody" else (who, None)
        if token is not None:
            user, headers = None, {"Authorization": f"Bearer {token}"}
        exchange = await self.ctx.client.call(
            method, path, operation=operation, user=user, headers=headers, json_body=json_body, absolute=True
        )
        self.ctx.findings.expect(
            RULE,
            exchange.status == expected,
            f"{method} {path} ({operation}, as {who}) answered {exchange.excerpt()}, expected {expected}",
            exchange,
        )
        return exchange


def _member(exchange: Exchange, name: str) -> Any:
    body = json_or_none(exchange.body or "")
    return body.get(name) if isinstance(body, dict) else None


@check("controller_api.answers")
async def answers(ctx: CheckContext) -> None:
    controller = _require_controller(ctx)
    call = _Calls(ctx, controller.admin_token)
    main = ctx.env.user("main")
    password = ctx.env.target.section("auth", {}).get("user_password", "conformance-pass-1")

    await call("getVersion", "GET", "/v3/version", 200, who="nobody")
    await call("authenticate", "POST", "/v3/access/users/authenticate", 200, who="nobody",
               json_body={"username": main.username, "password": password})  # fmt: skip
    refused = {"username": f"cs-nobody-{secrets.token_hex(4)}", "password": "not-the-password"}
    await call("authenticate", "POST", "/v3/access/users/authenticate", 401, who="nobody", json_body=refused)
    me = await call("getCurrentUser", "GET", "/v3/access/users/me", 200)
    ctx.findings.expect(
        RULE,
        _member(me, "user_id") in (None, main.user_id) or main.user_id is None,
        f"GET /v3/access/users/me names user {_member(me, 'user_id')!r}, the token is {main.user_id!r}'s",
        me,
    )
    await call("getCurrentUser", "GET", "/v3/access/users/me", 401, who="nobody")
    expired = _expired_token(ctx, main.token)
    if expired is None:
        ctx.findings.not_testable(RULE, f"no token that expired could be signed: {_key_problem(ctx)}")
    else:
        await call("getCurrentUser", "GET", "/v3/access/users/me", 401, who="main, expired", token=expired)
    # Refused for want of a privilege: another user's LLM configurations are the administrator's to read.
    other = ctx.env.users.get("other")
    if other is not None and other.user_id:
        await call("listLlmModelConfigs", "GET", f"/v3/access/users/{other.user_id}/llm-model-configs", 403)
    listed = await call("listProjects", "GET", "/v3/projects", 200, who="admin")
    ids = {p.get("project_id") for p in json_or_none(listed.body or "") or [] if isinstance(p, dict)}
    ctx.findings.expect(
        RULE,
        ctx.env.project_id is None or ctx.env.project_id in ids,
        f"GET /v3/projects by the administrator does not list the run's project {ctx.env.project_id}",
        listed,
    )
    await _project_lifecycle(ctx, call)
    await _llm_configurations(ctx, controller, call)


async def _project_lifecycle(ctx: CheckContext, call: _Calls) -> None:
    """Create, read, close, open, delete: each answer as documented; a name in use 409, an unknown project 404."""
    name = f"conformance-controller-{secrets.token_hex(4)}"
    created = await call("createProject", "POST", "/v3/projects", 201, who="admin", json_body={"name": name})
    project_id = _member(created, "project_id")
    if not isinstance(project_id, str) or created.status != 201:
        return  # judged above: nothing else of the life cycle can be asked
    ctx.env.ledger.projects[project_id] = name
    ctx.findings.expect(
        RULE,
        _member(created, "status") == "opened",
        f"a new project's status is {_member(created, 'status')!r}, expected 'opened' (it is opened at once)",
        created,
    )
    await call("createProject", "POST", "/v3/projects", 409, who="admin", json_body={"name": name})
    await call("getProject", "GET", f"/v3/projects/{project_id}", 200, who="admin")
    await call("closeProject", "POST", f"/v3/projects/{project_id}/close", 204, who="admin")
    closed = await call("getProject", "GET", f"/v3/projects/{project_id}", 200, who="admin")
    opened = await call("openProject", "POST", f"/v3/projects/{project_id}/open", 200, who="admin")
    for exchange, status in ((closed, "closed"), (opened, "opened")):
        ctx.findings.expect(
            RULE,
            _member(exchange, "status") == status,
            f"{exchange.method} {exchange.url}: status {_member(exchange, 'status')!r}, expected {status!r}",
            exchange,
        )
    deleted = await call("deleteProject", "DELETE", f"/v3/projects/{project_id}", 204, who="admin")
    if deleted.status == 204:
        ctx.env.ledger.projects.pop(project_id, None)
    await call("getProject", "GET", f"/v3/projects/{uuid.uuid4()}", 404, who="admin")


async def _llm_configurations(ctx: CheckContext, controller: Any, call: _Calls) -> None:
    """A user of the check's own (so that no other check's LLM changes): give it a configuration, list, remove."""
    llm = ctx.env.target.section("llm", {"mode": "preconfigured"})
    if llm.get("mode") != "controller":
        return  # the target's LLM is configured some other way: the suite has no configuration body to send
    user_id = await controller.create_user(f"cs-controller-{secrets.token_hex(4)}", "conformance-pass-1")
    configs = f"/v3/access/users/{user_id}/llm-model-configs"
    body = {**llm["config"], "base_url": ctx.env.fake_llm_url, "api_key": f"sk-conformance-{secrets.token_hex(8)}"}
    # A user other than the administrator may not configure another user's LLM: 403, nothing made.
    await call("createLlmModelConfig", "POST", configs, 403, json_body=body)
    made = await call("createLlmModelConfig", "POST", configs, 201, who="admin", json_body=body)
    config_id = _member(made, "config_id")
    if isinstance(config_id, str):
        ctx.env.ledger.llm_configs.append((user_id, config_id))
    listed = await call("listLlmModelConfigs", "GET", configs, 200, who="admin")
    listed_ids = [c.get("config_id") for c in _member(listed, "configs") or [] if isinstance(c, dict)]
    ctx.findings.expect(
        RULE,
        listed_ids == [config_id],
        f"the user's configurations are {listed_ids}, expected the one just made ({config_id})",
        listed,
    )
    if isinstance(config_id, str):
        removed = await call("deleteLlmModelConfig", "DELETE", f"{configs}/{config_id}", 204, who="admin")
        if removed.status == 204:
            ctx.env.ledger.llm_configs.remove((user_id, config_id))


def _token_key(ctx: CheckContext) -> bytes | None:
    """The key the target declares it signs its tokens with (auth.token_key), or None."""
    declared = ctx.env.target.section("auth", {}).get("token_key") or {}
    if "value" in declared:
        return declared["value"].encode()
    if "file" in declared:
        path = Path(declared["file"].replace("{workdir}", str(ctx.env.workdir)))
        return path.read_bytes().strip() if path.is_file() else None
    return None


def _key_problem(ctx: CheckContext) -> str:
    declared = ctx.env.target.section("auth", {}).get("token_key")
    if not declared:
        return "the target file declares no auth.token_key"
    return f"auth.token_key {declared} cannot be read"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _expired_token(ctx: CheckContext, token: str | None) -> str | None:
    """`token`'s own claims, expired an hour ago, signed HS256 with the target's key: a token the server issued in
    every respect but its time, or None without a key or a token to start from."""
    key = _token_key(ctx)
    parts = (token or "").split(".")
    if key is None or len(parts) != 3:
        return None
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except ValueError:
        return None
    now = int(time.time())
    header = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    payload = _b64(json.dumps({**claims, "iat": now - 7200, "exp": now - 3600}).encode())
    signature = hmac.new(key, f"{header}.{payload}".encode(), hashlib.sha256).digest()
    return f"{header}.{payload}.{_b64(signature)}"


@check("controller_api.password_change")
async def own_password_change(ctx: CheckContext) -> None:
    """CONTROLLER-002 for a user of the check's own (never the administrator, whose password is the target file's):
    a change of their own password without `current_password` (422 naming it), with a wrong one (403), neither
    changing anything; with the right one (the new password logs in, the old no longer); then the administrator sets
    it without one. The 429 after too many wrong ones is not judged (coverage.yaml's gaps)."""
    controller = _require_controller(ctx)
    env = ctx.env
    password = env.target.section("auth", {}).get("user_password", "conformance-pass-1")
    username = f"cs-passwd-{secrets.token_hex(4)}"
    user_id = await controller.create_user(username, password)
    name = f"passwd-{ctx.run}"
    token = await Controller.login(env.client, env.base_url, username, password)
    env.users[name] = User(name, token, user_id, username)  # its token then shows as $TOKEN in the evidence
    url, new = f"/v3/access/users/{user_id}", f"cs-new-{secrets.token_hex(8)}"

    async def change(body: dict[str, str], who: str = name) -> Exchange:
        headers = {"Authorization": f"Bearer {controller.admin_token}"} if who == "admin" else None
        user = None if who == "admin" else who
        return await ctx.client.call("PUT", url, user=user, headers=headers, json_body=body, absolute=True)

    missing = await change({"password": new})
    ctx.findings.expect(
        PASSWORD_RULE,
        missing.status == 422 and "current_password" in (missing.body or ""),
        f"PUT {url} by the user, changing their own password without current_password, answered "
        f"{missing.excerpt()}; expected 422 naming current_password",
        missing,
    )
    wrong = await change({"password": new, "current_password": f"cs-wrong-{secrets.token_hex(6)}"})
    ctx.findings.expect(
        PASSWORD_RULE,
        wrong.status == 403,
        f"PUT {url} by the user with a wrong current_password answered {wrong.excerpt()}; expected 403",
        wrong,
    )
    await _logs_in(ctx, username, password, True, "the password, after the two refused changes")
    await _logs_in(ctx, username, new, False, "the new password of the two refused changes")
    right = await change({"password": new, "current_password": password})
    ctx.findings.expect(
        PASSWORD_RULE,
        right.status == 200,
        f"PUT {url} by the user with the right current_password answered {right.excerpt()}; expected 200",
        right,
    )
    await _logs_in(ctx, username, new, True, "the new password, once changed with the right current one")
    await _logs_in(ctx, username, password, False, "the old password, once changed")
    again = f"cs-set-{secrets.token_hex(8)}"
    set_by_admin = await change({"password": again}, who="admin")
    ctx.findings.expect(
        PASSWORD_RULE,
        set_by_admin.status == 200,
        f"PUT {url} by the administrator, setting the user's password without current_password, answered "
        f"{set_by_admin.excerpt()}; expected 200",
        set_by_admin,
    )
    await _logs_in(ctx, username, again, True, "the password the administrator set")


async def _logs_in(ctx: CheckContext, username: str, password: str, accepted: bool, what: str) -> None:
    """CONTROLLER-002: `password` logs the user in (200) when `accepted`, else is refused (401)."""
    exchange = await ctx.client.call(
        "POST", LOGIN_PATH, user=None, json_body={"username": username, "password": password}, absolute=True
    )
    expected = 200 if accepted else 401
    # An accepted log-in's excerpt may end inside a token, which the reports' redaction (whole values) then misses.
    answered = "200 with tokens" if exchange.status == 200 else exchange.excerpt()
    ctx.findings.expect(
        PASSWORD_RULE,
        exchange.status == expected,
        f"logging in with {what} answered {answered}; expected {expected}",
        exchange,
    )
