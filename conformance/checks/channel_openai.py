"""The OpenAI channel in two voices: OpenAI's protocol (OPENAI-PROTO-001..010: the standard request members served,
the streams, the ChatCompletion, the Response, the error body, the model list) and the contract's additions
(OPENAI-001..007: sessions, instructions, the contract's members, codes and statuses, the turn's text and usage).
The rules are conformance/rules/openai.py (chat stream), openai_responses.py (responses stream), openai_bodies.py
(whole answers, errors) and openai_requests.py (what is sent); the `openai` client itself reads each recorded body.

The checks reach the target only over HTTP, as any OpenAI client would, and read the fake LLM's log to see what
reached the model (instructions, the earlier turns of a continued session)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from conformance.channels.client import ChannelClient
from conformance.channels.endpoints import SESSION_HEADER, STREAMING, ChannelAnswer, served
from conformance.channels.real_clients import client_model_ids
from conformance.checks import check
from conformance.checks.blame import unless_blocked
from conformance.checks.context import CheckContext
from conformance.checks.support_channels import (
    EARLIER,
    ended_stream,
    endpoint,
    judge,
    judged_turns,
    missed_whole_turn,
    real_client_reads,
    record,
    system_prompt,
    unless_streamed_turns_fail,
    usage_violations,
)
from conformance.checks.turns import Turn, post_turn, run_tag
from conformance.rules import official
from conformance.rules import openai as rules_openai
from conformance.rules import openai_responses as rules_responses
from conformance.rules.expected import expected_turn
from conformance.rules.openai_bodies import (
    answered_whole,
    chat_client_violations,
    completion_problems,
    error_problems,
    failed_turn_problems,
    names_member,
    refused_as,
    response_problems,
    response_session,
    responses_client_violations,
    session_header,
)
from conformance.rules.openai_requests import (
    UNKNOWN_MEMBER,
    UNKNOWN_MODEL,
    chat_contract_accepted,
    chat_refused,
    chat_standard,
    not_served,
    responses_contract_accepted,
    responses_refused,
    responses_standard,
    session_metadata,
    standard_members,
    with_instructions,
)
from conformance.rules.scenarios import PARALLEL_SHAPES, TOOL_SHAPES, TURNS, USAGE_SHAPES
from conformance.rules.violations import Violation, short
from conformance.transport.exchanges import json_or_none

# With every cut of the deltas providers send (SHAPES): a model that reports no usage still gets its usage chunk.
CHAT_SCENARIOS = TURNS
P_WHOLE = "OPENAI-PROTO-005"
WHOLE_SCENARIOS = ["cs-plain", "cs-tool", "cs-llm-error", "cs-mid-stream-error", "cs-text-then-tool", "cs-no-usage"]
# cs-parallel and cs-text-then-tool: text, then tool calls in the same generation (OPENAI-PROTO-009 on a server
# that fails it); with no usage reported, and with the calls' other cuts.
RESPONSES_SCENARIOS = [
    "cs-plain", "cs-tool", "cs-parallel", "cs-llm-error", "cs-mid-stream-error", *TOOL_SHAPES, *PARALLEL_SHAPES,
    *USAGE_SHAPES,
]  # fmt: skip


def scenario_label(script: str) -> str:
    return script.removeprefix("cs-")


# --- OPENAI-001: the request -------------------------------------------------------------------------------------


@check("channel_openai.requests")
async def requests(ctx: CheckContext) -> None:
    chosen = endpoint(ctx, "openai_chat")
    channel = ChannelClient(ctx)

    def body(label: str, *, session_id: str | None = None, **members: Any) -> dict[str, Any]:
        made = channel.request(chosen, "cs-plain", session_id=session_id, run=run_tag(ctx, label))
        return {**made, **members}

    # Each member in a turn of its own (what fails is then named): OpenAI's standard members (OPENAI-PROTO-001),
    # then what the contract accepts or refuses besides (OPENAI-001).
    accepted = {
        **{what: ("OPENAI-PROTO-001", made) for what, made in chat_standard(body).items()},
        **{what: ("OPENAI-001", made) for what, made in chat_contract_accepted(body).items()},
    }
    refused = chat_refused(body)
    session = str(uuid.uuid4())
    instructions = (f"Conformance system instruction {ctx.run}", f"Conformance developer instruction {ctx.run}")

    async def continued() -> tuple[ChannelAnswer, ChannelAnswer]:
        """A turn with system and developer messages creating `session`, then a second turn continuing it, with
        the client's copy of the conversation (a user and an assistant message) before its own."""
        pairs = (("system", instructions[0]), ("developer", instructions[1]))
        first = with_instructions(body("first", session_id=session), *pairs)
        answer = await channel.post(chosen, first)
        earlier = [("user", "An earlier question"), ("assistant", "An earlier answer")]  # not the first's run tag
        return answer, await channel.post(chosen, chosen.with_history(body("second", session_id=session), earlier))

    async def separate() -> tuple[ChannelAnswer, ChannelAnswer]:
        """Two turns without metadata: each starts a session of its own."""
        first = await channel.post(chosen, body("alone-1"))
        return first, await channel.post(chosen, body("alone-2"))

    # stream_options without stream: OpenAI's API refuses it 400 ("The 'stream_options' parameter is only allowed when
    # 'stream' is enabled"; openai 3.57 ChatCompletionStreamOptionsParam: "Only set this when you set `stream: true`"),
    # a rule for clients; the contract (ours) takes both members, so the turn is answered whole (OPENAI-001, -003).
    unstreamed = {key: value for key, value in body("no-stream").items() if key != "stream"}
    accepted_answers, refused_answers, (first, second), (alone, apart), whole = await asyncio.gather(
        asyncio.gather(*(channel.post(chosen, b) for _, b in accepted.values())),
        asyncio.gather(*(channel.post(chosen, b) for _, b, *_ in refused)),
        continued(),
        separate(),
        channel.post(chosen, {**unstreamed, "stream_options": {"include_usage": True}}),
    )
    for (what, (requirement, _body)), answer in zip(accepted.items(), accepted_answers, strict=True):
        judge(ctx, not_served(requirement, what, answer), {requirement}, answer.exchange)
    for (what, _body, status, code, member), answer in zip(refused, refused_answers, strict=True):
        ok = refused_as(answer, status, code) and names_member(answer, member)
        ctx.findings.expect(
            "OPENAI-001",
            ok,
            f"a request with {what} should be answered {status} `{code}` naming `{member}`: {answer.describe()}",
            answer.exchange,
        )

    # OpenAI's messages of every role are served (PROTO-001): system and developer, then user and assistant.
    for answer, what in ((first, "system and developer messages"), (second, "earlier user and assistant messages")):
        judge(ctx, not_served("OPENAI-PROTO-001", what, answer), {"OPENAI-PROTO-001"}, answer.exchange)
    # Sessions: metadata.session_id creates and continues one; without it each turn is a session of its own.
    for answer in (first, second, alone, apart):
        if not ended_stream(answer):
            ctx.findings.require(False, "OPENAI-001", f"a plain turn was not streamed: {answer.describe()}")
    await unless_blocked(
        ctx,
        [
            Turn(a, expected_turn(ctx.env.scripts, "cs-plain"), run_tag(ctx, label))
            for a, label in ((first, "first"), (second, "second"), (alone, "alone-1"), (apart, "alone-2"))
        ],
    )
    ctx.findings.expect(
        "OPENAI-001",
        answered_whole(whole),
        f"stream_options without stream should be served, the turn answered whole: {whole.describe()}",
        whole.exchange,
    )
    problems = []
    for answer in (first, second):
        named = answer.headers.get(SESSION_HEADER)
        if named is not None and named != session:
            problems.append(f"metadata.session_id {session!r} should name the session; the answer names {named!r}")
    system, _ = await system_prompt(ctx, run_tag(ctx, "first"))
    missing = [text for text in instructions if text not in system]
    if missing:
        problems.append(f"the system and developer messages did not reach the turn's system prompt: {missing}")
    _, later = await system_prompt(ctx, run_tag(ctx, "second"))
    if run_tag(ctx, "first") not in later:
        problems.append("the second turn with the same metadata.session_id does not carry the first turn")
    leaked = [text for text in instructions if text in later]
    if leaked:
        problems.append(f"the first turn's instructions reached the next turn too: {leaked}")
    _, unrelated = await system_prompt(ctx, run_tag(ctx, "alone-2"))
    if run_tag(ctx, "alone-1") in unrelated:
        problems.append("a turn without metadata.session_id continued the previous turn's session")
    if alone.headers.get(SESSION_HEADER) and alone.headers.get(SESSION_HEADER) == apart.headers.get(SESSION_HEADER):
        problems.append("two turns without metadata.session_id name the same session")
    ctx.findings.expect(
        "OPENAI-001", not problems, "; ".join(problems), first.exchange, second.exchange, apart.exchange
    )


# --- OPENAI-002 and OPENAI-004: the stream ---------------------------------------------------------------------


@check("channel_openai.chat_stream")
async def chat_stream(ctx: CheckContext) -> None:
    chosen = endpoint(ctx, "openai_chat")
    channel = ChannelClient(ctx)
    scripts = [s for s in CHAT_SCENARIOS if s in ctx.env.scripts]
    turns = list(await asyncio.gather(*(post_turn(ctx, chosen, s, label=scenario_label(s)) for s in scripts)))

    async def without_usage() -> Turn:
        """A plain turn without stream_options: no usage chunk, and no `usage` required elsewhere."""
        run = run_tag(ctx, "no-usage")
        made = channel.request(chosen, "cs-plain", run=run)
        made.pop("stream_options", None)
        return Turn(await channel.post(chosen, made), expected_turn(ctx.env.scripts, "cs-plain"), run)

    turns.append(await without_usage())
    judged = await judged_turns(ctx, turns, "OPENAI-PROTO-002")
    reads = await real_client_reads(ctx, [turn.answer for turn, _why in judged])
    for (turn, why), read in zip(judged, reads, strict=True):
        include_usage = "stream_options" in (json_or_none(turn.answer.exchange.request_body or "") or {})
        found = rules_openai.judge_chat(turn.answer, turn.expected, include_usage)
        found += session_header(turn.answer, "OPENAI-002") + chat_client_violations(read, turn.expected)
        if why:  # streamed, yet not as its script says, while the controls were served: the server's doing
            found.append(Violation("OPENAI-004" if turn.expected.fails else "OPENAI-002", why))
        # A failing turn is judged by its error frame: no finish chunk, and no usage chunk required (interrupted).
        judged_ids = {"OPENAI-004"} if turn.expected.fails else {"OPENAI-002", "OPENAI-PROTO-003"}
        record(ctx, found, turn.answer, judged_ids | {"OPENAI-PROTO-002", "OPENAI-PROTO-004"})
    if not any(turn.expected.fails for turn, _ in judged):
        ctx.findings.not_testable("OPENAI-004", "no failing turn was streamed: the in-stream error was not seen")


# --- OPENAI-003: the whole answer -----------------------------------------------------------------------------


@check("channel_openai.chat_whole")
async def chat_whole(ctx: CheckContext) -> None:
    chosen = endpoint(ctx, "openai_chat")
    scripts = [s for s in WHOLE_SCENARIOS if s in ctx.env.scripts]
    turns = await asyncio.gather(*(post_turn(ctx, chosen, s, label=scenario_label(s), stream=False) for s in scripts))
    whys = await unless_streamed_turns_fail(ctx, chosen, list(turns))
    for turn, why in zip(turns, whys, strict=True):
        answer = turn.answer
        found = [Violation("OPENAI-003", why)] if why else []
        if turn.expected.fails:  # the contract's answer to a failed turn, its error body typed by its status
            found += failed_turn_problems(answer)
        else:
            found += completion_problems(answer, turn.expected.text)
            found += await usage_violations(ctx, turn, "OPENAI-003")  # the turn's usage
        found = [Violation(v.requirement, f"{turn.expected.script}: {v.message}") for v in found]
        judged = {"OPENAI-003", "OPENAI-004", "OPENAI-PROTO-006"} if turn.expected.fails else {"OPENAI-003", P_WHOLE}
        judge(ctx, found, judged, answer.exchange)


# --- OPENAI-004: every refusal ---------------------------------------------------------------------------------


@check("channel_openai.errors")
async def errors(ctx: CheckContext) -> None:
    chosen = endpoint(ctx, "openai_chat")
    channel = ChannelClient(ctx)
    plain = channel.request(chosen, "cs-plain", run=run_tag(ctx, "refused"))
    cases: list[tuple[str, Any, int, str | None]] = [
        ("a model not listed", channel.post(chosen, {**plain, "model": UNKNOWN_MODEL}), 404, "model_not_found"),
        ("an unsupported member", channel.post(chosen, {**plain, UNKNOWN_MEMBER: 1}), 422, "unsupported_field"),
        ("a body that is not JSON", channel.post(chosen, b'{"model": '), 400, "invalid_json"),
        ("GET of chat/completions", channel.get("openai", "/chat/completions"), 405, None),
    ]
    if served(STREAMING["openai_responses"], ctx.target.channels):  # a Chat Completions server may have no Responses
        responses = endpoint(ctx, "openai_responses")
        answered = channel.request(responses, "cs-plain", run=run_tag(ctx, "refused-r"))
        extra = {**answered, UNKNOWN_MEMBER: 1}
        unknown = {**answered, "previous_response_id": f"resp_{uuid.uuid4().hex}"}
        cases += [
            ("an unsupported member of a response", channel.post(responses, extra), 422, "unsupported_field"),
            ("an unknown previous_response_id", channel.post(responses, unknown), 404, "previous_response_not_found"),
        ]
    if ctx.env.users["main"].token is None:
        ctx.findings.not_testable("OPENAI-004", "the target authenticates nobody: no 401 could be asked for")
    else:
        bad = {"Authorization": f"Bearer conformance-not-a-token-{uuid.uuid4().hex}"}
        cases.append(("a bad token", channel.post(chosen, plain, user=None, headers=bad), 401, "unauthorized"))
        cases.append(("the models without a token", channel.get("openai", "/models", user=None), 401, "unauthorized"))
    # Every status of the channel's operations in spec/openapi.yaml that a request alone provokes, each with its type
    # (a 409, a 502: across_channels.busy and chat_whole; a 413 and a 503 no request of the suite can be sure of).
    if ctx.target.serves_gns3 and ctx.env.closed_project_id:
        closed, unknown_project = ctx.env.closed_project_id, str(uuid.uuid4())
        cases += [
            ("a closed project", channel.post(chosen, plain, project_id=closed), 403, "project_not_opened"),
            ("an unknown project", channel.post(chosen, plain, project_id=unknown_project), 404, "project_not_found"),
        ]
        models = [(closed, 403, "project_not_opened"), (unknown_project, 404, "project_not_found")]
        cases += [(f"the models, {code}", channel.get("openai", "/models", project_id=project), status, code)
                  for project, status, code in models]  # fmt: skip
    got = await asyncio.gather(*(request for _, request, _, _ in cases))
    for (what, _, status, code), result in zip(cases, got, strict=True):
        exchange = result.exchange if isinstance(result, ChannelAnswer) else result
        # OpenAI's error body is judged on what was answered as an error (4xx, 5xx); the rest is the contract's.
        is_error = exchange.status is not None and 400 <= exchange.status <= 599
        found = [Violation(v.requirement, f"{what}: {v.message}") for v in error_problems(exchange, status, code)]
        judge(ctx, found, {"OPENAI-004", "OPENAI-PROTO-006"} if is_error else {"OPENAI-004"}, exchange)


# --- OPENAI-005 and OPENAI-006: Responses ----------------------------------------------------------------------


@check("channel_openai.responses")
async def responses(ctx: CheckContext) -> None:
    chosen = endpoint(ctx, "openai_responses")
    channel = ChannelClient(ctx)
    plain = expected_turn(ctx.env.scripts, "cs-plain")
    instruction = f"Conformance instruction {ctx.run}"
    runs = {label: run_tag(ctx, f"r-{label}") for label in ("first", "previous", "metadata")}

    def body(label: str, **members: Any) -> dict[str, Any]:
        return {**channel.request(chosen, "cs-plain", run=run_tag(ctx, f"r-{label}"), stream=False), **members}

    standard_body = responses_standard(body("standard"), f"Conformance standard {ctx.run}")
    refused = responses_refused(body)
    first, unknown, standard, contract, refused_answers = await asyncio.gather(
        channel.post(chosen, body("first", instructions=instruction)),
        channel.post(chosen, body("unknown", previous_response_id=f"resp_{uuid.uuid4().hex}")),
        channel.post(chosen, standard_body),
        channel.post(chosen, responses_contract_accepted(body)),
        asyncio.gather(*(channel.post(chosen, made) for _, made, *_ in refused)),
    )
    if first.status != 200 or first.streamed:  # the model's failure (a streamed chat control tells) or the endpoint's
        await unless_streamed_turns_fail(ctx, endpoint(ctx, "openai_chat"), [Turn(first, plain, runs["first"])])
    served = [
        ("OPENAI-PROTO-007", first, "`input` a string and `instructions`"),
        ("OPENAI-PROTO-007", standard, f"OpenAI's standard members ({standard_members(standard_body)})"),
        ("OPENAI-005", contract, "`store: true`, `reasoning`, `text.verbosity`, `include` and other members it serves"),
    ]
    for requirement, answer, what in served:  # served, not refused
        why = f"a response request with {what} was not answered 200 with a Response: {answer.describe()}"
        ctx.findings.expect(requirement, answer.status == 200 and not answer.streamed, why, answer.exchange)
    ctx.findings.require(
        first.status == 200 and not first.streamed,
        "OPENAI-PROTO-007",
        f"a non-streamed response was not answered 200 with a Response: {first.describe()}",
        first.exchange,
    )
    judge(ctx, response_problems(first, plain.text), {"OPENAI-005", "OPENAI-PROTO-008"}, first.exchange)
    if standard.status == 200 and not standard.streamed:
        found = [v for v in response_problems(standard, plain.text) if v.requirement == "OPENAI-PROTO-008"]
        judge(ctx, found, {"OPENAI-PROTO-008"}, standard.exchange)
    session = response_session(first)
    response = json_or_none(first.exchange.body)
    response_id = response.get("id") if isinstance(response, dict) else None

    # The session continues through the previous response's id, then through metadata.session_id (its values are
    # strings: without a session named by the first Response there is nothing to send, and nothing is sent).
    # The input as a list of messages this time (OPENAI-005 takes both forms): a system message, then the client's copy
    # of the conversation (a user and an assistant message, CHANNEL-004) before the user's (OPENAI-PROTO-007).
    again = chosen.with_history(body("previous"), [("system", "Answer briefly."), *EARLIER])
    previous = await channel.post(chosen, {**again, "previous_response_id": response_id})
    metadata = session_metadata(session)
    by_metadata = await channel.post(chosen, body("metadata", metadata=metadata)) if metadata else None
    turns = [Turn(a, plain, runs[label]) for a, label in ((first, "first"), (previous, "previous"))]
    whys = [await missed_whole_turn(ctx, turn) for turn in turns]
    if any(whys):
        await unless_streamed_turns_fail(ctx, endpoint(ctx, "openai_chat"), turns)
    why = f"input as system, user and assistant messages, continuing a response, was not served: {previous.describe()}"
    ctx.findings.expect("OPENAI-PROTO-007", previous.status == 200 and not previous.streamed, why, previous.exchange)
    system, _ = await system_prompt(ctx, runs["first"])
    _, later = await system_prompt(ctx, runs["previous"])
    found = [Violation("OPENAI-005", why) for why in whys if why]
    found += response_problems(previous, plain.text, "OPENAI-005")
    problems = []
    if instruction not in system:
        problems.append("`instructions` did not reach the turn's system prompt")
    if instruction in later:
        problems.append("`instructions` reached the next turn of the session too")
    if runs["first"] not in later:
        problems.append("the turn with previous_response_id does not carry the earlier turn: its session did not go on")
    if by_metadata is None:
        problems.append("the first Response names no session in metadata.session_id: no turn could continue it")
    else:
        found += response_problems(by_metadata, plain.text, "OPENAI-005")
        _, third = await system_prompt(ctx, runs["metadata"])
        if runs["previous"] not in third:
            problems.append("the turn with metadata.session_id does not carry the earlier turns of that session")
    for answer in [previous] + ([by_metadata] if by_metadata else []):
        named = response_session(answer)
        if answer.status == 200 and named != session:
            problems.append(f"a continued response names the session {named!r}, not {session!r}")
    found += [Violation("OPENAI-005", problem) for problem in problems]
    continued = [a.exchange for a in (previous, by_metadata) if a is not None]
    judge(ctx, found, {"OPENAI-005"}, *continued)
    refusals = [(unknown, 404, "previous_response_not_found", None, "an unknown previous_response_id")]
    refusals += [(a, *row[2:], row[0]) for row, a in zip(refused, refused_answers, strict=True)]  # what it cannot give
    # The id of another user's response, then of a response whose session was deleted: no response of the caller.
    if "other" in ctx.env.users and ctx.env.users["main"].token is not None and response_id:
        theirs = await channel.post(chosen, {**body("theirs"), "previous_response_id": response_id}, user="other")
        refusals.append((theirs, 404, "previous_response_not_found", None, "another user's previous_response_id"))
    if ctx.target.serves_gns3 and response_id and isinstance(session, str):
        await ctx.client.call("DELETE", f"/sessions/{session}", operation="deleteSession")
        gone = await channel.post(chosen, {**body("gone"), "previous_response_id": response_id})
        refusals.append((gone, 404, "previous_response_not_found", None, "a deleted session's previous_response_id"))
    for answer, status, code, member, what in refusals:
        ok = refused_as(answer, status, code) and (member is None or names_member(answer, member))
        naming = f" naming `{member}`" if member else ""
        why = f"{what} should be answered {status} `{code}`{naming}: {answer.describe()}"
        ctx.findings.expect("OPENAI-005", ok, why, answer.exchange)


@check("channel_openai.responses_stream")
async def responses_stream(ctx: CheckContext) -> None:
    chosen = endpoint(ctx, "openai_responses")
    scripts = [s for s in RESPONSES_SCENARIOS if s in ctx.env.scripts]
    turns = await asyncio.gather(*(post_turn(ctx, chosen, s, label=scenario_label(s)) for s in scripts))
    judged = await judged_turns(ctx, list(turns), "OPENAI-PROTO-009")
    reads = await real_client_reads(ctx, [turn.answer for turn, _why in judged])
    for (turn, why), read in zip(judged, reads, strict=True):
        found = rules_responses.judge_responses(turn.answer, turn.expected)
        found += responses_client_violations(read, turn.expected)
        if why:
            found.append(Violation("OPENAI-006", why))
        record(ctx, found, turn.answer, {"OPENAI-006", "OPENAI-PROTO-009"})


# --- OPENAI-007: the models ------------------------------------------------------------------------------------


@check("channel_openai.models")
async def models(ctx: CheckContext) -> None:
    endpoint(ctx, "openai_chat")
    channel: ChannelClient = ChannelClient(ctx)
    listed = await channel.get("openai", "/models")
    ctx.findings.require(
        listed.status == 200,
        "OPENAI-PROTO-010",
        f"GET .../models answered {listed.status or listed.error}: {short(listed.body or '')}",
        listed,
    )
    payload = json_or_none(listed.body or "")
    found = []  # the list and each Model: OpenAI's (PROTO-010); the declared model among them: the contract's
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(payload, dict) or payload.get("object") != "list" or not isinstance(data, list):
        found.append(f"the answer is not {{object: list, data: [...]}}: {short(listed.body or '')}")
        data = []
    for model in data:
        found += [f"a model invalid for Model: {e}" for e in official.errors("openai_model", model)]
    ids = [m.get("id") for m in data if isinstance(m, dict)]
    read = await asyncio.to_thread(client_model_ids, listed.body or "")
    if isinstance(read, str):
        found.append(f"the `openai` client's models.list() rejected the answer: {read}")
    elif read != ids:
        found.append(f"the `openai` client lists {read}, the body {ids}")
    violations = [Violation("OPENAI-PROTO-010", problem) for problem in found]
    if channel.model not in ids:
        violations.append(Violation("OPENAI-007", f"the declared model {channel.model!r} is not among {ids}"))
    judge(ctx, violations, {"OPENAI-007", "OPENAI-PROTO-010"}, listed)
