"""Snapshot-testing SSE streams: a stable text form of a stream, and a syrupy extension that stores it.

Opaque values (session ids, tool call ids, message ids) are masked by ordinal (`<session_id:1>`), so equal
ids stay visibly equal and a change of identity shows in the diff; runs of heartbeats collapse to one line
(their number depends on timing). Each protocol the server speaks has its own form (`protocol=`): the GNS3 stream
judged by its framing rules; an OpenAI Chat Completions, Responses, UI message stream or AG-UI stream as its
frames came (`event:` lines kept, `data: [DONE]` where the protocol sends it, comments left out), its ids,
`created`/`created_at` and timestamps masked by ordinal. Use it in any pytest suite (syrupy comes with the suite):

    from conformance.reports.sse_snapshot import SseSnapshotExtension, snapshot_text
    def test_stream(snapshot):
        assert snapshot_text(body) == snapshot(extension_class=SseSnapshotExtension)
        assert snapshot_text(openai_body, protocol="openai_chat") == snapshot(extension_class=SseSnapshotExtension)
"""

from __future__ import annotations

import json
from typing import Any

from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

from conformance.rules.framing import parse_stream
from conformance.transport.sse import parse

MASKED_KEYS = {"session_id": "session_id", "tool_call_id": "tool_call_id", "message_id": "message_id"}
PROTOCOLS = ("gns3", "openai_chat", "openai_responses", "ui", "ag_ui")
# The channels' values that differ on every run, each masked by ordinal under its own name: ids (OpenAI's
# completion, response, item and call ids; the UI stream's and AG-UI's message, tool call, thread and run ids), and
# the times (`created`, `created_at`, AG-UI's `timestamp`).
CHANNEL_MASKED_KEYS = frozenset(
    {
        "id",
        "session_id",
        "system_fingerprint",
        "created",
        "created_at",
        "completed_at",
        "item_id",
        "call_id",
        "previous_response_id",
        "messageId",
        "toolCallId",
        "parentMessageId",
        "threadId",
        "runId",
        "timestamp",
    }
)


class _Masker:
    def __init__(self) -> None:
        self._seen: dict[tuple[str, str], int] = {}

    def mask(self, kind: str, value: str) -> str:
        key = (kind, value)
        if key not in self._seen:
            self._seen[key] = 1 + sum(1 for k, _ in self._seen if k == kind)
        return f"<{kind}:{self._seen[key]}>"

    def walk_channel(self, value: Any, key: str | None = None) -> Any:
        if isinstance(value, dict):
            return {k: self.walk_channel(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self.walk_channel(v, key) for v in value]
        if key in CHANNEL_MASKED_KEYS and isinstance(value, str | int | float) and not isinstance(value, bool):
            return self.mask(key, str(value))
        return value

    def walk(self, value: Any, key: str | None = None, parent_key: str | None = None) -> Any:
        if isinstance(value, dict):
            return {k: self.walk(v, k, key) for k, v in value.items()}
        if isinstance(value, list):
            return [self.walk(v, key, parent_key) for v in value]
        if isinstance(value, str) and key in MASKED_KEYS:
            return self.mask(MASKED_KEYS[key], value)
        if isinstance(value, str) and key == "id" and parent_key == "tool_call":
            return self.mask("tool_call_id", value)  # the id of a streamed call is the tool_call_id that follows
        return value


def snapshot_events(events: list[dict[str, Any]]) -> str:
    masker = _Masker()
    lines: list[str] = []
    for event in events:
        line = "data: " + json.dumps(masker.walk(event), ensure_ascii=False, sort_keys=True)
        if event.get("type") == "heartbeat" and lines and lines[-1] == line:
            continue
        lines.append(line)
    return "\n\n".join(lines) + "\n"


def channel_snapshot(body: str) -> str:
    """The stable form of a channel's stream: each frame's `event:` and data (JSON masked and keys sorted, anything
    else as it came, `[DONE]` among it), comments (heartbeats) left out, an unfinished last frame said so."""
    masker = _Masker()
    frames: list[str] = []
    parsed = parse(body)
    for frame in parsed.messages:
        lines = [f"event: {frame.event}"] if frame.event is not None else []
        value = frame.json()
        if frame.data is not None and isinstance(value, dict | list):
            lines.append("data: " + json.dumps(masker.walk_channel(value), ensure_ascii=False, sort_keys=True))
        elif frame.data is not None:
            lines.append(f"data: {frame.data}")
        frames.append("\n".join(lines))
    text = "\n\n".join(frames) + "\n"
    if parsed.unterminated.strip():
        text += "# unfinished: the stream ended inside a frame\n"
    return text


def snapshot_text(body: str, protocol: str = "gns3") -> str:
    """The stable form of a stream body of `protocol` (PROTOCOLS); the GNS3 stream's framing errors are kept
    visible rather than hidden."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {', '.join(PROTOCOLS)}, not {protocol!r}")
    if protocol != "gns3":
        return channel_snapshot(body)
    parsed = parse_stream(body)
    text = snapshot_events(parsed.events)
    if parsed.violations:
        text += "".join(f"# framing: {violation}\n" for violation in parsed.violations)
    return text


class SseSnapshotExtension(SingleFileSnapshotExtension):
    """One reviewable `.sse` file per snapshot."""

    file_extension = "sse"
    _write_mode = WriteMode.TEXT

    def serialize(self, data: Any, **_: Any) -> str:
        return str(data)
