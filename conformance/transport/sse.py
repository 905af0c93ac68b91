"""The suite's one SSE tokenizer: a body split into frames as it arrives, strictly. What a lenient client forgives (a
missing blank line, CR line ends, an unterminated last frame) is kept, so that a rule can judge it: the framing rules
of every protocol (conformance/rules/framing.py for the GNS3 stream, the channels' rules) judge these frames and never
split a body themselves (tests/conformance/test_sse_tokenizer.py fails on a second tokenizer)."""

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
    lines: list[str] = field(default_factory=list)  # its lines as they came, without their line ends

    @property
    def data_lines(self) -> list[str]:
        """The value of each `data:` line, in order (one leading space removed)."""
        return [value for name, value in map(_field, self.lines) if name == "data"]

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
    # That text as a frame, its lines as far as they came (the last one cut, or empty after a final line end).
    unfinished: Frame | None = None
    # Each run of blank lines that ended no frame (before the first frame, or after a frame's own blank line), as
    # (the number of frames before it, its length).
    extra_blank_lines: list[tuple[int, int]] = field(default_factory=list)

    @property
    def messages(self) -> list[Frame]:
        """The frames that carry something (comments, heartbeats among them, left out)."""
        return [frame for frame in self.frames if not frame.is_comment]

    @property
    def comments(self) -> list[Frame]:
        return [frame for frame in self.frames if frame.is_comment]

    def json_objects(self, *, until_done: bool = False) -> list[tuple[int, dict[str, Any]]]:
        """(frame index, object) of every data frame whose data is a JSON object, in order: what a protocol's
        client reads (a `[DONE]`, a comment and data that is no JSON object are no object; `until_done`: stop at
        the first `[DONE]`, as a client does that ends there)."""
        found = []
        for frame in self.messages:
            if until_done and frame.is_done:
                break
            value = frame.json()
            if value is not _INVALID and isinstance(value, dict):
                found.append((frame.index, value))
        return found


def _field(line: str) -> tuple[str, str]:
    """A line's field name and value (a comment's name is empty)."""
    name, _, value = line.partition(":")
    return name, value[1:] if value.startswith(" ") else value


def _frame(index: int, lines: list[str], at: float) -> Frame:
    frame = Frame(index, "\n".join(lines), at, lines=lines)
    data: list[str] = []
    for line in lines:
        if line.startswith(":"):
            frame.comments.append(line[1:].strip())
            continue
        name, value = _field(line)
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


class SseTokenizer:
    """Frames from a body fed in pieces: `feed(text, at)` returns the frames the piece completed, each stamped with
    `at` (seconds from the request to the arrival of its end); `body()` is everything so far. A line ends at CRLF, CR
    or LF (a CR that ends a piece may be the first half of a CRLF: it waits for the next piece); a blank line ends a
    frame, and blank lines between frames make none."""

    def __init__(self) -> None:
        self.frames: list[Frame] = []
        self.line_ends: set[str] = set()
        self._pending = ""  # text not yet split into lines (the start of a line, or a lone CR at a piece's end)
        self._lines: list[str] = []  # the lines of the frame being read
        self._unterminated: list[str] = []  # the text since the last frame-ending blank line, as it came
        self._blanks = 0  # blank lines in a row that ended no frame
        self._extra_blank_lines: list[tuple[int, int]] = []
        self._at = 0.0  # when the last piece arrived
        self._cr_at = 0.0  # when a CR that ended a piece arrived

    def feed(self, text: str, at: float = 0.0) -> list[Frame]:
        done: list[Frame] = []
        held = len(self._pending) - 1 if self._pending.endswith("\r") else -1  # a CR an earlier piece ended with
        self._at = at
        pending = self._pending + text
        position = 0
        for match in _LINE_END.finditer(pending):
            lone_held = match.start() == held and match.group() == "\r"
            if match.group() == "\r" and match.end() == len(pending):
                self._cr_at = self._cr_at if lone_held else at
                break  # maybe half of a CRLF: decided by the next piece (or at the end of the body)
            # A line ended by a lone CR ended when the CR came; one ended by a CRLF, when its LF came.
            self._line(pending[position : match.start()], match.group(), self._cr_at if lone_held else at, done)
            position = match.end()
        self._pending = pending[position:]
        return done

    def _line(self, line: str, end: str, at: float, done: list[Frame]) -> None:
        self.line_ends.add(end)
        if line:
            if self._blanks:
                self._extra_blank_lines.append((len(self.frames), self._blanks))
                self._blanks = 0
            self._lines.append(line)
            self._unterminated.append(line + end)
            return
        if self._lines:  # a blank line ends the frame
            frame = _frame(len(self.frames), self._lines, at)
            self.frames.append(frame)
            done.append(frame)
        else:
            self._blanks += 1
        self._lines, self._unterminated = [], []

    def body(self) -> SseBody:
        """The frames so far, and what came after the last of them (a frame the server never finished)."""
        if self._pending.endswith("\r"):  # the body ended on a CR: a line end after all
            line, self._pending = self._pending[:-1], ""
            self._line(line, "\r", self._cr_at, [])
        unfinished = None
        if self._lines or self._pending:
            unfinished = _frame(len(self.frames), [*self._lines, self._pending], self._at)
        extra = self._extra_blank_lines + ([(len(self.frames), self._blanks)] if self._blanks else [])
        unterminated = "".join(self._unterminated) + self._pending
        return SseBody(list(self.frames), set(self.line_ends), unterminated, unfinished, extra)


def parse(text: str, arrivals: list[tuple[int, float]] | None = None) -> SseBody:
    """A whole body's frames; `arrivals` lists (characters received so far, seconds) as the body came in, so each
    frame knows when its end arrived."""
    tokenizer = SseTokenizer()
    start = 0
    for offset, seconds in arrivals or [(len(text), 0.0)]:
        tokenizer.feed(text[start:offset], seconds)
        start = offset
    if start < len(text):  # the rest, if the arrivals do not cover it: the suite's own bodies are read whole
        tokenizer.feed(text[start:])
    return tokenizer.body()
