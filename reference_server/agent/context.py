"""Request-scoped secrets for the agent, as the design document describes ("ContextVars Solution").

The LLM configuration (with its decrypted API key) lives in a context variable set by the request that
starts a turn; the graph's nodes read it. It is never part of the LangGraph config or state, so it never
reaches the checkpointer (SECRET-001, SECRET-002).
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass


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


def set_request_context(llm: LlmSettings) -> None:
    _llm_settings.set(llm)


def current_llm_settings() -> LlmSettings:
    try:
        return _llm_settings.get()
    except LookupError as exc:
        raise RuntimeError("no LLM settings in this context: a turn must be started by a request") from exc
