"""Across channels (CHANNEL-002, CHANNEL-003): behind every channel is the same turn of the same session. One
session driven over every declared channel (and the GNS3 stream) keeps one history; the busy lock holds across
channels; titles, pins and renames made through the GNS3 endpoints apply to a session of any channel; the same
script gives the same statistics whatever the channel.

What needs the GNS3 chat API to be seen (the history, the list, statistics) is judged only on a target that serves
it; on a target serving channels only, one session over its channels and the busy lock are judged from what its
protocols show and what the fake LLM received.
"""

from __future__ import annotations

import asyncio

from conformance.channels.client import ChannelClient
from conformance.checks import check
from conformance.checks.blame import raise_if_blocked, require_scripted
from conformance.checks.context import CheckContext
from conformance.checks.support import RENAMED_TITLE, error_code, expected_roles, find_session, history, wait_for
from conformance.checks.support_channels import (
    SETTLE_SECONDS,
    endpoints,
    gns3_turn,
    judge_refusal,
    model_reached,
    new_session,
    not_received,
    settled_session,
)
from conformance.checks.turns import as_scripted, post_turn, run_tag
from conformance.errors import Blocked, NotTestable
from conformance.rules.scenarios import TITLE
from conformance.transport.exchanges import json_or_none


@check("across_channels.one_session")
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
        await require_scripted(ctx, turn, "CHANNEL-002")
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
        missing = await not_received(ctx, turn.run, sent + answers)
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
    gns3 = await gns3_turn(ctx, "cs-plain", run_tag(ctx, "s-gns3"), session)
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


# The endpoints whose 409 must say not to retry it (OPENAI-004): the `openai` client's.
NOT_RETRIED = ("openai_chat", "openai_responses")


@check("across_channels.busy", slow=True, raced=("CHANNEL-002", "CHANNEL-005"))
async def busy_across(ctx: CheckContext) -> None:
    """While a turn runs on one channel, a turn of the same session on each other channel (and on the GNS3
    stream) is refused 409 `session_busy` before any stream."""
    chain = endpoints(ctx)
    first = chain[0]
    session = new_session(first)
    setup = await post_turn(ctx, first, "cs-plain", label="b0", session_id=session)
    await require_scripted(ctx, setup, "CHANNEL-002")
    session = setup.answer.session_id or session
    running_run = run_tag(ctx, "b-run")
    body = ChannelClient(ctx).request(first, "cs-slow", session_id=session, run=running_run)
    running = asyncio.create_task(ChannelClient(ctx).post(first, body))
    if not await model_reached(ctx, running_run, ctx.target.stream_deadline, running):
        await running
        raise NotTestable(f"the slow turn on {first.name} never reached the fake LLM: no turn held the session")
    others = await asyncio.gather(
        *(post_turn(ctx, e, "cs-plain", label=f"b-{e.name}", session_id=session) for e in chain)
    )
    gns3 = None
    if ctx.target.serves_gns3:
        gns3 = await gns3_turn(ctx, "cs-plain", run_tag(ctx, "b-gns3"), session)
    overlapped = not running.done()  # the slow turn still held the session after every other request was answered
    await running
    if not overlapped and any(turn.answer.status == 200 for turn in others):
        raise NotTestable(f"the slow turn on {first.name} ended before the other requests were answered")
    openai = [turn for turn in others if turn.answer.endpoint.name in NOT_RETRIED]
    if openai and not any(turn.answer.status == 409 for turn in openai):
        ctx.findings.not_testable(
            "OPENAI-004",
            "no OpenAI endpoint answered 409 session_busy (CHANNEL-005's): no 409 to read x-should-retry on",
        )
    for turn in others:
        for requirement in ("CHANNEL-002", "CHANNEL-005"):
            judge_refusal(ctx, requirement, turn.answer, 409, "session_busy", f"while {first.name} ran a turn")
        if turn.answer.status == 409 and turn.answer.endpoint.name in NOT_RETRIED:
            retry = turn.answer.headers.get("x-should-retry")
            ctx.findings.expect(
                "OPENAI-004",
                retry == "false",
                f"{turn.answer.endpoint.name}, 409 while {first.name} ran a turn: x-should-retry is {retry!r}, not "
                "'false' (the `openai` client re-sends it)",
                turn.answer.exchange,
            )
    if gns3 is not None:
        ok = gns3.status == 409 and error_code(gns3.exchange) == "session_busy"
        ctx.findings.expect(
            "CHANNEL-002",
            ok,
            f"POST /stream while {first.name} ran a turn: expected 409 session_busy, got {gns3.exchange.describe()}",
            gns3.exchange,
        )


@check("across_channels.managed_as_sessions", needs=("channel_gns3",))
async def managed_as_sessions(ctx: CheckContext) -> None:
    """A session started on each channel is listed, gets its generated title, and a rename and a pin made through
    the GNS3 endpoints apply to it (a later turn on its channel keeps them)."""
    chain = endpoints(ctx)
    turns = await asyncio.gather(
        *(post_turn(ctx, e, "cs-plain", label=f"m-{e.name}", session_id=new_session(e)) for e in chain)
    )
    for turn in turns:
        name, answer = turn.answer.endpoint.name, turn.answer
        await require_scripted(ctx, turn, "CHANNEL-002")
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
        await require_scripted(ctx, again, "CHANNEL-002")
        after = await find_session(ctx, session, "CHANNEL-002") or {}
        ctx.findings.expect(
            "CHANNEL-002",
            after.get("title") == RENAMED_TITLE and after.get("pinned") is True,
            f"{name}: after a rename and a pin through the GNS3 endpoints and another turn on the channel, "
            f"session {session} is listed with title {after.get('title')!r}, pinned {after.get('pinned')!r}",
            again.answer.exchange,
        )


@check("across_channels.statistics", needs=("channel_gns3",))
async def statistics(ctx: CheckContext) -> None:
    """The same script (a tool turn) in a new session on every channel and on the GNS3 stream gives the same
    increase of every statistic."""
    script = "cs-tool"
    gns3 = await gns3_turn(ctx, script, run_tag(ctx, "st-gns3"))
    turns = await asyncio.gather(
        *(post_turn(ctx, e, script, label=f"st-{e.name}", session_id=new_session(e)) for e in endpoints(ctx))
    )
    for turn in turns:
        await require_scripted(ctx, turn, "CHANNEL-003")
    if not as_scripted(ctx, gns3, script):
        await raise_if_blocked(ctx, None, [script], "CHANNEL-003", f"the GNS3 {script} turn was not served")
        raise Blocked("CHANNEL-003", f"the GNS3 {script} turn was not served: {gns3.exchange.describe()}")
    fields = ("message_count", "llm_calls_count", "input_tokens", "output_tokens")
    messages = len(expected_roles(ctx.env.scripts[script]))
    reference = await settled_session(ctx, gns3.session_id, messages)
    ctx.findings.require(reference is not None, "CHANNEL-003", f"GNS3 session {gns3.session_id} is not listed")
    want = {name: reference.get(name) for name in fields}
    for turn in turns:
        found = await settled_session(ctx, turn.answer.session_id, want["message_count"])
        got = {name: (found or {}).get(name) for name in fields}
        ctx.findings.expect(
            "CHANNEL-003",
            got == want,
            f"{turn.answer.endpoint.name}: the turn's statistics are {got}; the same script on POST /stream "
            f"gave {want}",
            turn.answer.exchange,
        )
