"""Scenario helpers of the channel checks (channels.py, channel_openai.py, channel_ui.py, channel_ag_ui.py), each
written once: one scripted turn on a declared endpoint, judged in every way a turn of any channel is judged.

`judged_turn` posts a turn playing a fake-LLM script and judges, for the requirements its caller names:
- the stream's shape and order with the protocol's rules (conformance/channels/rules_*.py; official schemas there),
- the text exact against the script (expected.py), and the usage against the fake LLM's log (CHANNEL-008),
- the protocol's real client over the same recorded body (real_clients.py): its rejection is a FAIL with its error.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..channels.client import ChannelAnswer, ChannelClient
from ..channels.endpoints import STREAMING, Endpoint, declared
from ..channels.expected import ExpectedTurn, expected_turn
from ..channels.real_clients import ClientRead, read_ag_ui, read_openai_chat, read_openai_responses, read_ui
from ..context import CheckContext
from ..errors import Blocked, NotTestable
from ..exchanges import json_or_none
from ..violations import Violation

# endpoint name -> its protocol's rules: (answer, expected turn or None) -> violations, each naming its requirement.
Rules = Callable[[ChannelAnswer, ExpectedTurn | None], list[Violation]]


def endpoints(ctx: CheckContext) -> list[Endpoint]:
    """The streaming endpoints of the channels the target declares (none: the check's rules are N/A)."""
    found = declared(ctx.target.channels)
    if not found:
        raise NotTestable("the target declares no channel besides the GNS3 chat API")
    return found


def endpoint(ctx: CheckContext, name: str) -> Endpoint:
    chosen = STREAMING[name]
    if chosen.channel not in ctx.target.channels:
        raise NotTestable(f"the target does not declare the channel {chosen.channel}")
    return chosen


def client(ctx: CheckContext) -> ChannelClient:
    return ChannelClient(ctx)


def run_tag(ctx: CheckContext, label: str) -> str:
    """A fake-LLM run tag of its own for one turn of the check: the log then tells that turn's generations. The
    tag's run is at most 64 characters (spec/fake-llm/selection.yaml): a long label is shortened to a digest."""
    tag = f"{ctx.run}-{label}"
    if len(tag) <= 64:
        return tag
    digest = hashlib.sha1(label.encode()).hexdigest()[:12]
    return f"{ctx.run[:40]}-{ctx.run[-8:]}-{digest}"


@dataclass
class Turn:
    answer: ChannelAnswer
    expected: ExpectedTurn
    run: str


async def post_turn(
    ctx: CheckContext,
    chosen: Endpoint,
    script: str,
    *,
    label: str,
    session_id: str | None = None,
    user: str | None = "main",
    stream: bool = True,
    stop_when: Callable[[Any], bool] | None = None,
) -> Turn:
    """One turn playing `script` on `chosen`, under a run tag of its own (`label` names it in the check)."""
    if script not in ctx.env.scripts:
        raise NotTestable(f"scenario {script!r} needs a tool the target did not declare")
    run = run_tag(ctx, label)
    channel = client(ctx)
    body = channel.request(chosen, script, session_id=session_id, run=run, stream=stream)
    answer = await channel.post(chosen, body, user=user, stop_when=stop_when)
    answer.message = ctx.message(script, run=run)  # as the server must store it (what the body's protocol carried)
    return Turn(answer, expected_turn(ctx.env.scripts, script), run)


def require_stream(ctx: CheckContext, answer: ChannelAnswer, requirement: str) -> None:
    """Stop the check unless the turn was answered 200 with an SSE stream the server ended."""
    if answer.status != 200 or not answer.streamed:
        raise Blocked(requirement, f"the turn was not streamed: {answer.describe()}", (answer.exchange,))
    if not answer.completed:
        raise Blocked(requirement, f"the stream did not end: {answer.describe()}", (answer.exchange,))


def record(ctx: CheckContext, violations: list[Violation], answer: ChannelAnswer, judged: set[str]) -> None:
    """One finding per requirement of `judged`: failed with the violations that name it, else passed."""
    by_rule: dict[str, list[str]] = {}
    for violation in violations:
        by_rule.setdefault(violation.requirement, []).append(str(violation))
    for requirement in sorted(judged | set(by_rule)):
        messages = by_rule.get(requirement, [])
        more = f" (and {len(messages) - 4} more)" if len(messages) > 4 else ""
        ctx.findings.expect(
            requirement, not messages, f"{answer.endpoint.name}: " + "; ".join(messages[:4]) + more, answer.exchange
        )


def text_violations(turn: Turn, requirement: str) -> list[Violation]:
    """The answer's text is exactly the script's (what the fake LLM streamed before any failure)."""
    got, want = turn.answer.text, turn.expected.text
    if got == want:
        return []
    return [Violation(requirement, f"the streamed text is {got!r}; the fake LLM streamed {want!r}")]


async def usage_violations(ctx: CheckContext, turn: Turn, requirement: str = "CHANNEL-008") -> list[Violation]:
    """The usage the answer reports equals the turn's, as the fake LLM's log tells it (its generations' usage)."""
    _calls, inputs, outputs = await ctx.llm.expected_usage(turn.run)
    usage = turn.answer.usage
    if usage is None:
        return [Violation(requirement, f"the answer reports no usage; the turn's is {inputs} in, {outputs} out")]
    want = (inputs, outputs, inputs + outputs)
    got = (usage.input, usage.output, usage.total)
    if got == want:
        return []
    return [Violation(requirement, f"the answer reports usage (in, out, total) {got}; the turn's is {want}")]


async def real_client_reads(ctx: CheckContext, answers: list[ChannelAnswer]) -> list[ClientRead]:
    """Each answer's body read by its protocol's real client (one Node process per protocol for the batch)."""
    model = client(ctx).model
    reads: dict[int, ClientRead] = {}
    ui = [i for i, a in enumerate(answers) if a.endpoint.name == "ui"]
    ag = [i for i, a in enumerate(answers) if a.endpoint.name == "ag_ui"]
    if ui:
        for i, read in zip(ui, await read_ui([answers[i].raw for i in ui]), strict=True):
            reads[i] = read
    if ag:
        cases = [_ag_ui_case(answers[i]) for i in ag]
        for i, read in zip(ag, await read_ag_ui(cases), strict=True):
            reads[i] = read
    for i, answer in enumerate(answers):
        if answer.endpoint.name == "openai_chat":
            reads[i] = await read_openai_chat(answer.raw, model)
        elif answer.endpoint.name == "openai_responses":
            reads[i] = await read_openai_responses(answer.raw, model)
    return [reads[i] for i in range(len(answers))]


def _ag_ui_case(answer: ChannelAnswer) -> dict[str, Any]:
    """The recorded body, with the thread and run the request named (the client checks RUN_STARTED against them)."""
    request = json_or_none(answer.exchange.request_body or "") or {}
    case: dict[str, Any] = {"body": answer.raw}
    for key in ("threadId", "runId"):
        if isinstance(request.get(key), str):
            case[key] = request[key]
    return case
