"""Mutants for the stream shapes of the fake LLM (spec/fake-llm/README.md, "Stream shapes"): each breaks the reference
server where a real server breaks on a provider's other cut of the deltas (a call whole in one chunk, several calls in
one chunk, interleaved fragments, no usage reported), as the upstream bugs the suite now finds do (ag-ui-langgraph
0.0.47: no TOOL_CALL_ARGS for arguments that arrive in one chunk, ag-ui issue 2463; only the first of several calls
of a chunk streamed before its result, issues 871 and 1016; langgraph-openai-serve 0.31: no usage chunk when the
model reports none). The channel mutants serve a step streamed the default way (the fragments of one call after
another, usage after the finish) right: only a shape's scenario can see them.

Registered in tests/quality/mutants.py's MUTANTS by importing this module; each fails exactly its targets and
consequences (tests/quality/test_channel_mutants.py, tests/quality/test_mutants.py).
"""

from __future__ import annotations

from typing import Any

from .mutant_kit import mutant

OPENAI, UI, AG_UI = "channel_openai", "channel_ui", "channel_ag_ui"


def _hold_later_calls(cls: type, method: str, opens: set[str], answered: str, key: str) -> None:
    """Wrap a channel's per-event mapper: the chunks of every call but the first of a turn are held back until the
    first call's result has been sent, then follow it (the shape ag-ui-langgraph gives several calls of one chunk)."""
    original = getattr(cls, method)

    def mapped(self, *args: Any) -> list[dict[str, Any]]:
        made, out = original(self, *args), []
        state = self.__dict__.setdefault("_mutant_hold", {"first": None, "held": [], "released": False})
        for item in made:
            if item["type"] in opens and not state["released"]:
                state["first"] = state["first"] or item[key]
                if item[key] != state["first"]:
                    state["held"].append(item)
                    continue
            out.append(item)
            if item["type"] == answered and state["held"]:
                out += state["held"]
                state.update(held=[], released=True)
        return out

    setattr(cls, method, mapped)


# --- AG-UI --------------------------------------------------------------------------------------------------------


@mutant(
    "ag-ui-whole-call-without-args",
    "a tool call whose first delta already holds its whole arguments is sent as TOOL_CALL_START and TOOL_CALL_END "
    "without TOOL_CALL_ARGS (ag-ui-langgraph 0.0.47, ag-ui issue 2463)",
    {"AGUI-PROTO-006"},  # the arguments are streamed as TOOL_CALL_ARGS between the call's start and end
    only=(AG_UI,),
)
def _ag_ui_whole_call_without_args() -> None:
    from reference_server.channels.ag_ui import AgUiStream

    original = AgUiStream._tool_call

    def tool_call(self, streamed: dict[str, Any]) -> list[dict[str, Any]]:
        whole = streamed["id"] not in self._calls and bool(streamed["function"]["arguments"])
        events = original(self, streamed)
        if whole:
            events = [e for e in events if not (e["type"] == "TOOL_CALL_ARGS" and e["toolCallId"] == streamed["id"])]
        return events

    AgUiStream._tool_call = tool_call


@mutant(
    "ag-ui-later-calls-after-first-result",
    "of several tool calls of one generation only the first is streamed before the tool results; the others follow "
    "the first call's TOOL_CALL_RESULT (ag-ui-langgraph 0.0.47, ag-ui issues 871 and 1016)",
    {"AGUI-PROTO-006"},  # calls the model sent together are all streamed before any of them has a result
    only=(AG_UI,),
)
def _ag_ui_later_calls_after_first_result() -> None:
    from reference_server.channels.ag_ui import AgUiStream

    opens = {"TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END"}
    _hold_later_calls(AgUiStream, "events", opens, "TOOL_CALL_RESULT", "toolCallId")


# --- UI message stream ----------------------------------------------------------------------------------------------


@mutant(
    "ui-later-calls-after-first-output",
    "of several tool calls of one step only the first gets its tool parts before the tool outputs; the others' "
    "tool-input-start, -delta and -available follow the first call's tool-output-available",
    # the contract's parts: each call's tool-input-available once the generation completes it, before any output (the
    # protocol leaves the order open: ai's streamText once ran each tool as soon as its call was complete)
    {"UI-003"},
    only=(UI,),
)
def _ui_later_calls_after_first_output() -> None:
    from reference_server.channels.ui_stream import UiMessageStream

    opens = {"tool-input-start", "tool-input-delta", "tool-input-available"}
    _hold_later_calls(UiMessageStream, "chunks", opens, "tool-output-available", "toolCallId")


@mutant(
    "ui-whole-call-without-input",
    "a tool call whose first delta already holds its whole arguments gets tool-input-start and its output, but no "
    "tool-input-delta or tool-input-available",
    {"UI-PROTO-005"},  # the part's input comes from tool-input-available: `ai` shows the call without its input
    {"UI-003"},  # the contract's part: its output follows its tool-input-available, closed before finish-step
    only=(UI,),
)
def _ui_whole_call_without_input() -> None:
    from reference_server.channels.ui_stream import UiMessageStream

    original_call, original_end = UiMessageStream._tool_call, UiMessageStream._tool_end

    def tool_call(self, call: dict[str, Any]) -> list[dict[str, Any]]:
        whole = call["id"] not in self._tools and bool(call["function"]["arguments"])
        chunks = original_call(self, call)
        if whole or call["id"] in self.__dict__.get("_mutant_whole", ()):
            self.__dict__.setdefault("_mutant_whole", set()).add(call["id"])
            chunks = [c for c in chunks if c.get("toolCallId") != call["id"] or c["type"] == "tool-input-start"]
        return chunks

    def tool_end(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        chunks = original_end(self, event)
        whole = self.__dict__.get("_mutant_whole", ())
        return [c for c in chunks if not (c["type"] == "tool-input-available" and c["toolCallId"] in whole)]

    UiMessageStream._tool_call, UiMessageStream._tool_end = tool_call, tool_end


# --- OpenAI -------------------------------------------------------------------------------------------------------


@mutant(
    "openai-no-usage-chunk-without-model-usage",
    "with `stream_options.include_usage`, no usage chunk when the model reported no usage (langgraph-openai-serve "
    "0.31's shape)",
    {"OPENAI-PROTO-004"},  # one more chunk, `choices: []` and the usage, whatever the counts
    only=(OPENAI,),
)
def _openai_no_usage_chunk_without_model_usage() -> None:
    from reference_server.channels.openai_chat import ChatCompletionStream

    original = ChatCompletionStream.feed

    def feed(self, batch: list[dict[str, Any]]) -> str:
        out = original(self, batch)
        if not self.include_usage or not any(e["type"] == "done" for e in batch) or any(self.usage()):
            return out
        frames = out.split("\n\n")  # data_frame: compact JSON, one frame per chunk
        return "\n\n".join(f for f in frames if '"choices":[],"usage":{' not in f)

    ChatCompletionStream.feed = feed


@mutant(
    "openai-tool-calls-on-one-index",
    "the chat stream sends the server's tool calls as `delta.tool_calls` fragments, every call under index 0",
    {"OPENAI-PROTO-002"},  # one index per call (the client merges fragments by index)
    {"OPENAI-002"},  # the contract's server runs its tools: their calls are not sent at all
    only=(OPENAI,),
)
def _openai_tool_calls_on_one_index() -> None:
    from reference_server.channels.openai_chat import ChatCompletionStream
    from reference_server.turns.sse import data_frame

    original = ChatCompletionStream.feed

    def feed(self, batch: list[dict[str, Any]]) -> str:
        frames = []
        sent = self.__dict__.setdefault("_mutant_sent", {})
        for event in batch:
            if event["type"] == "tool_call" and not self.ended:
                call, function = event["tool_call"], event["tool_call"]["function"]
                fragment: dict[str, Any] = {"index": 0, "function": {"arguments": ""}}
                if call["id"] not in sent:
                    fragment.update(id=call["id"], type="function")
                    fragment["function"]["name"] = function["name"]
                fragment["function"]["arguments"] = function["arguments"][len(sent.get(call["id"], "")) :]
                sent[call["id"]] = function["arguments"]
                frames.append(data_frame(self.chunk({"tool_calls": [fragment]})))
            else:
                frames.append(original(self, [event]))
        return "".join(frames)

    ChatCompletionStream.feed = feed


@mutant(
    "responses-text-then-tool-fails",
    "a Responses stream whose generation streamed text and then calls a tool ends in `response.failed` "
    "(langgraph-openai-serve 0.31's shape)",
    {"OPENAI-PROTO-009"},  # a response whose generation completed ends in response.completed
    {"OPENAI-006"},  # the contract's response carries the turn's whole text
    only=(OPENAI,),
)
def _responses_text_then_tool_fails() -> None:
    from reference_server.channels.openai_responses import ResponseEventStream

    original = ResponseEventStream.feed

    def feed(self, batch: list[dict[str, Any]]) -> str:
        for n, event in enumerate(batch):
            if event["type"] == "tool_call" and self.text and not self.ended:
                failed = {"type": "error", "error": "Internal server error", "code": "internal_error"}
                return original(self, [*batch[:n], failed])
        return original(self, batch)

    ResponseEventStream.feed = feed


# --- the GNS3 stream and the statistics -----------------------------------------------------------------------------


@mutant(
    "tool-call-fragments-by-position",
    "the server tells the fragments of parallel calls apart by their place in a chunk, not by their `index`: "
    "the fragments of a later call, one after another or interleaved, are added to the first call's arguments",
    {"TOOLCALL-003"},  # each call completes with its own complete JSON arguments
)
def _tool_call_fragments_by_position() -> None:
    from reference_server.agent.stream_translator import ToolCallStreamAccumulator

    original = ToolCallStreamAccumulator.add_chunks

    def add_chunks(self, chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return original(self, [{**chunk, "index": position} for position, chunk in enumerate(chunks)])

    ToolCallStreamAccumulator.add_chunks = add_chunks


@mutant(
    "content-stops-at-an-empty-delta",
    "an empty delta after the generation's first text is taken for its end: the text after it is not streamed (it is "
    "still stored)",
    {"STREAM-CONTENT-001"},  # what a turn streams is what its history holds
)
def _content_stops_at_an_empty_delta() -> None:
    from reference_server.agent.stream_translator import StreamTranslator

    original = StreamTranslator._on_chunk

    def on_chunk(self, chunk: Any) -> list[dict[str, Any]]:
        text = chunk.content if isinstance(chunk.content, str) else chunk.text
        if self.__dict__.get("_mutant_stopped"):
            return [e for e in original(self, chunk) if e["type"] != "content"]
        if not text and not chunk.tool_call_chunks and self.streamed and not chunk.response_metadata:
            self._mutant_stopped = True  # an empty delta mid-generation (the finish chunk has its metadata)
        return original(self, chunk)

    StreamTranslator._on_chunk = on_chunk


@mutant(
    "usage-on-the-finish-chunk-ignored",
    "a generation's usage is counted only from a usage chunk of its own (`choices: []`): usage a provider sends on "
    "the finish chunk is not counted",
    {"STATS-003"},  # the tokens are the generations' reported usage, wherever the stream carried it
)
def _usage_on_the_finish_chunk_ignored() -> None:
    from reference_server.agent.stream_translator import StreamTranslator

    original_chunk, original_translate = StreamTranslator._on_chunk, StreamTranslator.translate

    def on_chunk(self, chunk: Any) -> list[dict[str, Any]]:
        if chunk.usage_metadata and chunk.response_metadata.get("finish_reason"):
            self._mutant_usage_on_finish = True
        return original_chunk(self, chunk)

    def translate(self, raw: dict[str, Any]) -> list[dict[str, Any]]:
        if raw["event"] == "on_chat_model_end" and self.__dict__.pop("_mutant_usage_on_finish", False):
            counted = self.stats.add_usage
            self.stats.add_usage = lambda usage: None  # this generation's usage is dropped
            try:
                return original_translate(self, raw)
            finally:
                self.stats.add_usage = counted
        return original_translate(self, raw)

    StreamTranslator._on_chunk, StreamTranslator.translate = on_chunk, translate


@mutant(
    "finish-length-taken-for-an-error",
    "a generation that ends with finish_reason `length` (cut at its token limit) is reported as an `error` event, "
    "as if it had failed",
    {"OPENAI-PROTO-002"},  # a completed generation is not ended by an error frame (the client raises APIError)
    {"OPENAI-002"},  # the contract's turn: the script's text, then its finish chunk
    only=(OPENAI,),
)
def _finish_length_taken_for_an_error() -> None:
    from reference_server.agent.stream_translator import StreamTranslator

    original = StreamTranslator.translate

    def translate(self, raw: dict[str, Any]) -> list[dict[str, Any]]:
        events = original(self, raw)
        output = raw.get("data", {}).get("output") if raw["event"] == "on_chat_model_end" else None
        if getattr(output, "response_metadata", {}).get("finish_reason") == "length":
            cut = {"type": "error", "error": "the answer was cut at the token limit", "session_id": self.session_id}
            events = [*events, cut]
        return events

    StreamTranslator.translate = translate


@mutant(
    "tokens-estimated-without-usage",
    "a generation whose model reports no usage is counted with tokens estimated from its text, not as none",
    {"STATS-003"},  # the tokens are the model's reported usage: none reported, none counted
)
def _tokens_estimated_without_usage() -> None:
    from reference_server.agent.stream_translator import TurnStatistics

    original = TurnStatistics.add_usage

    def add_usage(self, usage: dict[str, Any] | None) -> None:
        original(self, usage or {"input_tokens": 10, "output_tokens": 4})

    TurnStatistics.add_usage = add_usage
