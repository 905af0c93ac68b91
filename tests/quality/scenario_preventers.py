"""Variants of the reference server on which a check's scenario does not happen, after preflight has passed:
the model is down, a tool call ends the turn in an error instead of running, the stream arrives in one piece at the
end. They prove that the suite then says NOT TESTABLE (or blames the rule the variant really breaks), and never
PASSes a requirement on a scenario that did not happen (tests/quality/test_scenario_missing.py). Preflight's own
turns (their message starts with "Preflight") are served normally, so the run gets past preflight as it would on a
server that degrades later. Applied like the mutants, by `python -m tests.quality.mutant_server NAME`."""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from dataclasses import dataclass

from .asgi_rewrite import edit_request_body

# Set for the whole handling of a stream request that is not preflight's (the turn's tasks copy the context).
_IN_CHECK: contextvars.ContextVar[bool] = contextvars.ContextVar("in_check", default=False)


@dataclass(frozen=True)
class Preventer:
    name: str
    prevents: str  # what does not happen, in words
    apply: Callable[[], None]


# The turns of the channels (the reference target's preflight uses POST /stream only: every channel turn is a check's).
CHANNEL_TURNS = r"/(openai/v1/chat/completions|openai/v1/responses|ui|ag-ui)$"


def _mark_check_turns() -> None:
    """Mark the handling of every stream request but preflight's, on every channel (the body is left as sent)."""

    def change(body: dict) -> None:
        message = body.get("message")
        if isinstance(message, str) and not message.startswith("Preflight"):
            _IN_CHECK.set(True)

    def channel_turn(_body: dict) -> None:
        _IN_CHECK.set(True)

    edit_request_body(r"/stream$", change)
    edit_request_body(CHANNEL_TURNS, channel_turn)


def _llm_down() -> None:
    """The checks' turns reach no model: the LLM's address refuses connections, so each turn is an `error`. The model
    client does not try again (the `openai` client's default is twice, after 0.5 to 8 s): a second refusal is the same
    error, and the waits made this preventer's run the longest of the test command's runs."""
    from functools import cache

    from langchain_openai import ChatOpenAI

    from reference_server.agent.llm_factory import NO_KEY, ChatModelFactory

    original = ChatModelFactory.build

    @cache
    def unreachable(model: str) -> ChatOpenAI:  # as the server builds a model (llm_factory), at the discard port
        discard = "http://127.0.0.1:9/v1"  # nothing listens there
        return ChatOpenAI(
            base_url=discard, api_key=NO_KEY, model=model, streaming=True, stream_usage=True, max_retries=0
        )

    def build(self, settings):
        return unreachable(settings.model) if _IN_CHECK.get() else original(self, settings)

    ChatModelFactory.build = build
    _mark_check_turns()


def _tool_turns_fail() -> None:
    """From the first tool event on, the turn is an `error` then `done` (as a server that lacks the tool may do)."""
    from reference_server.agent.turn import Turn

    original = Turn.stream

    async def stream(self):
        cut = False
        async for batch in original(self):
            if cut:
                continue  # the rest of the turn is never sent
            if not _IN_CHECK.get():
                yield batch
                continue
            kept = []
            for event in batch:
                if event["type"] in ("tool_call", "tool_start", "tool_end"):
                    kept += [
                        {"type": "error", "error": "the tool is not available", "session_id": self.session_id},
                        {"type": "done", "session_id": self.session_id},
                    ]
                    cut = True
                    break
                kept.append(event)
            if kept:
                yield kept

    Turn.stream = stream
    _mark_check_turns()


def _stream_in_one_piece() -> None:
    """The server holds every event of a check's turn and sends them all when the turn has ended."""
    from reference_server.agent.turn import Turn

    original = Turn.stream

    async def stream(self):
        if not _IN_CHECK.get():
            async for batch in original(self):
                yield batch
            return
        held = []
        async for batch in original(self):
            held += [e for e in batch if e["type"] != "heartbeat"]
        yield held

    Turn.stream = stream
    _mark_check_turns()


PREVENTERS = {
    preventer.name: preventer
    for preventer in (
        Preventer("llm-down-after-preflight", "no turn of a check is served: the model answers an error", _llm_down),
        Preventer(
            "tool-turns-fail-after-preflight",
            "no tool runs in a check's turn: a tool call ends the turn in an error",
            _tool_turns_fail,
        ),
        Preventer(
            "stream-in-one-piece-after-preflight",
            "a check's turn is sent in one piece when it has ended, so no disconnect or race lands mid-turn",
            _stream_in_one_piece,
        ),
    )
}
