"""A tool call's result as the server gave it to its LLM, and whether it reads as a failure: how preflight proves
that a target's declared failing and raising tools fail (a declared failing tool that in fact succeeds would make
TOOLCALL-008's failing case pass on a turn where nothing failed)."""

from __future__ import annotations

import re
from typing import Any

# Words any failure message of a tool holds one of ("Error: ...", {"error": ...}, "... failed", "Missing required
# fields", "seconds must be between 1 and 600"); a successful result such as {"waited": 1} holds none.
FAILURE_WORDS = (
    "error",
    "fail",
    "exception",
    "invalid",
    "missing",
    "not found",
    "unknown",
    "unsupported",
    "denied",
    "refused",
    "cannot",
    "unable",
    "must",
    "traceback",
)
_FAILURE = re.compile("|".join(re.escape(word) for word in FAILURE_WORDS), re.IGNORECASE)


def reads_as_failure(text: str) -> bool:
    return bool(_FAILURE.search(text))


def _text(content: Any) -> str:
    """A message's content: a string, or the text of its parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) if isinstance(part, dict) else str(part) for part in content)
    return "" if content is None else str(content)


def tool_result(requests: list[dict[str, Any]], call_id: str) -> str | None:
    """The content of the `tool` message answering `call_id` in the generations' requests to the fake LLM (the
    request log's `messages`), or None when no generation received it (the turn ended before a next generation)."""
    for request in requests:
        for message in request.get("messages") or []:
            if isinstance(message, dict) and message.get("role") == "tool" and message.get("tool_call_id") == call_id:
                return _text(message.get("content"))
    return None
