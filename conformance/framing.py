"""Split a chat stream body into events, checking the contract's framing on the exact text (FRAME-002/003).

A general SSE parser is deliberately lenient: it accepts CRLF, comment lines, `event:` fields and multi-line
data, all of which this contract forbids. Framing is therefore checked here on the raw text, live streams and
recorded ones alike, against the one frame shape the contract allows: `data: <json>\\n\\n`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from conformance.violations import Violation

FRAME_END = "\n\n"
DATA_PREFIX = "data: "


@dataclass
class ParsedStream:
    events: list[Any] = field(default_factory=list)  # the JSON payloads, in order
    violations: list[Violation] = field(default_factory=list)


def parse_stream(body: str) -> ParsedStream:
    """Parse a whole stream body; framing violations are reported, and frames that still parse are kept."""
    result = ParsedStream()
    if "\r" in body:
        result.violations.append(Violation("FRAME-002", "carriage returns in the stream: frames end with \\n\\n only"))
        body = body.replace("\r\n", "\n").replace("\r", "\n")
    if body and not body.endswith(FRAME_END):
        result.violations.append(
            Violation("FRAME-002", f"the stream does not end with a complete frame: {body[-60:]!r}")
        )
    for index, frame in enumerate(f for f in body.split(FRAME_END) if f):
        _parse_frame(index, frame, result)
    return result


def _parse_frame(index: int, frame: str, result: ParsedStream) -> None:
    lines = frame.split("\n")
    if len(lines) != 1:
        result.violations.append(
            Violation("FRAME-002", f"a frame has {len(lines)} lines, expected one `data:` line: {frame[:120]!r}", index)
        )
    data_lines = [line for line in lines if line.startswith("data:")]
    for line in lines:
        if not line.startswith("data:"):
            result.violations.append(
                Violation("FRAME-002", f"a line that is not `data: <json>`: {line[:120]!r}", index)
            )
    for line in data_lines:
        if not line.startswith(DATA_PREFIX):
            result.violations.append(
                Violation("FRAME-002", f"`data:` must be followed by one space: {line[:60]!r}", index)
            )
        text = line[len("data:") :].removeprefix(" ")
        if text.strip() == "[DONE]":
            result.violations.append(
                Violation("FRAME-003", "a `[DONE]` line: this protocol ends with the `done` event", index)
            )
            continue
        try:
            payload = json.loads(text)
        except json.JSONDecodeError as error:
            result.violations.append(
                Violation("FRAME-003", f"data that is not JSON ({error.msg}): {text[:120]!r}", index)
            )
            continue
        if not isinstance(payload, dict):
            result.violations.append(Violation("FRAME-002", f"data that is not a JSON object: {text[:120]!r}", index))
            continue
        result.events.append(payload)
