"""How each channel ends a turn that an abort stopped (CHANNEL-009 names the mapping: OPENAI-002, UI-003, AGUI-003),
judged over one recorded answer, each rule in its own voice. What each protocol itself says, checked in its package:

- OpenAI Chat Completions (openai 3.57.0, `ChatCompletionChunk.Choice.finish_reason`: stop, length, tool_calls,
  content_filter, function_call): no reason means "stopped by the server". The protocol is silent; `stop`, one
  finish chunk, is the contract's (OPENAI-002, ours). The protocol's own rule still holds: one finish chunk per
  choice, nothing after it (OPENAI-PROTO-003).
- OpenAI Responses: the contract's OPENAI-006 ends a turn that did not fail with `response.completed` (ours).
- UI message stream (ai 6.0.325): a stream says it was aborted only by its `abort` chunk (`streamText` sends it when
  its abortSignal fires; `handleUIMessageStreamFinish` reads `isAborted` from it), and its message then ends with
  `abort` or `finish` (UI-PROTO-004, the protocol's). The contract's UI-003 (ours) sends `abort` after closing every
  part, a call whose arguments never completed with `tool-input-error` (ai's own `streamText` leaves such a part
  open), then `finish-step`, `finish` with the usage and `[DONE]`.
- AG-UI (@ag-ui/core 1.0.0): `RUN_FINISHED` "closes a run that did not fail"; its outcome `cancelled`: "the run was
  stopped before it completed ... and did not fail" (an absent outcome reads as success); `RUN_ERROR` "ends a run
  that failed". The contract's AGUI-003 (ours, in those words): `RUN_FINISHED` with `outcome: {"type": "cancelled"}`,
  its thread, run and usage. The protocol's AGUI-PROTO-005: every tool call ended before `RUN_FINISHED`, a cut one
  too; AGUI-002 (ours): a cut call ends with `TOOL_CALL_END`, without a result.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from conformance.rules import ag_ui, ag_ui_protocol, openai, ui
from conformance.rules.violations import Violation, short
from conformance.transport.exchanges import json_or_none

if TYPE_CHECKING:
    from conformance.channels.endpoints import ChannelAnswer
    from conformance.channels.real_clients import ClientRead
    from conformance.transport.exchanges import Exchange

# endpoint name -> the rules an aborted turn's ending is judged by (the others are judged on the scenario streams)
JUDGED: dict[str, frozenset[str]] = {
    "openai_chat": frozenset({"OPENAI-002", "OPENAI-PROTO-003"}),
    "openai_responses": frozenset({"OPENAI-006"}),
    "ui": frozenset({"UI-003", "UI-PROTO-004"}),
    "ag_ui": frozenset({"AGUI-002", "AGUI-003", "AGUI-PROTO-005"}),
}


def _payloads(answer: ChannelAnswer) -> list[dict[str, Any]]:
    return [payload for _, payload in answer.sse.json_objects()] if answer.sse else []


def _responses(answer: ChannelAnswer) -> list[Violation]:
    kinds = [event.get("type") for event in _payloads(answer)]
    if kinds and kinds[-1] == "response.completed":
        return []
    ended = f"an aborted turn (it did not fail) ends with {kinds[-1:]}, not response.completed"
    return [Violation("OPENAI-006", ended)]


def _ui(answer: ChannelAnswer) -> list[Violation]:
    found = ui.judge(answer)
    if not any(chunk.get("type") == "abort" for chunk in _payloads(answer)):
        kinds = [chunk.get("type") for chunk in _payloads(answer)][-4:]
        found.append(Violation("UI-003", f"the aborted turn sends no `abort` chunk (`ai` reads the message as not "
                                         f"aborted); its last chunks are {kinds}"))  # fmt: skip
    return found


def _ag_ui(answer: ChannelAnswer) -> list[Violation]:
    found = ag_ui.judge(answer)
    ends = [event for event in _payloads(answer) if event.get("type") in ag_ui.TERMINAL]
    if not (ends and ag_ui.cancelled(ends[0])):
        ended = short(ends[0]) if ends else "no RUN_FINISHED"
        found.append(Violation("AGUI-003", f"the aborted run ends with {ended}: RUN_FINISHED with outcome cancelled "
                                           "says it was stopped and did not fail (an absent outcome reads as "
                                           "success, RUN_ERROR as a failure)"))  # fmt: skip
    return found


def client_rejection(read: ClientRead | None) -> list[Violation]:
    """@ag-ui/client's HttpAgent over an aborted run's body (its verifyEvents refuses RUN_FINISHED while a call is
    open): its rejection, under the rule its words state. (`ai`'s reader rejects no ending: it is not asked.)"""
    if read is None or read.ok:
        return []
    words = f"@ag-ui/client (HttpAgent, verifyEvents) rejected the aborted run: {read.error}"
    return [Violation(ag_ui_protocol.client_requirement(read.error or ""), words)]


def began_after(generations: list[dict[str, Any]], after: float) -> list[float]:
    """When (the fake LLM's wall clock) each generation after a turn's first began, of those begun after `after`."""
    found = [g.get("received_at", 0.0) for g in generations if (g.get("step") or 0) >= 1]
    return [at for at in found if at >= after]


def ending(answer: ChannelAnswer, read: ClientRead | None = None) -> list[Violation]:
    """The violations of an aborted turn's ending on its channel (and @ag-ui/client's rejection of it, `read`), among
    the rules JUDGED for its endpoint."""
    name = answer.endpoint.name
    if name == "openai_chat":
        found = openai.judge_chat(answer, None)
    elif name == "openai_responses":
        found = _responses(answer)
    elif name == "ui":
        found = _ui(answer)
    else:
        found = _ag_ui(answer)
    found += client_rejection(read)
    return [violation for violation in found if violation.requirement in JUDGED[name]]


@dataclass
class AbortedTurn:
    """An abort sent to a running channel turn of `script` (`exchange` None: the turn never reached the model), its
    answer read to the end, and the fake LLM's log of the turn (`run`)."""

    answer: ChannelAnswer
    script: str
    run: str
    exchange: Exchange | None = None
    asked: float = 0.0  # monotonic time the abort was sent
    asked_clock: float = 0.0  # the same, wall clock (the fake LLM's log is on it)
    answered_clock: float = 0.0
    generations: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ended(self) -> float:
        """Monotonic time the stream ended (its request began no earlier than `answer.started`)."""
        return self.answer.started + (self.answer.exchange.elapsed or 0.0)

    def later(self, after: float) -> list[float]:
        """When each of the turn's generations after its first began, of those that began after `after`."""
        return began_after(self.generations, after)

    def not_running(self) -> str | None:
        """Why the abort did not reach a running turn (None: it did, whatever it answered). A turn that had not yet
        made its last generation when the abort was sent was running: an `aborted: false` is then no excuse."""
        if self.exchange is None:
            return "the turn never reached the fake LLM, nothing to abort"
        if self.answer.completed and self.ended < self.asked:
            return "the turn had ended before the abort was sent"
        body = json_or_none(self.exchange.body)
        found_none = isinstance(body, dict) and body.get("aborted") is False
        if found_none and self.later(0.0) and not self.later(self.asked_clock):
            return "the turn's last generation had begun before the abort was sent, and the abort found no turn running"
        return None

    def unended(self, script: dict[str, Any]) -> str | None:
        """Why no aborted turn ended here, to judge its ending by (None: one did). `script`: the turn's."""
        if why := self.not_running():
            return why
        if self.later(self.answered_clock):
            return "blocked by CHANNEL-009: the turn went on after the abort"
        if not self.answer.completed:
            return f"blocked by CHANNEL-009: the aborted turn's stream did not end: {self.answer.describe()}"
        if self.script == "cs-slow-args" and not self.cut(script):
            return "the abort was answered after the call's arguments had all been streamed: no call was cut short"
        return None

    def cut(self, script: dict[str, Any]) -> bool:
        """The fake LLM was still streaming the first generation's call arguments when the abort was answered (the
        call's head, then a fragment every `delay_between_ms`)."""
        step = script["steps"][0]
        (call,) = step["tool_calls"]
        size = len(json.dumps(call["arguments"], separators=(",", ":"), sort_keys=True))
        fragments = -(-size // call["fragment_size"])
        first = [g.get("received_at", 0.0) for g in self.generations if g.get("step") == 0]
        return bool(first) and self.answered_clock < first[0] + step.get("delay_between_ms", 0) / 1000 * fragments
