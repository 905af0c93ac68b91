"""An SSE body read strictly, frame by frame: what a lenient client forgives (a missing blank line, CR line ends, an
unterminated last frame) is kept, so that a rule can judge it."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

_LINE_END = re.compile(r"\r\n|\r|\n")
_INVALID = object()


@dataclass
class Frame:
    """One SSE message (or a comment-only frame), as written between blank lines."""

    index: int
    raw: str
    at: float = 0.0  # seconds from sending the request to the arrival of the frame's end
    event: str | None = None
    data: str | None = None  # the data lines joined with LF; None when the frame has none
    comments: list[str] = field(default_factory=list)
    unknown_fields: list[str] = field(default_factory=list)

    @property
    def is_comment(self) -> bool:
        return self.data is None and self.event is None

    @property
    def is_done(self) -> bool:
        return self.data == "[DONE]"

    def json(self) -> Any:
        """The data as JSON; `INVALID` when it is not JSON (or there is none)."""
        if self.data is None:
            return _INVALID
        try:
            return json.loads(self.data)
        except ValueError:
            return _INVALID


INVALID = _INVALID


@dataclass
class SseBody:
    frames: list[Frame]
    line_ends: set[str]  # the line endings the body used: "\n", "\r\n", "\r"
    unterminated: str  # text after the last blank line: a frame the server never finished

    @property
    def messages(self) -> list[Frame]:
        """The frames that carry something (comments, heartbeats among them, left out)."""
        return [frame for frame in self.frames if not frame.is_comment]

    @property
    def comments(self) -> list[Frame]:
        return [frame for frame in self.frames if frame.is_comment]


def _frame(index: int, raw: str, at: float) -> Frame:
    frame = Frame(index, raw, at)
    data: list[str] = []
    for line in raw.split("\n"):
        if line.startswith(":"):
            frame.comments.append(line[1:].strip())
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            data.append(value)
        elif name == "event":
            frame.event = value
        elif name in ("id", "retry"):
            continue
        elif line:
            frame.unknown_fields.append(name)
    frame.data = "\n".join(data) if data else None
    return frame


def parse(text: str, arrivals: list[tuple[int, float]] | None = None) -> SseBody:
    """Split `text` into frames at blank lines; `arrivals` lists (characters received so far, seconds) as the body
    came in, so each frame knows when its end arrived."""
    line_ends = set(_LINE_END.findall(text))
    frames: list[Frame] = []
    lines: list[str] = []
    start = position = 0
    for match in _LINE_END.finditer(text):
        line = text[position : match.start()]
        position = match.end()
        if line:
            lines.append(line)
            continue
        if lines:  # a blank line ends the frame
            at = next((seconds for offset, seconds in arrivals or [] if offset >= position), 0.0)
            frames.append(_frame(len(frames), "\n".join(lines), at))
        lines, start = [], position
    return SseBody(frames, line_ends, text[start:])
