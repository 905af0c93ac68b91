"""One scripted turn of a check's scenario, on any endpoint (the GNS3 stream or a channel), and whether it went as
its fake-LLM script says. Whose failure a turn that did not is, blame.py decides."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from conformance.channels.client import ChannelClient
from conformance.channels.endpoints import ChannelAnswer, Endpoint
from conformance.channels.gns3_stream import StreamResult
from conformance.checks.context import CheckContext
from conformance.errors import NotTestable
from conformance.rules.expected import ExpectedTurn, expected_turn
from conformance.rules.scenarios import scripts_a_failure
from conformance.transport.exchanges import json_or_none


@dataclass
class Turn:
    """A turn playing `expected.script`: `answer` is the GNS3 stream's StreamResult or a channel's ChannelAnswer;
    `run` tags the turn's generations in the fake LLM's log."""

    answer: StreamResult | ChannelAnswer
    expected: ExpectedTurn
    run: str

    @property
    def script(self) -> str:
        return self.expected.script

    @property
    def endpoint(self) -> Endpoint | None:
        """The channel endpoint the turn was posted to; None for the GNS3 stream."""
        return self.answer.endpoint if isinstance(self.answer, ChannelAnswer) else None

    def describe(self) -> str:
        if isinstance(self.answer, ChannelAnswer):
            return self.answer.describe()
        return describe(self.answer)


def stream_turn(ctx: CheckContext, result: StreamResult, script: str) -> Turn:
    """A turn of the GNS3 stream, under the check's own run tag."""
    return Turn(result, expected_turn(ctx.env.scripts, script), ctx.run)


def run_tag(ctx: CheckContext, label: str) -> str:
    """A fake-LLM run tag of its own for one turn of the check: the log then tells that turn's generations. The
    tag's run is at most 64 characters (spec/fake-llm/selection.yaml): a long label is shortened to a digest."""
    tag = f"{ctx.run}-{label}"
    if len(tag) <= 64:
        return tag
    digest = hashlib.sha1(label.encode()).hexdigest()[:12]
    return f"{ctx.run[:40]}-{ctx.run[-8:]}-{digest}"


async def post_turn(
    ctx: CheckContext,
    chosen: Endpoint,
    script: str,
    *,
    label: str,
    session_id: str | None = None,
    user: str | None = "main",
    stream: bool = True,
    stop_when: Callable[[Any], bool] | None = None,
) -> Turn:
    """One turn playing `script` on the channel endpoint `chosen`, under a run tag of its own (`label` names it)."""
    if script not in ctx.env.scripts:
        raise NotTestable(f"scenario {script!r} needs a tool the target did not declare")
    run = run_tag(ctx, label)
    channel = ChannelClient(ctx)
    body = channel.request(chosen, script, session_id=session_id, run=run, stream=stream)
    answer = await channel.post(chosen, body, user=user, stop_when=stop_when)
    answer.message = ctx.message(script, run=run)  # as the server must store it (what the body's protocol carried)
    return Turn(answer, expected_turn(ctx.env.scripts, script), run)


async def control_turn(ctx: CheckContext, chosen: Endpoint | None, script: str) -> tuple[bool, str]:
    """A control turn of `script` in a new session, on `chosen` (None: the GNS3 stream): whether it ran at all
    (answered 200 and ended by the server without an error; on a channel, its generations served by the fake LLM as
    scripted), and how it was answered. Its content and events are what checks judge, never a blocker."""
    if chosen is None:
        result = await ctx.client.stream({"message": ctx.message(script, "Control turn")})
        return completed_turn(result), describe(result)
    control = await post_turn(ctx, chosen, script, label=f"control-{script}-{chosen.name}-{uuid.uuid4().hex[:8]}")
    answer = control.answer
    ran = answer.status == 200 and answer.completed and answer.error is None
    return ran and _went_as_scripted(control, await ctx.llm.main_requests(control.run)), answer.describe()


# --- whether a turn went as scripted --------------------------------------------------------------------------


def describe(result: StreamResult) -> str:
    """A GNS3 stream answer in short: the status (or transport error), the body's start, the last events."""
    return f"{result.exchange.excerpt()} events {result.types[-5:]}"


def completed_turn(result: StreamResult) -> bool:
    """The turn ran: 200, events, no `error`, and the server closed the stream. Its grammar (a `done` last) is
    the stream checks' business, so that a grammar fault does not also fail every other requirement."""
    return result.status == 200 and result.completed and bool(result.events) and "error" not in result.types


def script_text(ctx: CheckContext, script: str) -> str:
    return "".join(chunk for step in ctx.env.scripts[script]["steps"] for chunk in step.get("text_chunks", []))


def served(ctx: CheckContext, result: StreamResult, script: str = "cs-plain") -> bool:
    """The turn was served normally: a completed turn that streamed the script's whole text."""
    return completed_turn(result) and result.content == script_text(ctx, script)


def as_scripted(ctx: CheckContext, result: StreamResult, script: str) -> bool:
    """A GNS3 stream turn went as its script says: served (see served), or for a script that fails, answered 200
    with an `error` event and closed by the server."""
    if scripts_a_failure(ctx.env.scripts[script]):
        return result.status == 200 and result.completed and "error" in result.types
    return served(ctx, result, script)


def _went_as_scripted(turn: Turn, generations: list[dict[str, Any]]) -> bool:
    """The turn reached the model as its script says: every generation of a turn that finishes was served (a tool
    turn's second one included), at least the first of a turn scripted to fail."""
    steps = len(turn.expected.generations)
    if turn.expected.fails:
        return len(generations) >= 1
    return len(generations) >= steps and all(g.get("outcome") == "ok" for g in generations[:steps])


async def missed(ctx: CheckContext, turn: Turn, *, cut: bool = False) -> str | None:
    """Why the turn did not go as scripted, or None when it did.

    - the GNS3 stream: served with the script's whole text, or for a failing script an `error` event (as_scripted);
    - a channel: streamed and ended by the server (one JSON answer for a turn asked not to be streamed), its
      generations served by the fake LLM as scripted, ending in an error exactly when its script fails (a tool
      turn cut short by an error reached the model, yet is no tool turn);
    - `cut`, a turn the suite left on purpose: it started (200, streamed) and its first generation reached the model.
    """
    answer = turn.answer
    if isinstance(answer, StreamResult):
        if as_scripted(ctx, answer, turn.script):
            return None
        return f"the {turn.script} turn did not go as scripted ({describe(answer)})"
    generations = await ctx.llm.main_requests(turn.run)
    if cut:
        if answer.status == 200 and answer.streamed and generations:
            return None
        shown = "streamed" if answer.status == 200 and answer.streamed else answer.describe()
        return (
            f"the {turn.script} turn on {answer.endpoint.name} did not go as scripted ({shown}; {len(generations)} "
            "generation(s) reached the fake LLM)"
        )
    streamed = "stream" not in (json_or_none(answer.exchange.request_body or "") or {}) or answer.streamed
    ended = answer.status == 200 and answer.completed and (answer.streamed or not streamed)
    if ended and _went_as_scripted(turn, generations) and (answer.error is not None) == turn.expected.fails:
        return None
    error = f", ending in the error {answer.error.get('message')!r}" if ended and answer.error else ""
    return (
        f"the {turn.script} turn on {answer.endpoint.name} did not go as scripted "
        f"({'streamed' if ended else answer.describe()}{error}; {len(generations)} generation(s) reached the fake LLM)"
    )
