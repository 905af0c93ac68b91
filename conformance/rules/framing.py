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
    `finished`: the server ended the body (a body the suite cut short is judged on its complete frames only).

    These rules once split the body themselves (`body.split("\\n\\n")`), and their verdicts are kept as they were
    (tests/conformance/test_framing_verdicts.py holds that splitter as the oracle), where the tokenizer alone would
    read otherwise: an unfinished last frame still gives its events (a client that forgets the final blank line
    loses no `done` to it: FRAME-002 says what is wrong); and blank lines beyond a frame's own are FRAME-002 when
    their run is odd, where the old splitter began the next frame with an empty line, and pass when it is even,
    where it saw empty frames and dropped them (a quirk kept, not a reading of the contract). Not kept: how the old
    client cut a body it stopped reading at the last `\\n\\n` of the raw text, so that it judged frames ended with CRs
    as absent (a stream with CR line ends only was never cut by a stop condition, and at the deadline it judged the
    body's first character as a frame): a body the suite cut is judged on the frames the tokenizer completed."""
    result = ParsedStream()
    if sse.line_ends - {"\n"}:
        result.violations.append(Violation("FRAME-002", "carriage returns in the stream: frames end with \\n\\n only"))
    for before, run in sse.extra_blank_lines:
        if run % 2:
            result.violations.append(Violation("FRAME-002", f"{run} blank line(s) that end no frame", before))
    if finished and sse.unterminated:
        result.violations.append(
            Violation("FRAME-002", f"the stream does not end with a complete frame: {sse.unterminated[-60:]!r}")
        )
    for frame in sse.frames:
        _parse_frame(frame, result)
    if finished and sse.unfinished is not None:
        _parse_frame(sse.unfinished, result)
    return result


def frame_events(frame: Frame) -> list[Any]:
    """The events one frame gives, as these rules read them (what a stop condition on the stream sees)."""
    result = ParsedStream()
    _parse_frame(frame, result)
    return result.events


def _parse_frame(sse_frame: Frame, result: ParsedStream) -> None:
    index, frame, lines = sse_frame.index, sse_frame.raw, sse_frame.lines
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
