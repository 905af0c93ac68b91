"""What both OpenAI protocols (Chat Completions, Responses) make of a turn of the shared core: its usage as it grows,
a contract `error` event as OpenAI's error object, and a failed non-streamed turn as its 502 (OPENAI-003/004)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reference_server.errors import ApiError
from reference_server.turns.core import ChannelTurn, session_header

from .openai_common import error_type

Usage = Callable[[], tuple[int, int]]  # (input tokens, output tokens), final once `done` came


def usage_of(channel_turn: ChannelTurn) -> Usage:
    turn = channel_turn.turn
    return lambda: (turn.stats.input_tokens, turn.stats.output_tokens)


def error_object(event: dict[str, Any]) -> dict[str, Any]:
    """A contract `error` event as OpenAI's error object (OPENAI-004)."""
    code = event.get("code") or "llm_error"
    return {"message": event.get("error") or code, "type": error_type(502), "param": None, "code": code}


# `x-should-retry: false`: a failed turn ran and is kept, so re-sending it would run it again in the session.
NO_RETRY = {"x-should-retry": "false"}


def failure_of(events: list[dict[str, Any]], channel_turn: ChannelTurn) -> ApiError | None:
    """A turn that failed, answered after the fact: 502 with the contract error's code (OPENAI-003)."""
    failed = next((event for event in events if event["type"] == "error"), None)
    if failed is None:
        return None
    error = error_object(failed)
    return ApiError(502, error["code"], error["message"], headers={**session_header(channel_turn), **NO_RETRY})
