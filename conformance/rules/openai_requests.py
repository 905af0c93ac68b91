"""The requests channel_openai.requests and .responses send, as tables, each member in a request of its own (what a
server refuses is then named), in two voices:

- OPENAI-PROTO-001 / -007: members the API reference defines, with values a one-choice text answer can honour; a
  server SHOULD serve them (chat: https://platform.openai.com/docs/api-reference/chat/create, `temperature`,
  `top_p`, `stop`, `seed`, `presence_penalty`, `frequency_penalty`, `n`, `max_completion_tokens`, the caller's
  identifiers, `messages` of the roles system and developer, `stream_options`; responses:
  https://platform.openai.com/docs/api-reference/responses/create, `input` as a list of messages, `instructions`,
  `temperature`, `top_p`, `max_output_tokens`, `truncation`, `store: false`, the caller's identifiers, `metadata`
  whose values are strings of at most 512 characters). Not sent in this voice: the members only some model families
  take (`reasoning_effort`, `verbosity`, `reasoning`, `prediction`), and `parallel_tool_calls`, which OpenAI's
  Chat Completions refuses 400 without `tools`: a server refusing them may be answering as OpenAI does.
- OPENAI-001 / -005: what the contract adds: the members it accepts beyond those (`tool_choice`, `max_tokens`,
  `parallel_tool_calls`, the model-family hints, an unknown member that is null) and the ones it refuses with 422
  `unsupported_field`, each naming what a turn cannot give.

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
        "top_p 0.9": body("top-p", top_p=0.9),
        "a stop sequence": body("stop", stop=["\n\nUser:"]),  # never in the scripts' texts
        "seed": body("seed", seed=20261202),
        "presence_penalty": body("presence-penalty", presence_penalty=0.5),
        "frequency_penalty": body("frequency-penalty", frequency_penalty=0.5),
        "n 1": body("n1", n=1),
        "max_completion_tokens": body("max-completion", max_completion_tokens=4096),
        "user, safety_identifier and prompt_cache_key": body("ids", **CALLER_IDS),
        "a system message": with_instructions(body("system"), ("system", "Answer as a network engineer.")),
        "a developer message": with_instructions(body("developer"), ("developer", "Answer as a network engineer.")),
    }


CALLER_IDS = {"user": "conformance", "safety_identifier": "conformance-user", "prompt_cache_key": "conformance"}


def chat_contract_accepted(body: Body) -> dict[str, dict[str, Any]]:
    """OPENAI-001: members the contract accepts besides the standard ones, and `temperature` at INPUT-003's bounds."""
    return {
        "tool_choice none": body("none", tool_choice="none"),
        "tool_choice auto": body("auto", tool_choice="auto"),
        "max_tokens": body("max-tokens", max_tokens=4096),
        "parallel_tool_calls false": body("parallel", parallel_tool_calls=False),
        "reasoning_effort, verbosity, store and service_tier": body("hints", **CHAT_HINTS),
        "logprobs false, response_format text and modalities text": body("text-only", **TEXT_ONLY),
        "temperature 0 (a value, not unset)": body("temperature-0", temperature=0),
        "temperature 2": body("temperature-2", temperature=2),
        "an unknown member that is null": body("null", **{UNKNOWN_MEMBER: None}),
    }


WEB_SEARCH = "web_search_options"
CHAT_HINTS = {"reasoning_effort": "low", "verbosity": "low", "store": True, "service_tier": "auto"}
TEXT_ONLY = {"logprobs": False, "response_format": {"type": "text"}, "modalities": ["text"]}


def chat_refused(body: Body) -> list[tuple[str, dict[str, Any], int, str, str]]:
    """OPENAI-001: (what, body, status, code, the member the refusal names)."""
    return [
        ("an unknown member", body("unknown", **{UNKNOWN_MEMBER: {"x": 1}}), 422, "unsupported_field", UNKNOWN_MEMBER),
        ("n 2", body("n2", n=2), 422, "unsupported_field", "n"),
        ("tool_choice required", body("required", tool_choice="required"), 422, "unsupported_field", "tool_choice"),
        ("logprobs true", body("logprobs", logprobs=True), 422, "unsupported_field", "logprobs"),
        ("a JSON response_format", body("json", response_format=JSON), 422, "unsupported_field", "response_format"),
        ("a web search", body("web-search", web_search_options={}), 422, "unsupported_field", WEB_SEARCH),
        ("a model not listed", body("model", model=UNKNOWN_MODEL), 404, "model_not_found", "model"),
        # null where openai 3.57's request schema takes only an object (ChatCompletionCreateParams.web_search_options)
        ("web_search_options null", body("null", web_search_options=None), 422, "validation_error", WEB_SEARCH),
    ]


JSON = {"type": "json_object"}


def responses_standard(made: dict[str, Any], instruction: str) -> dict[str, Any]:
    """OPENAI-PROTO-007: one response request with the standard members: `input` as a list of a developer and a
    user message, `instructions`, `temperature`, `top_p`, `max_output_tokens`, `truncation`, `store: false`, the
    caller's identifiers, and `metadata` of string values only (never null: the API takes strings, a server may
    refuse anything else)."""
    text = made["input"]
    return {
        **made,
        "input": [{"role": "developer", "content": "Answer as a network engineer."}, {"role": "user", "content": text}],
        "instructions": instruction,
        "temperature": 0.5,
        "top_p": 0.9,
        "max_output_tokens": 4096,
        "truncation": "auto",
        "store": False,
        **CALLER_IDS,
        "metadata": {**made.get("metadata", {}), "conformance": "standard members"},
    }


def standard_members(made: dict[str, Any]) -> str:
    """The members a standard request carries besides the turn's own, to name them in a finding."""
    return ", ".join(f"`{name}`" for name in made if name not in ("model", "input", "stream"))


def responses_contract_accepted(body: Body) -> dict[str, Any]:
    """OPENAI-005: one response request with members the contract serves besides the standard ones: `store: true`
    (the session keeps the turn), hints of reasoning models, `include` of output the response has none of."""
    return body(
        "contract",
        store=True,
        reasoning={"effort": "low"},
        text={"format": {"type": "text"}, "verbosity": "low"},
        include=["reasoning.encrypted_content"],
        parallel_tool_calls=True,
        service_tier="auto",
    )


def responses_refused(body: Body) -> list[tuple[str, dict[str, Any], int, str, str]]:
    """OPENAI-005: (what, body, status, code, the member the refusal names): what a turn cannot give."""
    logprobs = ["message.output_text.logprobs"]
    return [
        ("`background: true`", body("background", background=True), 422, "unsupported_field", "background"),
        ("a JSON text.format", body("json", text={"format": JSON}), 422, "unsupported_field", "text.format"),
        ("include of logprobs", body("logprobs", include=logprobs), 422, "unsupported_field", "include"),
        ("an OpenAI conversation", body("conversation", conversation=CONVERSATION), *UNSUPPORTED, "conversation"),
    ]


CONVERSATION = "conv_conformance"
UNSUPPORTED = (422, "unsupported_field")


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
