"""Helpers of the channel checks (channels.py, across_channels.py, channel_openai.py, channel_ui.py,
channel_ag_ui.py), each written once: the declared endpoints, one finding per requirement from a turn's violations
(the protocols' rules live in conformance/rules/), the usage against the fake LLM's log (CHANNEL-008), each answer read
by its protocol's real client (conformance/channels/real_clients.py), refusals before any stream, and the waits of
turns cut short. A turn itself is conformance/checks/turns.py's; whose failure it is, blame.py's."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any

from conformance.channels.client import ChannelClient
from conformance.channels.endpoints import STREAMING, ChannelAnswer, Endpoint, declared, served
from conformance.channels.real_clients import ClientRead, read_ag_ui, read_openai_chat, read_openai_responses, read_ui
from conformance.checks.context import CheckContext
from conformance.checks.support import find_session, generation_started, history, wait_for
from conformance.checks.turns import Turn, run_tag
from conformance.errors import NotTestable
from conformance.rules.expected import ExpectedTurn
from conformance.rules.scenarios import script_named_in
from conformance.rules.violations import Violation
from conformance.transport.exchanges import json_or_none
from gns3_copilot_generated.constants import CHANNEL_PATHS

# The contract's path of each channel under the chat prefix (CHANNEL-001, the `channels` tag of openapi.yaml).
CONTRACT_PATHS = CHANNEL_PATHS
SETTLE_SECONDS = 10.0  # how long a turn cut short may take to be written (history, statistics)
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
    if not served(chosen, ctx.target.channels):
        raise NotTestable(f"the target's channels.{chosen.channel}.endpoints does not list {chosen.name}")
    return chosen


def record(ctx: CheckContext, violations: list[Violation], answer: ChannelAnswer, judged: set[str]) -> None:
    """One finding per requirement of `judged`: failed with every violation that names it (none left out: the
    reports show them all), else passed."""
    by_rule: dict[str, list[str]] = {}
    for violation in violations:
        by_rule.setdefault(violation.requirement, []).append(str(violation))
    # The turn's scenario, named by the fake-LLM tag of its request: which cut of the deltas a violation came from.
    scenario = script_named_in(answer.exchange.request_body)
    where = f"{answer.endpoint.name} ({scenario})" if scenario else answer.endpoint.name
    for requirement in sorted(judged | set(by_rule)):
        messages = by_rule.get(requirement, [])
        ctx.findings.expect(requirement, not messages, f"{where}: " + "; ".join(messages), answer.exchange)


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
    model = ChannelClient(ctx).model
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


# --- shared by the checks of channels.py and across_channels.py ----------------------------------------------


def refused_before_stream(answer: ChannelAnswer) -> bool:
    """Answered before any stream: not a 200, and not an event stream."""
    return answer.status is not None and answer.status != 200 and not answer.streamed


def refusal_code(answer: ChannelAnswer) -> Any:
    return answer.endpoint.refusal_code(answer.exchange.body)


def judge_refusal(ctx: CheckContext, requirement: str, answer: ChannelAnswer, status: int, code: str, what: str):
    ok = refused_before_stream(answer) and answer.status == status and refusal_code(answer) == code
    ctx.findings.expect(
        requirement,
        ok,
        f"{answer.endpoint.name}, {what}: expected {status} `{code}` before any stream; {answer.describe()}",
        answer.exchange,
    )


async def gns3_turn(ctx: CheckContext, script: str, run: str, session_id: str | None = None):
    body: dict[str, Any] = {"message": ctx.message(script, run=run)}
    if session_id is not None:
        body["session_id"] = session_id
    return await ctx.client.stream(body)


def new_session(chosen: Endpoint) -> str:
    """A session id the suite makes up: UI and AG-UI clients name their chats; OpenAI's metadata may too."""
    return chosen.new_session_id() or str(uuid.uuid4())


async def not_received(ctx: CheckContext, run: str, texts: list[str]) -> list[str]:
    """Which of `texts` the fake LLM's first generation of `run` did NOT receive in its messages."""
    records = await ctx.llm.main_requests(run)
    if not records:
        return texts
    seen = " ".join(str(m.get("content")) for m in records[0].get("messages") or [] if isinstance(m, dict))
    return [text for text in texts if text not in seen]


async def model_reached(ctx: CheckContext, run: str, seconds: float, turn: asyncio.Future[Any]) -> bool:
    """The fake LLM received the turn's first generation (the turn holds its session). False at once when the
    turn's request (`turn`) has ended first: a turn that failed before its model (an error) never will."""

    async def probe() -> str | None:
        if await generation_started(ctx, [run]):
            return "reached"
        return "ended" if turn.done() else None

    return await wait_for(probe, seconds=seconds, interval=0.05) == "reached"


async def settled_session(ctx: CheckContext, session: str, want_messages: int) -> dict[str, Any] | None:
    async def probe():
        found = await find_session(ctx, session, "CHANNEL-003")
        return found if found and found.get("message_count") == want_messages else None

    return await wait_for(probe, seconds=SETTLE_SECONDS, interval=0.25) or await find_session(
        ctx, session, "CHANNEL-003"
    )


def last_message_as(chosen: Endpoint, body: dict[str, Any], role: str) -> dict[str, Any]:
    """`body` whose last message (OpenAI messages or input, UI and AG-UI messages) has `role`."""
    body = chosen.with_history(body, [])  # Responses: the input string as a list of messages
    key = "messages" if "messages" in body else "input"
    messages = [dict(m) for m in body[key]]
    messages[-1]["role"] = role
    return {**body, key: messages}


def client_tool_bodies(channel: ChannelClient, ctx: CheckContext, chosen: Endpoint) -> list[tuple[str, dict, str]]:
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


async def kept_problems(ctx: CheckContext, session: str, message: str) -> list[str]:
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


def first_words(frame: Any) -> bool:
    """The first text of the dribbling answer (`One `) arrived: the model is answering, the turn is running."""
    return frame.data is not None and "One " in frame.data
