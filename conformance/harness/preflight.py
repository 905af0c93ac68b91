"""Preflight: before any check, prove that the target file describes the server as it is, so that no verdict
comes from the suite's own misunderstanding. A wrong declaration stops the run (TargetMisdeclared, exit code 2)
with the target-file key to change, in seconds, instead of dozens of FAILs.

It asks, in order: does the chat prefix answer as the chat API (not 404 or 405, not a web page; a request there
that gets no answer blames base_url only when nothing answers at the server's root either), and does each declared
user's token work; does a turn reach the suite's fake LLM; does the server offer its LLM every declared tool; do the
declared failing and raising tools fail (a declared failing tool that in fact succeeds would let TOOLCALL-008 pass
on a turn where nothing failed); does the slow tool take its time (when a selected check plays it:
CheckSpec.slow_tool; else no verdict depends on it, and the run saves its seconds). What it measures (the slow
tool's duration) feeds the stream deadlines of the checks (Environment.deadline_for).
"""

from __future__ import annotations

import time
from typing import Any

from conformance.channels.client import ChannelClient
from conformance.channels.endpoints import declared as declared_endpoints
from conformance.checks.context import CheckContext
from conformance.errors import TargetMisdeclared
from conformance.harness.environment import Environment
from conformance.rules.tool_results import FAILURE_WORDS, reads_as_failure, tool_result
from conformance.transport.exchanges import Exchange, json_or_none

SLOW_TOOL_AT_LEAST = 1.0  # seconds: long enough for an abort or a disconnect to land while it runs


def _code(body: str) -> object:
    payload = json_or_none(body)
    return payload.get("code") if isinstance(payload, dict) else None


async def _prefix_and_users(ctx: CheckContext) -> None:
    env = ctx.env
    for name in env.users:
        if name == "stranger":  # made without access to the project: its refusal is what ACCESS-* judges
            continue
        exchange = await ctx.client.call("GET", "/sessions", user=name)
        where = f"GET {exchange.url} as {name}"
        if exchange.status is None:
            raise await _unanswered(ctx, "chat_prefix", where, exchange.error)
        if exchange.status == 404 and _code(exchange.body) == "project_not_found":
            raise TargetMisdeclared("projects.opened", f"{where}: the opened project {env.project_id} is unknown")
        if exchange.status in (404, 405) or _web_page(exchange):
            raise TargetMisdeclared(
                "chat_prefix",
                f"{where} answered {_answered(exchange)}: the chat API is not served under "
                f"{env.target.data['chat_prefix']!r} (gns3-server 3.1.0a2 and later use "
                "/v3/copilot/projects/{project_id}/chat)",
            )
        if exchange.status == 401:
            raise TargetMisdeclared(
                _token_key(env, name), f"{where} answered 401: the token of user {name!r} is refused"
            )
        if exchange.status == 403:
            raise _refused_project(env, where)


async def _unanswered(ctx: CheckContext, key: str, where: str, error: str | None) -> TargetMisdeclared:
    """A request to a declared path got no answer: that path's key is wrong when the server answers at its root, and
    base_url only when nothing answers there either."""
    root = await ctx.client.call("GET", "/", user=None, absolute=True)
    if root.status is None:
        return TargetMisdeclared(
            "base_url",
            f"no server answers at {ctx.env.base_url}: {where}: no answer ({error}); GET {root.url}: {root.error}",
        )
    return TargetMisdeclared(
        key, f"{where}: no answer ({error}), though GET {root.url} answered {root.status}: nothing answers at that path"
    )


def _web_page(exchange: Exchange) -> bool:
    """A success whose body is an HTML page (a web UI at that path, say), never an answer of the API. A JSON answer
    with a broken body is not one: that is LIST-001's to judge (tests/quality/answer_breakers.py)."""
    html = (exchange.content_type or "").startswith("text/html")
    return exchange.status is not None and 200 <= exchange.status < 300 and html and json_or_none(exchange.body) is None


def _answered(exchange: Exchange) -> str:
    if _web_page(exchange):
        page = exchange.body if len(exchange.body) <= 60 else exchange.body[:60] + "..."
        return f"{exchange.status} with an HTML page ({page!r}), not JSON"
    return str(exchange.status)


def _token_key(env: Environment, user: str) -> str:
    """The key of a refused token: the file's own (auth.tokens.<user>) when it gives tokens, else auth."""
    return f"auth.tokens.{user}" if env.target.auth["mode"] == "tokens" else "auth"


def _refused_project(env: Environment, where: str) -> TargetMisdeclared:
    """A 403 on the suite's own project: the file's projects (fixed: one not opened), or the access its users lack."""
    if env.target.section("projects", {"mode": "none"})["mode"] == "fixed":
        return TargetMisdeclared("projects.opened", f"{where} answered 403: project {env.project_id} is not opened")
    if "access_control" not in env.target.data:
        return TargetMisdeclared(
            "access_control",
            f"{where} answered 403: the server refuses the suite's users the project its admin made for them; with "
            "access control (GNS3's RBAC), declare access_control: {mode: gns3_acl, role: User}, and the admin "
            "grants them that role",
        )
    role = env.target.data["access_control"].get("role", "User")
    return TargetMisdeclared(
        "access_control.role",
        f"{where} answered 403: the role {role!r} the admin granted on /projects does not let the suite's users chat",
    )


async def _llm_and_tools(ctx: CheckContext) -> None:
    result = await ctx.client.stream({"message": ctx.message("cs-plain", "Preflight")})
    answered = f"the stream answered {result.exchange.outcome}"
    await _offers_tools(ctx, await ctx.llm.requests(), answered)


def _start_lacks(target: Any, placeholder: str) -> bool:
    """Whether the target is started by the suite with a command (and env) that never names `placeholder`."""
    start = target.data.get("start")
    if start is None:
        return False
    places = [*start["command"], *(start.get("env") or {}).values()]
    return not any("{" + placeholder + "}" in place for place in places)


def _no_generation(env: Environment, answered: str) -> TargetMisdeclared:
    """What to change when a turn reached no generation of the fake LLM: the users' LLM configuration for a target
    with the GNS3 chat API (or llm.mode controller), the server's own model URL for a channel-only one (no user of
    it has an LLM configuration)."""
    target, url = env.target, env.fake_llm_url
    missed = f"a turn reached no LLM generation of the suite's fake LLM at {url} ({answered})"
    if target.serves_gns3 or target.llm["mode"] == "controller":
        return TargetMisdeclared(
            "llm",
            f"{missed}: point the users' LLM configuration at it (llm.mode: controller with llm.config, or "
            "configure it before the run)",
        )
    if _start_lacks(target, "fake_llm_url"):
        return TargetMisdeclared(
            "start.command",
            f"{missed}: the command and its env lack the {{fake_llm_url}} placeholder; give it to the server as its "
            "model's OpenAI base URL (e.g. `--llm-base-url {fake_llm_url}`, or an env variable)",
        )
    if "start" in target.data:
        return TargetMisdeclared(
            "start.command",
            f"{missed}: the server was given {{fake_llm_url}} but did not send its model's requests there; give it "
            "as the server's OpenAI base URL",
        )
    return TargetMisdeclared(
        "fake_llm.port",
        f"{missed}: start the server with its model's OpenAI base URL at the fake LLM, and declare that URL's port as "
        "fake_llm.port so that the suite serves it there",
    )


async def _offers_tools(ctx: CheckContext, requests: list[dict[str, Any]], answered: str) -> None:
    """The turn's requests to the fake LLM (its log for the run) hold a main generation offered every declared
    tool."""
    env = ctx.env
    generations = [r for r in requests if r.get("step") is not None]
    if requests and not generations:
        raise TargetMisdeclared(
            "declarations.tools",
            f"the turn's requests to the suite's fake LLM ({answered}) bind no tool: the fake LLM answers a request "
            "without tools as a title generation (spec/fake-llm/README.md, selection rule 3), so it cannot play the "
            "suite's scenarios through this server; the suite judges a server whose model is offered at least one tool",
        )
    if not generations:
        raise _no_generation(env, answered)
    offered = set(generations[0].get("tools") or [])
    missing = []
    for role, declared in env.target.tools.items():
        for index, tool in enumerate(declared if isinstance(declared, list) else [declared]):
            if tool["name"] not in offered:
                key = f"declarations.tools.{role}" + (f"[{index}]" if isinstance(declared, list) else "")
                missing.append((key, tool["name"]))
    if missing:  # every one at once: a file with several wrong names is fixed in one go
        keys = ", ".join(key for key, _ in missing)
        named = "; ".join(f"{key} names {name!r}" for key, name in missing)
        instead = "" if env.target.serves_gns3 else " (or leave them out: their scenarios are then N/A)"
        raise TargetMisdeclared(
            missing[0][0] if len(missing) == 1 else "declarations.tools",
            f"the server does not offer {len(missing)} declared tool{'s' if len(missing) != 1 else ''} to its LLM "
            f"({named}); it offers {sorted(offered) or 'no tool'}: declare tools this server has in {keys}{instead}",
        )


def _database_folder(env: Environment) -> None:
    """The declared project folder holding the database file exists once a turn ran in the project (the file in it
    is DB-001's to judge, not the target file's)."""
    database = env.target.declarations.get("database") or {}
    if "project_dir" not in database or env.project_id is None:
        return
    folder = env.project_folder()
    if not folder.is_dir():
        raise TargetMisdeclared(
            "declarations.database.project_dir",
            f"{folder} does not exist after a turn in project {env.project_id}: the suite reads the database file "
            f"there, on this machine ({database['project_dir']!r} is the server's project folder, with {{project_id}})",
        )


# The declared tools whose call must fail: role -> (its scenario, what its tool does instead of succeeding).
MUST_FAIL = {
    "failing": ("cs-failing-tool", "returns an error"),
    "raising": ("cs-raising-tool", "raises an exception (called with arguments it cannot take, for example)"),
}


async def _tools_fail(env: Environment) -> None:
    """Each declared failing and raising tool fails: the result the server gives its LLM for the call (or, on the
    GNS3 stream, the call's tool_end) reads as a failure. Over HTTP a tool that raises and one that returns an error
    look alike (both are failed results), so what is proved for `raising` is that its call fails; what the target
    says of how is its own. A turn with no result to read (the server ended it at the tool) is TOOLCALL-008's to
    judge, not a misdeclaration."""
    for role, (script, how) in MUST_FAIL.items():
        if script not in env.scripts:
            continue
        ctx = CheckContext(env, f"preflight.{role}", [])  # a run tag of its own: its requests alone
        tool = env.target.tools[role]
        ended: list[str] = []
        if env.target.serves_gns3:
            result = await ctx.client.stream({"message": ctx.message(script, "Preflight")})
            ended = [str(e.get("tool_output", "")) for e in result.events if e.get("type") == "tool_end"]
        else:
            await _channel_turn(ctx, script)
        call_id = env.scripts[script]["steps"][0]["tool_calls"][0]["id"]
        text = tool_result(await ctx.llm.main_requests(), call_id)
        if text is None and ended:
            text = ended[0]
        if text is not None and not reads_as_failure(text):
            raise TargetMisdeclared(
                f"declarations.tools.{role}",
                f"a turn calling {tool['name']!r} with {tool['arguments']} did not fail: its result was "
                f"{text[:200]!r}, which names no failure (none of: {', '.join(FAILURE_WORDS)}); declare a call "
                f"whose tool {how}",
            )


async def _slow_tool(ctx: CheckContext) -> float | None:
    """How long a turn that calls the slow tool takes (None when no slow tool is declared)."""
    if "cs-slow-tool" not in ctx.env.scripts:
        return None
    started = time.monotonic()
    result = await ctx.client.stream({"message": ctx.message("cs-slow-tool", "Preflight")})
    took = time.monotonic() - started
    _slow_enough(ctx, took, result.status)
    return took


def _slow_enough(ctx: CheckContext, took: float, status: int | None) -> None:
    if status == 200 and took < SLOW_TOOL_AT_LEAST:
        raise TargetMisdeclared(
            "declarations.tools.slow",
            f"a turn calling {ctx.env.target.tools['slow']['name']!r} took {took:.2f} s; the slow tool must run for "
            f"at least {SLOW_TOOL_AT_LEAST:.0f} s (give it arguments that make it wait)",
        )


async def _channel_turn(ctx: CheckContext, script: str) -> tuple[float, Any]:
    """A turn on the first channel the target declares (a target without the GNS3 chat API): (seconds, answer)."""
    chosen = declared_endpoints(ctx.env.target.channels)[0]
    channel = ChannelClient(ctx)
    started = time.monotonic()
    answer = await channel.post(chosen, channel.request(chosen, script, text="Preflight"))
    took = time.monotonic() - started
    where = f"{answer.exchange.method} {answer.exchange.url}"
    key = f"channels.{chosen.channel}.path"
    if answer.status is None:
        raise await _unanswered(ctx, key, where, answer.exchange.error)
    if answer.status in (404, 405) or _web_page(answer.exchange):
        raise TargetMisdeclared(key, f"{where} answered {_answered(answer.exchange)}: the channel is not served there")
    if answer.status in (401, 403):
        raise TargetMisdeclared(_token_key(ctx.env, "main"), _refused(ctx.env.target, where, answer.status))
    return took, answer


def _refused(target: Any, where: str, status: int) -> str:
    if target.auth["mode"] == "none":
        return (
            f"{where} answered {status}: the server wants a token, and the target file gives none; declare it as "
            "auth: {mode: tokens, tokens: {main: <token>}}"
        )
    return f"{where} answered {status}: the server refuses the token of auth.tokens.main"


async def _channels_only(ctx: CheckContext, slow_tool: bool) -> None:
    """Preflight of a target that serves channels only: the first one answers, a turn reaches the fake LLM with the
    declared tools, the failing and raising tools fail, the slow tool takes its time."""
    _took, answer = await _channel_turn(ctx, "cs-plain")
    await _offers_tools(ctx, await ctx.llm.requests(), f"answered {answer.status}")
    await _tools_fail(ctx.env)
    if slow_tool and "cs-slow-tool" in ctx.env.scripts:
        took, answer = await _channel_turn(ctx, "cs-slow-tool")
        _slow_enough(ctx, took, answer.status)
        ctx.env.slow_tool_seconds = took


async def preflight(env: Environment, slow_tool: bool = True) -> None:
    """Raise TargetMisdeclared when the target file is wrong about the server; note what the checks need. With
    `slow_tool` False (no selected check plays it), the slow tool is not measured."""
    ctx = CheckContext(env, "preflight", [])
    if not env.target.serves_gns3:
        await _channels_only(ctx, slow_tool)
        return
    await _prefix_and_users(ctx)
    await _llm_and_tools(ctx)
    _database_folder(env)
    await _tools_fail(env)
    env.slow_tool_seconds = (await _slow_tool(ctx) if slow_tool else None) or 0.0
