"""What a selected step streams, in order, as neutral pieces that the model and the HTTP server both render.

Keeping the sequence in one place is what makes the in-process model and the server equivalent: the step's
`stream` shape (spec/fake-llm/README.md, "Stream shapes") is decided here and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass

from fake_llm.scripts import Failure, Step, Usage


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
class ToolCallBatch:
    """Several tool-call deltas in one chunk (shape `one_chunk`)."""

    deltas: tuple[ToolCallDelta, ...]


@dataclass(frozen=True)
class EmptyDelta:
    """A chunk that carries nothing (`delta: {}`), as some providers send between pieces."""


@dataclass(frozen=True)
class Finish:
    reason: str
    usage: Usage | None = None  # set only for the usage shape `in_finish_chunk`


@dataclass(frozen=True)
class UsageReport:
    """The usage after the finish (shape `final_chunk`, the default)."""

    usage: Usage


@dataclass(frozen=True)
class FailNow:
    failure: Failure


Piece = Pause | TextDelta | ToolCallDelta | ToolCallBatch | EmptyDelta | Finish | UsageReport | FailNow
Delta = TextDelta | ToolCallDelta | ToolCallBatch


def failure_before_streaming(step: Step) -> Failure | None:
    """A failure that happens before any chunk (an exception or an HTTP error status)."""
    if step.fail is not None and step.fail.mode in ("exception", "http_status"):
        return step.fail
    return None


def _call_deltas(step: Step) -> list[Delta]:
    """The tool calls cut as the step's shape says."""
    calls = list(enumerate(step.tool_calls))
    shape = step.stream.tool_calls
    if shape == "whole":
        return [ToolCallDelta(index=i, id=c.id, name=c.name, arguments=c.arguments_json) for i, c in calls]
    if shape == "one_chunk":
        whole = tuple(ToolCallDelta(index=i, id=c.id, name=c.name, arguments=c.arguments_json) for i, c in calls)
        return [ToolCallBatch(whole)] if whole else []
    heads: list[Delta] = [ToolCallDelta(index=i, id=c.id, name=c.name, arguments="") for i, c in calls]
    fragments = [[ToolCallDelta(index=i, arguments=f) for f in c.fragments()] for i, c in calls]
    if shape == "interleaved":  # every call's head, then one fragment of each call in turn
        longest = max((len(f) for f in fragments), default=0)
        return heads + [f[n] for n in range(longest) for f in fragments if n < len(f)]
    return [delta for head, rest in zip(heads, fragments, strict=True) for delta in (head, *rest)]  # fragments


def _ending(step: Step) -> list[Piece]:
    shape = step.stream.usage
    if shape == "in_finish_chunk":
        return [Finish(step.finish_reason, step.usage)]
    if shape == "absent":
        return [Finish(step.finish_reason)]
    return [Finish(step.finish_reason), UsageReport(step.usage)]


def pieces(step: Step) -> list[Piece]:
    """The step as it streams: delay, text chunks, tool-call deltas (with a mid-stream failure where asked),
    then the finish and the usage, as the step's stream shape cuts them."""
    between = Pause(step.delay_between_ms / 1000) if step.delay_between_ms else None
    empty = [EmptyDelta()] if step.stream.empty_deltas else []
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
        out += [TextDelta(chunk), *empty]
        sent += 1
    if mid_stream is not None:
        return out + [FailNow(mid_stream)]
    for delta in _call_deltas(step):
        if sent and between:
            out.append(between)
        out += [delta, *empty]
        sent += 1
    return out + _ending(step)
