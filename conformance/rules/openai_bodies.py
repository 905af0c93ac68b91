"""The OpenAI channel's rules for whole answers (no stream), in two voices: a ChatCompletion (OPENAI-PROTO-005, then
OPENAI-003), a Response (OPENAI-PROTO-008, then OPENAI-005), an error body (OPENAI-PROTO-006, then OPENAI-004's status,
type and code), and what the `openai` client made of a recorded stream (it reads it: OPENAI-PROTO-002 / -009; the
script's text or code: OPENAI-002, -004, -006). Pure judgements of an answer: no I/O (openai.py and
openai_responses.py judge the streams)."""

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

# OPENAI-004: the error `type` each status gives (the contract's table; OpenAI itself types a 404 model_not_found
# invalid_request_error, as the table does).
ERROR_TYPES = OPENAI_ERROR_TYPES
P_STREAM, P_COMPLETION, P_ERROR, P_RESPONSE, P_EVENTS = (
    "OPENAI-PROTO-002",
    "OPENAI-PROTO-005",
    "OPENAI-PROTO-006",
    "OPENAI-PROTO-008",
    "OPENAI-PROTO-009",
)


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
    return _assembled(read, expected, (P_STREAM, "OPENAI-002"), "the `openai` client")


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
    return _assembled(read, expected, (P_EVENTS, "OPENAI-006"), "the `openai` client's responses.stream")


def _assembled(read: ClientRead, expected: ExpectedTurn, ids: tuple[str, str], reader: str) -> list[Violation]:
    """A finishing turn read by the `openai` client: read to its end (the protocol's), and the script's text
    assembled (the contract's)."""
    protocol, contract = ids
    if not read.ok:
        return [Violation(protocol, f"{reader} rejected the stream: {read.error}")]
    if read.text != expected.text:
        return [
            Violation(contract, f"the `openai` client assembled {read.text!r}; the fake LLM streamed {expected.text!r}")
        ]
    return []


def names_member(answer: ChannelAnswer, member: str) -> bool:
    error = error_of(answer.exchange.body)
    return error.get("param") == member or member in str(error.get("message", ""))


def refused_as(answer: ChannelAnswer, status: int, code: str) -> bool:
    error = error_of(answer.exchange.body)
    return answer.status == status and not answer.streamed and error.get("code") == code


def answered_whole(answer: ChannelAnswer) -> bool:
    """Answered 200 with a `chat.completion` object, not a stream."""
    payload = json_or_none(answer.exchange.body)
    return (
        answer.status == 200
        and not answer.streamed
        and isinstance(payload, dict)
        and payload.get("object") == ("chat.completion")
    )


def completion_problems(answer: ChannelAnswer, text: str) -> list[Violation]:
    """A turn answered without `stream`: a ChatCompletion of one choice (PROTO-005: `n` is 1, ChatCompletion.choices
    "can be more than one if n is greater than 1"), then the contract's message, `stop` and usage (OPENAI-003)."""
    if answer.status != 200 or answer.streamed:
        why = f"the turn with stream false was not answered 200 with a chat.completion: {answer.describe()}"
        return [Violation(P_COMPLETION, why)]
    payload = json_or_none(answer.exchange.body)
    found = [
        Violation(P_COMPLETION, f"not a ChatCompletion: {e}")
        for e in official.errors("openai_chat_completion", payload)
    ]
    if not isinstance(payload, dict):
        return found or [Violation(P_COMPLETION, f"the answer is not a JSON object: {short(answer.exchange.body)}")]
    choices = payload.get("choices") if isinstance(payload.get("choices"), list) else []
    if len(choices) != 1 or not isinstance(choices[0], dict):
        return [*found, Violation(P_COMPLETION, f"{len(choices)} choices, not one (n is 1)")]
    message = choices[0].get("message") if isinstance(choices[0].get("message"), dict) else {}
    if message.get("role") != "assistant" or message.get("content") != text:
        found.append(
            Violation("OPENAI-003", f"the message is {short(message)}; expected the assistant's text {text!r}")
        )
    if message.get("tool_calls"):
        found.append(Violation("OPENAI-003", "the message carries tool calls: the server runs its own"))
    if choices[0].get("finish_reason") != "stop":
        found.append(Violation("OPENAI-003", f"finish_reason {choices[0].get('finish_reason')!r}, not stop"))
    usage = payload.get("usage")
    keys = ("prompt_tokens", "completion_tokens", "total_tokens")
    if not isinstance(usage, dict) or not all(isinstance(usage.get(k), int) for k in keys):
        found.append(Violation("OPENAI-003", f"the usage is {short(usage)}, not the turn's counts"))
    return found


def failed_turn_problems(answer: ChannelAnswer) -> list[Violation]:
    """OPENAI-003: a failed turn not streamed is answered 502 `llm_error` with `x-should-retry: false` (the `openai`
    client would otherwise run it again), in OpenAI's error body (PROTO-006) of its status's type (OPENAI-004)."""
    found = []
    if answer.status != 502 or error_of(answer.exchange.body).get("code") != "llm_error":
        found.append(Violation("OPENAI-003", f"a failed turn should be answered 502 `llm_error`: {answer.describe()}"))
    if answer.headers.get("x-should-retry") != "false":
        retry = answer.headers.get("x-should-retry")
        found.append(Violation("OPENAI-003", f"x-should-retry is {retry!r}, not 'false'"))
    if answer.status is not None and 400 <= answer.status <= 599:  # its body: OpenAI's (PROTO-006), typed (OPENAI-004)
        payload = json_or_none(answer.exchange.body)
        found += [
            Violation(P_ERROR, f"not the OpenAI error body: {p}") for p in rules_openai.error_body_problems(payload)
        ]
        found += _type_problems(answer.status, error_of(answer.exchange.body))
    return found


def typed_error_problems(status: int, body: str) -> list[str]:
    """A refusal's body on the OpenAI channel: OpenAI's error body (PROTO-006) with the type of its status
    (OPENAI-004), as CHANNEL-005 asks of every refusal there."""
    found = [f"not the OpenAI error body: {p}" for p in rules_openai.error_body_problems(json_or_none(body))]
    return found + [v.message for v in _type_problems(status, error_of(body))]


def _type_problems(status: int, error: dict[str, Any]) -> list[Violation]:
    """OPENAI-004: the error `type` its status gives."""
    want = ERROR_TYPES.get(status, OPENAI_SERVER_ERROR_TYPE)
    if error.get("type") == want:
        return []
    return [Violation("OPENAI-004", f"the type is {error.get('type')!r}; the contract types status {status} {want!r}")]


def error_problems(exchange: Exchange, status: int, code: str | None) -> list[Violation]:
    """A refusal. The protocol's (PROTO-006): a 4xx or 5xx status with `{"error": <ErrorObject>}` (`code` may be
    null, `misalignment` and other members may be there). The contract's (OPENAI-004): the status, its type, and the
    contract's code when the case has one."""
    found = []
    got = exchange.status
    if got is None or not 400 <= got <= 599:
        return [Violation("OPENAI-004", f"answered {exchange.outcome}, not {status}: {short(exchange.body or '')}")]
    payload = json_or_none(exchange.body or "")
    found += [Violation(P_ERROR, f"not the OpenAI error body: {p}") for p in rules_openai.error_body_problems(payload)]
    if got != status:
        found.append(
            Violation("OPENAI-004", f"answered {exchange.outcome}, not {status}: {short(exchange.body or '')}")
        )
    error = error_of(exchange.body or "")
    found += _type_problems(got, error)
    if code is not None and error.get("code") != code:
        found.append(Violation("OPENAI-004", f"the code is {error.get('code')!r}, not the contract's {code!r}"))
    return found


def response_problems(answer: ChannelAnswer, text: str, refused: str = P_RESPONSE) -> list[Violation]:
    """A response answered without `stream`: a Response (PROTO-008), then the contract's session, one message with
    the turn's text, and usage (OPENAI-005). Not answered with a Response at all is `refused`'s violation (a turn
    continuing a session through `previous_response_id` is the contract's to serve: OPENAI-005)."""
    if answer.status != 200 or answer.streamed:
        return [Violation(refused, f"the response was not answered 200 with a Response: {answer.describe()}")]
    payload = json_or_none(answer.exchange.body)
    found = [Violation(P_RESPONSE, f"not a Response: {e}") for e in official.errors("openai_response", payload)]
    if not isinstance(payload, dict):
        return found or [Violation(P_RESPONSE, f"the answer is not a JSON object: {short(answer.exchange.body)}")]
    metadata = payload.get("metadata") if isinstance(payload.get("metadata"), dict) else {}
    if not isinstance(metadata.get("session_id"), str) or not metadata.get("session_id"):
        found.append(Violation("OPENAI-005", f"its metadata {short(payload.get('metadata'))} holds no session_id"))
    output = payload.get("output") if isinstance(payload.get("output"), list) else []
    item = output[0] if len(output) == 1 and isinstance(output[0], dict) else {}
    parts = item.get("content") if isinstance(item.get("content"), list) else []
    texts = [p.get("text") for p in parts if isinstance(p, dict) and p.get("type") == "output_text"]
    if item.get("type") != "message" or item.get("role") != "assistant" or len(parts) != 1 or texts != [text]:
        why = f"the output {short(output)} is not one assistant message with one output_text {text!r}"
        found.append(Violation("OPENAI-005", why))
    usage = payload.get("usage")
    keys = ("input_tokens", "output_tokens", "total_tokens")
    if not isinstance(usage, dict) or not all(isinstance(usage.get(k), int) for k in keys):
        found.append(Violation("OPENAI-005", f"the usage is {short(usage)}, not the turn's counts"))
    return found


def response_session(answer: ChannelAnswer) -> Any:
    """The session a non-streamed Response names in its metadata (None when it names none)."""
    payload = json_or_none(answer.exchange.body)
    metadata = payload.get("metadata") if isinstance(payload, dict) else None
    return metadata.get("session_id") if isinstance(metadata, dict) else None
