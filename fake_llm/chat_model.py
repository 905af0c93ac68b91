"""The fake LLM in-process: a LangChain chat model that plays scripts (FAKELLM-001..005).

It streams `AIMessageChunk`s with `tool_call_chunks` (id and name on a call's first chunk, then argument
fragments, as OpenAI streams them; or as the step's stream shape cuts them, playback.py) and a last chunk
carrying the finish reason and `usage_metadata` (none for the usage shape `absent`), so LangChain assembles the
same message, tool calls and usage that `ChatOpenAI` assembles from the HTTP server.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass
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
from fake_llm.playback import (
    EmptyDelta,
    FailNow,
    Finish,
    Pause,
    Piece,
    TextDelta,
    ToolCallBatch,
    ToolCallDelta,
    UsageReport,
    pieces,
)
from fake_llm.request_log import RequestLog
from fake_llm.scripts import ScriptLibrary, Usage
from fake_llm.selection import Message, Selection, request_digest, select_and_record

ROLES = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}


@dataclass(frozen=True)
class Rendered:
    chunk: ChatGenerationChunk
    token: str | None  # the text of a text delta, for on_llm_new_token


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
        if isinstance(piece, EmptyDelta):
            return ChatGenerationChunk(message=AIMessageChunk(content="", id=message_id))
        assert isinstance(piece, ToolCallDelta | ToolCallBatch)
        deltas = piece.deltas if isinstance(piece, ToolCallBatch) else (piece,)
        tool_chunks = [{"name": d.name, "args": d.arguments, "id": d.id, "index": d.index} for d in deltas]
        return ChatGenerationChunk(message=AIMessageChunk(content="", id=message_id, tool_call_chunks=tool_chunks))

    def _last_chunk(self, finish: Finish, usage: Usage | None, message_id: str) -> ChatGenerationChunk:
        """The finish and the usage in one last chunk: LangChain has no usage-only chunk, so the usage shapes
        `final_chunk` and `in_finish_chunk` both end here; `absent` leaves usage_metadata out (FAKELLM-005)."""
        counts = None
        if usage is not None:
            counts = {
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
                "total_tokens": usage.total_tokens,
            }
        message = AIMessageChunk(
            content="",
            id=message_id,
            chunk_position="last",
            usage_metadata=counts,
            response_metadata={"finish_reason": finish.reason, "model_name": self.model_name},
        )
        return ChatGenerationChunk(message=message)

    def _playable(self, selection: Selection, message_id: str) -> Iterator[Pause | FailNow | Rendered]:
        """The step's pieces as chunks, the finish and its usage merged into the last one; pauses and failures
        are left to the caller (sync or async)."""
        finish: Finish | None = None
        usage: Usage | None = None
        for piece in pieces(selection.step):
            if isinstance(piece, Pause | FailNow):
                yield piece
            elif isinstance(piece, Finish):
                finish, usage = piece, piece.usage
            elif isinstance(piece, UsageReport):
                usage = piece.usage
            else:
                token = piece.text if isinstance(piece, TextDelta) else None
                yield Rendered(self._chunk(piece, message_id), token)
        if finish is not None:
            yield Rendered(self._last_chunk(finish, usage, message_id), None)

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
        for item in self._playable(selection, message_id):
            if isinstance(item, Pause):
                time.sleep(item.seconds)
                continue
            if isinstance(item, FailNow):
                raise self._failure(item, selection)
            if run_manager and item.token is not None:
                run_manager.on_llm_new_token(item.token, chunk=item.chunk)
            yield item.chunk

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        selection, reduced = self._select(messages, kwargs)
        message_id = self._message_id(selection, reduced)
        for item in self._playable(selection, message_id):
            if isinstance(item, Pause):
                await asyncio.sleep(item.seconds)
                continue
            if isinstance(item, FailNow):
                raise self._failure(item, selection)
            if run_manager and item.token is not None:
                await run_manager.on_llm_new_token(item.token, chunk=item.chunk)
            yield item.chunk

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
