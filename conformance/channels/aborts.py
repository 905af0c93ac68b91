"""An aborted turn on a channel, as the suite drives it: a turn of one of ABORTED scripts started on a channel,
aborted through `POST {prefix}/sessions/{id}/abort` once it runs (during the slow tool; while a call's arguments
still stream), read to its end, with the fake LLM's log of it. channels.abort judges the abort itself (CHANNEL-009);
each channel's check judges the ending of the turns that were stopped (conformance/rules/aborted.py)."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from conformance.channels.client import ChannelClient
from conformance.checks.support_channels import model_reached, new_session, real_client_reads, record
from conformance.checks.turns import run_tag
from conformance.rules import aborted as rules

if TYPE_CHECKING:
    from conformance.channels.endpoints import Endpoint
    from conformance.checks.context import CheckContext

ABORTED = ("cs-slow-tool", "cs-slow-args")  # aborted during the slow tool; while the call's arguments still stream
ARGUMENTS_BEGUN = 0.6  # seconds after the model was reached: the call's first fragments are out (cs-slow-args)


def aborted_scripts(ctx: CheckContext) -> list[str]:
    """The scripts of the aborted turns the target can play (cs-slow without a slow tool)."""
    return [script for script in ABORTED if script in ctx.env.scripts] or ["cs-slow"]


async def abort_turn(ctx: CheckContext, chosen: Endpoint, script: str) -> rules.AbortedTurn:
    """A turn of `script` on `chosen`, aborted once it reached the model (`cs-slow-args`: once its call's first
    argument fragments streamed), read to its end; the fake LLM's log of it."""
    run = run_tag(ctx, f"a-{chosen.name}-{script}")
    session = new_session(chosen)
    body = ChannelClient(ctx).request(chosen, script, session_id=session, run=run)
    streaming = asyncio.create_task(ChannelClient(ctx).post(chosen, body))
    if not await model_reached(ctx, run, ctx.target.stream_deadline, streaming):
        return rules.AbortedTurn(await streaming, script, run)
    if script == "cs-slow-args":
        await asyncio.sleep(ARGUMENTS_BEGUN)
    asked, asked_clock = time.monotonic(), time.time()
    exchange = await ctx.client.call("POST", f"/sessions/{session}/abort", operation="abortSessionTurn")
    answered_clock = time.time()
    answer = await streaming
    generations = await ctx.llm.main_requests(run)
    return rules.AbortedTurn(answer, script, run, exchange, asked, asked_clock, answered_clock, generations)


async def judge_endings(ctx: CheckContext, chosen: Endpoint) -> None:
    """The ending of each aborted turn on `chosen`, by the rules its channel's ending is judged by (rules.JUDGED), and
    by @ag-ui/client for a run; NOT TESTABLE, with the reason, where no aborted turn ended (an abort that stopped
    nothing is CHANNEL-009's)."""
    judged, ended = rules.JUDGED[chosen.name], []
    for run in await asyncio.gather(*(abort_turn(ctx, chosen, script) for script in aborted_scripts(ctx))):
        if why := run.unended(ctx.env.scripts[run.script]):
            for requirement in sorted(judged):
                ctx.findings.not_testable(requirement, f"{chosen.name} ({run.script}): {why}")
        else:
            ended.append(run.answer)
    # AG-UI's own client over each body: HttpAgent's verifyEvents is the protocol's validator of a run's end.
    reads = await real_client_reads(ctx, ended) if chosen.name == "ag_ui" and ended else [None] * len(ended)
    for answer, read in zip(ended, reads, strict=True):
        record(ctx, rules.ending(answer, read), answer, set(judged))
