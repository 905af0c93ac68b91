"""The SSE framing every channel shares: one `data:` line per message, LF only (AG-UI's client splits on `\\n\\n`),
comments as heartbeats (CHANNEL-007), and the headers that keep proxies from buffering a stream."""

from __future__ import annotations

import json
from typing import Any

NO_BUFFERING = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
HEARTBEAT_FRAME = ": heartbeat\n\n"  # an SSE comment: every protocol's real client skips it, none sees a message
DONE_FRAME = "data: [DONE]\n\n"  # the end marker of OpenAI Chat Completions and the UI message stream


def data_frame(payload: dict[str, Any]) -> str:
    return f"data: {json.dumps(payload, ensure_ascii=False, separators=(',', ':'))}\n\n"


def event_frame(kind: str, payload: dict[str, Any]) -> str:
    """A frame with an `event:` line, as OpenAI's Responses stream writes them."""
    return f"event: {kind}\n{data_frame(payload)}"
