"""Chat models built from the request's LLM settings: the in-process fake LLM or an OpenAI-compatible server."""

from __future__ import annotations

from functools import lru_cache

from langchain_core.language_models import BaseChatModel
from langchain_openai import ChatOpenAI

from fake_llm.chat_model import FakeScriptedChatModel
from fake_llm.request_log import RequestLog
from fake_llm.scripts import ScriptLibrary

from .context import LlmSettings

NO_KEY = "no-key"  # the bearer token sent to a provider configured without an api_key


class ChatModelFactory:
    def __init__(self, library: ScriptLibrary, request_log: RequestLog) -> None:
        self.library = library
        self.request_log = request_log

    def build(self, settings: LlmSettings) -> BaseChatModel:
        if settings.provider == "fake":
            return FakeScriptedChatModel(
                library=self.library,
                request_log=self.request_log,
                model_name=settings.model,
                temperature=settings.temperature,
            )
        # Any OpenAI-compatible chat-completions server: base URL, model and API key (TESTABILITY-001).
        # A provider without keys (a local server) gets a placeholder: the `openai` client refuses to send a request
        # without one ("Missing credentials"), which failed every turn of a configuration without an api_key.
        return _openai_model(
            settings.base_url, settings.api_key or NO_KEY, settings.model, settings.temperature, settings.max_tokens
        )


@lru_cache(maxsize=64)
def _openai_model(
    base_url: str | None, api_key: str, model: str, temperature: float, max_tokens: int | None
) -> ChatOpenAI:
    # Cached per configuration: each ChatOpenAI owns an HTTP connection pool. stream_usage asks the server
    # for the final usage chunk that the statistics need (STATS-003).
    return ChatOpenAI(
        base_url=base_url,
        api_key=api_key,
        model=model,
        temperature=temperature,
        max_tokens=max_tokens,
        streaming=True,
        stream_usage=True,
    )
