"""Message converters: LangChain messages -> the contract's OpenAI-format history messages (HISTORY-001..005)."""

from __future__ import annotations

import json
import uuid
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from gns3_copilot_generated.api.message import OpenAIMessage
from gns3_copilot_generated.api.tool_call import OpenAIToolCall, OpenAIToolCallFunction

_ROLES = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}


def _content_text(content: Any) -> str:
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


def to_openai(message: BaseMessage, *, fallback_id: str) -> OpenAIMessage:
    """One LangChain message as an OpenAI message; arguments always a JSON string (HISTORY-004)."""
    role = _ROLES.get(message.type)
    if role is None:
        raise ValueError(f"cannot convert a {message.type!r} message to OpenAI format")
    fields: dict[str, Any] = {
        "id": message.id or fallback_id,
        "role": role,
        "content": _content_text(message.content),
        "created_at": message.response_metadata.get("created_at"),
    }
    if isinstance(message, AIMessage) and message.tool_calls:
        fields["tool_calls"] = [
            OpenAIToolCall(
                id=call["id"],
                type="function",
                function=OpenAIToolCallFunction(name=call["name"], arguments=json.dumps(call["args"])),
            )
            for call in message.tool_calls
        ]
    if isinstance(message, ToolMessage):
        fields["tool_call_id"] = message.tool_call_id
        fields["name"] = message.name
    return OpenAIMessage.model_validate(fields)


def history_to_openai(thread_id: str, messages: list[BaseMessage]) -> list[OpenAIMessage]:
    # Messages from the checkpointer always have ids (set when created); the fallback is stable per position.
    return [
        to_openai(m, fallback_id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"{thread_id}/{i}")))
        for i, m in enumerate(messages)
    ]
