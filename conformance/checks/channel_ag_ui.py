"""The AG-UI channel (AGUI-*): the RunAgentInput HttpAgent sends, and the run judged in two voices, the protocol's
(AGUI-PROTO-*, conformance/rules/ag_ui_protocol.py) and the contract's (AGUI-002, AGUI-003, conformance/rules/ag_ui.py),
and by @ag-ui/client's own pipeline over each recorded body: HttpAgent applies verifyEvents, the protocol's official
validator, whose rejection is reported, in its own words, under the AGUI-PROTO requirement it states."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

from conformance.channels.aborts import judge_endings
from conformance.channels.client import ChannelClient
from conformance.channels.endpoints import ChannelAnswer
from conformance.channels.real_clients import ClientRead, ag_ui_request_bodies
from conformance.checks import check
from conformance.checks.blame import unless_blocked
from conformance.checks.context import CheckContext
from conformance.checks.support_channels import endpoint, real_client_reads, record, usage_violations
from conformance.checks.support_requests import REQUEST_RULE, judge_served, refusal, refused, served
from conformance.checks.turns import Turn, post_turn, run_tag
from conformance.errors import HarnessError
from conformance.rules import ag_ui as rules_ag_ui
from conformance.rules import ag_ui_protocol, official
from conformance.rules.expected import ExpectedTurn, expected_turn
from conformance.rules.scenarios import TURNS
from conformance.rules.violations import Violation, short

# With every cut of the deltas providers send (conformance.rules.scenarios.SHAPES).
SCENARIOS = TURNS
TEMPERATURE = 0.7
# What HttpAgent sends besides the thread, run and messages: members the agent does not read (AGUI-PROTO-007), in
# `forwardedProps` beside the contract's temperature (AGUI-001).
AGENT_INPUT = {
    "state": {"conformance": "a state the agent does not read"},
    "context": [{"description": "conformance context", "value": "context the agent does not read"}],
    "forwardedProps": {"temperature": TEMPERATURE, "conformance": {"forwarded": True}},
}
REQUEST = REQUEST_RULE["ag_ui"]  # AGUI-PROTO-007: the RunAgentInput HttpAgent sends, run


def _tool_calls(read: ClientRead) -> list[tuple[Any, Any]]:
    """(name, parsed arguments) of the tool calls the client's new assistant messages hold."""
    calls = []
    for message in read.detail.get("newMessages") or []:
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        for call in message.get("toolCalls") or []:
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict):
                try:
                    arguments = json.loads(function.get("arguments") or "")
                except (TypeError, ValueError):
                    arguments = function.get("arguments")
                calls.append((function.get("name"), arguments))
    return calls


def client_violations(read: ClientRead, expected: ExpectedTurn) -> list[Violation]:
    """What @ag-ui/client's HttpAgent made of the body: the run accepted with the scripted text and tool calls, or,
    for a failing turn, ended by the run error with the contract's code; a rejection is what its user would see: a
    protocol violation (its verifyEvents or its parser), under the AGUI-PROTO requirement its message states."""
    if not read.ok:
        requirement = ag_ui_protocol.client_requirement(read.error or "")
        return [Violation(requirement, f"@ag-ui/client (HttpAgent, verifyEvents) rejected the run: {read.error}")]
    if expected.fails:
        if read.error_code != rules_ag_ui.FAILED_CODE:
            run_error = read.detail.get("runError")
            return [
                Violation(
                    "AGUI-003",
                    f"@ag-ui/client saw the failing run end with {short(run_error)}, not a run error with code "
                    f"{rules_ag_ui.FAILED_CODE}",
                )
            ]
        return []
    found = []
    if read.text != expected.text:
        found.append(
            Violation("AGUI-002", f"@ag-ui/client assembled {read.text!r}; the script streamed {expected.text!r}")
        )
    want = [(call.name, call.arguments) for call in expected.tool_calls]
    if _tool_calls(read) != want:  # the calls as a frontend builds them from the ARGS deltas (AGUI-PROTO-006)
        assembled = f"@ag-ui/client assembled the tool calls {short(_tool_calls(read))}; the model made {want}"
        found.append(Violation(ag_ui_protocol.CALLS, assembled))
    return found


def _event(answer: ChannelAnswer, kinds: tuple[str, ...]) -> dict[str, Any]:
    found = [e for e in answer.payloads if isinstance(e, dict) and e.get("type") in kinds]
    return found[0] if found else {}


@check("channel_ag_ui.input")
async def input_(ctx: CheckContext) -> None:
    """Two runs of one new thread whose RunAgentInput @ag-ui/client's own HttpAgent builds, with a `state`, a `context`
    and `forwardedProps` the agent does not read (and the contract's temperature among them): each run, not refused
    (AGUI-PROTO-007, the protocol's); the thread naming the session, made then continued, the run echoed, the
    temperature the turn's (AGUI-001, the contract's)."""
    chosen = endpoint(ctx, "ag_ui")
    channel = ChannelClient(ctx)
    thread_id = chosen.new_session_id() or str(uuid.uuid4())
    runs = {label: run_tag(ctx, label) for label in ("first", "second")}
    plain = expected_turn(ctx.env.scripts, "cs-plain")
    user = {"id": uuid.uuid4().hex, "role": "user", "content": ctx.message("cs-plain", run=runs["first"])}
    agent = {"threadId": thread_id, **AGENT_INPUT}
    (first,) = await ag_ui_request_bodies([{**agent, "runId": uuid.uuid4().hex, "messages": [user]}])
    own = official.errors("ag_ui_run_agent_input", first)
    if own:
        raise HarnessError(f"the RunAgentInput HttpAgent built is invalid: {own}")
    answer = await channel.post(chosen, first)
    await judge_served(ctx, Turn(answer, plain, runs["first"]), "a new thread's run with a state, context and props")
    ctx.findings.require(
        answer.status == 200 and answer.streamed and answer.completed,
        "AGUI-001",
        f"a RunAgentInput for a new thread, with state, context and a temperature, was not answered with a stream: "
        f"{answer.describe()}",
        answer.exchange,
    )
    problems = _echoes(answer, first)
    generations = await ctx.llm.main_requests(runs["first"])
    if not generations:
        problems.append("the first run made no generation of the fake LLM")
    temperatures = {g.get("temperature") for g in generations}
    # INPUT-003: the request's temperature is used only by a target with the capability temperature_override.
    overrides = "temperature_override" in ctx.target.capabilities
    if overrides and generations and temperatures != {TEMPERATURE}:
        problems.append(f"forwardedProps.temperature {TEMPERATURE} reached the LLM as {sorted(map(str, temperatures))}")

    # The same thread again, with the conversation as HttpAgent keeps it (its messages and the run's new ones, as
    # the client applied the events): the session continues.
    (read,) = await real_client_reads(ctx, [answer])
    kept = read.detail.get("newMessages") if read.ok else None
    if not isinstance(kept, list) or not kept:
        kept = [{"id": uuid.uuid4().hex, "role": "assistant", "content": answer.text}]
    user = {"id": uuid.uuid4().hex, "role": "user", "content": ctx.message("cs-plain", run=runs["second"])}
    (second,) = await ag_ui_request_bodies(
        [{**agent, "runId": uuid.uuid4().hex, "messages": [*first["messages"], *kept, user]}]
    )
    again = await channel.post(chosen, second)
    await judge_served(ctx, Turn(again, plain, runs["second"]), "the thread's next run")
    ctx.findings.require(
        again.status == 200 and again.streamed and again.completed,
        "AGUI-001",
        f"a second run on the same thread was not answered with a stream: {again.describe()}",
        again.exchange,
    )
    problems += _echoes(again, second)
    sent = [json.dumps(g.get("messages")) for g in await ctx.llm.main_requests(runs["second"])]
    if not sent:
        problems.append("the second run made no generation of the fake LLM")
    elif not all(runs["first"] in text for text in sent):
        problems.append(
            f"the second run's generations do not carry the first one (its message tagged {runs['first']}): "
            "the thread's session was not continued"
        )
    ctx.findings.expect("AGUI-001", not problems, "; ".join(problems), answer.exchange, again.exchange)


def _echoes(answer: ChannelAnswer, body: dict[str, Any]) -> list[str]:
    """RUN_STARTED names the request's thread and run, and RUN_FINISHED the same run."""
    problems = []
    started, finished = _event(answer, ("RUN_STARTED",)), _event(answer, ("RUN_FINISHED",))
    for name, event, keys in (("RUN_STARTED", started, ("threadId", "runId")), ("RUN_FINISHED", finished, ("runId",))):
        for key in keys:
            if event.get(key) != body[key]:
                problems.append(f"{name} has {key} {event.get(key)!r}; the request's was {body[key]!r}")
    return problems


@check("channel_ag_ui.run")
async def run(ctx: CheckContext) -> None:
    chosen = endpoint(ctx, "ag_ui")
    scripts = [s for s in SCENARIOS if s in ctx.env.scripts]
    turns = await asyncio.gather(*(post_turn(ctx, chosen, s, label=s.removeprefix("cs-")) for s in scripts))
    whys = await unless_blocked(ctx, list(turns))
    judged = []
    for turn, why in zip(turns, whys, strict=True):
        answer = turn.answer
        if served(answer):  # the RunAgentInput HttpAgent sends, run (AGUI-PROTO-007)
            ctx.findings.passed(REQUEST, answer.exchange)
        if answer.status != 200 or not answer.streamed or not answer.completed:
            record(ctx, [not_streamed(answer)], answer, set())
            continue
        judged.append((turn, why))
    reads = await real_client_reads(ctx, [turn.answer for turn, _why in judged])
    for (turn, why), read in zip(judged, reads, strict=True):
        found = rules_ag_ui.judge(turn.answer, turn.expected) + client_violations(read, turn.expected)
        if why:  # streamed, yet not as its script says, while the controls were served: the server's doing
            found.append(Violation("AGUI-002", why))
        found += await _run_error_usage(ctx, turn)
        record(ctx, found, turn.answer, set(rules_ag_ui.JUDGED))
    if len(judged) < len(turns):
        ctx.findings.not_testable("AGUI-003", "some runs were not streamed: how they end could not be judged")
    if REQUEST not in ctx.findings.judged():
        ctx.findings.not_testable(REQUEST, "no run was answered with a stream or refused: nothing shows the request")


def not_streamed(answer: ChannelAnswer) -> Violation:
    """A run answered with no complete stream: a 200 that is no event stream breaks the protocol (AGUI-PROTO-001),
    and so does a refusal (4xx) of the RunAgentInput HttpAgent sends (AGUI-PROTO-007); a server error or a stream
    cut short, the contract's run (AGUI-002)."""
    if refused(answer):
        return refusal(answer, "a run's RunAgentInput")
    requirement = "AGUI-PROTO-001" if answer.status == 200 and answer.completed else "AGUI-002"
    ended = "" if answer.completed else " (the stream did not end)"
    return Violation(requirement, f"the run was not streamed{ended}: {answer.describe()}")


async def _run_error_usage(ctx: CheckContext, turn: Turn) -> list[Violation]:
    """AGUI-003: a usage on RUN_ERROR is optional (the protocol: no count without data); when sent, the turn's."""
    ending = _event(turn.answer, rules_ag_ui.TERMINAL)
    if ending.get("type") != "RUN_ERROR" or ending.get("usage") is None or turn.answer.usage is None:
        return []
    return await usage_violations(ctx, turn, "AGUI-003")


@check("channel_ag_ui.aborted", slow=True, raced=("AGUI-003",), needs=("channel_gns3", "abort"), slow_tool=True)
async def aborted(ctx: CheckContext) -> None:
    """A run aborted during the slow tool, and one while a call's arguments still stream, ended as AGUI-003 maps an
    aborted turn (ours, in @ag-ui/core 1.0.0's words): `RUN_FINISHED` with `outcome: {"type": "cancelled"}`, its
    thread, run and usage; the cut call ended by `TOOL_CALL_END` without a result (AGUI-002), and every call ended
    before `RUN_FINISHED` (AGUI-PROTO-005, the protocol's)."""
    await judge_endings(ctx, endpoint(ctx, "ag_ui"))
