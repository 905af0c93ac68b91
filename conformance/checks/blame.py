"""Whose failure a turn that did not go as scripted is: the suite's one decision between FAIL, BLOCKED BY and NOT
TESTABLE, for every endpoint (the GNS3 stream and each channel).

A check's scenario is made of scripted turns (turns.Turn). When one did not go as its script says (turns.missed),
the rule the check judges is not blamed before control turns in new sessions show that the server serves the
scenario's basic turns at all: a plain turn (cs-plain) on the same endpoint, and for a script that calls tools a
tool turn (cs-tool) where TESTABILITY-003 is judged (the GNS3 stream when the target serves it: the tools are the
agent's whatever the channel; else the same endpoint). turns.control_turn says when a control ran.

| the scenario can happen | the turn went as scripted | plain control | tool control | the judged rule          |
|-------------------------|---------------------------|---------------|--------------|--------------------------|
| no (undeclared tool...) | -                         | -             | -            | NOT TESTABLE             |
| yes                     | yes                       | not sent      | not sent     | judged by the check      |
| yes                     | no                        | not served    | not sent     | BLOCKED BY TESTABILITY-001 |
| yes                     | no                        | served        | not served   | BLOCKED BY TESTABILITY-003 |
| yes                     | no                        | served        | served (or no tool script) | FAIL           |

A control whose rule is the very rule judged is not sent: a check of TESTABILITY-001 fails on its own plain turn.
BLOCKED BY blames nothing this check judges: what it had not judged is NOT TESTABLE, and the blocker's own check
judges the blocker.
"""

from __future__ import annotations

from conformance.channels.endpoints import Endpoint
from conformance.channels.gns3_stream import StreamResult
from conformance.checks.context import CheckContext
from conformance.checks.turns import Turn, completed_turn, control_turn, missed, stream_turn
from conformance.errors import Blocked, BlockedBy
from conformance.rules.scenarios import script_named_in

SERVED_TURN = "TESTABILITY-001"  # a plain scripted turn is served (judged by testability.llm_config)
SERVED_TOOL_TURN = "TESTABILITY-003"  # a turn that runs a declared tool is served (testability.tools_bound)


def _calls_tools(ctx: CheckContext, script: str | None) -> bool:
    return script in ctx.env.scripts and any(step.get("tool_calls") for step in ctx.env.scripts[script]["steps"])


async def raise_if_blocked(
    ctx: CheckContext, chosen: Endpoint | None, scripts: list[str | None], requirement: str, why: str
) -> None:
    """The decision of the table above for turns of `scripts` on `chosen` (None: the GNS3 stream) that did not go as
    scripted (`why`): raises BlockedBy the first control's rule that is not served; returns when every control is
    served, the failure being the scenario's own (for the caller to judge as `requirement`'s)."""
    controls = [(chosen, "cs-plain", SERVED_TURN)]
    if any(_calls_tools(ctx, script) for script in scripts) and "cs-tool" in ctx.env.scripts:
        controls.append((None if ctx.target.serves_gns3 else chosen, "cs-tool", SERVED_TOOL_TURN))
    for where, script, rule in controls:
        if rule == requirement:  # the basic turn is this check's own subject: it fails, it is not blocked
            return
        ran, shown = await control_turn(ctx, where, script)
        if not ran:
            raise BlockedBy(rule, f"{why}; a {script} turn in a new session is not served either: {shown}")


async def unless_blocked(ctx: CheckContext, turns: list[Turn], *, cut: bool = False) -> list[str | None]:
    """For each turn (all on one endpoint), why it did not go as scripted, or None: turns a check judges whatever
    they hold. When some did not, the controls decide (raise_if_blocked); their failures are left to the caller."""
    whys = [await missed(ctx, turn, cut=cut) for turn in turns]
    failed = [turn for turn, why in zip(turns, whys, strict=True) if why]
    if failed:
        why = "; ".join(w for w in whys if w)
        await raise_if_blocked(ctx, failed[0].endpoint, [turn.script for turn in failed], "", why)
    return whys


async def require_scripted(ctx: CheckContext, turn: Turn, requirement: str, *, cut: bool = False) -> None:
    """Stop the check unless the turn's scenario happened: blocked by a control's rule (see the table), or failing
    `requirement` when the controls are served (`cut`: a turn the suite left on purpose, see turns.missed)."""
    why = await missed(ctx, turn, cut=cut)
    if why is None:
        return
    await raise_if_blocked(ctx, turn.endpoint, [turn.script], requirement, why)
    raise Blocked(requirement, why, (turn.answer.exchange,))


async def require_served(
    ctx: CheckContext, ok: bool, result: StreamResult, requirement: str, message: str, *, stop: bool = True
) -> None:
    """Judge `requirement` on a GNS3 stream turn the scenario needed (`ok`: it went as the scenario needs). A failed
    turn fails `requirement` unless a control fails too (then the check is blocked by that control's rule). `stop`
    stops the check on a failure (require), else it goes on (expect)."""
    if not ok:
        await raise_if_blocked(ctx, None, [script_named_in(result.exchange.request_body)], requirement, message)
    if stop:
        ctx.findings.require(ok, requirement, message, result.exchange)
    else:
        ctx.findings.expect(requirement, ok, message, result.exchange)


async def require_turn(ctx: CheckContext, result: StreamResult, requirement: str) -> None:
    """Stop the check, failing `requirement`, unless the GNS3 stream turn completed (turns.completed_turn) or a
    control is not served either (then the check is blocked by that control's rule)."""
    await require_served(
        ctx,
        completed_turn(result),
        result,
        requirement,
        f"the turn did not complete: {result.exchange.describe()}, events {result.types[-5:]}, "
        f"closed by the server: {result.completed} {result.exchange.body[:300]}",
    )


async def unless_stream_blocked(ctx: CheckContext, result: StreamResult, script: str) -> None:
    """unless_blocked for one GNS3 stream turn of `script`."""
    await unless_blocked(ctx, [stream_turn(ctx, result, script)])
