"""Channel request bounds (CHANNEL-011): what a channel's request carries beyond the turn's message, bounded as
spec/channels/request-bounds.json writes it. Each bound is judged on both of its sides on every endpoint it concerns:
one over it is refused 422 `validation_error` before any stream and reaches no model; one at it is served."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from conformance.channels.client import ChannelClient
from conformance.channels.endpoints import Endpoint
from conformance.checks import check
from conformance.checks.blame import unless_blocked
from conformance.checks.context import CheckContext
from conformance.checks.support_channels import endpoints, judge_refusal
from conformance.checks.turns import Turn, run_tag
from conformance.rules.expected import expected_turn
from gns3_copilot_generated.constants import (
    AG_UI_RUN_ID_MAX_LENGTH,
    CHANNEL_INSTRUCTIONS_MAX_LENGTH,
    CHANNEL_MESSAGES_MAX_ITEMS,
)

REQUIREMENT = "CHANNEL-011"
SCRIPT = "cs-plain"
# The padding role of each endpoint: a message that is neither the client's copy of the conversation (CHANNEL-004
# refuses that for a new session) nor, where the protocol allows, an instruction.
_PADDING_ROLE = {"openai_chat": "system", "openai_responses": "system", "ui": "system", "ag_ui": "developer"}


@dataclass(frozen=True)
class BoundCase:
    what: str  # "1001 messages (over 1000)"
    accepted: bool
    shape: Any  # (endpoint, body) -> the body with the case applied


def _messages(count: int):
    def shape(chosen: Endpoint, body: dict[str, Any]) -> dict[str, Any]:
        return chosen.with_history(body, [(_PADDING_ROLE[chosen.name], "x")] * (count - 1))

    return shape


def _instructions(*lengths: int, member: bool = False, roles: tuple[str, ...] = ("system",)):
    """Instruction messages of these lengths, of `roles` in turn; with `member`, the first is the Responses
    `instructions` member instead."""

    def shape(chosen: Endpoint, body: dict[str, Any]) -> dict[str, Any]:
        texts = ["i" * length for length in lengths]
        if member:
            body = {**body, "instructions": texts.pop(0)}
        earlier = [(roles[index % len(roles)], text) for index, text in enumerate(texts)]
        return chosen.with_history(body, earlier) if earlier else body

    return shape


def _member(name: str, length: int):
    def shape(_chosen: Endpoint, body: dict[str, Any]) -> dict[str, Any]:
        return {**body, name: "r" * length}

    return shape


def cases(chosen: Endpoint) -> list[BoundCase]:
    most, longest = CHANNEL_MESSAGES_MAX_ITEMS, CHANNEL_INSTRUCTIONS_MAX_LENGTH
    found = [
        BoundCase(f"{most + 1} messages (over {most})", False, _messages(most + 1)),
        BoundCase(f"{most} messages (at the bound)", True, _messages(most)),
    ]
    half = longest // 2
    if chosen.channel == "openai":
        found += [
            BoundCase(f"a system message of {longest + 1} characters", False, _instructions(longest + 1)),
            BoundCase(
                f"two system messages of {half + 1} and {longest - half} characters (over {longest} together)",
                False,
                _instructions(half + 1, longest - half),
            ),
            BoundCase(
                f"a system message of {half + 1} and a developer message of {longest - half} characters (over "
                f"{longest} together)",
                False,
                _instructions(half + 1, longest - half, roles=("system", "developer")),
            ),
            BoundCase(
                f"two system messages of {half} and {longest - half} characters ({longest} together: at the bound)",
                True,
                _instructions(half, longest - half),
            ),
        ]
    if chosen.name == "openai_responses":
        found += [
            BoundCase(f"`instructions` of {longest + 1} characters", False, _instructions(longest + 1, member=True)),
            BoundCase(
                f"`instructions` of {half + 1} and a system message of {longest - half} characters (over {longest})",
                False,
                _instructions(half + 1, longest - half, member=True),
            ),
            BoundCase(
                f"`instructions` of {longest} characters (at the bound)", True, _instructions(longest, member=True)
            ),
        ]
    if chosen.name == "ag_ui":
        run_id = AG_UI_RUN_ID_MAX_LENGTH
        found += [
            BoundCase(f"a `runId` of {run_id + 1} characters", False, _member("runId", run_id + 1)),
            BoundCase(f"a `parentRunId` of {run_id + 1} characters", False, _member("parentRunId", run_id + 1)),
            BoundCase(f"a `runId` of {run_id} characters (at the bound)", True, _member("runId", run_id)),
            BoundCase(f"a `parentRunId` of {run_id} characters (at the bound)", True, _member("parentRunId", run_id)),
        ]
    return found


@check("channels.bounds")
async def bounds(ctx: CheckContext) -> None:
    """Every bound of CHANNEL-011 on every declared endpoint it concerns: just over it refused 422 before any stream,
    with no generation; at it, a turn served as scripted."""
    channel = ChannelClient(ctx)
    refused_run = run_tag(ctx, "over")
    planned = []
    for chosen in endpoints(ctx):
        for index, case in enumerate(cases(chosen)):
            run = run_tag(ctx, f"at-{chosen.name}-{index}") if case.accepted else refused_run
            body = channel.request(chosen, SCRIPT, session_id=chosen.new_session_id(), run=run)
            planned.append((chosen, case, run, case.shape(chosen, body)))
    answers = await asyncio.gather(*(channel.post(chosen, body) for chosen, _case, _run, body in planned))
    refused = []
    for (chosen, case, run, _body), answer in zip(planned, answers, strict=True):
        if not case.accepted:
            judge_refusal(ctx, REQUIREMENT, answer, 422, "validation_error", f"a request with {case.what}")
            refused.append(answer.exchange)
            continue
        answer.message = ctx.message(SCRIPT, run=run)
        turn = Turn(answer, expected_turn(ctx.env.scripts, SCRIPT), run)
        why = (await unless_blocked(ctx, [turn]))[0]
        ctx.findings.expect(
            REQUIREMENT,
            why is None,
            f"{chosen.name}, a request with {case.what} was not served as a plain turn: {why}",
            answer.exchange,
        )
    reached = await ctx.llm.main_requests(refused_run)
    ctx.findings.expect(
        REQUIREMENT, not reached, f"requests over a bound reached the model {len(reached)} time(s)", *refused[:3]
    )
