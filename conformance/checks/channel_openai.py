"""The OpenAI channel (OPENAI-*): the requests Chat Completions and Responses take, their streams judged by the
protocol's rules (conformance/rules/openai.py, the official schemas there) and by the `openai` client
itself run over each recorded body, the non-streamed answers, every refusal's OpenAI error body, and the models.

The checks reach the target only over HTTP, as any OpenAI client would, and read the fake LLM's log to see what
reached the model (instructions, the earlier turns of a continued session)."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

from conformance.channels.client import ChannelClient
from conformance.channels.endpoints import SESSION_HEADER, ChannelAnswer, Endpoint
from conformance.channels.real_clients import client_model_ids
from conformance.checks import check
from conformance.checks.blame import raise_if_blocked, unless_blocked
from conformance.checks.context import CheckContext
from conformance.checks.support_channels import endpoint, real_client_reads, record, usage_violations
from conformance.checks.turns import Turn, post_turn, run_tag
from conformance.rules import official
from conformance.rules import openai as rules_openai
from conformance.rules.expected import expected_turn
from conformance.rules.openai_bodies import (
    chat_client_violations,
    completion_problems,
    error_of,
    error_problems,
    names_member,
    refused_as,
    response_problems,
    response_session,
    responses_client_violations,
    session_header,
)
from conformance.rules.violations import Violation, short
from conformance.transport.exchanges import json_or_none

CHAT_SCENARIOS = ["cs-plain", "cs-tool", "cs-parallel", "cs-failing-tool", "cs-llm-error", "cs-mid-stream-error"]
WHOLE_SCENARIOS = ["cs-plain", "cs-tool", "cs-llm-error", "cs-mid-stream-error"]
RESPONSES_SCENARIOS = ["cs-plain", "cs-tool", "cs-llm-error", "cs-mid-stream-error"]
UNKNOWN_MEMBER = "conformance_unknown_member"
UNKNOWN_MODEL = "conformance-no-such-model"


def scenario_label(script: str) -> str:
    return script.removeprefix("cs-")


def ended_stream(answer: ChannelAnswer) -> bool:
    return answer.status == 200 and answer.streamed and answer.completed


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


# --- OPENAI-001: the request -------------------------------------------------------------------------------------


@check("channel_openai.requests")
async def requests(ctx: CheckContext) -> None:
    chosen = endpoint(ctx, "openai_chat")
    channel = ChannelClient(ctx)

    def body(label: str, *, session_id: str | None = None, **members: Any) -> dict[str, Any]:
        made = channel.request(chosen, "cs-plain", session_id=session_id, run=run_tag(ctx, label))
        return {**made, **members}

    # Members the contract accepts, each in a turn of its own (what fails is then named).
    accepted = {
        "n 1 and tool_choice none": body("n1", n=1, tool_choice="none"),
        "tool_choice auto, user and temperature": body("auto", tool_choice="auto", user="conformance", temperature=0.5),
        "an unknown member that is null": body("null", **{UNKNOWN_MEMBER: None}),
    }
    refused = [
        ("an unknown member", body("unknown", **{UNKNOWN_MEMBER: {"x": 1}}), 422, "unsupported_field", UNKNOWN_MEMBER),
        ("n 2", body("n2", n=2), 422, "unsupported_field", "n"),
        ("tool_choice required", body("required", tool_choice="required"), 422, "unsupported_field", "tool_choice"),
        ("a model not listed", body("model", model=UNKNOWN_MODEL), 404, "model_not_found", "model"),
    ]
    session = str(uuid.uuid4())
    instructions = (f"Conformance system instruction {ctx.run}", f"Conformance developer instruction {ctx.run}")

    async def continued() -> tuple[ChannelAnswer, ChannelAnswer]:
        """A turn with system and developer messages creating `session`, then a second turn continuing it."""
        first = body("first", session_id=session)
        first["messages"] = [
            {"role": "system", "content": instructions[0]},
            {"role": "developer", "content": instructions[1]},
            *first["messages"],
        ]
        answer = await channel.post(chosen, first)
        return answer, await channel.post(chosen, body("second", session_id=session))

    async def separate() -> tuple[ChannelAnswer, ChannelAnswer]:
        """Two turns without metadata: each starts a session of its own."""
        first = await channel.post(chosen, body("alone-1"))
        return first, await channel.post(chosen, body("alone-2"))

    accepted_answers, refused_answers, (first, second), (alone, apart) = await asyncio.gather(
        asyncio.gather(*(channel.post(chosen, b) for b in accepted.values())),
        asyncio.gather(*(channel.post(chosen, b) for _, b, *_ in refused)),
        continued(),
        separate(),
    )
    for what, answer in zip(accepted, accepted_answers, strict=True):
        ctx.findings.expect(
            "OPENAI-001",
            ended_stream(answer),
            f"a request with {what} was not answered with a stream: {answer.describe()}",
            answer.exchange,
        )
    for (what, _body, status, code, member), answer in zip(refused, refused_answers, strict=True):
        ok = refused_as(answer, status, code) and names_member(answer, member)
        ctx.findings.expect(
            "OPENAI-001",
            ok,
            f"a request with {what} should be answered {status} `{code}` naming `{member}`: {answer.describe()}",
            answer.exchange,
        )

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
    judged = await judged_turns(ctx, turns, "OPENAI-002")
    reads = await real_client_reads(ctx, [turn.answer for turn, _why in judged])
    for (turn, why), read in zip(judged, reads, strict=True):
        include_usage = "stream_options" in (json_or_none(turn.answer.exchange.request_body or "") or {})
        found = rules_openai.judge_chat(turn.answer, turn.expected, include_usage)
        found += session_header(turn.answer, "OPENAI-002") + chat_client_violations(read, turn.expected)
        if why:  # streamed, yet not as its script says, while the controls were served: the server's doing
            found.append(Violation("OPENAI-004" if turn.expected.fails else "OPENAI-002", why))
        record(ctx, found, turn.answer, {"OPENAI-004"} if turn.expected.fails else {"OPENAI-002"})
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
        answer, problems = turn.answer, [why] if why else []
        if turn.expected.fails:
            error = error_of(answer.exchange.body)
            if answer.status != 502 or error.get("code") != "llm_error":
                problems.append(f"a failed turn should be answered 502 `llm_error`: {answer.describe()}")
            if answer.headers.get("x-should-retry") != "false":
                problems.append(f"x-should-retry is {answer.headers.get('x-should-retry')!r}, not 'false'")
        else:
            problems += completion_problems(answer, turn.expected.text)
            problems += [v.message for v in await usage_violations(ctx, turn, "OPENAI-003")]  # the turn's usage
        ctx.findings.expect(
            "OPENAI-003", not problems, f"{turn.expected.script}: " + "; ".join(problems), answer.exchange
        )


# --- OPENAI-004: every refusal ---------------------------------------------------------------------------------


@check("channel_openai.errors")
async def errors(ctx: CheckContext) -> None:
    chosen = endpoint(ctx, "openai_chat")
    responses = endpoint(ctx, "openai_responses")
    channel = ChannelClient(ctx)
    plain = channel.request(chosen, "cs-plain", run=run_tag(ctx, "refused"))
    answered = channel.request(responses, "cs-plain", run=run_tag(ctx, "refused-r"))
    cases: list[tuple[str, Any, int, str | None]] = [
        ("a model not listed", channel.post(chosen, {**plain, "model": UNKNOWN_MODEL}), 404, "model_not_found"),
        ("an unsupported member", channel.post(chosen, {**plain, UNKNOWN_MEMBER: 1}), 422, "unsupported_field"),
        ("a body that is not JSON", channel.post(chosen, b'{"model": '), 400, "invalid_json"),
        ("GET of chat/completions", channel.get("openai", "/chat/completions"), 405, None),
        (
            "an unsupported member of a response",
            channel.post(responses, {**answered, UNKNOWN_MEMBER: 1}),
            422,
            "unsupported_field",
        ),
        (
            "an unknown previous_response_id",
            channel.post(responses, {**answered, "previous_response_id": f"resp_{uuid.uuid4().hex}"}),
            404,
            "previous_response_not_found",
        ),
    ]
    if ctx.env.users["main"].token is None:
        ctx.findings.not_testable("OPENAI-004", "the target authenticates nobody: no 401 could be asked for")
    else:
        bad = {"Authorization": f"Bearer conformance-not-a-token-{uuid.uuid4().hex}"}
        cases.append(("a bad token", channel.post(chosen, plain, user=None, headers=bad), 401, "unauthorized"))
    got = await asyncio.gather(*(request for _, request, _, _ in cases))
    for (what, _, status, code), result in zip(cases, got, strict=True):
        exchange = result.exchange if isinstance(result, ChannelAnswer) else result
        problems = error_problems(exchange, status, code)
        ctx.findings.expect("OPENAI-004", not problems, f"{what}: " + "; ".join(problems), exchange)


# --- OPENAI-005 and OPENAI-006: Responses ----------------------------------------------------------------------


@check("channel_openai.responses")
async def responses(ctx: CheckContext) -> None:
    chosen = endpoint(ctx, "openai_responses")
    channel = ChannelClient(ctx)
    plain = expected_turn(ctx.env.scripts, "cs-plain")
    instruction = f"Conformance instruction {ctx.run}"
    labels = ("first", "previous", "metadata", "unknown", "store", "reasoning")
    runs = {label: run_tag(ctx, f"r-{label}") for label in labels}

    def body(label: str, **members: Any) -> dict[str, Any]:
        return {**channel.request(chosen, "cs-plain", run=runs[label], stream=False), **members}

    first, unknown, store, reasoning = await asyncio.gather(
        channel.post(chosen, body("first", instructions=instruction)),
        channel.post(chosen, body("unknown", previous_response_id=f"resp_{uuid.uuid4().hex}")),
        channel.post(chosen, body("store", store=True)),
        channel.post(chosen, body("reasoning", reasoning={"effort": "low"})),  # a member OPENAI-005 does not take
    )
    if first.status != 200 or first.streamed:  # the model's failure (a streamed chat control tells) or the endpoint's
        await unless_streamed_turns_fail(ctx, endpoint(ctx, "openai_chat"), [Turn(first, plain, runs["first"])])
    ctx.findings.require(
        first.status == 200 and not first.streamed,
        "OPENAI-005",
        f"a non-streamed response was not answered 200 with a Response: {first.describe()}",
        first.exchange,
    )
    problems = response_problems(first, plain.text)
    ctx.findings.expect("OPENAI-005", not problems, "; ".join(problems), first.exchange)
    session = response_session(first)
    response = json_or_none(first.exchange.body)
    response_id = response.get("id") if isinstance(response, dict) else None

    # The session continues through the previous response's id, then through metadata.session_id.
    # The input as a list of messages this time (OPENAI-005 takes both forms).
    again = chosen.with_history(body("previous"), [])
    previous = await channel.post(chosen, {**again, "previous_response_id": response_id})
    by_metadata = await channel.post(chosen, body("metadata", metadata={"session_id": session}))
    turns = [Turn(a, plain, runs[label]) for a, label in ((first, "first"), (previous, "previous"))]
    whys = [await missed_whole_turn(ctx, turn) for turn in turns]
    if any(whys):
        await unless_streamed_turns_fail(ctx, endpoint(ctx, "openai_chat"), turns)
    system, _ = await system_prompt(ctx, runs["first"])
    _, later = await system_prompt(ctx, runs["previous"])
    _, third = await system_prompt(ctx, runs["metadata"])
    problems = [why for why in whys if why]
    problems += response_problems(previous, plain.text) + response_problems(by_metadata, plain.text)
    if instruction not in system:
        problems.append("`instructions` did not reach the turn's system prompt")
    if instruction in later:
        problems.append("`instructions` reached the next turn of the session too")
    if runs["first"] not in later:
        problems.append("the turn with previous_response_id does not carry the earlier turn: its session did not go on")
    if runs["previous"] not in third:
        problems.append("the turn with metadata.session_id does not carry the earlier turns of that session")
    for answer in (previous, by_metadata):
        named = response_session(answer)
        if answer.status == 200 and named != session:
            problems.append(f"a continued response names the session {named!r}, not {session!r}")
    ctx.findings.expect("OPENAI-005", not problems, "; ".join(problems), previous.exchange, by_metadata.exchange)
    ctx.findings.expect(
        "OPENAI-005",
        refused_as(unknown, 404, "previous_response_not_found"),
        f"an unknown previous_response_id should be answered 404 `previous_response_not_found`: {unknown.describe()}",
        unknown.exchange,
    )
    ctx.findings.expect(
        "OPENAI-005",
        refused_as(store, 422, "unsupported_field") and names_member(store, "store"),
        f"`store: true` should be answered 422 `unsupported_field` naming `store`: {store.describe()}",
        store.exchange,
    )
    ctx.findings.expect(
        "OPENAI-005",
        refused_as(reasoning, 422, "unsupported_field") and names_member(reasoning, "reasoning"),
        f"a `reasoning` member should be answered 422 `unsupported_field` naming it: {reasoning.describe()}",
        reasoning.exchange,
    )


@check("channel_openai.responses_stream")
async def responses_stream(ctx: CheckContext) -> None:
    chosen = endpoint(ctx, "openai_responses")
    scripts = [s for s in RESPONSES_SCENARIOS if s in ctx.env.scripts]
    turns = await asyncio.gather(*(post_turn(ctx, chosen, s, label=scenario_label(s)) for s in scripts))
    judged = await judged_turns(ctx, list(turns), "OPENAI-006")
    reads = await real_client_reads(ctx, [turn.answer for turn, _why in judged])
    for (turn, why), read in zip(judged, reads, strict=True):
        found = rules_openai.judge_responses(turn.answer, turn.expected) + responses_client_violations(
            read, turn.expected
        )
        if why:
            found.append(Violation("OPENAI-006", why))
        record(ctx, found, turn.answer, {"OPENAI-006"})


# --- OPENAI-007: the models ------------------------------------------------------------------------------------


@check("channel_openai.models")
async def models(ctx: CheckContext) -> None:
    endpoint(ctx, "openai_chat")
    channel: ChannelClient = ChannelClient(ctx)
    listed = await channel.get("openai", "/models")
    ctx.findings.require(
        listed.status == 200,
        "OPENAI-007",
        f"GET .../openai/v1/models answered {listed.status or listed.error}: {short(listed.body or '')}",
        listed,
    )
    payload = json_or_none(listed.body or "")
    problems = []
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(payload, dict) or payload.get("object") != "list" or not isinstance(data, list):
        problems.append(f"the answer is not {{object: list, data: [...]}}: {short(listed.body or '')}")
        data = []
    for model in data:
        problems += [f"a model invalid for Model: {e}" for e in official.errors("openai_model", model)[:2]]
    ids = [m.get("id") for m in data if isinstance(m, dict)]
    if channel.model not in ids:
        problems.append(f"the declared model {channel.model!r} is not among {ids}")
    read = await asyncio.to_thread(client_model_ids, listed.body or "")
    if isinstance(read, str):
        problems.append(f"the `openai` client's models.list() rejected the answer: {read}")
    elif read != ids:
        problems.append(f"the `openai` client lists {read}, the body {ids}")
    ctx.findings.expect("OPENAI-007", not problems, "; ".join(problems[:5]), listed)
