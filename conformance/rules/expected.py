"""What a fake-LLM script makes a turn show on any channel: the text of each generation, its tool calls, and
whether the turn ends in an error. A channel's content is judged exact against this (and its usage against the
fake LLM's log, conformance.harness.llm_log)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Generation:
    text: str  # the text the generation streams before it ends (or fails)
    tool_calls: tuple[ToolCall, ...]
    calls_together: bool = False  # its calls reach the server together, whole, in one chunk (shape `one_chunk`)


@dataclass(frozen=True)
class ExpectedTurn:
    script: str
    generations: tuple[Generation, ...]
    fails: bool  # the turn ends in the contract's `error` (a generation fails)
    failure: str | None = None  # the fake LLM's scripted failure message

    @property
    def text(self) -> str:
        return "".join(g.text for g in self.generations)

    @property
    def texts(self) -> list[str]:
        """Each generation's text, leaving out generations with none."""
        return [g.text for g in self.generations if g.text]

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [call for g in self.generations for call in g.tool_calls]


def calls_by_generation(expected: ExpectedTurn, shown: list[Any]) -> list[tuple[int, Generation, list[Any]]]:
    """(number, generation, its shown calls) for each generation that made calls: the calls a stream showed, in the
    order they appeared, paired with the model's by that order (a stream that shows fewer gives the last ones
    fewer)."""
    paired, position = [], 0
    for number, generation in enumerate(expected.generations):
        if generation.tool_calls:
            paired.append((number, generation, shown[position : position + len(generation.tool_calls)]))
            position += len(generation.tool_calls)
    return paired


def expected_turn(scripts: dict[str, dict[str, Any]], script: str) -> ExpectedTurn:
    """The turn a script plays: generations up to the first that fails (a mid-stream failure keeps the chunks the
    fake LLM sent before it; an HTTP failure sends none)."""
    generations = []
    for step in scripts[script]["steps"]:
        chunks = list(step.get("text_chunks", []))
        fail = step.get("fail")
        if fail:
            sent = chunks[: fail.get("after_chunks", 0)] if fail.get("mode") == "mid_stream" else []
            generations.append(Generation("".join(sent), ()))
            return ExpectedTurn(script, tuple(generations), True, fail.get("message"))
        calls = tuple(ToolCall(c["id"], c["name"], dict(c["arguments"])) for c in step.get("tool_calls", []))
        together = len(calls) > 1 and (step.get("stream") or {}).get("tool_calls") == "one_chunk"
        generations.append(Generation("".join(chunks), calls, together))
    return ExpectedTurn(script, tuple(generations), False)
