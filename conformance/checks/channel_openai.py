"""The OpenAI channel (OPENAI-*): Chat Completions streamed and not, Responses streamed and not, the models, and
OpenAI's error body. Each streamed answer is judged by the protocol's rules (conformance/channels/rules_openai.py)
and read again by the `openai` client itself (its stream state assembles the completion or the response)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from ..channels import official, rules_openai
from ..channels.expected import ExpectedTurn, expected_turn
from ..channels.real_clients import ClientRead
from ..context import CheckContext
from ..exchanges import Exchange, json_or_none
from ..violations import Violation
from . import check
from .support_channels import (
    Turn,
    client,
    endpoint,
    not_received,
    post_turn,
    real_client_reads,
    record,
    run_tag,
    unless_blocked,
)

SCENARIOS = ["cs-plain", "cs-tool", "cs-parallel", "cs-failing-tool", "cs-llm-error", "cs-mid-stream-error"]
RESPONSES_SCENARIOS = ["cs-plain", "cs-tool", "cs-llm-error", "cs-mid-stream-error"]
SESSION_HEADER = "x-copilot-session-id"
# OPENAI-004: the error `type` of each status.
ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error"}
ERROR_TYPES |= {404: "not_found_error", 405: "not_found_error", 409: "conflict_error", 413: "invalid_request_error"}
ERROR_TYPES |= {422: "invalid_request_error", 429: "rate_limit_error"}


def error_type(status: int) -> str:
    return ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")


def openai_error_problems(exchange: Exchange, status: int, code: str) -> list[str]:
    """What is wrong with a refusal in OpenAI's error shape: the status, the body's four members, type and code."""
    problems = []
    if exchange.status != status:
        problems.append(f"answered {exchange.status if exchange.status is not None else exchange.error}, not {status}")
    body = json_or_none(exchange.body)
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict) or set(error) != {"message", "type", "param", "code"}:
        return [*problems, f"the body is not {{error: {{message, type, param, code}}}}: {exchange.body[:300]}"]
    if not isinstance(error["message"], str) or not error["message"]:
        problems.append("the error has no message")
    if error["type"] != error_type(status):
        problems.append(f"the error type is {error['type']!r}; status {status} gives {error_type(status)!r}")
    if error["code"] != code:
        problems.append(f"the error code is {error['code']!r}, not {code!r}")
    return problems


def client_problems(read: ClientRead, turn: Turn) -> list[str]:
    """What the `openai` client made of the body: the script's text for a turn that finishes; for one that fails,
    its own error carrying `llm_error` (Chat Completions) or a `response.failed` it saw (Responses)."""
    responses = turn.answer.endpoint.name == "openai_responses"
    if turn.expected.fails:
        if responses:
            seen = read.detail.get("events") or []
            return [] if "response.failed" in seen else [f"the client saw no response.failed ({read.error or seen})"]
        if read.ok or read.error_code != "llm_error":
            return [f"the client did not raise the turn's error with code llm_error: {read.error or 'it finished'}"]
        return []
    if not read.ok:
        return [f"the `openai` client rejected the stream: {read.error}"]
    if read.text != turn.expected.text:
        return [f"the `openai` client assembled {read.text!r}; the fake LLM streamed {turn.expected.text!r}"]
    return []


async def _streamed(ctx: CheckContext, name: str, scripts: list[str], requirement: str) -> None:
    """Each scenario streamed on one endpoint, judged by the rules and by the `openai` client over its body."""
    chosen = endpoint(ctx, name)
    present = [s for s in scripts if s in ctx.env.scripts]
    turns = await asyncio.gather(*(post_turn(ctx, chosen, s, label=s.removeprefix("cs-")) for s in present))
    whys = await unless_blocked(ctx, list(turns))
    judged = [(turn, why) for turn, why in zip(turns, whys, strict=True) if turn.answer.streamed]
    for turn in turns:
        if not turn.answer.streamed:
            record(
                ctx,
                [Violation(requirement, f"the turn was not streamed: {turn.answer.describe()}")],
                turn.answer,
                set(),
            )
    reads = await real_client_reads(ctx, [turn.answer for turn, _ in judged])
    for (turn, why), read in zip(judged, reads, strict=True):
        answer = turn.answer
        if name == "openai_chat":
            found = rules_openai.judge_chat(answer, turn.expected, include_usage=True)
        else:
            found = rules_openai.judge_responses(answer, turn.expected)
        found += [Violation(requirement, problem) for problem in client_problems(read, turn)]
        if not answer.headers.get(SESSION_HEADER):
            found.append(Violation(requirement, f"no {SESSION_HEADER} header names the session"))
        if why:
            found.append(Violation(requirement, why))
        judged_here = {requirement, "OPENAI-004"} if name == "openai_chat" else {requirement}
        record(ctx, found, answer, judged_here)


@check("channel_openai.chat_stream")
async def chat_stream(ctx: CheckContext) -> None:
    await _streamed(ctx, "openai_chat", SCENARIOS, "OPENAI-002")


@check("channel_openai.responses_stream")
async def responses_stream(ctx: CheckContext) -> None:
    await _streamed(ctx, "openai_responses", RESPONSES_SCENARIOS, "OPENAI-006")


@check("channel_openai.chat_whole")
async def chat_whole(ctx: CheckContext) -> None:
    """Not streamed: a ChatCompletion with the turn's whole text and usage; a failed turn 502 with its code and
    `x-should-retry: false`."""
    chosen = endpoint(ctx, "openai_chat")
    turns = await asyncio.gather(
        *(post_turn(ctx, chosen, s, label=f"whole-{s}", stream=False) for s in ("cs-tool", "cs-llm-error"))
    )
    finished, failed = turns
    await unless_blocked(ctx, [finished])
    body = json_or_none(finished.answer.exchange.body)
    problems = [f"{p}" for p in official.errors("openai_chat_completion", body)[:3]] if body is not None else []
    if finished.answer.status != 200 or not isinstance(body, dict):
        problems.append(f"the completion was not answered 200 with JSON: {finished.answer.describe()}")
    else:
        choices = body.get("choices") or [{}]
        message = choices[0].get("message") if isinstance(choices[0], dict) else None
        wanted = {"role": "assistant", "content": finished.expected.text}
        if len(choices) != 1 or not isinstance(message, dict) or {k: message.get(k) for k in wanted} != wanted:
            problems.append(f"the choice's message is {message!r}; the turn's text is {finished.expected.text!r}")
        if choices[0].get("finish_reason") != "stop":
            problems.append(f"finish_reason {choices[0].get('finish_reason')!r}, not stop")
        if not isinstance(body.get("usage"), dict):
            problems.append("the completion carries no usage")
    ctx.findings.expect("OPENAI-003", not problems, "; ".join(problems), finished.answer.exchange)
    refusal = openai_error_problems(failed.answer.exchange, 502, "llm_error")
    if failed.answer.headers.get("x-should-retry") != "false":
        refusal.append("no `x-should-retry: false` header: the openai client runs the turn again")
    ctx.findings.expect(
        "OPENAI-003", not refusal, "a failed turn, not streamed: " + "; ".join(refusal), failed.answer.exchange
    )


@check("channel_openai.errors")
async def errors(ctx: CheckContext) -> None:
    """Every refusal of the channel in OpenAI's error body, its type given by the status."""
    chosen = endpoint(ctx, "openai_chat")
    channel = client(ctx)
    plain = channel.request(chosen, "cs-plain", run=run_tag(ctx, "e"))
    cases: list[tuple[str, Any, dict[str, Any], int, str]] = [
        ("invalid JSON", b'{"model": ', {}, 400, "invalid_json"),
        ("an unknown model", {**plain, "model": "cs-no-such-model"}, {}, 404, "model_not_found"),
        ("an unsupported member", {**plain, "logit_bias": {"50256": -100}}, {}, 422, "unsupported_field"),
    ]
    if ctx.env.users["main"].token is not None:
        cases.append(
            ("a forged token", plain, {"headers": {"Authorization": "Bearer cs-forged-token"}}, 401, "unauthorized")
        )
    else:
        ctx.findings.not_testable("OPENAI-004", "the target authenticates nobody (auth.mode none): no 401 to judge")
    answers = await asyncio.gather(*(channel.post(chosen, body, **options) for _w, body, options, _s, _c in cases))
    for answer, (what, _body, _options, status, code) in zip(answers, cases, strict=True):
        problems = openai_error_problems(answer.exchange, status, code)
        ctx.findings.expect("OPENAI-004", not problems, f"{what}: " + "; ".join(problems), answer.exchange)
    wrong_method = await channel.get("openai", chosen.suffix)
    problems = openai_error_problems(wrong_method, 405, "method_not_allowed")
    ctx.findings.expect("OPENAI-004", not problems, "GET of chat/completions: " + "; ".join(problems), wrong_method)


@check("channel_openai.requests")
async def requests(ctx: CheckContext) -> None:
    """The members a request may carry: a session named by metadata continues, instructions reach that turn's
    system prompt only, n 1 and tool_choice auto are taken, other values and members are refused by name."""
    chosen = endpoint(ctx, "openai_chat")
    channel = client(ctx)
    session = str(uuid.uuid4())
    instruction = f"cs-instruction-{uuid.uuid4().hex[:8]}"
    first_run, second_run = run_tag(ctx, "r1"), run_tag(ctx, "r2")
    first = channel.request(chosen, "cs-plain", session_id=session, run=first_run)
    first["messages"] = [{"role": "system", "content": instruction}, *first["messages"]]
    first |= {"n": 1, "tool_choice": "auto", "user": "conformance", "tools": []}
    answer = await channel.post(chosen, first)
    await unless_blocked(ctx, [Turn(answer, _expected(ctx, "cs-plain"), first_run)])
    second = channel.request(chosen, "cs-plain", session_id=session, run=second_run)
    again = await channel.post(chosen, second)
    await unless_blocked(ctx, [Turn(again, _expected(ctx, "cs-plain"), second_run)])
    problems = []
    if answer.headers.get(SESSION_HEADER) not in (None, session):
        problems.append(f"metadata.session_id {session} made the session {answer.headers.get(SESSION_HEADER)}")
    if await not_received(ctx, first_run, [instruction]):
        problems.append("a system message did not reach the turn's system prompt")
    if not await not_received(ctx, second_run, [instruction]):
        problems.append("the first turn's system message reached the next turn too (it is for that turn only)")
    missing = await not_received(ctx, second_run, [ctx.message("cs-plain", run=first_run)])
    if missing:
        problems.append("metadata.session_id did not continue the session: the model did not see the first turn")
    ctx.findings.expect("OPENAI-001", not problems, "; ".join(problems), answer.exchange, again.exchange)
    refused = [("n", {"n": 2}), ("tool_choice", {"tool_choice": "required"}), ("logprobs", {"logprobs": True})]
    bodies = [{**channel.request(chosen, "cs-plain", run=run_tag(ctx, f"x-{m}")), **extra} for m, extra in refused]
    answers = await asyncio.gather(*(channel.post(chosen, body) for body in bodies))
    for (member, _extra), refusal in zip(refused, answers, strict=True):
        problems = openai_error_problems(refusal.exchange, 422, "unsupported_field")
        if not problems and member not in refusal.exchange.body:
            problems.append(f"the refusal does not name {member!r}")
        ctx.findings.expect("OPENAI-001", not problems, f"{member}: " + "; ".join(problems), refusal.exchange)


def _expected(ctx: CheckContext, script: str) -> ExpectedTurn:
    return expected_turn(ctx.env.scripts, script)


@check("channel_openai.responses")
async def responses(ctx: CheckContext) -> None:
    """A Response not streamed; `previous_response_id` continues its session, an unknown one is refused 404."""
    chosen = endpoint(ctx, "openai_responses")
    channel = client(ctx)
    first = await post_turn(ctx, chosen, "cs-plain", label="resp1", stream=False)
    await unless_blocked(ctx, [first])
    body = json_or_none(first.answer.exchange.body)
    problems = [str(p) for p in official.errors("openai_response", body)[:3]] if body is not None else []
    if first.answer.status != 200 or not isinstance(body, dict):
        problems.append(f"the response was not answered 200 with JSON: {first.answer.describe()}")
        body = {}
    output = [item for item in body.get("output") or [] if isinstance(item, dict)]
    parts = [p for item in output for p in item.get("content") or [] if isinstance(p, dict)]
    if len(output) != 1 or output[0].get("role") != "assistant" or [p.get("type") for p in parts] != ["output_text"]:
        problems.append(f"the output is not one assistant message with one output_text: {output!r:.300}")
    elif parts[0].get("text") != first.expected.text:
        problems.append(f"the output_text is {parts[0].get('text')!r}; the turn's text is {first.expected.text!r}")
    metadata = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
    session = first.answer.headers.get(SESSION_HEADER)
    if not metadata.get("session_id") or (session and metadata.get("session_id") != session):
        problems.append(f"metadata.session_id is {metadata.get('session_id')!r}, the session {session!r}")
    if not isinstance(body.get("usage"), dict):
        problems.append("the response carries no usage")
    ctx.findings.expect("OPENAI-005", not problems, "; ".join(problems), first.answer.exchange)
    if not isinstance(body.get("id"), str):
        return
    run = run_tag(ctx, "resp2")
    follow = {**channel.request(chosen, "cs-plain", run=run, stream=False), "previous_response_id": body["id"]}
    unknown = {**channel.request(chosen, "cs-plain", run=run_tag(ctx, "resp3"), stream=False)}
    unknown["previous_response_id"] = f"resp_{uuid.uuid4().hex}"
    continued, refused = await asyncio.gather(channel.post(chosen, follow), channel.post(chosen, unknown))
    await unless_blocked(ctx, [Turn(continued, _expected(ctx, "cs-plain"), run)])
    missing = await not_received(ctx, run, [first.answer.message])
    ctx.findings.expect(
        "OPENAI-005",
        not missing,
        "previous_response_id did not continue the response's session: the model did not see the earlier turn",
        continued.exchange,
    )
    problems = openai_error_problems(refused.exchange, 404, "previous_response_not_found")
    ctx.findings.expect(
        "OPENAI-005", not problems, "an unknown previous_response_id: " + "; ".join(problems), refused.exchange
    )


@check("channel_openai.models")
async def models(ctx: CheckContext) -> None:
    endpoint(ctx, "openai_chat")
    exchange = await client(ctx).get("openai", "/models")
    body = json_or_none(exchange.body)
    ctx.findings.require(
        exchange.status == 200 and isinstance(body, dict) and body.get("object") == "list",
        "OPENAI-007",
        f"GET models: {exchange.describe()} {exchange.body[:300]}",
        exchange,
    )
    data = body.get("data") if isinstance(body.get("data"), list) else []
    problems = [f"{m!r:.120}: {e}" for m in data for e in official.errors("openai_model", m)[:1]]
    ids = [m.get("id") for m in data if isinstance(m, dict)]
    if client(ctx).model not in ids:
        problems.append(f"the model {client(ctx).model!r} is not listed: {ids}")
    ctx.findings.expect("OPENAI-007", not problems, "; ".join(problems), exchange)
