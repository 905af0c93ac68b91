"""Snapshot-testing SSE streams: a stable text form of a stream, and a syrupy extension that stores it.

Opaque values (session ids, tool call ids, message ids) are masked by ordinal (`<session_id:1>`), so equal
ids stay visibly equal and a change of identity shows in the diff; runs of heartbeats collapse to one line
(their number depends on timing). Use it in any pytest suite (syrupy comes with the suite):

    from conformance.reports.sse_snapshot import SseSnapshotExtension, snapshot_text
    def test_stream(snapshot):
        assert snapshot_text(body) == snapshot(extension_class=SseSnapshotExtension)
"""

from __future__ import annotations

import json
from typing import Any

from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

from conformance.rules.framing import parse_stream

MASKED_KEYS = {"session_id": "session_id", "tool_call_id": "tool_call_id", "message_id": "message_id"}


class _Masker:
    def __init__(self) -> None:
        self._seen: dict[tuple[str, str], int] = {}

    def mask(self, kind: str, value: str) -> str:
        key = (kind, value)
        if key not in self._seen:
            self._seen[key] = 1 + sum(1 for k, _ in self._seen if k == kind)
        return f"<{kind}:{self._seen[key]}>"

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


def snapshot_text(body: str) -> str:
    """The stable form of a stream body; framing errors are kept visible rather than hidden."""
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
