"""Helpers of the channel checks (channels.py, across_channels.py, channel_openai.py, channel_ui.py,
channel_ag_ui.py), each written once: the declared endpoints, one finding per requirement from a turn's violations
(the protocols' rules live in conformance/rules/), the usage against the fake LLM's log (CHANNEL-008), each answer read
by its protocol's real client (conformance/channels/real_clients.py), refusals before any stream and their bodies, the
waits of turns cut short, what the model received, and turns answered whole. A turn itself is
conformance/checks/turns.py's; whose failure it is, blame.py's."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable
from typing import Any

import gns3_copilot_spec as spec
from conformance.channels.client import ChannelClient
from conformance.channels.endpoints import STREAMING, ChannelAnswer, Endpoint, declared, served
from conformance.channels.real_clients import ClientRead, read_ag_ui, read_openai_chat, read_openai_responses, read_ui
from conformance.checks.blame import raise_if_blocked, require_scripted, unless_blocked
from conformance.checks.context import CheckContext
from conformance.checks.support import find_session, generation_started, history, wait_for
from conformance.checks.turns import Turn, post_turn, run_tag
from conformance.errors import NotTestable
from conformance.rules.expected import ExpectedTurn
from conformance.rules.openai_bodies import typed_error_problems
from conformance.rules.scenarios import LONG_HISTORY_CALLS, script_named_in
from conformance.rules.violations import Violation
from conformance.transport.exchanges import Exchange, json_or_none
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


def refusal_body_problems(answer: ChannelAnswer) -> list[str]:
    """CHANNEL-005: a refusal's body in its channel's shape: OpenAI's error body with the type its status gives
    (OPENAI-004) on the OpenAI channel, the contract's error body (ERROR-001) on the UI and AG-UI channels."""
    if answer.endpoint.channel == "openai":
        return typed_error_problems(answer.status or 0, answer.exchange.body or "")
    validator = spec.schema_validator(spec.SCHEMAS_DIR / "error-body.json")
    payload = json_or_none(answer.exchange.body or "")
    return [f"not the contract's error body: {e.message}" for e in validator.iter_errors(payload)]


def judge_refusal(ctx: CheckContext, requirement: str, answer: ChannelAnswer, status: int, code: str, what: str):
    ok = refused_before_stream(answer) and answer.status == status and refusal_code(answer) == code
    shape = refusal_body_problems(answer) if ok and requirement == "CHANNEL-005" else []
    ctx.findings.expect(
        requirement,
        ok and not shape,
        f"{answer.endpoint.name}, {what}: expected {status} `{code}` before any stream"
        + (f" in its channel's error body: {'; '.join(shape)}" if shape else f"; {answer.describe()}"),
        answer.exchange,
    )


async def gns3_turn(ctx: CheckContext, script: str, run: str, session_id: str | None = None):
    body: dict[str, Any] = {"message": ctx.message(script, run=run)}
    if session_id is not None:
        body["session_id"] = session_id
    return await ctx.client.stream(body)


# The channels whose mapping carries the contract error's message: response.failed (OPENAI-006), the `error` chunk's
# errorText (UI-003), RUN_ERROR's message (AGUI-003); OPENAI-004's error frame carries its code only.
MESSAGE_CARRIED = ("openai_responses", "ui", "ag_ui")


def judge_error_message(ctx: CheckContext, answer: ChannelAnswer, message: str | None, name: str) -> None:
    """CHANNEL-010: the channel's in-stream error carries the contract error's message (`message`, POST /stream's
    for the same failure; None: not known) where its mapping carries one."""
    error = answer.error
    if error is None or message is None or answer.endpoint.name not in MESSAGE_CARRIED:
        return
    ctx.findings.expect(
        "CHANNEL-010",
        error.get("message") == message,
        f"{name}: the in-stream error's message is {error.get('message')!r}; the contract error's (POST /stream, "
        f"the same failure) is {message!r}",
        answer.exchange,
    )


async def contract_errors(ctx: CheckContext, scripts: tuple[str, ...]) -> dict[str, str]:
    """The `error` text POST {prefix}/stream sends for each failing script: the contract error a channel maps."""
    found = {}
    for script in scripts:
        result = await gns3_turn(ctx, script, run_tag(ctx, f"e-gns3-{script}"))
        texts = [e.get("error") for e in result.events if e.get("type") == "error"]
        if texts and isinstance(texts[0], str):
            found[script] = texts[0]
    return found


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


def after_user(chosen: Endpoint, body: dict[str, Any]) -> dict[str, Any]:
    """`body` whose user message is followed by an assistant message of the same text: the last is not the user's."""
    listed = chosen.with_history(body, [])  # Responses: the input string as a list of messages
    key = "messages" if "messages" in listed else "input"
    user = listed[key][-1]
    answer = {**user, "role": "assistant", **({"id": uuid.uuid4().hex} if "id" in user else {})}
    return {**listed, key: [*listed[key], answer]}


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


# --- what the model received, and turns answered whole (channel_openai.py, channels.py) ------------------------


async def system_prompt(ctx: CheckContext, run: str) -> tuple[str, str]:
    """(the system messages, every message) the fake LLM's first generation of `run` received, as text."""
    records = await ctx.llm.main_requests(run)
    messages = records[0].get("messages") or [] if records else []
    system = [m for m in messages if isinstance(m, dict) and m.get("role") == "system"]
    return json.dumps(system), json.dumps(messages)


async def missed_whole_turn(ctx: CheckContext, turn: Turn) -> str | None:
    """Why a non-streamed turn did not reach the fake LLM as its script says (None when it did)."""
    generations = await ctx.llm.main_requests(turn.run)
    steps = len(turn.expected.generations)
    if turn.expected.fails and generations:
        return None
    if len(generations) >= steps and all(g.get("outcome") == "ok" for g in generations[:steps]):
        return None
    return f"the {turn.expected.script} turn made {len(generations)} generation(s) of the fake LLM"


async def unless_streamed_turns_fail(ctx: CheckContext, chosen: Endpoint, turns: list[Turn]) -> list[str | None]:
    """For non-streamed turns: why each missed its script (missed_whole_turn); when one did, streamed controls on the
    endpoint decide whether the check is blocked (blame.raise_if_blocked) or the failures are this answer's."""
    whys = [await missed_whole_turn(ctx, turn) for turn in turns]
    missed = [turn.expected.script for turn, why in zip(turns, whys, strict=True) if why]
    if missed:
        await raise_if_blocked(ctx, chosen, list(missed), "", "; ".join(w for w in whys if w))
    return whys


def ended_stream(answer: ChannelAnswer) -> bool:
    return answer.status == 200 and answer.streamed and answer.completed


def judge(ctx: CheckContext, found: list[Violation], judged: set[str], *exchanges: Exchange) -> None:
    """One finding per requirement of `judged` and of `found`: failed with every violation naming it, else passed."""
    by_rule: dict[str, list[str]] = {requirement: [] for requirement in judged}
    for violation in found:
        by_rule.setdefault(violation.requirement, []).append(violation.message)
    for requirement, messages in sorted(by_rule.items()):
        ctx.findings.expect(requirement, not messages, "; ".join(messages), *exchanges)


async def judged_turns(ctx: CheckContext, turns: list[Turn], requirement: str) -> list[tuple[Turn, str | None]]:
    """The turns to judge, each with why it did not go as scripted (None when it did). A turn not answered with a
    stream the server ended is `requirement`'s failure at once (a 404: the endpoint is not served); the streamed ones
    go through the controls of support_channels.unless_blocked (a plain turn not served: blocked, blaming nothing)."""
    streamed = []
    for turn in turns:
        if ended_stream(turn.answer):
            streamed.append(turn)
            continue
        ended = "" if turn.answer.completed else " (the stream did not end)"
        why = f"the {turn.expected.script} turn was not streamed{ended}: {turn.answer.describe()}"
        record(ctx, [Violation(requirement, why)], turn.answer, set())
    whys = await unless_blocked(ctx, streamed) if streamed else []
    return list(zip(streamed, whys, strict=True))


# --- CHANNEL-004: the conversation's refusals (channels.conversation) ------------------------------------------

EARLIER = [("user", "Earlier"), ("assistant", "Earlier answer")]  # a client's copy of a conversation
# Another user naming a session with the conversation: CHANNEL-005's 404, or CHANNEL-004's 422 (no session of theirs).
OTHERS_REFUSAL = {(404, "session_not_found"), (422, "unknown_conversation")}


async def conversation_refusals(ctx: CheckContext, chosen: Endpoint, session: str) -> None:
    channel = ChannelClient(ctx)
    continued = channel.request(chosen, "cs-plain", session_id=session, run=run_tag(ctx, f"c5-{chosen.name}"))
    # The caller's own session: only the last message is at fault (naming no session would be unknown_conversation).
    cases = [(after_user(chosen, continued), 422, "validation_error", "an assistant message after the user's")]
    fresh = channel.request(chosen, "cs-plain", session_id=chosen.new_session_id(), run=run_tag(ctx, "c3"))
    cases.append(
        (
            chosen.with_history(fresh, EARLIER),
            422,
            "unknown_conversation",
            "earlier messages, and no existing session of the caller",
        )
    )
    plain = channel.request(chosen, "cs-plain", session_id=chosen.new_session_id(), run=run_tag(ctx, "c4"))
    cases.append(
        (last_message_as(chosen, plain, "assistant"), 422, "validation_error", "the last message is not a user's")
    )
    empty = chosen.body("", session_id=chosen.new_session_id(), model=channel.model)
    cases.append((empty, 422, "validation_error", "the user message is empty"))
    answers = await asyncio.gather(*(channel.post(chosen, body) for body, *_ in cases))
    for answer, (_body, status, code, what) in zip(answers, cases, strict=True):
        judge_refusal(ctx, "CHANNEL-004", answer, status, code, what)
    if "other" in ctx.env.users and ctx.env.users["main"].token is not None:  # another user's conversation
        run = run_tag(ctx, f"c6-{chosen.name}")
        theirs = chosen.with_history(channel.request(chosen, "cs-plain", session_id=session, run=run), EARLIER)
        answer = await channel.post(chosen, theirs, user="other")
        refused = refused_before_stream(answer) and (answer.status, refusal_code(answer)) in OTHERS_REFUSAL
        reached = await ctx.llm.main_requests(run)
        ctx.findings.expect(
            "CHANNEL-004",
            refused and not reached,
            f"{chosen.name}: another user continuing this user's session with the conversation should be refused "
            f"404 `session_not_found` (CHANNEL-005) or 422 `unknown_conversation` before any stream, its turn never "
            f"run; {answer.describe()}, the model reached {len(reached)} time(s)",
            answer.exchange,
        )


async def deleted_conversation(ctx: CheckContext, chosen: Endpoint, session: str, earlier: str) -> None:
    """A deleted session is no conversation the server has: continued with the client's copy it is refused
    `unknown_conversation`; named alone it starts empty (SESSION-007), its deleted turns reaching no model."""
    channel = ChannelClient(ctx)
    deleted = await ctx.client.call("DELETE", f"/sessions/{session}", operation="deleteSession")
    ctx.findings.require(deleted.status == 204, "CHANNEL-004", f"the session's delete: {deleted.describe()}", deleted)
    body = channel.request(chosen, "cs-plain", session_id=session, run=run_tag(ctx, f"c7-{chosen.name}"))
    answer = await channel.post(chosen, chosen.with_history(body, EARLIER))
    judge_refusal(ctx, "CHANNEL-004", answer, 422, "unknown_conversation", "the conversation of a deleted session")
    anew = await post_turn(ctx, chosen, "cs-plain", label=f"c8-{chosen.name}", session_id=session)
    await require_scripted(ctx, anew, "CHANNEL-004")
    kept = not await not_received(ctx, anew.run, [earlier])
    ctx.findings.expect(
        "CHANNEL-004",
        not kept,
        f"{chosen.name}: a turn naming the deleted session reached the model with its deleted turn {earlier!r}",
        anew.answer.exchange,
    )


async def long_history(ctx: CheckContext) -> None:
    """UI-004 past the history's default limit (HISTORY-006: 100): a turn of 103 history messages (a user message,
    a generation of LONG_HISTORY_CALLS calls, their results, the answer) reads back whole, its newest 1000."""
    chosen = STREAMING["ui"]
    turn = await post_turn(ctx, chosen, "cs-long-history", label="c9-long", session_id=new_session(chosen))
    await require_scripted(ctx, turn, "UI-004")
    listed = await ChannelClient(ctx).get("ui", f"/{turn.answer.session_id}/messages")
    found = json_or_none(listed.body)
    messages = [m for m in found if isinstance(m, dict)] if isinstance(found, list) else []
    roles = [m.get("role") for m in messages]
    texts = [p.get("text") for p in (messages[0].get("parts") or []) if isinstance(p, dict)] if messages else []
    calls = [
        p
        for m in messages[1:]
        for p in m.get("parts") or []
        if isinstance(p, dict) and str(p.get("type", "")).startswith("tool-")
    ]
    ctx.findings.expect(
        "UI-004",
        listed.status == 200
        and roles == ["user", "assistant"]
        and turn.answer.message in texts
        and len(calls) == LONG_HISTORY_CALLS,
        f"a turn of {LONG_HISTORY_CALLS + 3} history messages (more than the history's default limit of 100) read "
        f"back as roles {roles}, the user's text {'kept' if turn.answer.message in texts else 'missing'}, "
        f"{len(calls)} of its {LONG_HISTORY_CALLS} tool calls: the messages endpoint answers the newest 1000",
        listed,
    )
