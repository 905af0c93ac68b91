"""Helpers of the OpenAI channel's checks (channel_openai.py), each written once: the scenarios, how a turn that did
not go as scripted is told apart from a server that serves no turn, what the `openai` client made of a body, and the
shapes of a completion, a Response and an error body as OPENAI-003 to OPENAI-005 state them."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import httpx
import openai

from ..channels import official, rules_openai
from ..channels.client import ChannelAnswer
from ..channels.endpoints import SESSION_HEADER, Endpoint
from ..channels.real_clients import ClientRead
from ..context import CheckContext
from ..errors import BlockedBy
from ..exchanges import Exchange, json_or_none
from ..violations import Violation
from .support_channels import (
    Turn,
    post_turn,
    record,
    unless_blocked,
)

CHAT_SCENARIOS = ["cs-plain", "cs-tool", "cs-parallel", "cs-failing-tool", "cs-llm-error", "cs-mid-stream-error"]
WHOLE_SCENARIOS = ["cs-plain", "cs-tool", "cs-llm-error", "cs-mid-stream-error"]
RESPONSES_SCENARIOS = ["cs-plain", "cs-tool", "cs-llm-error", "cs-mid-stream-error"]
UNKNOWN_MEMBER = "conformance_unknown_member"
UNKNOWN_MODEL = "conformance-no-such-model"
# OPENAI-004: the error `type` each status gives.
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "not_found_error",
    409: "conflict_error",
    413: "invalid_request_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
}


def scenario_label(script: str) -> str:
    return script.removeprefix("cs-")


def short(value: Any, limit: int = 300) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= limit else text[:limit] + "..."


def error_of(body: str) -> dict[str, Any]:
    payload = json_or_none(body)
    error = payload.get("error") if isinstance(payload, dict) else None
    return error if isinstance(error, dict) else {}


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


def session_header(answer: ChannelAnswer, requirement: str) -> list[Violation]:
    if answer.headers.get(SESSION_HEADER):
        return []
    return [Violation(requirement, "the answer does not name its session in the header X-Copilot-Session-Id")]


def chat_client_violations(read: ClientRead, turn: Turn) -> list[Violation]:
    """What the `openai` client made of a recorded chat stream: the script's text for a finishing turn; for a failing
    one an APIError carrying the contract's code `llm_error`."""
    if turn.expected.fails:
        if read.ok:
            return [Violation("OPENAI-004", "the `openai` client read the failing turn to its end without an error")]
        if not (read.error or "").startswith("APIError") or read.error_code != "llm_error":
            return [
                Violation(
                    "OPENAI-004",
                    f"the `openai` client raised {read.error!r} (code {read.error_code!r}), not an APIError with the "
                    "contract's code `llm_error`",
                )
            ]
        return []
    if not read.ok:
        return [Violation("OPENAI-002", f"the `openai` client rejected the stream: {read.error}")]
    if read.text != turn.expected.text:
        return [
            Violation(
                "OPENAI-002",
                f"the `openai` client assembled {read.text!r}; the fake LLM streamed {turn.expected.text!r}",
            )
        ]
    return []


def responses_client_violations(read: ClientRead, turn: Turn) -> list[Violation]:
    """`client.responses.stream` over the recorded body: the script's text, or `response.failed` for a failing turn."""
    events = read.detail.get("events") or []
    if turn.expected.fails:
        if "response.failed" not in events:
            return [
                Violation(
                    "OPENAI-006",
                    f"the `openai` client's response stream yielded {events[-4:]} and {read.error or 'no error'}, "
                    "not the turn's response.failed",
                )
            ]
        return []
    if not read.ok:
        return [Violation("OPENAI-006", f"the `openai` client's responses.stream rejected the stream: {read.error}")]
    if read.text != turn.expected.text:
        return [
            Violation(
                "OPENAI-006",
                f"the `openai` client assembled {read.text!r}; the fake LLM streamed {turn.expected.text!r}",
            )
        ]
    return []


def names_member(answer: ChannelAnswer, member: str) -> bool:
    error = error_of(answer.exchange.body)
    return error.get("param") == member or member in str(error.get("message", ""))


def refused_as(answer: ChannelAnswer, status: int, code: str) -> bool:
    error = error_of(answer.exchange.body)
    return answer.status == status and not answer.streamed and error.get("code") == code


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
    """For non-streamed turns: why each missed its script; when one did, streamed controls of the same scripts tell
    whether the model (TESTABILITY-001/003, via unless_blocked) or this answer is to blame."""
    whys = [await missed_whole_turn(ctx, turn) for turn in turns]
    missed = [turn.expected.script for turn, why in zip(turns, whys, strict=True) if why]
    if missed:
        controls = await asyncio.gather(
            *(
                post_turn(ctx, chosen, s, label=f"control-{scenario_label(s)}-{uuid.uuid4().hex[:6]}")
                for s in dict.fromkeys(missed)
            )
        )
        if not all(ended_stream(c.answer) for c in controls):
            shown = "; ".join(c.answer.describe() for c in controls if not ended_stream(c.answer))
            raise BlockedBy("TESTABILITY-001", f"{'; '.join(w for w in whys if w)}; streamed controls fail: {shown}")
        await unless_blocked(ctx, list(controls))
    return whys


def completion_problems(answer: ChannelAnswer, text: str) -> list[str]:
    if answer.status != 200 or answer.streamed:
        return [f"the turn with stream false was not answered 200 with a chat.completion: {answer.describe()}"]
    payload = json_or_none(answer.exchange.body)
    problems = [f"not a ChatCompletion: {e}" for e in official.errors("openai_chat_completion", payload)[:3]]
    if not isinstance(payload, dict):
        return problems or [f"the answer is not a JSON object: {short(answer.exchange.body)}"]
    if payload.get("object") != "chat.completion":
        problems.append(f"the object is {payload.get('object')!r}, not chat.completion")
    choices = payload.get("choices") if isinstance(payload.get("choices"), list) else []
    if len(choices) != 1 or not isinstance(choices[0], dict):
        return [*problems, f"{len(choices)} choices, not one"]
    message = choices[0].get("message") if isinstance(choices[0].get("message"), dict) else {}
    if message.get("role") != "assistant" or message.get("content") != text:
        problems.append(f"the message is {short(message)}; expected the assistant's text {text!r}")
    if message.get("tool_calls"):
        problems.append("the message carries tool calls: the server runs its own")
    if choices[0].get("finish_reason") != "stop":
        problems.append(f"finish_reason {choices[0].get('finish_reason')!r}, not stop")
    usage = payload.get("usage")
    keys = ("prompt_tokens", "completion_tokens", "total_tokens")
    if not isinstance(usage, dict) or not all(isinstance(usage.get(k), int) for k in keys):
        problems.append(f"the usage is {short(usage)}, not the turn's counts")
    return problems


def error_problems(exchange: Exchange, status: int, code: str | None) -> list[str]:
    """The OpenAI error body with the status, the contract's code and the status's type."""
    if exchange.status != status:
        got = exchange.status if exchange.status is not None else exchange.error
        return [f"answered {got}, not {status}: {short(exchange.body or '')}"]
    payload = json_or_none(exchange.body or "")
    problems = [f"not the OpenAI error body: {p}" for p in rules_openai.error_body_problems(payload)[:3]]
    error = error_of(exchange.body or "")
    if error.get("type") != ERROR_TYPES.get(status, "server_error"):
        problems.append(f"the type is {error.get('type')!r}; status {status} gives {ERROR_TYPES.get(status)!r}")
    if code is not None and error.get("code") != code:
        problems.append(f"the code is {error.get('code')!r}, not {code!r}")
    return problems


def response_problems(answer: ChannelAnswer, text: str) -> list[str]:
    if answer.status != 200 or answer.streamed:
        return [f"the response was not answered 200 with a Response: {answer.describe()}"]
    payload = json_or_none(answer.exchange.body)
    problems = [f"not a Response: {e}" for e in official.errors("openai_response", payload)[:3]]
    if not isinstance(payload, dict):
        return problems or [f"the answer is not a JSON object: {short(answer.exchange.body)}"]
    if not isinstance(payload.get("id"), str) or not payload.get("id"):
        problems.append("the response has no id")
    metadata = payload.get("metadata") if isinstance(payload.get("metadata"), dict) else {}
    if not isinstance(metadata.get("session_id"), str) or not metadata.get("session_id"):
        problems.append(f"its metadata {short(payload.get('metadata'))} holds no session_id")
    output = payload.get("output") if isinstance(payload.get("output"), list) else []
    item = output[0] if len(output) == 1 and isinstance(output[0], dict) else {}
    parts = item.get("content") if isinstance(item.get("content"), list) else []
    texts = [p.get("text") for p in parts if isinstance(p, dict) and p.get("type") == "output_text"]
    if item.get("type") != "message" or item.get("role") != "assistant" or len(parts) != 1 or texts != [text]:
        problems.append(f"the output {short(output)} is not one assistant message with one output_text {text!r}")
    usage = payload.get("usage")
    keys = ("input_tokens", "output_tokens", "total_tokens")
    if not isinstance(usage, dict) or not all(isinstance(usage.get(k), int) for k in keys):
        problems.append(f"the usage is {short(usage)}, not the turn's counts")
    return problems


def response_session(answer: ChannelAnswer) -> Any:
    """The session a non-streamed Response names in its metadata (None when it names none)."""
    payload = json_or_none(answer.exchange.body)
    metadata = payload.get("metadata") if isinstance(payload, dict) else None
    return metadata.get("session_id") if isinstance(metadata, dict) else None


def client_model_ids(body: str) -> list[str] | str:
    """The ids the `openai` client lists from the recorded body, or its error."""
    answer = httpx.Response(200, text=body, headers={"content-type": "application/json"})
    transport = httpx.MockTransport(lambda request: answer)
    try:
        with openai.OpenAI(
            api_key="recorded", base_url="http://recorded.invalid/v1", http_client=httpx.Client(transport=transport)
        ) as replaying:
            return [model.id for model in replaying.models.list()]
    except Exception as exc:  # noqa: BLE001 - whatever the client raises is its verdict
        return f"{type(exc).__name__}: {exc}"
