"""OpenAI Chat Completions over the copilot's turn (spec/behaviour.md, "OpenAI channel": OPENAI-001..004, and "OpenAI
protocol": OPENAI-PROTO-001..005, the API's own rules that the mapping keeps), and the
router of the whole OpenAI channel (chat completions, responses, models).

`ChatCompletionStream` is the pure translation of a turn's contract events into `chat.completion.chunk` frames;
only the turn's text is sent, because the server runs its tools itself and a client must never be handed a
call to execute (CHANNEL-006).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse

from gns3_copilot_generated.constants import CHANNEL_PATHS
from reference_server.errors import ApiError
from reference_server.json_input import json_value
from reference_server.prelude import Authenticated, OpenedProject
from reference_server.turns.core import TurnRequest, run_to_end, session_header, start_channel_turn
from reference_server.turns.sse import DONE_FRAME, HEARTBEAT_FRAME, NO_BUFFERING, data_frame, stream_response

from .openai_common import (
    CLIENT_CLOSED_REQUEST,
    MODEL_ID,
    Usage,
    checked_boolean,
    checked_metadata,
    checked_model,
    checked_temperature,
    checked_token_bound,
    checked_user,
    error_object,
    failure_of,
    invalid,
    joined_instructions,
    model_list,
    not_retried,
    refuse_client_tools,
    refuse_off_schema,
    refuse_unknown_members,
    split_conversation,
    unsupported,
    usage_of,
)
from .openai_members import CHAT_ASKED, CHAT_HINTS, refuse_asked

# OPENAI-001: what a chat completion request may carry (openai_members.py says why each member is served or not);
# `tools`, `functions` and `tool_choice` only empty / none / auto (CHANNEL-006).
CHAT_MEMBERS = {"model", "messages", "stream", "stream_options", "temperature", "metadata", "user", "tools"}
CHAT_MEMBERS |= {"functions", "tool_choice", *CHAT_HINTS, *CHAT_ASKED}
# The members of `stream_options` served: include_obfuscation of either value sends no obfuscation padding, as a
# request without it (the API's default is true) is answered; the client reads none.
STREAM_OPTIONS = ("include_usage", "include_obfuscation")


@dataclass(frozen=True)
class ChatOptions:
    stream: bool
    include_usage: bool


def chat_request(body: Any) -> tuple[TurnRequest, ChatOptions]:
    if not isinstance(body, dict):
        raise invalid("body", "the body must be a JSON object")
    refuse_unknown_members(body, CHAT_MEMBERS)
    checked_model(body)
    refuse_client_tools(body)
    refuse_asked(body, CHAT_ASKED)
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise invalid("messages", "'messages' must be a list of messages")
    message, parts, earlier = split_conversation(messages, "messages", ("text",))
    instructions = joined_instructions(parts, "messages")  # CHANNEL-011
    stream = checked_boolean(body, "stream", False)
    options = body.get("stream_options")
    if options is not None and not isinstance(options, dict):
        raise invalid("stream_options", "'stream_options' must be an object")
    for name, value in (options or {}).items():
        if name not in STREAM_OPTIONS and value is not None:  # a member the API does not define: refused by name
            raise unsupported(f"stream_options.{name}")
    include_usage = checked_boolean(options or {}, "include_usage", False, "stream_options.include_usage")
    checked_user(body)
    checked_token_bound(body, "max_completion_tokens", "max_tokens")
    session_id, temperature = checked_metadata(body).get("session_id"), checked_temperature(body)
    refuse_off_schema(body, "chat")
    wanted = TurnRequest(
        session_id=session_id,
        message=message,
        temperature=temperature,
        instructions=instructions,
        carries_history=earlier,
        message_loc=("body", "messages", len(messages) - 1, "content"),
        session_loc=("body", "metadata", "session_id"),
    )
    return wanted, ChatOptions(stream=stream, include_usage=include_usage and stream)


def chat_usage(input_tokens: int, output_tokens: int) -> dict[str, int]:
    """CHANNEL-008: the turn's tokens, the session's increase."""
    return {
        "prompt_tokens": input_tokens,
        "completion_tokens": output_tokens,
        "total_tokens": input_tokens + output_tokens,
    }


class ChatCompletionStream:
    """OPENAI-002: a role chunk, a content chunk per contract `content`, a finish chunk, the usage chunk when asked,
    `[DONE]`; a contract `error` is an error frame then `[DONE]`, without a finish chunk (OPENAI-004)."""

    def __init__(self, completion_id: str, created: int, include_usage: bool, usage: Usage) -> None:
        self.completion_id, self.created, self.include_usage = completion_id, created, include_usage
        self.usage = usage
        self.ended = False

    def chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        # A ChatCompletionChunk, every one with the same id and created, one choice of index 0 (OPENAI-PROTO-002);
        # `usage: null` on each when include_usage is asked (OPENAI-PROTO-004).
        chunk = {
            "id": self.completion_id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": MODEL_ID,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        }
        if self.include_usage:
            chunk["usage"] = None
        return chunk

    def opening(self) -> str:
        return data_frame(self.chunk({"role": "assistant", "content": ""}))

    def feed(self, batch: list[dict[str, Any]]) -> str:
        out: list[str] = []
        for event in batch:
            if self.ended:
                break
            kind = event["type"]
            if kind == "content":
                out.append(data_frame(self.chunk({"content": event["content"]})))
            elif kind == "heartbeat":
                out.append(HEARTBEAT_FRAME)
            elif kind == "error":
                out += [data_frame({"error": error_object(event)}), DONE_FRAME]
                self.ended = True
            elif kind == "done":
                out.append(data_frame(self.chunk({}, "stop")))  # an aborted turn ends the same way (OPENAI-002)
                # the choice's one finish chunk (OPENAI-PROTO-003), then the usage chunk last (OPENAI-PROTO-004)
                if self.include_usage:
                    out.append(data_frame({**self.chunk({}), "choices": [], "usage": chat_usage(*self.usage())}))
                out.append(DONE_FRAME)
                self.ended = True
            # tool_call, tool_start, tool_end: the server's own work, not sent (CHANNEL-006)
        return "".join(out)


def completion_object(completion_id: str, created: int, text: str, usage: tuple[int, int]) -> dict[str, Any]:
    """OPENAI-003: one choice, the turn's whole text, in a ChatCompletion (OPENAI-PROTO-005)."""
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": created,
        "model": MODEL_ID,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": None},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": chat_usage(*usage),
    }


router = APIRouter()


@router.post(CHANNEL_PATHS["openai"] + "/chat/completions")
async def chat_completions(project_id: str, caller: Authenticated, project: OpenedProject, request: Request) -> Any:
    wanted, options = chat_request(await json_value(request))
    try:
        channel_turn = await start_channel_turn(project_id, request, caller, wanted)
    except ApiError as refused:
        raise not_retried(refused) from None
    completion_id, created = f"chatcmpl-{uuid.uuid4().hex}", int(time.time())
    if not options.stream:
        events = await run_to_end(channel_turn, request)
        if events is None:  # the client left: the turn was stopped, and there is no one to answer
            return Response(status_code=CLIENT_CLOSED_REQUEST)
        if (failure := failure_of(events, channel_turn)) is not None:
            raise failure
        text = "".join(event["content"] for event in events if event["type"] == "content")
        body = completion_object(completion_id, created, text, usage_of(channel_turn)())
        return JSONResponse(body, headers=session_header(channel_turn))
    translator = ChatCompletionStream(completion_id, created, options.include_usage, usage_of(channel_turn))
    return stream_response(channel_turn, translator, NO_BUFFERING)


@router.get(CHANNEL_PATHS["openai"] + "/models")
async def list_models(caller: Authenticated, project: OpenedProject) -> dict[str, Any]:
    # authenticated, with access to the project (OPENAI-007); OpenAI's model list (OPENAI-PROTO-010)
    return model_list()
