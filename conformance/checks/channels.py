"""Channels (CHANNEL-001, -004 to -010): the rules every channel shares, judged on each streaming endpoint the target
declares (OpenAI Chat Completions and Responses, the UI message stream, AG-UI): the paths, the conversation kept by
the server, refusals before any stream, client tools refused, heartbeats as comments, usage, disconnects, aborts
and in-stream errors as each protocol maps them. What holds across channels is in across_channels.py.

What needs the GNS3 chat API to be seen (history, statistics, titles, aborts) is checked only on a target that
serves it (`needs=("channel_gns3",)`); a peer serving one protocol is judged on what its protocol shows.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from conformance.channels.aborts import abort_turn, aborted_scripts
from conformance.channels.client import ChannelClient
from conformance.channels.endpoints import OPENAI_ENDPOINTS, STREAMING
from conformance.checks import check
from conformance.checks.blame import require_scripted, unless_blocked
from conformance.checks.context import CheckContext
from conformance.checks.support import find_session
from conformance.checks.support_channels import (
    CONTRACT_PATHS,
    client_tool_bodies,
    contract_errors,
    conversation_refusals,
    deleted_conversation,
    endpoints,
    judge_error_message,
    judge_refusal,
    kept_problems,
    long_history,
    new_session,
    not_received,
    real_client_reads,
    refused_before_stream,
    usage_violations,
)
from conformance.checks.turns import post_turn, run_tag

ABORT_WITHIN = 5.0  # seconds (CHANNEL-009, as ABORT-002)
DRIBBLE = "cs-dribble-tool"  # its first words, then three more and a call, 0.8 s apart: the turn's rest takes 4 s
STOP_MARGIN = 2.0  # seconds: a generation begun this long after the client went away was begun by a turn not stopped


# --- CHANNEL-001 -----------------------------------------------------------------------------------------------


@check("channels.paths")
async def paths(ctx: CheckContext) -> None:
    """Each declared channel at the contract's path, and a turn served there; a channel not declared is not
    served at its contract path (when the target has the chat prefix to put it under)."""
    declared = endpoints(ctx)
    has_prefix = "chat_prefix" in ctx.target.data
    for channel in sorted({e.channel for e in declared}):
        path = ctx.target.channels[channel]["path"]
        want = "{chat_prefix}" + CONTRACT_PATHS[channel]
        ctx.findings.expect(
            "CHANNEL-001",
            path == want
            or (has_prefix and ctx.env.channel_path(channel) == ctx.env.prefix() + CONTRACT_PATHS[channel]),
            f"the channel {channel} is served at {path!r}; the contract's path is {want!r}",
        )
    turns = await asyncio.gather(*(post_turn(ctx, e, "cs-plain", label=f"p-{e.name}") for e in declared))
    for turn in turns:
        await require_scripted(ctx, turn, "CHANNEL-001")
        ctx.findings.passed("CHANNEL-001", turn.answer.exchange, message=f"served on {turn.answer.endpoint.name}")
    if "openai" in ctx.target.channels:
        listed = ctx.target.openai_endpoints
        ctx.findings.expect(
            "CHANNEL-001",
            set(listed) == set(OPENAI_ENDPOINTS),
            f"the OpenAI channel serves only {list(listed)} (channels.openai.endpoints); the contract's serves "
            f"{list(OPENAI_ENDPOINTS)}",
        )
        if "models" in listed:
            models = await ChannelClient(ctx).get("openai", "/models")
            ctx.findings.expect("CHANNEL-001", models.status == 200, f"{models.describe()}: expected 200", models)
    if has_prefix and ctx.target.serves_gns3:
        undeclared = [c for c in CONTRACT_PATHS if c not in ctx.target.channels]
        for channel in undeclared:
            url = ctx.env.prefix() + CONTRACT_PATHS[channel] + ("/chat/completions" if channel == "openai" else "")
            body = {"message": ctx.message("cs-plain", run=run_tag(ctx, f"u-{channel}"))}
            exchange = await ctx.client.call("POST", url, json_body=body, absolute=True)
            ctx.findings.expect(
                "CHANNEL-001",
                exchange.status != 200,
                f"the channel {channel} is not declared, but POST {url} answered 200",
                exchange,
            )


# --- CHANNEL-002 -----------------------------------------------------------------------------------------------


# --- CHANNEL-003 and CHANNEL-008 -------------------------------------------------------------------------------


@check("channels.usage")
async def usage(ctx: CheckContext) -> None:
    """The usage each channel reports for a plain and a tool turn: the turn's tokens, as the fake LLM's log
    tells them, and the session's increase where the statistics can be read."""
    turns = await asyncio.gather(
        *(
            post_turn(ctx, e, script, label=f"u-{e.name}-{script}", session_id=new_session(e))
            for e in endpoints(ctx)
            for script in ("cs-plain", "cs-tool")
        )
    )
    if "openai" in ctx.target.channels:  # and a completion that is not streamed (OPENAI-003's usage)
        whole = await post_turn(ctx, STREAMING["openai_chat"], "cs-tool", label="u-whole", stream=False)
        (why,) = await unless_blocked(ctx, [whole])
        ctx.findings.require(not why, "CHANNEL-008", f"openai_chat, not streamed: {why}", whole.answer.exchange)
        turns = [*turns, whole]
    for turn in turns:
        if turn.answer.streamed or turn.answer.status != 200:
            await require_scripted(ctx, turn, "CHANNEL-008")
        problems = await usage_violations(ctx, turn)
        ctx.findings.expect(
            "CHANNEL-008",
            not problems,
            f"{turn.answer.endpoint.name}, {turn.expected.script}: " + "; ".join(v.message for v in problems),
            turn.answer.exchange,
        )
        if ctx.target.serves_gns3 and turn.answer.usage is not None and turn.answer.session_id:
            found = await find_session(ctx, turn.answer.session_id, "CHANNEL-008") or {}
            tokens = (found.get("input_tokens"), found.get("output_tokens"))
            ctx.findings.expect(
                "CHANNEL-008",
                tokens == turn.answer.usage.counts(),
                f"{turn.answer.endpoint.name}: the answer's usage (in, out) {turn.answer.usage.counts()}, the "
                f"session's tokens {tokens}",
                turn.answer.exchange,
            )


# --- CHANNEL-004 -----------------------------------------------------------------------------------------------


@check("channels.conversation")
async def conversation(ctx: CheckContext) -> None:
    """The server keeps the conversation: a continued session reaches the model with its earlier turns and
    without the client's copy of them; earlier messages naming no session are refused `unknown_conversation`;
    a request whose last message is not a user message, or whose text is empty, is refused `validation_error`."""
    for chosen in endpoints(ctx):
        session = new_session(chosen)
        first = await post_turn(ctx, chosen, "cs-plain", label=f"c1-{chosen.name}", session_id=session)
        await require_scripted(ctx, first, "CHANNEL-004")
        session = first.answer.session_id or session
        fabricated = f"cs-fabricated-{uuid.uuid4().hex[:8]}"
        run = run_tag(ctx, f"c2-{chosen.name}")
        body = ChannelClient(ctx).request(chosen, "cs-plain", session_id=session, run=run)
        body = chosen.with_history(body, [("user", fabricated), ("assistant", fabricated)])
        second = await ChannelClient(ctx).post(chosen, body)
        ctx.findings.expect(
            "CHANNEL-004",
            second.status == 200 and second.streamed,
            f"{chosen.name}: a continued turn carrying the client's copy of the conversation was not served: "
            f"{second.describe()}",
            second.exchange,
        )
        missing = await not_received(ctx, run, [first.answer.message, first.expected.text])
        ctx.findings.expect(
            "CHANNEL-004",
            not missing,
            f"{chosen.name}: the continued turn reached the model without the session's earlier turn {missing!r}",
            second.exchange,
        )
        leaked = not await not_received(ctx, run, [fabricated])
        ctx.findings.expect(
            "CHANNEL-004",
            not leaked,
            f"{chosen.name}: the model received the client's copy of earlier messages ({fabricated!r}); the server "
            "keeps the conversation and must not read it",
            second.exchange,
        )
        await conversation_refusals(ctx, chosen, session)
        if ctx.target.serves_gns3:  # the session deleted through the chat API, then named again
            await deleted_conversation(ctx, chosen, session, first.answer.message)
    if "ui" in ctx.target.channels and ctx.target.serves_gns3 and "cs-long-history" in ctx.env.scripts:
        await long_history(ctx)  # the conversation read back past the history's default limit


# --- CHANNEL-005 and CHANNEL-006 -------------------------------------------------------------------------------


@check("channels.refusals")
async def refusals(ctx: CheckContext) -> None:
    """Every refusal the contract lists, on every channel, with its status and code before any stream: no token,
    invalid JSON, an empty message, a closed or unknown project, another user's session, a user without an LLM."""
    channel = ChannelClient(ctx)
    env = ctx.env
    for chosen in endpoints(ctx):
        cases: list[tuple[str, Any, dict[str, Any], int, str]] = []  # what, body or bytes, post options, status, code
        plain = channel.request(chosen, "cs-plain", session_id=chosen.new_session_id(), run=run_tag(ctx, "r"))
        cases.append(("invalid JSON", b'{"messages": [', {}, 400, "invalid_json"))
        empty = chosen.body("", session_id=chosen.new_session_id(), model=channel.model)
        cases.append(("an empty message", empty, {}, 422, "validation_error"))
        if env.users["main"].token is None:
            ctx.findings.not_testable("CHANNEL-005", "the target authenticates nobody (auth.mode none): no 401")
        else:
            cases.append(("no token", plain, {"user": None}, 401, "unauthorized"))
        if env.target.serves_gns3 and env.closed_project_id:
            cases.append(("a closed project", plain, {"project_id": env.closed_project_id}, 403, "project_not_opened"))
            cases.append(("an unknown project", plain, {"project_id": str(uuid.uuid4())}, 404, "project_not_found"))
        else:
            ctx.findings.not_testable("CHANNEL-005", "the target has no projects: no closed or unknown project")
        if "no_llm" in env.users:
            cases.append(("a user without an LLM configuration", plain, {"user": "no_llm"}, 400, "llm_not_configured"))
        if "other" in env.users:
            owned = await post_turn(
                ctx, chosen, "cs-plain", label=f"r-own-{chosen.name}", session_id=new_session(chosen)
            )
            await require_scripted(ctx, owned, "CHANNEL-005")
            theirs = channel.request(chosen, "cs-plain", session_id=owned.answer.session_id, run=run_tag(ctx, "r-o"))
            cases.append(("another user's session", theirs, {"user": "other"}, 404, "session_not_found"))
        else:
            ctx.findings.not_testable("CHANNEL-005", "the target has one user: no other user's session")
        cases += _without_access(ctx, plain)
        answers = await asyncio.gather(*(channel.post(chosen, body, **options) for _w, body, options, _s, _c in cases))
        for answer, (what, _body, _options, status, code) in zip(answers, cases, strict=True):
            judge_refusal(ctx, "CHANNEL-005", answer, status, code, what)
            as_stream = refused_before_stream(answer) and answer.status == status  # as POST /stream refuses it
            ctx.findings.expect("CHANNEL-002", as_stream, f"{chosen.name}, {what}: not {status}: {answer.describe()}")


def _without_access(ctx: CheckContext, plain: dict[str, Any]) -> list[tuple[str, Any, dict[str, Any], int, str]]:
    """A user without access to the project (target file `access_control`), refused as on every chat endpoint."""
    if "stranger" not in ctx.env.users or ctx.env.controller is None:
        ctx.findings.not_testable("CHANNEL-005", "no access_control declared: no user without access to the project")
        return []
    return [("a user without access to the project", plain, {"user": "stranger"}, 403, "project_access_denied")]


@check("channels.client_tools")
async def client_tools(ctx: CheckContext) -> None:
    """Client-side tools (OpenAI tools or functions, AG-UI tools) and a UI regenerate are refused 422, and no
    turn runs for them."""
    channel = ChannelClient(ctx)
    cases = [(chosen, *case) for chosen in endpoints(ctx) for case in client_tool_bodies(channel, ctx, chosen)]
    answers = await asyncio.gather(*(channel.post(chosen, body) for chosen, _what, body, refusal_code in cases))
    for answer, (_chosen, what, _body, code) in zip(answers, cases, strict=True):
        judge_refusal(ctx, "CHANNEL-006", answer, 422, code, f"a request with {what}")
    ran = await ctx.llm.main_requests(run_tag(ctx, "t"))
    ctx.findings.expect(
        "CHANNEL-006", not ran, f"the refused requests still reached the model {len(ran)} time(s)", answers[-1].exchange
    )


# --- CHANNEL-007 -----------------------------------------------------------------------------------------------


@check("channels.heartbeat", slow=True, timed=("CHANNEL-007",))
async def heartbeat(ctx: CheckContext) -> None:
    """A silent turn on every channel: SSE comments `: heartbeat` at the declared interval, nothing else as a
    heartbeat, and the protocol's real client reads the body to the turn's text."""
    interval = ctx.target.heartbeat_interval
    turns = await asyncio.gather(*(post_turn(ctx, e, "cs-slow", label=f"h-{e.name}") for e in endpoints(ctx)))
    for turn in turns:
        await require_scripted(ctx, turn, "CHANNEL-007")
    reads = await real_client_reads(ctx, [turn.answer for turn in turns])
    for turn, read in zip(turns, reads, strict=True):
        answer, name = turn.answer, turn.answer.endpoint.name
        beats = [frame for frame in answer.frames if frame.is_comment]
        ctx.findings.expect(
            "CHANNEL-007",
            bool(beats) and all(frame.raw == ": heartbeat" for frame in beats),
            f"{name}: a silence of {ctx.env.scripts['cs-slow']['steps'][0]['delay_before_ms']} ms at a declared "
            f"interval of {interval} s brought the comments {[f.raw for f in beats]!r} (expected `: heartbeat`)",
            answer.exchange,
        )
        marks = [answer.opened, *(frame.at for frame in answer.frames)]
        worst = max((b - a for a, b in zip(marks, marks[1:], strict=False)), default=0.0)
        ctx.findings.expect(
            "CHANNEL-007",
            worst <= interval + 1.0,
            f"{name}: a gap of {worst:.2f} s between frames (declared interval {interval} s)",
            answer.exchange,
        )
        ctx.findings.expect(
            "CHANNEL-007",
            read.ok and read.text == turn.expected.text,
            f"{name}: the protocol's real client, reading the body with its heartbeats, "
            + (f"failed: {read.error}" if not read.ok else f"assembled {read.text!r}, not {turn.expected.text!r}"),
            answer.exchange,
        )


# --- CHANNEL-009 (disconnects: channel_disconnects.py) ---------------------------------------------------------


@check("channels.abort", slow=True, timed=("CHANNEL-009",), needs=("channel_gns3", "abort"), slow_tool=True)
async def abort(ctx: CheckContext) -> None:
    """`POST {prefix}/sessions/{id}/abort` stops a running turn of every channel, during the slow tool and while a
    call's arguments still stream (conformance/channels/aborts.py): the turn goes no further and its stream ends
    within 5 s (its channel's check judges how it ends). An abort answered `aborted: false` while the turn ran is
    judged by what it did, never skipped."""
    scripts = aborted_scripts(ctx)
    for run in await asyncio.gather(*(abort_turn(ctx, e, s) for e in endpoints(ctx) for s in scripts)):
        answer, name = run.answer, f"{run.answer.endpoint.name} ({run.script})"
        if (asked := run.exchange) is not None:
            ctx.findings.expect("CHANNEL-009", asked.status == 200, f"{name}: the abort: {asked.describe()}", asked)
        if why := run.not_running():  # the turn was running when the abort came, else nothing here is judged
            ctx.findings.not_testable("CHANNEL-009", f"{name}: {why}")
            continue
        went_on = [at - run.answered_clock for at in run.later(run.answered_clock)]
        ctx.findings.expect(
            "CHANNEL-009",
            not went_on,
            f"{name}: the abort answered {run.exchange.body[:100]!r} while the turn ran, and the turn went on: a "
            f"generation began {max(went_on or [0.0]):.1f} s after the abort was answered",
            run.exchange,
            answer.exchange,
        )
        if went_on:
            continue
        ctx.findings.expect(
            "CHANNEL-009",
            answer.completed and run.ended - run.asked <= ABORT_WITHIN,
            f"{name}: the stream ended {run.ended - run.asked:.1f} s after the abort (within {ABORT_WITHIN:.0f} s "
            "expected)" + ("" if answer.completed else f", or never: {answer.describe()}"),
            answer.exchange,
        )
        if run.script == "cs-slow-args" and not run.cut(ctx.env.scripts[run.script]):
            ctx.findings.not_testable("CHANNEL-009", f"{name}: the abort was answered after the call's arguments "
                                      "had all been streamed: no call was cut short")  # fmt: skip


# --- CHANNEL-010 -----------------------------------------------------------------------------------------------


@check("channels.in_stream_errors")
async def in_stream_errors(ctx: CheckContext) -> None:
    """A failing LLM, before and during its answer, on every channel: the channel's in-stream error form with the
    contract's code where the protocol carries one, the stream ended, the turn kept (and counted)."""
    scripts = ("cs-llm-error", "cs-mid-stream-error")
    turns = await asyncio.gather(
        *(
            post_turn(ctx, e, script, label=f"e-{e.name}-{script}", session_id=new_session(e))
            for e in endpoints(ctx)
            for script in scripts
        )
    )
    said = await contract_errors(ctx, scripts) if ctx.target.serves_gns3 else {}  # POST /stream's, same failures
    for turn in turns:
        answer, name = turn.answer, f"{turn.answer.endpoint.name} ({turn.expected.script})"
        await require_scripted(ctx, turn, "CHANNEL-010")
        error = answer.error
        ctx.findings.expect(
            "CHANNEL-010", error is not None, f"{name}: no in-stream error; {answer.describe()}", answer.exchange
        )
        judge_error_message(ctx, answer, said.get(turn.expected.script), name)
        if error is not None and answer.endpoint.name in ("openai_chat", "ag_ui"):
            ctx.findings.expect(
                "CHANNEL-010",
                error.get("code") == "llm_error",
                f"{name}: the in-stream error has the code {error.get('code')!r}, expected `llm_error`",
                answer.exchange,
            )
        if ctx.target.serves_gns3 and answer.session_id:
            problems = await kept_problems(ctx, answer.session_id, answer.message)
            ctx.findings.expect(
                "CHANNEL-010", not problems, f"{name}: the failed turn: " + "; ".join(problems), answer.exchange
            )
