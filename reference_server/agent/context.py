"""Request-scoped secrets for the agent, as the design document describes ("ContextVars Solution").

The LLM configuration (with its decrypted API key) lives in a context variable set by the request that
starts a turn; the graph's nodes read it. It is never part of the LangGraph config or state, so it never
reaches the checkpointer (SECRET-001, SECRET-002).
"""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class LlmSettings:
    provider: str  # "fake" (in-process scripted model) or "openai" (any OpenAI-compatible base_url)
    model: str
    temperature: float
    base_url: str | None = None
    api_key: str | None = None
    max_tokens: int | None = None

    def __repr__(self) -> str:  # never print the key
        return f"LlmSettings(provider={self.provider!r}, model={self.model!r}, base_url={self.base_url!r})"


_llm_settings: ContextVar[LlmSettings] = ContextVar("copilot_llm_settings")
# A channel's instructions for one turn (OpenAI `system` messages, Responses `instructions`): added to the system
# prompt of that turn's generations only, never stored in the conversation (OPENAI-001, OPENAI-005).
_instructions: ContextVar[str | None] = ContextVar("copilot_turn_instructions", default=None)


def set_request_context(llm: LlmSettings, instructions: str | None = None) -> None:
    _llm_settings.set(llm)
    _instructions.set(instructions)


def current_instructions() -> str | None:
    return _instructions.get()


def current_llm_settings() -> LlmSettings:
    try:
        return _llm_settings.get()
    except LookupError as exc:
        raise RuntimeError("no LLM settings in this context: a turn must be started by a request") from exc


# The tools of the turn's project (name -> tool), set when its turn starts: one compiled graph serves every project
# of a worker that shares its checkpointer (PostgreSQL), so a graph's nodes cannot hold one project's tools.
_project_tools: ContextVar[Mapping[str, Any]] = ContextVar("copilot_project_tools")


def set_project_tools(tools: Mapping[str, Any]) -> None:
    _project_tools.set(tools)


def current_project_tools() -> Mapping[str, Any]:
    try:
        return _project_tools.get()
    except LookupError as exc:
        raise RuntimeError("no project tools in this context: a turn must be started by its project") from exc
