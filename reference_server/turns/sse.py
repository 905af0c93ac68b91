"""The SSE framing every channel shares: one `data:` line per message, LF only (AG-UI's client splits on `\\n\\n`),
comments as heartbeats (CHANNEL-007), and the headers that keep proxies from buffering a stream."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any, Protocol

from fastapi.responses import StreamingResponse

from .core import ChannelTurn, contract_events, session_header

NO_BUFFERING = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
HEARTBEAT_FRAME = ": heartbeat\n\n"  # an SSE comment: every protocol's real client skips it, none sees a message
DONE_FRAME = "data: [DONE]\n\n"  # the end marker of OpenAI Chat Completions and the UI message stream


# json.dumps' bytes, from one encoder: json.dumps with options makes a new encoder per call, i.e. per event.
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


# Characters JSON leaves raw that line readers take for line ends: `str.splitlines()`, and so httpx's `iter_lines()`,
# splits on U+0085, U+2028 and U+2029 (and on the C0 separators JSON escapes anyway). Escaped, a frame is one line
# to every reader, as SSE means it; the JSON value is the same. (Searched first: most frames have none.)
_LINE_BREAKERS = re.compile("[\u0085\u2028\u2029]")


def _escaped(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def data_frame(payload: dict[str, Any]) -> str:
    text = _encode(payload)
    if _LINE_BREAKERS.search(text):
        text = _LINE_BREAKERS.sub(_escaped, text)
    return f"data: {text}\n\n"


def event_frame(kind: str, payload: dict[str, Any]) -> str:
    """A frame with an `event:` line, as OpenAI's Responses stream writes them."""
    return f"event: {kind}\n{data_frame(payload)}"


class Translator(Protocol):
    """A channel's translation of one turn: its first frames at once, then the frames of each batch of events."""

    def opening(self) -> str: ...

    def feed(self, batch: list[dict[str, Any]]) -> str: ...


def stream_response(channel_turn: ChannelTurn, translator: Translator, headers: dict[str, str]) -> StreamingResponse:
    """The turn as a `text/event-stream` answer; its session in the header every channel sends (OPENAI-002)."""

    async def frames() -> AsyncIterator[str]:
        yield translator.opening()  # at once: the client shows the answer before the first token
        async for batch in contract_events(channel_turn):
            if text := translator.feed(batch):
                yield text

    headers = {**headers, **session_header(channel_turn)}
    return StreamingResponse(frames(), media_type="text/event-stream", headers=headers)
