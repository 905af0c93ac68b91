"""What both OpenAI endpoints share (spec/behaviour.md, "OpenAI channel"): the error body (OPENAI-004, an `ErrorObject`
of OPENAI-PROTO-006), the model
list (OPENAI-007), reading the members of a request strictly (OPENAI-001, OPENAI-005), and what both make of a turn
of the shared core: its usage as it grows, a contract `error` event as OpenAI's error object, and a failed
non-streamed turn as its 502 (OPENAI-003, OPENAI-004). The two protocol modules never import each other.

The request members are checked by hand, member by member, because the rule is the OpenAI API's own subset:
what a server-run agent can honour is taken, a member it cannot honour is refused by name (`unsupported_field`)
rather than ignored, and the `openai` client's own body passes unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from jsonschema.exceptions import best_match

import gns3_copilot_spec as spec
from gns3_copilot_generated.constants import (
    CHANNEL_INSTRUCTIONS_MAX_LENGTH,
    CHANNEL_MESSAGES_MAX_ITEMS,
    OPENAI_ERROR_TYPES,
    OPENAI_MODEL_ID,
    OPENAI_SERVER_ERROR_TYPE,
)
from reference_server.errors import ApiError
from reference_server.turns.core import ChannelTurn, session_header

MODEL_ID = OPENAI_MODEL_ID  # the one model of GET {prefix}/openai/v1/models (OPENAI-007)
MODEL_CREATED = 1767225600  # 2026-01-01T00:00:00Z: when the model id was defined, for the `created` field
MESSAGE_ROLES = ("system", "developer", "user", "assistant", "tool")
INSTRUCTION_ROLES = ("system", "developer")

# OPENAI-004: the error `type` the status gives, as OpenAI's API names them.
_ERROR_TYPES = OPENAI_ERROR_TYPES


def error_type(status: int) -> str:
    return _ERROR_TYPES.get(status, OPENAI_SERVER_ERROR_TYPE if status >= 500 else _ERROR_TYPES[400])


def render_openai_error(error: ApiError) -> dict[str, Any]:
    """OpenAI's error envelope with the contract's code (CHANNEL-005); `param` names the member at fault. The object
    is openai's ErrorObject, under `error`, with a 4xx or 5xx status (OPENAI-PROTO-006)."""
    param = (error.details or {}).get("param")
    return {
        "error": {
            "message": error.message,
            "type": error_type(error.status),
            "param": param if isinstance(param, str) else None,
            "code": error.code,
        }
    }


Usage = Callable[[], tuple[int, int]]  # (input tokens, output tokens), final once `done` came


def usage_of(channel_turn: ChannelTurn) -> Usage:
    turn = channel_turn.turn
    return lambda: (turn.stats.input_tokens, turn.stats.output_tokens)


def error_object(event: dict[str, Any]) -> dict[str, Any]:
    """A contract `error` event as OpenAI's error object (OPENAI-004)."""
    code = event.get("code") or "llm_error"
    return {"message": event.get("error") or code, "type": error_type(502), "param": None, "code": code}


# The `openai` client re-sends a request answered 408, 409, 429 or 5xx (twice by default) unless the answer says
# `x-should-retry: false`: a failed turn ran and is kept, so re-sending it would run it again in the session.
NO_RETRY = {"x-should-retry": "false"}
# What a non-streamed answer's client that left is "answered" (nginx's code: nobody reads it; logs show why).
CLIENT_CLOSED_REQUEST = 499


def not_retried(error: ApiError) -> ApiError:
    """A 409 `session_busy` on the OpenAI paths says not to retry (issue 34): the `openai` client re-sends a 409
    twice by default, each a request that could start a turn of its own once the session is free."""
    if error.status == 409:
        error.headers = {**(error.headers or {}), **NO_RETRY}
    return error


def failure_of(events: list[dict[str, Any]], channel_turn: ChannelTurn) -> ApiError | None:
    """A turn that failed, answered after the fact: 502 with the contract error's code (OPENAI-003)."""
    failed = next((event for event in events if event["type"] == "error"), None)
    if failed is None:
        return None
    error = error_object(failed)
    return ApiError(502, error["code"], error["message"], headers={**session_header(channel_turn), **NO_RETRY})


def invalid(param: str, message: str) -> ApiError:
    return ApiError(422, "validation_error", message, details={"param": param})


def unsupported(param: str) -> ApiError:
    return ApiError(
        422,
        "unsupported_field",
        f"'{param}' is not supported by this server: the copilot runs its own agent and tools, and takes only "
        "the members its OpenAI channel documents",
        details={"param": param},
    )


# The OpenAI API's own request schemas (spec/channels/official/, derived from the `openai` package), streamed and not.
OFFICIAL_PARAMS = {
    "chat": ("openai_chat_completion_create_params_streaming", "openai_chat_completion_create_params_non_streaming"),
    "responses": ("openai_response_create_params_streaming", "openai_response_create_params_non_streaming"),
}


def refuse_off_schema(body: dict[str, Any], endpoint: str) -> None:
    """OPENAI-001, OPENAI-005: after the member-by-member reading (whose refusals name the contract's codes), a body
    the API's own params schema refuses is refused too, naming the member: `null` for a member the API does not
    let be null, say. What spec/openapi.yaml documents is then what the server takes (stock Schemathesis)."""
    streamed, whole = OFFICIAL_PARAMS[endpoint]
    name = streamed if body.get("stream") is True else whole
    error = best_match(spec.schema_validator(spec.OFFICIAL_DIR / f"{name}.json").iter_errors(body))
    if error is not None:
        param = ".".join(str(part) for part in error.absolute_path) or "body"
        raise invalid(param, f"'{param}' does not fit the OpenAI API's request schema: {error.message[:200]}")


def model_list() -> dict[str, Any]:
    """OPENAI-007: the one model, each entry a `Model` of OPENAI-PROTO-010."""
    return {
        "object": "list",
        "data": [{"id": MODEL_ID, "object": "model", "created": MODEL_CREATED, "owned_by": "gns3"}],
    }


def checked_model(body: dict[str, Any]) -> str:
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise invalid("model", "'model' is required: a model id of GET .../openai/v1/models")
    if model != MODEL_ID:
        raise ApiError(
            404,
            "model_not_found",
            f"The model '{model}' does not exist; this server has '{MODEL_ID}'",
            details={"param": "model"},
        )
    return model


def refuse_unknown_members(body: dict[str, Any], supported: set[str]) -> None:
    """Every member outside the documented subset that asks for something (not null) is refused by name."""
    for name, value in body.items():
        if name not in supported and value is not None:
            raise unsupported(name)


def refuse_client_tools(body: dict[str, Any]) -> None:
    """CHANNEL-006: the server runs its own tools; tools offered by the client cannot be called back."""
    for name in ("tools", "functions"):
        value = body.get(name)
        if value is None or value == []:
            continue
        if not isinstance(value, list):
            raise invalid(name, f"'{name}' must be a list")
        raise ApiError(
            422,
            "client_tools_not_supported",
            f"The copilot runs its own tools on the server and never hands a tool call to the client; send no '{name}'",
            details={"param": name},
        )
    choice = body.get("tool_choice")
    if choice is not None and choice not in ("none", "auto"):
        raise unsupported("tool_choice")


def checked_temperature(body: dict[str, Any]) -> float | None:
    """INPUT-003: a number from 0 to 2, or null."""
    value = body.get("temperature")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or not 0 <= value <= 2:
        raise invalid("temperature", "'temperature' must be a number from 0 to 2")
    return float(value)


def checked_token_bound(body: dict[str, Any], *names: str) -> None:
    """OPENAI-001, OPENAI-005: a bound on a generation's tokens (`max_completion_tokens`, `max_tokens`,
    `max_output_tokens`), a positive integer or null. Accepted as the API defines it (OPENAI-PROTO-001) and not
    applied: a copilot turn is an agent's run of several generations, which the contract does not cut."""
    for name in names:
        value = body.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise invalid(name, f"'{name}' must be a positive integer")


def checked_boolean(body: dict[str, Any], name: str, default: bool, param: str | None = None) -> bool:
    value = body.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise invalid(param or name, f"'{param or name}' must be a boolean")
    return value


def checked_metadata(body: dict[str, Any]) -> dict[str, str]:
    """OpenAI's `metadata`: a map of strings; `session_id` names the session (OPENAI-001)."""
    value = body.get("metadata")
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise invalid("metadata", "'metadata' must be an object whose values are strings")
    return value


def checked_user(body: dict[str, Any]) -> None:
    if body.get("user") is not None and not isinstance(body["user"], str):
        raise invalid("user", "'user' must be a string")


def text_of(content: Any, param: str, part_types: tuple[str, ...]) -> str:
    """A message's text: a string, or a list of text parts (`text` in Chat Completions, `input_text` and
    `output_text` in Responses); anything else (images, audio, files) is refused."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and content:
        texts = []
        for index, part in enumerate(content):
            if (
                not isinstance(part, dict)
                or part.get("type") not in part_types
                or not isinstance(part.get("text"), str)
            ):
                raise invalid(f"{param}[{index}]", f"only text content ({', '.join(part_types)} parts) is supported")
            texts.append(part["text"])
        return "".join(texts)
    raise invalid(param, "a message's content must be a string or a list of text parts")


def split_conversation(messages: list[Any], param: str, part_types: tuple[str, ...]) -> tuple[str, list[str], bool]:
    """(the turn's message, the instructions' texts, whether earlier conversation came with it) (CHANNEL-004)."""
    if not messages:
        raise invalid(param, f"'{param}' must hold at least the user's message")
    if len(messages) > CHANNEL_MESSAGES_MAX_ITEMS:  # CHANNEL-011
        raise invalid(param, f"'{param}' holds {len(messages)} messages, more than {CHANNEL_MESSAGES_MAX_ITEMS}")
    instructions, earlier = [], False
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in MESSAGE_ROLES:
            raise invalid(f"{param}[{index}]", f"a message is an object with a role among {', '.join(MESSAGE_ROLES)}")
        if message.get("type", "message") != "message":
            raise unsupported(f"{param}[{index}].type")
        last = index == len(messages) - 1
        if message["role"] in INSTRUCTION_ROLES:
            if last:
                break
            instructions.append(text_of(message.get("content"), f"{param}[{index}].content", part_types))
        elif not last:
            earlier = True
    final = messages[-1]
    if final.get("role") != "user":
        raise invalid(param, "the last message must be the user's message: it is the turn's message")
    text = text_of(final.get("content"), f"{param}[{len(messages) - 1}].content", part_types)
    return text, instructions, earlier


def joined_instructions(parts: list[str], param: str) -> str | None:
    """The turn's instructions, one part after another; their characters counted together are bounded (CHANNEL-011),
    as each is added to the system prompt of every generation of the turn."""
    counted = sum(len(part) for part in parts)
    if counted > CHANNEL_INSTRUCTIONS_MAX_LENGTH:
        raise invalid(
            param,
            f"the instructions hold {counted} characters, more than {CHANNEL_INSTRUCTIONS_MAX_LENGTH}: system and "
            "developer messages and 'instructions' are counted together",
        )
    return "\n\n".join(part for part in parts if part) or None
