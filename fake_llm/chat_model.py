"""The fake LLM in-process: a LangChain chat model that plays scripts (FAKELLM-001..005).

It streams `AIMessageChunk`s with `tool_call_chunks` (id and name on a call's first chunk, then argument
fragments, as OpenAI streams them) and a last chunk carrying `usage_metadata`, so LangChain assembles the same
message, tool calls and usage that `ChatOpenAI` assembles from the HTTP server.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.chat_models import BaseChatModel, agenerate_from_stream, generate_from_stream
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, Field

from fake_llm.errors import ScriptedFailure
from fake_llm.playback import FailNow, Pause, Piece, TextDelta, ToolCallDelta, pieces
from fake_llm.request_log import RequestLog
from fake_llm.scripts import ScriptLibrary
from fake_llm.selection import Message, Selection, request_digest, select_and_record

ROLES = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}


def _text(message: BaseMessage) -> str:
    return str(message.text)


class FakeScriptedChatModel(BaseChatModel):
    """A chat model whose every answer comes from a script selected by the conversation itself."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    library: ScriptLibrary = Field(default_factory=ScriptLibrary.from_folders)
    request_log: RequestLog = Field(default_factory=RequestLog)
    model_name: str = "fake-model"
    temperature: float | None = None

    @property
    def _llm_type(self) -> str:
        return "fake-scripted"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name}

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        return self.bind(tools=[convert_to_openai_tool(tool) for tool in tools], **kwargs)

    # --- selection and logging ------------------------------------------------------------------------

    def _select(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> tuple[Selection, list[Message]]:
        reduced = [Message(role=ROLES.get(m.type, m.type), text=_text(m)) for m in messages]
        tools = kwargs.get("tools") or []
        selection, failure = select_and_record(
            reduced,
            tools_bound=bool(tools),
            library=self.library,
            log=self.request_log,
            transport="in-process",
            model=self.model_name,
            stream=True,
            messages=[{"role": m.role, "content": m.text} for m in reduced],
            tools=[t.get("function", {}).get("name", "?") for t in tools],
            temperature=kwargs.get("temperature", self.temperature),
        )
        if failure is not None:
            raise ScriptedFailure(selection.failure_message(failure), status=failure.status)
        return selection, reduced

    # --- rendering --------------------------------------------------------------------------------------

    def _chunk(self, piece: Piece, message_id: str) -> ChatGenerationChunk:
        if isinstance(piece, TextDelta):
            return ChatGenerationChunk(message=AIMessageChunk(content=piece.text, id=message_id))
        assert isinstance(piece, ToolCallDelta)
        tool_chunk = {"name": piece.name, "args": piece.arguments, "id": piece.id, "index": piece.index}
        return ChatGenerationChunk(message=AIMessageChunk(content="", id=message_id, tool_call_chunks=[tool_chunk]))

    def _last_chunk(self, selection: Selection, message_id: str) -> ChatGenerationChunk:
        usage = selection.step.usage  # exactly the step's usage, as usage_metadata (FAKELLM-005)
        message = AIMessageChunk(
            content="",
            id=message_id,
            chunk_position="last",
            usage_metadata={
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
                "total_tokens": usage.total_tokens,
            },
            response_metadata={"finish_reason": selection.step.finish_reason, "model_name": self.model_name},
        )
        return ChatGenerationChunk(message=message)

    def _message_id(self, selection: Selection, reduced: list[Message]) -> str:
        step = "title" if selection.is_title else str(selection.step_index)
        return f"fake-{selection.script.name}-{step}-{request_digest(reduced)}"

    def _failure(self, piece: FailNow, selection: Selection) -> ScriptedFailure:
        return ScriptedFailure(selection.failure_message(piece.failure, mid_stream=True), status=piece.failure.status)

    # --- LangChain entry points -----------------------------------------------------------------------

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        selection, reduced = self._select(messages, kwargs)
        message_id = self._message_id(selection, reduced)
        for piece in pieces(selection.step):
            if isinstance(piece, Pause):
                time.sleep(piece.seconds)
                continue
            if isinstance(piece, FailNow):
                raise self._failure(piece, selection)
            chunk = self._chunk(piece, message_id)
            if run_manager and isinstance(piece, TextDelta):
                run_manager.on_llm_new_token(piece.text, chunk=chunk)
            yield chunk
        yield self._last_chunk(selection, message_id)

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        selection, reduced = self._select(messages, kwargs)
        message_id = self._message_id(selection, reduced)
        for piece in pieces(selection.step):
            if isinstance(piece, Pause):
                await asyncio.sleep(piece.seconds)
                continue
            if isinstance(piece, FailNow):
                raise self._failure(piece, selection)
            chunk = self._chunk(piece, message_id)
            if run_manager and isinstance(piece, TextDelta):
                await run_manager.on_llm_new_token(piece.text, chunk=chunk)
            yield chunk
        yield self._last_chunk(selection, message_id)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return _finish(generate_from_stream(self._stream(messages, stop, run_manager, **kwargs)))

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return _finish(await agenerate_from_stream(self._astream(messages, stop, run_manager, **kwargs)))


def _finish(result: ChatResult) -> ChatResult:
    """Turn the merged chunk into a plain AIMessage (tool_call_chunks parsed into tool_calls)."""
    generation = result.generations[0]
    message = generation.message
    if isinstance(message, AIMessageChunk):
        message = AIMessage(
            content=message.content,
            id=message.id,
            tool_calls=message.tool_calls,
            usage_metadata=message.usage_metadata,
            response_metadata=message.response_metadata,
        )
    return ChatResult(generations=[ChatGeneration(message=message)])
