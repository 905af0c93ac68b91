"""Mutants of the stream, second generation, made by a method rather than by inspiration: for each stream rule
(FRAME-*, EVENT-*, STREAM-ORDER-*, TOOLCALL-*, STREAM-CONTENT-*), one mutant per state of
conformance/coverage.yaml that a real implementer could get wrong. Each rewrites the events (or the frames) of
every turn on their way to the client. Registered in tests/quality/mutants.py's MUTANTS by importing this module.
"""

from __future__ import annotations

from .mutant_kit import _transform_stream, mutant


def _each(kind: str, change) -> None:
    """Apply `change(event, state)` to every event of type `kind`."""

    def rewrite(batch, state):
        for event in batch:
            if event["type"] == kind:
                change(event, state)
        return batch

    _transform_stream(rewrite)


# --- events: session ids -------------------------------------------------------------------------------------------


@mutant(
    "heartbeat-without-session-id",
    "`heartbeat` events carry no session_id",
    {"EVENT-002"},
    {"EVENT-001"},
    seen_in=("heartbeat",),  # the checks of EVENT-002 play no silence long enough for a heartbeat
)
def _heartbeat_without_session_id() -> None:
    _each("heartbeat", lambda e, _: e.pop("session_id", None))


@mutant("done-without-session-id", "`done` carries no session_id", {"EVENT-002"}, {"EVENT-001", "SESSION-001"})
def _done_without_session_id() -> None:
    _each("done", lambda e, _: e.pop("session_id", None))


@mutant("content-without-session-id", "`content` events carry no session_id", {"EVENT-003"})
def _content_without_session_id() -> None:
    _each("content", lambda e, _: e.pop("session_id", None))


@mutant(
    "second-session-id-in-stream",
    "`content` events carry another session id than the turn's",
    {"EVENT-004"},
    # the session's rules read the one id every event carries; a 128-character id grows past the schema's bound
    # (EVENT-001 in the stream of SESSION-003's longest id: the sessions area makes it)
    {"EVENT-001", "SESSION-001", "SESSION-002"},
    seen_in=("sessions",),
)
def _second_session_id() -> None:
    _each("content", lambda e, _: e.update(session_id=e["session_id"] + "-other"))


# --- grammar -------------------------------------------------------------------------------------------------------


def _after(kind: str, extra) -> None:
    """Insert `extra(event)` right after every event of type `kind`."""

    def rewrite(batch, _):
        out = []
        for event in batch:
            out.append(event)
            if event["type"] == kind:
                out.append(extra(event))
        return out

    _transform_stream(rewrite)


@mutant("error-twice", "an in-stream failure sends two `error` events", {"STREAM-ORDER-002"}, {"ERRSTREAM-001"})
def _error_twice() -> None:
    _after("error", dict)


@mutant(
    "content-after-error",
    "a `content` event follows the `error` event",
    {"STREAM-ORDER-002"},
    # the late text is streamed but not kept: the history differs from the stream
    {"ERRSTREAM-001", "STREAM-CONTENT-001"},
)
def _content_after_error() -> None:
    _after("error", lambda e: {"type": "content", "content": "late", "session_id": e["session_id"]})


@mutant(
    "unknown-event-type",
    "a `progress` event, which the contract does not have, comes before `done`",
    {"STREAM-ORDER-001", "EVENT-001"},
    {"ERRSTREAM-001"},  # an error is no longer followed by done alone
)
def _unknown_event_type() -> None:
    def rewrite(batch, _):
        out = []
        for event in batch:
            if event["type"] == "done":
                out.append({"type": "progress", "session_id": event["session_id"]})
            out.append(event)
        return out

    _transform_stream(rewrite)


# --- tool calls ----------------------------------------------------------------------------------------------------


@mutant("tool-call-renamed", "a call's later `tool_call` events carry another function name", {"TOOLCALL-001"})
def _tool_call_renamed() -> None:
    def change(event, state):
        call = event["tool_call"]
        if call["id"] in state:
            call["function"]["name"] = call["function"]["name"] + "_v2"
        state[call["id"]] = True

    _each("tool_call", change)


@mutant(
    "complete-arguments-not-json",
    "the `complete: true` event's arguments end with a stray `}`: they do not parse",
    {"TOOLCALL-003"},
)
def _complete_arguments_not_json() -> None:
    def change(event, _):
        function = event["tool_call"]["function"]
        if function.get("complete"):
            function["arguments"] += "}"

    _each("tool_call", change)


@mutant("tool-started-twice", "every `tool_start` is sent twice", {"TOOLCALL-004"}, {"TOOLCALL-006"})
def _tool_started_twice() -> None:
    _after("tool_start", dict)


@mutant(
    "tool-ended-twice", "every `tool_end` is sent twice", {"TOOLCALL-005"}, {"TOOLCALL-006", "TOOLCALL-008"}
)  # parallel calls and a failing tool each count their tool_end events
def _tool_ended_twice() -> None:
    _after("tool_end", dict)


@mutant(
    "tool-end-wrong-name",
    "`tool_end` names another tool than its `tool_start`",
    {"TOOLCALL-005"},
    {"TOOLCALL-008"},  # the failing tool's tool_end is looked for by its name
)
def _tool_end_wrong_name() -> None:
    _each("tool_end", lambda e, _: e.update(tool_name=e["tool_name"] + "_x"))


@mutant("tool-end-without-id", "`tool_end` carries no `tool_call_id`", {"TOOLCALL-007"})
def _tool_end_without_id() -> None:
    _each("tool_end", lambda e, _: e.pop("tool_call_id", None))


# --- content -------------------------------------------------------------------------------------------------------


@mutant(
    "first-chunk-not-streamed",
    "in a turn that called a tool, the first `content` event after the tool is not sent (the history keeps it)",
    {"STREAM-CONTENT-001"},
)
def _first_chunk_not_streamed() -> None:
    def rewrite(batch, state):
        out = []
        for event in batch:
            if event["type"] == "tool_end":
                state["tool_ran"] = True
            elif event["type"] == "content" and state.get("tool_ran") and not state.get("dropped"):
                state["dropped"] = True
                continue
            out.append(event)
        return out

    _transform_stream(rewrite)


# --- framing -------------------------------------------------------------------------------------------------------


def _frames(render) -> None:
    """Replace how the reference server writes one event as a frame."""
    import json

    import reference_server.chat.routes as routes
    from reference_server.turns.core import contract_events

    def sse_frames(channel_turn):
        async def rewritten():
            async for batch in contract_events(channel_turn):  # which stops the turn if the client goes away
                yield "".join(render(json.dumps(e, ensure_ascii=False, separators=(",", ":")), e) for e in batch)

        return rewritten()

    routes.sse_frames = sse_frames


@mutant("event-field-in-frames", "every frame has an `event: message` line before its data", {"FRAME-002"})
def _event_field_in_frames() -> None:
    _frames(lambda data, _: f"event: message\ndata: {data}\n\n")


@mutant("done-marker-after-done", "a `data: [DONE]` frame follows `done`", {"FRAME-003"})
def _done_marker() -> None:
    _frames(lambda data, e: f"data: {data}\n\n" + ("data: [DONE]\n\n" if e["type"] == "done" else ""))
