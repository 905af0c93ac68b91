"""The OpenAI channel's rules for whole answers (no stream): a ChatCompletion, a Response and the error body, as
OPENAI-003 to OPENAI-005 state them, and what the `openai` client made of a recorded body (OPENAI-002, -004, -006).
Pure judgements of an answer: no I/O (openai.py judges the streams)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from conformance.channels.endpoints import SESSION_HEADER, ChannelAnswer
from conformance.rules import official
from conformance.rules import openai as rules_openai
from conformance.rules.expected import ExpectedTurn
from conformance.rules.violations import Violation, short
from conformance.transport.exchanges import Exchange, json_or_none
from gns3_copilot_generated.constants import OPENAI_ERROR_TYPES, OPENAI_SERVER_ERROR_TYPE

if TYPE_CHECKING:
    from conformance.channels.real_clients import ClientRead

# OPENAI-004: the error `type` each status gives.
ERROR_TYPES = OPENAI_ERROR_TYPES


def error_of(body: str) -> dict[str, Any]:
    payload = json_or_none(body)
    error = payload.get("error") if isinstance(payload, dict) else None
    return error if isinstance(error, dict) else {}


def session_header(answer: ChannelAnswer, requirement: str) -> list[Violation]:
    if answer.headers.get(SESSION_HEADER):
        return []
    return [Violation(requirement, "the answer does not name its session in the header X-Copilot-Session-Id")]


def chat_client_violations(read: ClientRead, expected: ExpectedTurn) -> list[Violation]:
    """What the `openai` client made of a recorded chat stream: the script's text for a finishing turn; for a failing
    one an APIError carrying the contract's code `llm_error`."""
    if expected.fails:
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
    return _assembled(read, expected, "OPENAI-002", "the `openai` client")


def responses_client_violations(read: ClientRead, expected: ExpectedTurn) -> list[Violation]:
    """`client.responses.stream` over the recorded body: the script's text, or `response.failed` for a failing turn."""
    events = read.detail.get("events") or []
    if expected.fails:
        if "response.failed" not in events:
            return [
                Violation(
                    "OPENAI-006",
                    f"the `openai` client's response stream yielded {events[-4:]} and {read.error or 'no error'}, "
                    "not the turn's response.failed",
                )
            ]
        return []
    return _assembled(read, expected, "OPENAI-006", "the `openai` client's responses.stream")


def _assembled(read: ClientRead, expected: ExpectedTurn, requirement: str, reader: str) -> list[Violation]:
    """A finishing turn read by the `openai` client: read to its end, and the script's text assembled."""
    if not read.ok:
        return [Violation(requirement, f"{reader} rejected the stream: {read.error}")]
    if read.text != expected.text:
        return [
            Violation(
                requirement, f"the `openai` client assembled {read.text!r}; the fake LLM streamed {expected.text!r}"
            )
        ]
    return []


def names_member(answer: ChannelAnswer, member: str) -> bool:
    error = error_of(answer.exchange.body)
    return error.get("param") == member or member in str(error.get("message", ""))


def refused_as(answer: ChannelAnswer, status: int, code: str) -> bool:
    error = error_of(answer.exchange.body)
    return answer.status == status and not answer.streamed and error.get("code") == code


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
        got = exchange.outcome
        return [f"answered {got}, not {status}: {short(exchange.body or '')}"]
    payload = json_or_none(exchange.body or "")
    problems = [f"not the OpenAI error body: {p}" for p in rules_openai.error_body_problems(payload)[:3]]
    error = error_of(exchange.body or "")
    if error.get("type") != ERROR_TYPES.get(status, OPENAI_SERVER_ERROR_TYPE):
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
