"""The request of one turn on each channel, as the protocols' real clients send it: shared by the golden-stream
recorder and the tests (CHANNEL-001: the paths are relative to the chat prefix)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from gns3_copilot_generated.constants import CHANNEL_PATHS, OPENAI_MODEL_ID

MODEL = OPENAI_MODEL_ID  # the model id GET {prefix}/openai/v1/models lists (OPENAI-007)

Request = tuple[str, dict[str, Any]]  # (path under the chat prefix, JSON body)


def openai_chat(session_id: str, message: str) -> Request:
    return CHANNEL_PATHS["openai"] + "/chat/completions", {
        "model": MODEL,
        "messages": [{"role": "user", "content": message}],
        "stream": True,
        "stream_options": {"include_usage": True},
        "metadata": {"session_id": session_id},
    }


def openai_responses(session_id: str, message: str) -> Request:
    return CHANNEL_PATHS["openai"] + "/responses", {
        "model": MODEL,
        "input": message,
        "stream": True,
        "metadata": {"session_id": session_id},
    }


def ui(session_id: str, message: str) -> Request:
    """DefaultChatTransport's body: the chat id is the session id (UI-001)."""
    user = {"id": uuid.uuid4().hex, "role": "user", "parts": [{"type": "text", "text": message}]}
    return CHANNEL_PATHS["ui"], {"id": session_id, "messages": [user], "trigger": "submit-message"}


def ag_ui(session_id: str, message: str) -> Request:
    """HttpAgent's RunAgentInput: the thread id is the session id (AGUI-001)."""
    user = {"id": uuid.uuid4().hex, "role": "user", "content": message}
    body = {"threadId": session_id, "runId": uuid.uuid4().hex, "messages": [user]}
    return CHANNEL_PATHS["ag_ui"], {**body, "tools": [], "context": [], "state": {}, "forwardedProps": {}}


def gns3(session_id: str, message: str) -> Request:
    return "/stream", {"message": message, "session_id": session_id}


CHANNELS: dict[str, Callable[[str, str], Request]] = {
    "openai-chat": openai_chat,
    "openai-responses": openai_responses,
    "ui": ui,
    "ag-ui": ag_ui,
}
