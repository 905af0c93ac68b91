"""Which members of an OpenAI request the channel serves, and which it refuses (spec/behaviour.md, OPENAI-001 and
OPENAI-005), decided member by member from the API's request schemas (spec/channels/official/, openai 3.57).

A copilot turn answers with one choice of text made by the server's own agent and tools. A member the API defines is
served when every value a one-choice text answer can honour, or ignore without the client noticing, is all it asks
for: sampling and effort hints (the agent's generations keep the model's own settings; `temperature` alone is passed
on, INPUT-003), bounds on a generation's length (a turn is an agent's run of several generations, which the contract
does not cut), the caller's identifiers, caching and processing hints. A value that asks for what a turn cannot give
(several choices, token log probabilities, JSON output, audio, a web search, a moderation pass, a background run, a
stored prompt or conversation of OpenAI's) is refused 422 `unsupported_field` naming it; `refuse_off_schema` then
refuses a value of the wrong type (`validation_error`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .openai_common import unsupported

# What a member asks for that a turn cannot give: (the member the refusal names, a test of the member's value).
Asked = tuple[str, Callable[[Any], bool]]

# Chat Completions members the API defines that are served whatever their value (OPENAI-001), besides those
# chat_request reads itself (model, messages, stream, stream_options, temperature, metadata, user, the tools).
CHAT_HINTS = {
    "top_p", "seed", "presence_penalty", "frequency_penalty", "logit_bias",  # sampling hints
    "reasoning_effort", "verbosity", "prediction",  # effort, length and latency hints
    "max_completion_tokens", "max_tokens", "stop",  # bounds of one generation (checked_token_bound reads the first two)
    "safety_identifier", "prompt_cache_key", "prompt_cache_options", "prompt_cache_retention", "service_tier",
    "store",  # the session keeps the turn whatever `store` says
    "parallel_tool_calls",  # no client tools: nothing to call in parallel or not
}  # fmt: skip


def _named_tool(value: Any) -> bool:
    """A `tool_choice` / `function_call` that requires or names a tool (`none` and `auto` ask for none)."""
    return isinstance(value, dict) or (isinstance(value, str) and value not in ("none", "auto"))


def _not_text_format(value: Any) -> bool:
    return isinstance(value, dict) and value.get("type") != "text"


# Served with the values a one-choice text answer gives; the others ask for what a turn cannot give.
CHAT_ASKED: dict[str, Asked] = {
    "n": ("n", lambda v: isinstance(v, int) and not isinstance(v, bool) and v != 1),  # one choice, the turn's
    "logprobs": ("logprobs", lambda v: v is True),  # an agent's run has no token log probabilities to give
    "response_format": ("response_format", _not_text_format),  # the answer is the copilot's prose, not JSON
    "modalities": ("modalities", lambda v: isinstance(v, list) and "audio" in v),  # text only
    "function_call": ("function_call", _named_tool),  # the server's tools are its own (CHANNEL-006)
}
# Not served at all: any value but null is refused by name, as a member the API does not define is (they are left
# out of CHAT_MEMBERS): log probabilities, audio output, a web search (the copilot has its own tools only), a
# moderation pass by a model of OpenAI's.
CHAT_REFUSED = {"top_logprobs", "audio", "web_search_options", "moderation"}

# Responses members the API defines that are served whatever their value (OPENAI-005), besides those
# responses_request reads itself (model, input, instructions, stream, temperature, metadata, previous_response_id,
# user, tools, tool_choice, max_output_tokens).
RESPONSE_HINTS = {
    "top_p", "reasoning",  # sampling and reasoning hints (a summary of reasoning the answer holds none of)
    "max_tool_calls",  # a bound on the API's built-in tools, of which none is run
    "truncation",  # the session's context is the server's to keep
    "parallel_tool_calls", "safety_identifier", "prompt_cache_key", "prompt_cache_retention", "service_tier",
    "store",  # either value: the session keeps the turn, and previous_response_id continues it
    "stream_options",  # include_obfuscation: no obfuscation padding is sent, as without it
    "image",  # image inputs' compression; the input is text only
}  # fmt: skip
RESPONSE_ASKED: dict[str, Asked] = {
    "background": ("background", lambda v: v is True),  # no response is kept to poll
    "include": ("include", lambda v: isinstance(v, list) and "message.output_text.logprobs" in v),  # the other
    # items name output the response holds none of (tool calls, reasoning, input images): nothing to add
    "text": ("text.format", lambda v: isinstance(v, dict) and _not_text_format(v.get("format"))),  # verbosity served
    "prompt_cache_options": (  # a turn always generates its answer
        "prompt_cache_options.prewarm",
        lambda v: isinstance(v, dict) and v.get("prewarm") is True,
    ),
}
# Not served at all: a background run's options, an OpenAI conversation (the session is named by metadata.session_id
# or previous_response_id), a stored prompt template, compaction, a moderation pass, an access program of OpenAI's
# models, log probabilities.
RESPONSE_REFUSED = {"background_options", "conversation", "prompt", "context_management", "moderation"}
RESPONSE_REFUSED |= {"access_programs", "top_logprobs"}


def refuse_asked(body: dict[str, Any], asked: dict[str, Asked]) -> None:
    """OPENAI-001, OPENAI-005: a member whose value asks for what a turn cannot give is refused by name."""
    for member, (param, asks) in asked.items():
        if asks(body.get(member)):
            raise unsupported(param)
