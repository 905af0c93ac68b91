"""The contract's framing of the GNS3 chat stream (FRAME-002/003), judged on the frames of the suite's one SSE
tokenizer (conformance/transport/sse.py), live streams and recorded ones alike.

A general SSE client is deliberately lenient: it accepts CRLF, comment lines, `event:` fields and multi-line data, all
of which this contract forbids. The tokenizer keeps each frame's exact lines, so the one frame shape the contract
allows is judged here: `data: <json>\\n\\n`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from conformance.rules.violations import Violation
from conformance.transport.sse import Frame, SseBody, parse

DATA_PREFIX = "data: "


@dataclass
class ParsedStream:
    events: list[Any] = field(default_factory=list)  # the JSON payloads, in order
    arrivals: list[float] = field(default_factory=list)  # per event: seconds from the request to its frame's end
    violations: list[Violation] = field(default_factory=list)


def parse_stream(body: str) -> ParsedStream:
    """Judge a whole stream body (see judge_frames)."""
    return judge_frames(parse(body))


def judge_frames(sse: SseBody, *, finished: bool = True) -> ParsedStream:
    """The events of the tokenizer's frames, and every framing violation; frames that still parse are kept.
    `finished`: the server ended the body (a body the suite cut short is judged on its complete frames only)."""
    result = ParsedStream()
    if sse.line_ends - {"\n"}:
        result.violations.append(Violation("FRAME-002", "carriage returns in the stream: frames end with \\n\\n only"))
    if finished and sse.unterminated:
        result.violations.append(
            Violation("FRAME-002", f"the stream does not end with a complete frame: {sse.unterminated[-60:]!r}")
        )
    for frame in sse.frames:
        _parse_frame(frame, result)
    return result


def _parse_frame(sse_frame: Frame, result: ParsedStream) -> None:
    index, frame = sse_frame.index, sse_frame.raw
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
        result.arrivals.append(sse_frame.at)
