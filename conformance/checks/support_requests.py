"""The requests of the UI and AG-UI channels in the protocol's voice: what the protocol's real client sends for a
turn is served, not refused (UI-PROTO-006 for `DefaultChatTransport`'s body, AGUI-PROTO-007 for `HttpAgent`'s
RunAgentInput). Shared by channel_ui.py and channel_ag_ui.py; the bodies themselves are built by the real clients
(conformance/channels/real_clients.py, request-bodies.mjs)."""

from __future__ import annotations

from conformance.channels.endpoints import ChannelAnswer
from conformance.checks.blame import unless_blocked
from conformance.checks.context import CheckContext
from conformance.checks.support_channels import refused_before_stream
from conformance.checks.turns import Turn
from conformance.rules.violations import Violation

# Each streaming endpoint's rule of the request its protocol's real client sends.
REQUEST_RULE = {"ui": "UI-PROTO-006", "ag_ui": "AGUI-PROTO-007"}
SENDER = {"ui": "`ai`'s DefaultChatTransport", "ag_ui": "@ag-ui/client's HttpAgent"}


def refused(answer: ChannelAnswer) -> bool:
    """Refused before any stream, with a 4xx. (A 5xx, or no answer at all, is no refusal of what was sent.)"""
    return refused_before_stream(answer) and 400 <= answer.status < 500


def served(answer: ChannelAnswer) -> bool:
    """Served: 200 and an event stream began (whatever the stream then holds is judged by the stream's rules)."""
    return answer.status == 200 and answer.streamed


def refusal(answer: ChannelAnswer, what: str) -> Violation:
    name = answer.endpoint.name
    return Violation(
        REQUEST_RULE[name], f"{what}, as {SENDER[name]} sends it, was refused before any stream: {answer.describe()}"
    )


async def judge_served(ctx: CheckContext, turn: Turn, what: str) -> None:
    """The request rule on one turn whose body the real client built: passed when served; failed when refused, and
    the check stops there (what it judges next needs the turn). First the controls (blame.unless_blocked): when a
    plain turn is not served either, the check is blocked by that rule, never the request's. Any other answer is left
    to the contract's rules the caller judges."""
    await unless_blocked(ctx, [turn])
    answer = turn.answer
    assert isinstance(answer, ChannelAnswer)
    requirement = REQUEST_RULE[answer.endpoint.name]
    if served(answer):
        ctx.findings.passed(requirement, answer.exchange)
    elif refused(answer):
        violation = refusal(answer, what)
        ctx.findings.require(False, requirement, violation.message, answer.exchange)
