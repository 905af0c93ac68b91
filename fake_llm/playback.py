"""What a selected step streams, in order, as neutral pieces that the model and the HTTP server both render.

Keeping the sequence in one place is what makes the in-process model and the server equivalent.
"""

from __future__ import annotations

from dataclasses import dataclass

from fake_llm.scripts import Failure, Step


@dataclass(frozen=True)
class Pause:
    seconds: float


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ToolCallDelta:
    index: int
    arguments: str
    id: str | None = None  # on the first delta of a call only, as OpenAI streams them
    name: str | None = None


@dataclass(frozen=True)
class FailNow:
    failure: Failure


Piece = Pause | TextDelta | ToolCallDelta | FailNow


def failure_before_streaming(step: Step) -> Failure | None:
    """A failure that happens before any chunk (an exception or an HTTP error status)."""
    if step.fail is not None and step.fail.mode in ("exception", "http_status"):
        return step.fail
    return None


def pieces(step: Step) -> list[Piece]:
    """The step as it streams: delay, text chunks, tool-call deltas, with a mid-stream failure where asked."""
    between = Pause(step.delay_between_ms / 1000) if step.delay_between_ms else None
    out: list[Piece] = []
    if step.delay_before_ms:
        out.append(Pause(step.delay_before_ms / 1000))
    mid_stream = step.fail if step.fail is not None and step.fail.mode == "mid_stream" else None
    sent = 0
    for chunk in step.text_chunks:
        if mid_stream is not None and sent == mid_stream.after_chunks:
            return out + [FailNow(mid_stream)]
        if sent and between:
            out.append(between)
        out.append(TextDelta(chunk))
        sent += 1
    if mid_stream is not None:
        return out + [FailNow(mid_stream)]
    for index, call in enumerate(step.tool_calls):
        if (sent or index) and between:
            out.append(between)
        out.append(ToolCallDelta(index=index, id=call.id, name=call.name, arguments=""))
        for fragment in call.fragments():
            if between:
                out.append(between)
            out.append(ToolCallDelta(index=index, arguments=fragment))
    return out
