"""The rules one stream must follow on its own: event schemas, session ids, grammar and tool-call accumulation.

`check_events` needs nothing but the parsed events of one turn, so it judges a live stream, a recorded one
and the golden examples alike. Rules that need the scenario (what the script made the LLM say, what the
history holds) are checked elsewhere.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import gns3_copilot_spec as spec
from conformance.rules.violations import Violation

MIDDLE_EVENTS = {"content", "tool_call", "tool_start", "tool_end", "heartbeat"}
SESSION_ID_REQUIRED = {"tool_call", "tool_start", "tool_end", "error", "done", "heartbeat"}


def event_violations(events: list[Any]) -> list[Violation]:
    """EVENT-001, the rule of every single event: its JSON validates against the schema its `type` selects.
    Judged here for every stream the suite reads (conformance.channels.gns3_stream), whichever check read it."""
    return [
        Violation("EVENT-001", error, index)
        for index, event in enumerate(events)
        for error in spec.validate_event(event)
    ]


def check_events(events: list[Any]) -> list[Violation]:
    """Every rule one whole turn's stream must follow on its own (per event, then across events)."""
    violations = event_violations(events)
    objects = [(i, e) for i, e in enumerate(events) if isinstance(e, dict)]
    violations += _check_session_ids(objects)
    violations += _check_grammar(objects)
    violations += ToolCallTracker().check(objects)
    return violations


def _check_session_ids(events: list[tuple[int, dict]]) -> list[Violation]:
    violations = []
    seen: dict[str, int] = {}
    for index, event in events:
        kind, session_id = event.get("type"), event.get("session_id")
        if session_id is None:
            if kind in SESSION_ID_REQUIRED:
                violations.append(Violation("EVENT-002", f"`{kind}` event without session_id", index))
            elif kind == "content":
                violations.append(Violation("EVENT-003", "`content` event without session_id", index))
            continue
        seen.setdefault(session_id, index)
    if len(seen) > 1:
        listed = ", ".join(f"{sid!r} (first at event {i})" for sid, i in seen.items())
        violations.append(Violation("EVENT-004", f"one stream carries several session ids: {listed}"))
    return violations


def _check_grammar(events: list[tuple[int, dict]]) -> list[Violation]:
    violations = []
    done_at: int | None = None
    error_at: int | None = None
    for index, event in events:
        kind = event.get("type")
        if done_at is not None:
            violations.append(Violation("STREAM-ORDER-003", f"`{kind}` event after `done` (event {done_at})", index))
            continue
        if kind == "done":
            done_at = index
        elif kind == "error":
            if error_at is not None:
                violations.append(
                    Violation("STREAM-ORDER-002", f"a second `error` event (first at event {error_at})", index)
                )
            error_at = index
        elif kind in MIDDLE_EVENTS:
            if error_at is not None:
                violations.append(
                    Violation(
                        "STREAM-ORDER-002",
                        f"`{kind}` event after `error` (event {error_at}): only `done` may follow",
                        index,
                    )
                )
        else:
            violations.append(Violation("STREAM-ORDER-001", f"unknown event type {kind!r}", index))
    if done_at is None:
        violations.append(Violation("STREAM-ORDER-003", "the stream has no `done` event"))
    return violations


@dataclass
class _Call:
    name: str
    arguments: str
    first_index: int
    completed_at: int | None = None
    started_at: int | None = None
    ended_at: int | None = None


@dataclass
class ToolCallTracker:
    """Follows every tool call of a stream through tool_call ... complete, tool_start, tool_end."""

    calls: dict[str, _Call] = field(default_factory=dict)
    violations: list[Violation] = field(default_factory=list)

    def check(self, events: list[tuple[int, dict]]) -> list[Violation]:
        ended_by_error = any(event.get("type") == "error" for _, event in events)
        for index, event in events:
            handler = getattr(self, f"_on_{event.get('type')}", None)
            if handler is not None:
                handler(index, event)
        for call_id, call in self.calls.items():
            if call.completed_at is None and not ended_by_error:  # a failed generation may stop mid-arguments
                self._fail(
                    "TOOLCALL-003", f"tool call {call_id!r} never got an event with `complete: true`", call.first_index
                )
            elif call.started_at is None and not ended_by_error:
                self._fail("TOOLCALL-006", f"tool call {call_id!r} completed but was never started", call.completed_at)
            elif call.started_at is not None and call.ended_at is None and not ended_by_error:
                self._fail("TOOLCALL-005", f"tool call {call_id!r} was started but never ended", call.started_at)
        return self.violations

    def _fail(self, requirement: str, message: str, index: int | None) -> None:
        self.violations.append(Violation(requirement, message, index))

    def _on_tool_call(self, index: int, event: dict) -> None:
        tool_call = event.get("tool_call")
        if not isinstance(tool_call, dict) or not isinstance(tool_call.get("function"), dict):
            return  # a schema violation, already reported under EVENT-001
        call_id, function = tool_call.get("id"), tool_call["function"]
        name, arguments = function.get("name"), function.get("arguments")
        if not isinstance(call_id, str) or not isinstance(arguments, str):
            return
        call = self.calls.get(call_id)
        if call is None:
            call = self.calls[call_id] = _Call(name=name, arguments=arguments, first_index=index)
        else:
            if call.completed_at is not None:
                self._fail(
                    "TOOLCALL-003",
                    f"`tool_call` event for {call_id!r} after its complete event (event {call.completed_at})",
                    index,
                )
                return
            if name != call.name:
                self._fail(
                    "TOOLCALL-001", f"tool call {call_id!r} changed its name from {call.name!r} to {name!r}", index
                )
            if not arguments.startswith(call.arguments):
                self._fail(
                    "TOOLCALL-002",
                    f"arguments of {call_id!r} do not extend the previous value: {call.arguments!r} -> {arguments!r}",
                    index,
                )
            call.arguments = arguments
        if function.get("complete") is True:
            call.completed_at = index
            try:
                parsed = json.loads(arguments)
            except json.JSONDecodeError as error:
                self._fail(
                    "TOOLCALL-003",
                    f"complete arguments of {call_id!r} are not JSON ({error.msg}): {arguments!r}",
                    index,
                )
                return
            if not isinstance(parsed, dict):
                self._fail(
                    "TOOLCALL-003", f"complete arguments of {call_id!r} are not a JSON object: {arguments!r}", index
                )

    def _on_tool_start(self, index: int, event: dict) -> None:
        call_id, name = event.get("tool_call_id"), event.get("tool_name")
        call = self.calls.get(call_id) if isinstance(call_id, str) else None
        if call is None or call.completed_at is None:
            state = "an unknown call" if call is None else "a call that has not completed"
            self._fail(
                "TOOLCALL-004", f"`tool_start` for {state} (tool_call_id={call_id!r}, tool_name={name!r})", index
            )
            return
        if name != call.name:
            self._fail("TOOLCALL-004", f"`tool_start` names {name!r} but call {call_id!r} is {call.name!r}", index)
        if call.started_at is not None:
            self._fail("TOOLCALL-004", f"call {call_id!r} started twice (first at event {call.started_at})", index)
            return
        call.started_at = index

    def _on_tool_end(self, index: int, event: dict) -> None:
        call_id, name = event.get("tool_call_id"), event.get("tool_name")
        if call_id is None:
            self._fail("TOOLCALL-007", f"`tool_end` of {name!r} without tool_call_id", index)
            # Pair it with the earliest started, not yet ended call of that tool (spec/behaviour.md).
            candidates = [
                c for c in self.calls.values() if c.started_at is not None and c.ended_at is None and c.name == name
            ]
            call = min(candidates, key=lambda c: c.started_at, default=None)
        else:
            call = self.calls.get(call_id)
        if call is None or call.started_at is None:
            self._fail(
                "TOOLCALL-005",
                f"`tool_end` for a call that was not started (tool_call_id={call_id!r}, tool_name={name!r})",
                index,
            )
            return
        if name != call.name:
            self._fail("TOOLCALL-005", f"`tool_end` names {name!r} but the call is {call.name!r}", index)
        if call.ended_at is not None:
            self._fail("TOOLCALL-005", f"call ended twice (first at event {call.ended_at})", index)
            return
        call.ended_at = index
