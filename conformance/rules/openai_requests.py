"""The requests channel_openai.requests and .responses send, as tables, each member in a request of its own (what a
server refuses is then named), in two voices:

- OPENAI-PROTO-001 / -007: members the API reference defines, with values a one-choice text answer can honour; a
  server SHOULD serve them (chat: https://platform.openai.com/docs/api-reference/chat/create, `temperature`, `n`,
  `max_completion_tokens`, `messages` of the roles system and developer, `stream_options`; responses:
  https://platform.openai.com/docs/api-reference/responses/create, `input` as a list of messages, `instructions`,
  `temperature`, `max_output_tokens`, `metadata` whose values are strings of at most 512 characters).
- OPENAI-001 / -005: what the contract adds: the members it accepts beyond those (`tool_choice`, `user`,
  `max_tokens`, an unknown member that is null) and the ones it refuses with 422 `unsupported_field`.

Each builder takes `body(label, **members)`, the suite's plain turn under its own run tag, and returns rows; pure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from conformance.rules.violations import Violation

if TYPE_CHECKING:
    from conformance.channels.endpoints import ChannelAnswer

UNKNOWN_MEMBER = "conformance_unknown_member"
UNKNOWN_MODEL = "conformance-no-such-model"
Body = Callable[..., dict[str, Any]]


def with_instructions(made: dict[str, Any], *roles_and_texts: tuple[str, str]) -> dict[str, Any]:
    """`made` (a chat body) with instruction messages before its user message."""
    return {**made, "messages": [{"role": r, "content": t} for r, t in roles_and_texts] + made["messages"]}


def chat_standard(body: Body) -> dict[str, dict[str, Any]]:
    """OPENAI-PROTO-001: what -> a request OpenAI's API serves (stream and stream_options are in every body)."""
    return {
        "temperature 0.5": body("temperature", temperature=0.5),
        "n 1": body("n1", n=1),
        "max_completion_tokens": body("max-completion", max_completion_tokens=4096),
        "a system message": with_instructions(body("system"), ("system", "Answer as a network engineer.")),
        "a developer message": with_instructions(body("developer"), ("developer", "Answer as a network engineer.")),
    }


def chat_contract_accepted(body: Body) -> dict[str, dict[str, Any]]:
    """OPENAI-001: members the contract accepts besides the standard ones, and `temperature` at INPUT-003's bounds."""
    return {
        "tool_choice none": body("none", tool_choice="none"),
        "tool_choice auto and user": body("auto", tool_choice="auto", user="conformance"),
        "max_tokens": body("max-tokens", max_tokens=4096),
        "temperature 0 (a value, not unset)": body("temperature-0", temperature=0),
        "temperature 2": body("temperature-2", temperature=2),
        "an unknown member that is null": body("null", **{UNKNOWN_MEMBER: None}),
    }


WEB_SEARCH = "web_search_options"


def chat_refused(body: Body) -> list[tuple[str, dict[str, Any], int, str, str]]:
    """OPENAI-001: (what, body, status, code, the member the refusal names)."""
    return [
        ("an unknown member", body("unknown", **{UNKNOWN_MEMBER: {"x": 1}}), 422, "unsupported_field", UNKNOWN_MEMBER),
        ("n 2", body("n2", n=2), 422, "unsupported_field", "n"),
        ("tool_choice required", body("required", tool_choice="required"), 422, "unsupported_field", "tool_choice"),
        ("a model not listed", body("model", model=UNKNOWN_MODEL), 404, "model_not_found", "model"),
        # null where openai 3.57's request schema takes only an object (ChatCompletionCreateParams.web_search_options)
        ("web_search_options null", body("null", web_search_options=None), 422, "validation_error", WEB_SEARCH),
    ]


def responses_standard(made: dict[str, Any], instruction: str) -> dict[str, Any]:
    """OPENAI-PROTO-007: one response request with the standard members: `input` as a list of a developer and a
    user message, `instructions`, `temperature`, `max_output_tokens`, and `metadata` of string values only (never
    null: the API takes strings, a server may refuse anything else)."""
    text = made["input"]
    return {
        **made,
        "input": [{"role": "developer", "content": "Answer as a network engineer."}, {"role": "user", "content": text}],
        "instructions": instruction,
        "temperature": 0.5,
        "max_output_tokens": 4096,
        "metadata": {**made.get("metadata", {}), "conformance": "standard members"},
    }


def session_metadata(session: Any) -> dict[str, Any] | None:
    """The `metadata` continuing `session`, or None when there is no session to name: metadata values are strings
    (the API reference), so a null is never sent."""
    return {"session_id": session} if isinstance(session, str) and session else None


def not_served(requirement: str, what: str, answer: ChannelAnswer) -> list[Violation]:
    """A request that must be served (PROTO-001's standard members, OPENAI-001's): answered with a stream the
    server ended; a refusal of it is `requirement`'s violation."""
    if answer.status == 200 and answer.streamed and answer.completed:
        return []
    return [Violation(requirement, f"a request with {what} was not answered with a stream: {answer.describe()}")]
