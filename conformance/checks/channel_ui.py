"""The Vercel AI SDK UI message stream channel (UI-*): the request DefaultChatTransport sends, the stream judged in
two voices, the protocol's own rules (UI-PROTO-*, conformance/rules/ui_protocol.py, and `ai`'s own
readUIMessageStream over each recorded body) and the contract's additions (UI-002, UI-003, conformance/rules/ui.py),
and the session's history as UIMessage[] judged by the official schema and `ai`'s validateUIMessages."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

from conformance.channels import node
from conformance.channels.aborts import judge_endings
from conformance.channels.client import ChannelClient
from conformance.channels.endpoints import ChannelAnswer
from conformance.channels.real_clients import ClientRead, ui_request_bodies
from conformance.checks import check
from conformance.checks.blame import unless_blocked
from conformance.checks.context import CheckContext
from conformance.checks.support_channels import endpoint, real_client_reads, record
from conformance.checks.support_requests import REQUEST_RULE, judge_served, refusal, refused, served
from conformance.checks.turns import Turn, post_turn, run_tag
from conformance.errors import BlockedBy, NotTestable
from conformance.rules import official
from conformance.rules import ui as rules_ui
from conformance.rules import ui_protocol as rules_ui_protocol
from conformance.rules.expected import ExpectedTurn, expected_turn
from conformance.rules.scenarios import TURNS
from conformance.rules.violations import Violation, short
from conformance.transport.exchanges import json_or_none

# With every cut of the deltas providers send (conformance.rules.scenarios.SHAPES).
SCENARIOS = TURNS
TEMPERATURE = 0.7
# What channel_ui.stream judges over each streamed turn: the protocol's own rules, then the contract's additions.
JUDGED = rules_ui_protocol.RULES | rules_ui.RULES
REQUEST = REQUEST_RULE["ui"]  # UI-PROTO-006: the body DefaultChatTransport sends, served


def _label(script: str) -> str:
    return script.removeprefix("cs-")


def _tool_parts(message: Any) -> list[dict[str, Any]]:
    parts = message.get("parts") if isinstance(message, dict) else None
    return [p for p in parts or [] if isinstance(p, dict) and str(p.get("type", "")).startswith("tool-")]


def client_violations(read: ClientRead, expected: ExpectedTurn, answer: ChannelAnswer) -> list[Violation]:
    """What `ai`'s readUIMessageStream made of the body. Its rejection of the stream (a chunk its schema refuses, a
    delta of no open part, a call never announced) is the protocol's own verdict (UI-PROTO-*, in `ai`'s words);
    past that, the contract's (UI-003): the scripted text and tool parts for a finishing turn, the turn's error (its
    errorText) for a failing one."""
    rejection = rules_ui_protocol.reader_rejection(read.detail.get("error"), _error_texts(answer))
    if rejection is not None:
        return [rejection]
    if expected.fails:
        if read.ok:
            return [Violation("UI-003", "`ai` read the failing turn to its end without the error it should report")]
        message = (read.detail.get("error") or {}).get("message")
        error = answer.error or {}
        if message != error.get("message"):
            return [
                Violation(
                    "UI-003",
                    f"`ai` stopped at the error {message!r}, not at the turn's errorText {error.get('message')!r}",
                )
            ]
        return []
    if not read.ok:
        return [
            Violation("UI-003", f"`ai` stopped at the stream's error chunk in a turn that does not fail: {read.error}")
        ]
    found = []
    if read.text != expected.text:
        found.append(
            Violation("UI-003", f"`ai` assembled the text {read.text!r}; the script streamed {expected.text!r}")
        )
    tools = _tool_parts(read.detail.get("message"))
    got = [(str(p.get("type"))[5:], p.get("state"), p.get("input"), p.get("providerExecuted")) for p in tools]
    want = [(call.name, "output-available", call.arguments, True) for call in expected.tool_calls]
    if [(name, given) for name, _, given, _ in got] != [(name, given) for name, _, given, _ in want]:
        # the calls as the client's message holds them, each with the model's input (UI-PROTO-005)
        message = f"`ai` assembled the tool parts {short(got)}; the model made {short(want)}"
        found.append(Violation(rules_ui_protocol.CALLS, message))
    elif got != want:  # each part provider-executed with its output: the contract's mapping of a server's tool
        found.append(Violation("UI-003", f"`ai` assembled the tool parts {short(got)}; expected {short(want)}"))
    return found


def _error_texts(answer: ChannelAnswer) -> list[str]:
    """The errorText of each `error` chunk: `ai` reports each as an Error of that message (the stream's own report
    of a failure, not a rejection of the stream)."""
    chunks = rules_ui_protocol.chunks(answer)
    return [str(c.get("errorText")) for _, c in chunks if c.get("type") == "error"]


def not_streamed(answer: ChannelAnswer) -> Violation:
    """A turn answered with no complete stream. A 200 that is no event stream, or a stream that never ends, is not a
    UI message stream (UI-PROTO-001); a refusal (4xx) of the body DefaultChatTransport sends is the protocol's too
    (UI-PROTO-006); any other answer (a server error) the contract's, which streams every turn of its mapping
    (UI-003)."""
    if answer.status == 200:
        ended = "" if answer.completed else ": the stream did not end (no data: [DONE])"
        return Violation(
            "UI-PROTO-001", f"the turn was not streamed as a UI message stream{ended}: {answer.describe()}"
        )
    if refused(answer):
        return refusal(answer, "a turn's message")
    return Violation("UI-003", f"the turn was not streamed: {answer.describe()}")


async def validate_ui_messages(messages: list[Any]) -> list[dict[str, Any]]:
    """`ai`'s safeValidateUIMessages over each UIMessage[] (one Node process for the batch)."""
    cases = [{"messages": each} for each in messages]
    return await asyncio.to_thread(node.run_driver, "ui-validate.mjs", cases)


@check("channel_ui.request")
async def request(ctx: CheckContext) -> None:
    """Three requests whose bodies `ai`'s own DefaultChatTransport builds: a new chat's first message, then the same
    chat's next message resubmitted edited (`messageId` names it), each served, not refused (UI-PROTO-006, the
    protocol's), the chat id naming the session, made then continued (UI-001, the contract's); then a new chat whose
    transport adds a temperature and members the protocol does not define (its `body` option): the contract's own
    (UI-001, INPUT-003, INPUT-008), so sent apart."""
    chosen = endpoint(ctx, "ui")
    channel = ChannelClient(ctx)
    session_id, other_chat = chosen.new_session_id() or str(uuid.uuid4()), chosen.new_session_id() or str(uuid.uuid4())
    runs = {label: run_tag(ctx, label) for label in ("first", "second", "extras")}
    texts = {label: ctx.message("cs-plain", run=run) for label, run in runs.items()}
    plain = expected_turn(ctx.env.scripts, "cs-plain")
    extras = {"temperature": TEMPERATURE, "conformanceUnknown": {"ignored": True}, "headers": {"x": "y"}}
    first, third = await ui_request_bodies(
        [{"id": session_id, "text": texts["first"]}, {"id": other_chat, "text": texts["extras"], "body": extras}]
    )
    answer = await channel.post(chosen, first)
    await judge_served(ctx, Turn(answer, plain, runs["first"]), "a new chat's first message")
    ctx.findings.require(
        answer.status == 200 and answer.streamed and answer.completed,
        "UI-001",
        f"a new chat's first message was not answered with a stream: {answer.describe()}",
        answer.exchange,
    )
    problems = []
    named = chosen.protocol_session_id(answer) or answer.session_id
    if named != session_id:
        problems.append(f"the chat id {session_id!r} should name the new session; the answer names {named!r}")
    if not await ctx.llm.main_requests(runs["first"]):
        problems.append("the first turn made no generation of the fake LLM")

    # The same chat's next message, with the conversation as the chat keeps it (the answer as `ai` assembled it),
    # resubmitted edited, as after a request that failed: the session continues.
    (read,) = await real_client_reads(ctx, [answer])
    assembled = read.detail.get("message") if read.ok else None
    if not isinstance(assembled, dict):
        assembled = {"id": uuid.uuid4().hex, "role": "assistant", "parts": [{"type": "text", "text": answer.text}]}
    draft = {"id": uuid.uuid4().hex, "role": "user", "parts": [{"type": "text", "text": "A draft"}]}
    chat = [*first["messages"], assembled, draft]
    (second,) = await ui_request_bodies(
        [{"id": session_id, "messages": chat, "text": texts["second"], "messageId": draft["id"]}]
    )
    again = await channel.post(chosen, second)
    await judge_served(ctx, Turn(again, plain, runs["second"]), "the chat's next message, resubmitted edited")
    ctx.findings.require(
        again.status == 200 and again.streamed and again.completed,
        "UI-001",
        f"a second request with the same chat id was not answered with a stream: {again.describe()}",
        again.exchange,
    )
    named = chosen.protocol_session_id(again) or again.session_id
    if named != session_id:
        problems.append(f"the second request's chat id {session_id!r} should continue it; the answer names {named!r}")
    sent = [json.dumps(g.get("messages")) for g in await ctx.llm.main_requests(runs["second"])]
    if not sent:
        problems.append("the second turn made no generation of the fake LLM")
    elif not all(runs["first"] in text for text in sent):
        problems.append(
            f"the second turn's generations do not carry the first turn (its message tagged {runs['first']}): "
            "the session was not continued"
        )

    # The application's own members: the contract's temperature and members it does not know (ignored).
    added = await channel.post(chosen, third)
    await unless_blocked(ctx, [Turn(added, plain, runs["extras"])])
    ctx.findings.require(
        added.status == 200 and added.streamed and added.completed,
        "UI-001",
        f"a new chat's message with a temperature and unknown members in the transport's body was not answered "
        f"with a stream: {added.describe()}",
        added.exchange,
    )
    generations = await ctx.llm.main_requests(runs["extras"])
    temperatures = {g.get("temperature") for g in generations}
    if not generations:
        problems.append("the turn with a temperature made no generation of the fake LLM")
    # INPUT-003: the request's temperature is used only by a target with the capability temperature_override.
    elif "temperature_override" in ctx.target.capabilities and temperatures != {TEMPERATURE}:
        problems.append(f"the request's temperature {TEMPERATURE} reached the LLM as {sorted(map(str, temperatures))}")
    ctx.findings.expect("UI-001", not problems, "; ".join(problems), answer.exchange, again.exchange, added.exchange)


@check("channel_ui.stream")
async def stream(ctx: CheckContext) -> None:
    chosen = endpoint(ctx, "ui")
    scripts = [s for s in SCENARIOS if s in ctx.env.scripts]
    turns = await asyncio.gather(*(post_turn(ctx, chosen, s, label=_label(s)) for s in scripts))
    whys = await unless_blocked(ctx, list(turns))
    judged = []
    for turn, why in zip(turns, whys, strict=True):
        answer = turn.answer
        if served(answer):  # the body DefaultChatTransport sends for a message, served (UI-PROTO-006)
            ctx.findings.passed(REQUEST, answer.exchange)
        if answer.status != 200 or not answer.streamed or not answer.completed:
            record(ctx, [not_streamed(answer)], answer, set())
            continue
        judged.append((turn, why))
    reads = await real_client_reads(ctx, [turn.answer for turn, _why in judged])
    for (turn, why), read in zip(judged, reads, strict=True):
        found = rules_ui.judge(turn.answer, turn.expected) + client_violations(read, turn.expected, turn.answer)
        if why:  # streamed, yet not as its script says, while the controls were served: the server's doing
            found.append(Violation("UI-003", why))
        record(ctx, found, turn.answer, JUDGED)
    if len(judged) < len(turns):
        ctx.findings.not_testable("UI-003", "some turns were not streamed: their chunks could not be judged")
    if REQUEST not in ctx.findings.judged():
        ctx.findings.not_testable(REQUEST, "no turn was answered with a stream or refused: nothing shows the request")


@check("channel_ui.aborted", slow=True, raced=("UI-003",), needs=("channel_gns3", "abort"), slow_tool=True)
async def aborted(ctx: CheckContext) -> None:
    """A turn aborted during the slow tool, and one while a call's arguments still stream, ended as UI-003 maps an
    aborted turn (ours): every part closed, the cut call with `tool-input-error`, `abort`, then `finish-step`,
    `finish` and `[DONE]`; the message ends with `abort` or `finish` (UI-PROTO-004, the protocol's)."""
    await judge_endings(ctx, endpoint(ctx, "ui"))


def _history_ids(history: Any) -> list[Any] | None:
    """The ids UI-004 gives: each user message's, and the first message's of each answer."""
    messages = history.get("messages") if isinstance(history, dict) else None
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        return None
    ids, previous = [], None
    for message in messages:
        if message.get("role") == "user" or previous in (None, "user"):
            ids.append(message.get("id"))
        previous = "user" if message.get("role") == "user" else "answer"
    return ids


@check("channel_ui.messages")
async def messages(ctx: CheckContext) -> None:
    chosen = endpoint(ctx, "ui")
    channel = ChannelClient(ctx)
    session_id = chosen.new_session_id() or str(uuid.uuid4())
    turns = []
    for script in ("cs-tool", "cs-plain"):
        turn = await post_turn(ctx, chosen, script, label=_label(script), session_id=session_id)
        await unless_blocked(ctx, [turn])
        if turn.answer.status != 200 or not turn.answer.completed:
            raise BlockedBy("UI-003", f"a turn to read back could not be made: {turn.answer.describe()}")
        turns.append(turn)
    unknown, listed, reads = await asyncio.gather(
        channel.get("ui", f"/{uuid.uuid4()}/messages"),
        channel.get("ui", f"/{session_id}/messages"),
        real_client_reads(ctx, [turn.answer for turn in turns]),
    )
    problems = []
    if listed.status != 200:
        ctx.findings.require(False, "UI-004", f"GET .../{session_id}/messages answered {listed.status}", listed)
    found = json_or_none(listed.body)
    ctx.findings.require(isinstance(found, list), "UI-004", f"the answer is not a JSON array: {listed.body[:300]}")
    problems += [f"invalid for `ai`'s UIMessage[] schema: {e}" for e in official.errors("ai_ui_messages", found)]
    validated = (await validate_ui_messages([found]))[0]
    if not validated.get("ok"):
        problems.append(f"`ai`'s validateUIMessages rejects the messages: {validated.get('error')}")
    problems += _structure(found, turns, reads)
    if ctx.target.serves_gns3:
        history = await ctx.client.call("GET", f"/sessions/{session_id}/history", operation="getSessionHistory")
        ids = _history_ids(json_or_none(history.body)) if history.status == 200 else None
        got = [m.get("id") if isinstance(m, dict) else None for m in found]
        if ids is not None and got != ids:
            problems.append(f"the messages' ids are {got}; the history's user messages and answers begin {ids}")
    ctx.findings.expect("UI-004", not problems, "; ".join(problems), listed)
    code = (json_or_none(unknown.body) or {}).get("code") if isinstance(json_or_none(unknown.body), dict) else None
    ctx.findings.expect(
        "UI-004",
        unknown.status == 404 and code == "session_not_found",
        f"an unknown session's messages answered {unknown.status} {unknown.body[:200]}, not 404 session_not_found",
        unknown,
    )
    if "stranger" in ctx.env.users:  # as the history endpoint refuses a user without access to the project (ACCESS-001)
        denied = await channel.get("ui", f"/{session_id}/messages", user="stranger")
        code = chosen.refusal_code(denied.body)
        ctx.findings.expect(
            "UI-004",
            (denied.status, code) == (403, "project_access_denied"),
            f"a user without access to the project read the messages: {denied.status} {denied.body[:200]}, not 403 "
            "project_access_denied",
            denied,
        )
    if "other" not in ctx.env.users or ctx.env.users["main"].token is None:
        raise NotTestable("the target has no second user: another user's session could not be asked for")
    other = await channel.get("ui", f"/{session_id}/messages", user="other")
    body = json_or_none(other.body)
    code = body.get("code") if isinstance(body, dict) else None
    ctx.findings.expect(
        "UI-004",
        other.status == 404 and code == "session_not_found",
        f"another user's session's messages answered {other.status} {other.body[:200]}, not 404 session_not_found",
        other,
    )


def _structure(found: list[Any], turns: list[Any], reads: list[ClientRead]) -> list[str]:
    """Two turns: user, assistant, user, assistant; each user message the text sent, each assistant message's parts
    what `ai` assembled from its stream (a step-start per generation, the text, output-available tool parts)."""
    roles = [m.get("role") if isinstance(m, dict) else None for m in found]
    if roles != ["user", "assistant", "user", "assistant"]:
        return [f"two turns should read back as user, assistant, user, assistant; got roles {roles}"]
    problems = []
    for number, (turn, read) in enumerate(zip(turns, reads, strict=True)):
        user, assistant = found[2 * number], found[2 * number + 1]
        if user.get("parts") != [{"type": "text", "text": turn.answer.message}]:
            problems.append(f"user message {number} has the parts {short(user.get('parts'))}, not the text sent")
        parts = assistant.get("parts") if isinstance(assistant.get("parts"), list) else []
        steps = sum(1 for p in parts if isinstance(p, dict) and p.get("type") == "step-start")
        if steps != len(turn.expected.generations):
            problems.append(f"answer {number} has {steps} step-start parts for {len(turn.expected.generations)} steps")
        tools = [
            (str(p.get("type"))[5:], p.get("state"), p.get("input"), p.get("providerExecuted"))
            for p in _tool_parts(assistant)
        ]
        want = [(c.name, "output-available", c.arguments, True) for c in turn.expected.tool_calls]
        if tools != want or any("output" not in p for p in _tool_parts(assistant)):
            problems.append(f"answer {number} has the tool parts {short(tools)}; expected {short(want)} with outputs")
        streamed = read.detail.get("message") if read.ok else None
        if isinstance(streamed, dict) and parts != streamed.get("parts"):
            problems.append(
                f"answer {number}'s parts {short(parts)} are not what its stream made {short(streamed.get('parts'))}"
            )
    return problems
