"""Channels (CHANNEL-*): the rules every channel shares, judged on each streaming endpoint the target declares
(OpenAI Chat Completions and Responses, the UI message stream, AG-UI), and across them and the GNS3 chat API: one
session over every channel, one busy lock, statistics and usage that do not depend on the channel, refusals before
any stream, heartbeats as comments, disconnects, aborts and in-stream errors as each protocol maps them.

What needs the GNS3 chat API to be seen (history, statistics, titles, aborts) is checked only on a target that
serves it (`needs=("channel_gns3",)`); a peer serving one protocol is judged on what its protocol shows.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

from ..channels.client import ChannelAnswer, ChannelClient
from ..channels.endpoints import Endpoint
from ..context import CheckContext
from ..errors import NotTestable
from ..exchanges import Exchange, json_or_none
from ..scenarios import TITLE
from . import check
from .support import RENAMED_TITLE, find_session, generation_started, history, wait_for
from .support_channels import (
    client,
    endpoints,
    post_turn,
    real_client_reads,
    require_stream,
    run_tag,
    usage_violations,
)

# The contract's path of each channel under the chat prefix (CHANNEL-001, the `channels` tag of openapi.yaml).
CONTRACT_PATHS = {"openai": "/openai/v1", "ui": "/ui", "ag_ui": "/ag-ui"}
ABORT_WITHIN = 5.0  # seconds (CHANNEL-009, as ABORT-002)
SETTLE_SECONDS = 10.0  # how long a turn cut short may take to be written (history, statistics)


def _refused(answer: ChannelAnswer) -> bool:
    """Answered before any stream: not a 200, and not an event stream."""
    return answer.status is not None and answer.status != 200 and not answer.streamed


def _code(answer: ChannelAnswer) -> Any:
    return answer.endpoint.refusal_code(answer.exchange.body)


def _judge_refusal(ctx: CheckContext, requirement: str, answer: ChannelAnswer, status: int, code: str, what: str):
    ok = _refused(answer) and answer.status == status and _code(answer) == code
    ctx.findings.expect(
        requirement,
        ok,
        f"{answer.endpoint.name}, {what}: expected {status} `{code}` before any stream; {answer.describe()}",
        answer.exchange,
    )


async def _gns3_turn(ctx: CheckContext, script: str, run: str, session_id: str | None = None):
    body: dict[str, Any] = {"message": ctx.message(script, run=run)}
    if session_id is not None:
        body["session_id"] = session_id
    return await ctx.client.stream(body)


def _new_session(chosen: Endpoint) -> str:
    """A session id the suite makes up: UI and AG-UI clients name their chats; OpenAI's metadata may too."""
    return chosen.new_session_id() or str(uuid.uuid4())


# --- CHANNEL-001 -----------------------------------------------------------------------------------------------


def contract_path(ctx: CheckContext, channel: str) -> str:
    return ctx.env.prefix() + CONTRACT_PATHS[channel]


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
        ctx.findings.expect(
            "CHANNEL-001",
            turn.answer.status == 200 and turn.answer.streamed,
            f"a plain turn on {turn.answer.endpoint.name} was not served: {turn.answer.describe()}",
            turn.answer.exchange,
        )
    if "openai" in ctx.target.channels:
        models = await client(ctx).get("openai", "/models")
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


async def _llm_saw(ctx: CheckContext, run: str, texts: list[str]) -> list[str]:
    """Which of `texts` the fake LLM's first generation of `run` did NOT receive in its messages."""
    records = await ctx.llm.main_requests(run)
    if not records:
        return texts
    seen = " ".join(str(m.get("content")) for m in records[0].get("messages") or [] if isinstance(m, dict))
    return [text for text in texts if text not in seen]


@check("channels.one_session")
async def one_session(ctx: CheckContext) -> None:
    """One session driven over every declared endpoint (and the GNS3 stream): each turn continues it, so the model
    sees every earlier turn; the GNS3 history and list show every turn, whatever its channel."""
    chain = endpoints(ctx)
    first = chain[0]
    session = first.new_session_id()
    sent: list[str] = []
    answers: list[str] = []
    for n, chosen in enumerate(chain):
        turn = await post_turn(ctx, chosen, "cs-plain", label=f"s{n}", session_id=session)
        require_stream(ctx, turn.answer, "CHANNEL-002")
        if session is None:
            session = turn.answer.session_id
            ctx.findings.require(
                isinstance(session, str) and bool(session),
                "CHANNEL-002",
                f"{chosen.name}: the answer names no session (X-Copilot-Session-Id or the protocol's own field)",
                turn.answer.exchange,
            )
        else:
            ctx.findings.expect(
                "CHANNEL-002",
                turn.answer.session_id in (None, session),
                f"{chosen.name}: a turn of session {session} answered for session {turn.answer.session_id}",
                turn.answer.exchange,
            )
        missing = await _llm_saw(ctx, turn.run, sent + answers)
        ctx.findings.expect(
            "CHANNEL-002",
            not missing,
            f"{chosen.name}: turn {n + 1} of session {session} did not continue it: the model did not receive "
            f"{missing[:2]!r} of the earlier turns",
            turn.answer.exchange,
        )
        sent.append(turn.answer.message)
        answers.append(turn.expected.text)
    if not ctx.target.serves_gns3:
        return
    gns3 = await _gns3_turn(ctx, "cs-plain", run_tag(ctx, "s-gns3"), session)
    ctx.findings.require(gns3.status == 200, "CHANNEL-002", f"the GNS3 turn failed: {gns3.exchange.describe()}")
    sent.append(json_or_none(gns3.exchange.request_body or "{}").get("message"))
    messages = (await history(ctx, session, "CHANNEL-002"))["messages"]
    users = [m.get("content") for m in messages if m.get("role") == "user"]
    ctx.findings.expect(
        "CHANNEL-002",
        users == sent,
        f"the history of session {session} holds the user messages {users!r}; the turns sent {sent!r}",
    )
    listed = await find_session(ctx, session, "CHANNEL-002")
    ctx.findings.expect("CHANNEL-002", listed is not None, f"session {session} is not in the session list")
    if listed is not None:
        counted = [m for m in messages if m.get("role") in ("user", "assistant", "tool")]
        ctx.findings.expect(
            "CHANNEL-002",
            listed.get("message_count") == len(counted),
            f"message_count {listed.get('message_count')!r}, the history holds {len(counted)} messages",
        )


async def _running(ctx: CheckContext, run: str, seconds: float) -> bool:
    """The fake LLM received the turn's first generation (the turn holds its session)."""
    return bool(await wait_for(lambda: generation_started(ctx, [run]), seconds=seconds, interval=0.05))


@check("channels.busy_across", slow=True, raced=("CHANNEL-002", "CHANNEL-005"))
async def busy_across(ctx: CheckContext) -> None:
    """While a turn runs on one channel, a turn of the same session on each other channel (and on the GNS3
    stream) is refused 409 `session_busy` before any stream."""
    chain = endpoints(ctx)
    first = chain[0]
    session = _new_session(first)
    setup = await post_turn(ctx, first, "cs-plain", label="b0", session_id=session)
    require_stream(ctx, setup.answer, "CHANNEL-002")
    session = setup.answer.session_id or session
    running_run = run_tag(ctx, "b-run")
    body = client(ctx).request(first, "cs-slow", session_id=session, run=running_run)
    running = asyncio.create_task(client(ctx).post(first, body))
    if not await _running(ctx, running_run, ctx.target.stream_deadline):
        await running
        raise NotTestable(f"the slow turn on {first.name} never reached the fake LLM: no turn held the session")
    others = await asyncio.gather(
        *(post_turn(ctx, e, "cs-plain", label=f"b-{e.name}", session_id=session) for e in chain)
    )
    gns3 = None
    if ctx.target.serves_gns3:
        gns3 = await _gns3_turn(ctx, "cs-plain", run_tag(ctx, "b-gns3"), session)
    overlapped = not running.done()  # the slow turn still held the session after every other request was answered
    await running
    if not overlapped and any(turn.answer.status == 200 for turn in others):
        raise NotTestable(f"the slow turn on {first.name} ended before the other requests were answered")
    for turn in others:
        for requirement in ("CHANNEL-002", "CHANNEL-005"):
            _judge_refusal(ctx, requirement, turn.answer, 409, "session_busy", f"while {first.name} ran a turn")
    if gns3 is not None:
        ok = gns3.status == 409 and (json_or_none(gns3.exchange.body) or {}).get("code") == "session_busy"
        ctx.findings.expect(
            "CHANNEL-002",
            ok,
            f"POST /stream while {first.name} ran a turn: expected 409 session_busy, got {gns3.exchange.describe()}",
            gns3.exchange,
        )


@check("channels.managed_as_sessions", needs=("channel_gns3",))
async def managed_as_sessions(ctx: CheckContext) -> None:
    """A session started on each channel is listed, gets its generated title, and a rename and a pin made through
    the GNS3 endpoints apply to it (a later turn on its channel keeps them)."""
    chain = endpoints(ctx)
    turns = await asyncio.gather(
        *(post_turn(ctx, e, "cs-plain", label=f"m-{e.name}", session_id=_new_session(e)) for e in chain)
    )
    for turn in turns:
        name, answer = turn.answer.endpoint.name, turn.answer
        require_stream(ctx, answer, "CHANNEL-002")
        session = answer.session_id
        ctx.findings.require(bool(session), "CHANNEL-002", f"{name}: the answer names no session", answer.exchange)

        async def titled(session=session):
            found = await find_session(ctx, session, "CHANNEL-002")
            return found if found and found.get("title") == TITLE else None

        listed = await wait_for(titled, seconds=SETTLE_SECONDS, interval=0.25)
        ctx.findings.expect(
            "CHANNEL-002",
            bool(listed),
            f"{name}: session {session} is not listed with its generated title {TITLE!r}",
            answer.exchange,
        )
        renamed = await ctx.client.call(
            "PATCH", f"/sessions/{session}", operation="renameSession", json_body={"title": RENAMED_TITLE}
        )
        pinned = await ctx.client.call("PUT", f"/sessions/{session}/pin", operation="pinSession")
        ctx.findings.require(
            renamed.status == 200 and pinned.status in (200, 204),
            "CHANNEL-002",
            f"{name}: renaming or pinning session {session} failed: {renamed.describe()}, {pinned.describe()}",
        )
        again = await post_turn(ctx, turn.answer.endpoint, "cs-plain", label=f"m2-{name}", session_id=session)
        require_stream(ctx, again.answer, "CHANNEL-002")
        after = await find_session(ctx, session, "CHANNEL-002") or {}
        ctx.findings.expect(
            "CHANNEL-002",
            after.get("title") == RENAMED_TITLE and after.get("pinned") is True,
            f"{name}: after a rename and a pin through the GNS3 endpoints and another turn on the channel, "
            f"session {session} is listed with title {after.get('title')!r}, pinned {after.get('pinned')!r}",
            again.answer.exchange,
        )


# --- CHANNEL-003 and CHANNEL-008 -------------------------------------------------------------------------------


async def _settled_session(ctx: CheckContext, session: str, want_messages: int) -> dict[str, Any] | None:
    async def probe():
        found = await find_session(ctx, session, "CHANNEL-003")
        return found if found and found.get("message_count") == want_messages else None

    return await wait_for(probe, seconds=SETTLE_SECONDS, interval=0.25) or await find_session(
        ctx, session, "CHANNEL-003"
    )


@check("channels.statistics", needs=("channel_gns3",))
async def statistics(ctx: CheckContext) -> None:
    """The same script (a tool turn) in a new session on every channel and on the GNS3 stream gives the same
    increase of every statistic."""
    script = "cs-tool"
    gns3 = await _gns3_turn(ctx, script, run_tag(ctx, "st-gns3"))
    ctx.findings.require(gns3.status == 200, "CHANNEL-003", f"the GNS3 turn failed: {gns3.exchange.describe()}")
    turns = await asyncio.gather(
        *(post_turn(ctx, e, script, label=f"st-{e.name}", session_id=_new_session(e)) for e in endpoints(ctx))
    )
    fields = ("message_count", "llm_calls_count", "input_tokens", "output_tokens")
    reference = await _settled_session(ctx, gns3.session_id, 4)
    ctx.findings.require(reference is not None, "CHANNEL-003", f"GNS3 session {gns3.session_id} is not listed")
    want = {name: reference.get(name) for name in fields}
    for turn in turns:
        require_stream(ctx, turn.answer, "CHANNEL-003")
        found = await _settled_session(ctx, turn.answer.session_id, want["message_count"])
        got = {name: (found or {}).get(name) for name in fields}
        ctx.findings.expect(
            "CHANNEL-003",
            got == want,
            f"{turn.answer.endpoint.name}: the turn's statistics are {got}; the same script on POST /stream "
            f"gave {want}",
            turn.answer.exchange,
        )


@check("channels.usage")
async def usage(ctx: CheckContext) -> None:
    """The usage each channel reports for a plain and a tool turn: the turn's tokens, as the fake LLM's log
    tells them, and the session's increase where the statistics can be read."""
    turns = await asyncio.gather(
        *(
            post_turn(ctx, e, script, label=f"u-{e.name}-{script}", session_id=_new_session(e))
            for e in endpoints(ctx)
            for script in ("cs-plain", "cs-tool")
        )
    )
    for turn in turns:
        require_stream(ctx, turn.answer, "CHANNEL-008")
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


def _last_message_as(chosen: Endpoint, body: dict[str, Any], role: str) -> dict[str, Any]:
    """`body` whose last message (OpenAI messages or input, UI and AG-UI messages) has `role`."""
    body = chosen.with_history(body, [])  # Responses: the input string as a list of messages
    key = "messages" if "messages" in body else "input"
    messages = [dict(m) for m in body[key]]
    messages[-1]["role"] = role
    return {**body, key: messages}


@check("channels.conversation")
async def conversation(ctx: CheckContext) -> None:
    """The server keeps the conversation: a continued session reaches the model with its earlier turns and
    without the client's copy of them; earlier messages naming no session are refused `unknown_conversation`;
    a request whose last message is not a user message, or whose text is empty, is refused `validation_error`."""
    for chosen in endpoints(ctx):
        session = _new_session(chosen)
        first = await post_turn(ctx, chosen, "cs-plain", label=f"c1-{chosen.name}", session_id=session)
        require_stream(ctx, first.answer, "CHANNEL-004")
        session = first.answer.session_id or session
        fabricated = f"cs-fabricated-{uuid.uuid4().hex[:8]}"
        run = run_tag(ctx, f"c2-{chosen.name}")
        body = client(ctx).request(chosen, "cs-plain", session_id=session, run=run)
        body = chosen.with_history(body, [("user", fabricated), ("assistant", fabricated)])
        second = await client(ctx).post(chosen, body)
        ctx.findings.expect(
            "CHANNEL-004",
            second.status == 200 and second.streamed,
            f"{chosen.name}: a continued turn carrying the client's copy of the conversation was not served: "
            f"{second.describe()}",
            second.exchange,
        )
        missing = await _llm_saw(ctx, run, [first.answer.message, first.expected.text])
        ctx.findings.expect(
            "CHANNEL-004",
            not missing,
            f"{chosen.name}: the continued turn reached the model without the session's earlier turn {missing!r}",
            second.exchange,
        )
        leaked = not await _llm_saw(ctx, run, [fabricated])
        ctx.findings.expect(
            "CHANNEL-004",
            not leaked,
            f"{chosen.name}: the model received the client's copy of earlier messages ({fabricated!r}); the server "
            "keeps the conversation and must not read it",
            second.exchange,
        )
        await _conversation_refusals(ctx, chosen)


async def _conversation_refusals(ctx: CheckContext, chosen: Endpoint) -> None:
    channel = client(ctx)
    cases = []
    fresh = channel.request(chosen, "cs-plain", session_id=chosen.new_session_id(), run=run_tag(ctx, "c3"))
    cases.append(
        (
            chosen.with_history(fresh, [("user", "Earlier"), ("assistant", "Earlier answer")]),
            422,
            "unknown_conversation",
            "earlier messages, and no existing session of the caller",
        )
    )
    plain = channel.request(chosen, "cs-plain", session_id=chosen.new_session_id(), run=run_tag(ctx, "c4"))
    cases.append(
        (_last_message_as(chosen, plain, "assistant"), 422, "validation_error", "the last message is not a user's")
    )
    empty = chosen.body("", session_id=chosen.new_session_id(), model=channel.model)
    cases.append((empty, 422, "validation_error", "the user message is empty"))
    answers = await asyncio.gather(*(channel.post(chosen, body) for body, *_ in cases))
    for answer, (_body, status, code, what) in zip(answers, cases, strict=True):
        _judge_refusal(ctx, "CHANNEL-004", answer, status, code, what)


# --- CHANNEL-005 and CHANNEL-006 -------------------------------------------------------------------------------


@check("channels.refusals")
async def refusals(ctx: CheckContext) -> None:
    """Every refusal the contract lists, on every channel, with its status and code before any stream: no token,
    invalid JSON, an empty message, a closed or unknown project, another user's session, a user without an LLM."""
    channel = client(ctx)
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
                ctx, chosen, "cs-plain", label=f"r-own-{chosen.name}", session_id=_new_session(chosen)
            )
            require_stream(ctx, owned.answer, "CHANNEL-005")
            theirs = channel.request(chosen, "cs-plain", session_id=owned.answer.session_id, run=run_tag(ctx, "r-o"))
            cases.append(("another user's session", theirs, {"user": "other"}, 404, "session_not_found"))
        else:
            ctx.findings.not_testable("CHANNEL-005", "the target has one user: no other user's session")
        answers = await asyncio.gather(*(channel.post(chosen, body, **options) for _w, body, options, _s, _c in cases))
        for answer, (what, _body, _options, status, code) in zip(answers, cases, strict=True):
            _judge_refusal(ctx, "CHANNEL-005", answer, status, code, what)


def _client_tool_bodies(channel: ChannelClient, ctx: CheckContext, chosen: Endpoint) -> list[tuple[str, dict, str]]:
    base = channel.request(chosen, "cs-plain", session_id=chosen.new_session_id(), run=run_tag(ctx, "t"))
    function = {"name": "cs_client_tool", "description": "A tool of the client", "parameters": {"type": "object"}}
    if chosen.name == "openai_chat":
        return [
            ("tools", {**base, "tools": [{"type": "function", "function": function}]}, "client_tools_not_supported"),
            ("functions", {**base, "functions": [function]}, "client_tools_not_supported"),
        ]
    if chosen.name == "openai_responses":
        return [("tools", {**base, "tools": [{"type": "function", **function}]}, "client_tools_not_supported")]
    if chosen.name == "ag_ui":
        return [("tools", {**base, "tools": [function]}, "client_tools_not_supported")]
    regenerate = {**base, "trigger": "regenerate-message", "messageId": uuid.uuid4().hex}
    return [("trigger regenerate-message", regenerate, "regenerate_not_supported")]


@check("channels.client_tools")
async def client_tools(ctx: CheckContext) -> None:
    """Client-side tools (OpenAI tools or functions, AG-UI tools) and a UI regenerate are refused 422, and no
    turn runs for them."""
    channel = client(ctx)
    cases = [(chosen, *case) for chosen in endpoints(ctx) for case in _client_tool_bodies(channel, ctx, chosen)]
    answers = await asyncio.gather(*(channel.post(chosen, body) for chosen, _what, body, _code in cases))
    for answer, (_chosen, what, _body, code) in zip(answers, cases, strict=True):
        _judge_refusal(ctx, "CHANNEL-006", answer, 422, code, f"a request with {what}")
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
        require_stream(ctx, turn.answer, "CHANNEL-007")
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


# --- CHANNEL-009 -----------------------------------------------------------------------------------------------


async def _kept(ctx: CheckContext, session: str, message: str) -> list[str]:
    """What is still wrong, once settled, with a session whose turn was cut short: its history holds the turn's
    user message, and the listed message_count equals the history."""
    problems: list[str] = []

    async def probe() -> bool:
        problems.clear()
        messages = (await history(ctx, session, "CHANNEL-009"))["messages"]
        if message not in [m.get("content") for m in messages if m.get("role") == "user"]:
            problems.append("the history does not hold the turn's user message")
        listed = await find_session(ctx, session, "CHANNEL-009") or {}
        counted = [m for m in messages if m.get("role") in ("user", "assistant", "tool")]
        if listed.get("message_count") != len(counted):
            problems.append(f"message_count {listed.get('message_count')!r}, the history holds {len(counted)}")
        return not problems

    await wait_for(probe, seconds=SETTLE_SECONDS + ctx.env.slow_tool_seconds, interval=0.25)
    return problems


@check("channels.disconnect", slow=True, needs=("channel_gns3",))
async def disconnect(ctx: CheckContext) -> None:
    """A client that goes away from a channel's stream at its first message while the answer dribbles: the turn
    still ends, is kept and counted, and the session takes a new turn."""
    script = "cs-dribble"
    chosen_all = endpoints(ctx)
    turns = await asyncio.gather(
        *(
            post_turn(
                ctx, e, script, label=f"d-{e.name}", session_id=_new_session(e), stop_when=lambda f: not f.is_comment
            )
            for e in chosen_all
        )
    )
    for turn in turns:
        name, answer = turn.answer.endpoint.name, turn.answer
        ctx.findings.require(
            answer.status == 200 and answer.streamed and not answer.completed,
            "CHANNEL-009",
            f"{name}: the turn to disconnect from was not streamed: {answer.describe()}",
            answer.exchange,
        )
        session = answer.session_id
        ctx.findings.require(bool(session), "CHANNEL-009", f"{name}: the answer names no session", answer.exchange)
        problems = await _kept(ctx, session, answer.message)
        ctx.findings.expect(
            "CHANNEL-009",
            not problems,
            f"{name}: after the client went away, session {session}: " + "; ".join(problems),
            answer.exchange,
        )
        after = await post_turn(ctx, answer.endpoint, "cs-plain", label=f"d2-{name}", session_id=session)
        ctx.findings.expect(
            "CHANNEL-009",
            after.answer.status == 200 and after.answer.streamed,
            f"{name}: the session took no new turn after the disconnect: {after.answer.describe()}",
            after.answer.exchange,
        )


@check("channels.abort", slow=True, timed=("CHANNEL-009",), needs=("channel_gns3", "abort"))
async def abort(ctx: CheckContext) -> None:
    """`POST {prefix}/sessions/{id}/abort` stops a running turn of every channel: its stream ends within 5 s, as
    its channel maps an aborted turn (a stop finish, an `abort` chunk, a cancelled RUN_FINISHED)."""
    script = "cs-slow-tool" if "cs-slow-tool" in ctx.env.scripts else "cs-slow"

    async def one(chosen: Endpoint) -> tuple[ChannelAnswer, Exchange | None, float, float]:
        session = _new_session(chosen)
        run = run_tag(ctx, f"a-{chosen.name}")
        body = client(ctx).request(chosen, script, session_id=session, run=run)
        streaming = asyncio.create_task(client(ctx).post(chosen, body))
        if not await _running(ctx, run, ctx.target.stream_deadline):
            return await streaming, None, 0.0, 0.0
        asked = time.monotonic()
        exchange = await ctx.client.call("POST", f"/sessions/{session}/abort", operation="abortSessionTurn")
        answer = await streaming
        return answer, exchange, asked, time.monotonic()

    for answer, exchange, asked, ended in await asyncio.gather(*(one(e) for e in endpoints(ctx))):
        name = answer.endpoint.name
        if exchange is None:
            ctx.findings.not_testable("CHANNEL-009", f"{name}: the turn never reached the fake LLM, nothing to abort")
            continue
        ctx.findings.expect(
            "CHANNEL-009", exchange.status == 200, f"{name}: the abort answered {exchange.describe()}", exchange
        )
        ctx.findings.expect(
            "CHANNEL-009",
            answer.completed and ended - asked <= ABORT_WITHIN,
            f"{name}: the stream ended {ended - asked:.1f} s after the abort (within {ABORT_WITHIN:.0f} s expected)",
            answer.exchange,
        )
        ctx.findings.expect(
            "CHANNEL-009",
            answer.endpoint.ended_as_aborted(answer),
            f"{name}: the aborted turn did not end as its channel maps an abort: {answer.describe()}",
            answer.exchange,
        )


# --- CHANNEL-010 -----------------------------------------------------------------------------------------------


@check("channels.in_stream_errors")
async def in_stream_errors(ctx: CheckContext) -> None:
    """A failing LLM, before and during its answer, on every channel: the channel's in-stream error form with the
    contract's code where the protocol carries one, the stream ended, the turn kept (and counted)."""
    turns = await asyncio.gather(
        *(
            post_turn(ctx, e, script, label=f"e-{e.name}-{script}", session_id=_new_session(e))
            for e in endpoints(ctx)
            for script in ("cs-llm-error", "cs-mid-stream-error")
        )
    )
    for turn in turns:
        answer, name = turn.answer, f"{turn.answer.endpoint.name} ({turn.expected.script})"
        require_stream(ctx, answer, "CHANNEL-010")
        error = answer.error
        ctx.findings.expect(
            "CHANNEL-010", error is not None, f"{name}: no in-stream error; {answer.describe()}", answer.exchange
        )
        if error is not None and answer.endpoint.name in ("openai_chat", "ag_ui"):
            ctx.findings.expect(
                "CHANNEL-010",
                error.get("code") == "llm_error",
                f"{name}: the in-stream error has the code {error.get('code')!r}, expected `llm_error`",
                answer.exchange,
            )
        if ctx.target.serves_gns3 and answer.session_id:
            problems = await _kept(ctx, answer.session_id, answer.message)
            ctx.findings.expect(
                "CHANNEL-010", not problems, f"{name}: the failed turn: " + "; ".join(problems), answer.exchange
            )
