"""Mutants of the channels (spec/behaviour.md: CHANNEL-*, OPENAI-*, UI-*, AGUI-*): each a channel of the reference
server broken the way a real implementer could break it, in its chunks, order, ids, usage, error shapes, end
markers, headers or heartbeats, or in what every channel shares with the GNS3 stream (the busy lock, statistics,
the conversation, client tools, disconnects and aborts). Each patches reference_server.channels (or what a channel
turn reaches) in the mutant's process only, and names the conformance areas its run needs (`only`): the areas of
its channel, and `channels` / `across_channels` when a rule of those is among its targets or consequences.
Registered in tests/quality/mutants.py's MUTANTS by importing this module.

A break of a protocol's own rule (a chunk without its id, no `[DONE]`, a frame its real client cannot parse) fails
that protocol's rule (OPENAI-PROTO-*, UI-PROTO-*, AGUI-PROTO-*), not the contract's: each mutant names the voice of
what it breaks. The protocol rules no break here reaches have their mutants in tests/quality/mutants_protocols.py.
"""

from __future__ import annotations

import asyncio
import uuid
from contextvars import ContextVar
from typing import Any

from .mutant_kit import Mutant, mutant

OPENAI, UI, AG_UI = "channel_openai", "channel_ui", "channel_ag_ui"
SHARED, ACROSS = "channels", "across_channels"

# Requirements of the channels without a mutant of their own, and why (test_channel_mutants.py).
NO_MUTANT: dict[str, str] = {}

# Mutants the suite does not catch yet: name -> (the mutant, what its target's check should have seen). They are not
# in MUTANTS (their test would fail); once a check sees the break, move the mutant to `@mutant`.
SUITE_GAPS: dict[str, tuple[Mutant, str]] = {}


def _gap(name: str, breaks: str, targets: set[str], only: tuple[str, ...], should_see: str):
    def register(apply):
        SUITE_GAPS[name] = (Mutant(name, breaks, apply, frozenset(targets), frozenset(), only), should_see)
        return apply

    return register


def _after(cls: type, name: str, change) -> None:
    """Wrap `cls.name` so that its result goes through `change(self, result, *args)`."""
    original = getattr(cls, name)

    def wrapped(self, *args, **kwargs):
        return change(self, original(self, *args, **kwargs), *args)

    setattr(cls, name, wrapped)


def _translators() -> list[Any]:
    from reference_server.channels import ag_ui, openai_chat, openai_responses, ui_stream
    from reference_server.turns import sse

    return [sse, openai_chat, openai_responses, ui_stream, ag_ui]


# --- OpenAI Chat Completions -----------------------------------------------------------------------------------


@mutant(
    "openai-chunk-without-id",
    "the chat.completion.chunk objects have no `id`",
    {"OPENAI-PROTO-002"},  # ChatCompletionChunk.id is required
    only=(OPENAI,),
)
def _openai_chunk_without_id() -> None:
    from reference_server.channels.openai_chat import ChatCompletionStream

    def change(_self, chunk, *_):
        chunk.pop("id", None)
        return chunk

    _after(ChatCompletionStream, "chunk", change)


@mutant(
    "openai-chunk-ids-differ",
    "every chat.completion.chunk gets an `id` of its own (a new uuid per chunk)",
    {"OPENAI-PROTO-002"},  # "Each chunk has the same ID"
    only=(OPENAI,),
)
def _openai_chunk_ids_differ() -> None:
    from reference_server.channels.openai_chat import ChatCompletionStream

    def change(_self, chunk, *_):
        chunk["id"] = f"chatcmpl-{uuid.uuid4().hex}"
        return chunk

    _after(ChatCompletionStream, "chunk", change)


@mutant(
    "openai-no-done",
    "the chat completion stream ends without `data: [DONE]` (an in-stream error's too)",
    {"OPENAI-PROTO-002"},  # the `openai` client's Stream reads until `data: [DONE]`
    only=(OPENAI,),
)
def _openai_no_done() -> None:
    import reference_server.channels.openai_chat as openai_chat

    openai_chat.DONE_FRAME = ""


@mutant(
    "openai-two-finish-chunks",
    'the turn\'s end is sent as two chunks with `finish_reason: "stop"`',
    {"OPENAI-PROTO-003"},  # each choice ends with one chunk with a finish_reason
    only=(OPENAI,),
)
def _openai_two_finish_chunks() -> None:
    from reference_server.channels.openai_chat import ChatCompletionStream
    from reference_server.turns.sse import data_frame

    def change(self, text, batch):
        if any(event["type"] == "done" for event in batch):
            finish = data_frame(self.chunk({}, "stop"))
            text = text.replace(finish, finish + finish, 1)
        return text

    _after(ChatCompletionStream, "feed", change)


@mutant(
    "openai-first-delta-without-role",
    'the first chunk\'s delta is `{"content": ""}`, without `"role": "assistant"`',
    {"OPENAI-002"},
    only=(OPENAI,),
)
def _openai_first_delta_without_role() -> None:
    from reference_server.channels.openai_chat import ChatCompletionStream
    from reference_server.turns.sse import data_frame

    ChatCompletionStream.opening = lambda self: data_frame(self.chunk({"content": ""}))


@mutant(
    "openai-usage-off-by-one",
    "the chat completion's usage counts one prompt token more than the turn's statistics",
    {"CHANNEL-008"},
    {"OPENAI-003"},  # the completion not streamed carries the same usage, which OPENAI-003 wants to be the turn's
    only=(OPENAI, SHARED),
)
def _openai_usage_off_by_one() -> None:
    import reference_server.channels.openai_chat as openai_chat

    original = openai_chat.chat_usage

    def chat_usage(input_tokens, output_tokens):
        return original(input_tokens + 1, output_tokens)

    openai_chat.chat_usage = chat_usage


@mutant(
    "openai-error-then-finish",
    "an in-stream error frame is followed by a finish chunk before `data: [DONE]`",
    {"OPENAI-004"},
    only=(OPENAI,),
)
def _openai_error_then_finish() -> None:
    from reference_server.channels.openai_chat import ChatCompletionStream
    from reference_server.turns.sse import DONE_FRAME, data_frame

    def change(self, text, batch):
        if any(event["type"] == "error" for event in batch):
            text = text.replace(DONE_FRAME, data_frame(self.chunk({}, "stop")) + DONE_FRAME, 1)
        return text

    _after(ChatCompletionStream, "feed", change)


@mutant(
    "openai-refusals-in-contract-body",
    "the OpenAI channel refuses with the contract's `{message, code}` body instead of OpenAI's error envelope",
    # the body is not OpenAI's `{"error": <ErrorObject>}` (the protocol's), so no contract status, type and code
    # reaches the client in it (the contract's)
    {"OPENAI-004", "OPENAI-PROTO-006"},
    # every refusal the other rules judge is read in OpenAI's envelope: unsupported members, the failed turn's 502,
    # an unknown previous response, the model list's 403 to a user without project access, the busy session's 409
    # (across_channels.busy, which judges OPENAI-004's x-should-retry on it, reads no `session_busy` code)
    {"OPENAI-001", "OPENAI-003", "OPENAI-005", "OPENAI-007", "CHANNEL-002", "CHANNEL-005"},
    only=(OPENAI, ACROSS),
)
def _openai_refusals_in_contract_body() -> None:
    import reference_server.channels.routes as routes

    def contract_body(error):
        return {"message": error.message, "code": error.code}

    routes.ERROR_SHAPES = tuple((marker, contract_body) for marker, _ in routes.ERROR_SHAPES)


@mutant(
    "openai-502-retried",
    "a failed non-streamed turn is answered 502 without `x-should-retry: false` (the openai client runs it again)",
    {"OPENAI-003"},
    only=(OPENAI,),
)
def _openai_502_retried() -> None:
    import reference_server.channels.openai_common as openai_turn

    openai_turn.NO_RETRY = {}


@mutant(
    "openai-409-retried",
    "a 409 `session_busy` on the OpenAI paths carries no `x-should-retry: false` (the openai client re-sends it twice)",
    {"OPENAI-004"},
    only=(OPENAI,),
)
def _openai_409_retried() -> None:
    import reference_server.channels.openai_chat as openai_chat
    import reference_server.channels.openai_responses as openai_responses

    openai_chat.not_retried = openai_responses.not_retried = lambda error: error


@mutant(
    "openai-unknown-member-accepted",
    "a chat completion request member the channel does not take (`web_search_options`, an unknown member) is "
    "ignored, not refused `unsupported_field`",
    {"OPENAI-001"},
    {"OPENAI-004"},  # its error rules send such a member, and read the refusal's envelope
    only=(OPENAI,),
)
def _openai_unknown_member_accepted() -> None:
    import reference_server.channels.openai_chat as openai_chat

    openai_chat.refuse_unknown_members = lambda body, supported: None


@mutant(
    "openai-undeliverable-values-served",
    "a value asking for what a turn cannot give (`n: 2`, `logprobs: true`, a JSON `response_format`, "
    "`background: true`, a JSON `text.format`) is ignored and the turn runs, not refused `unsupported_field`",
    {"OPENAI-001", "OPENAI-005"},
    only=(OPENAI,),
)
def _openai_undeliverable_values_served() -> None:
    import reference_server.channels.openai_chat as openai_chat
    import reference_server.channels.openai_responses as openai_responses

    openai_chat.refuse_asked = lambda body, asked: None
    openai_responses.refuse_asked = lambda body, asked: None


@mutant(
    "openai-off-schema-null-accepted",
    "a chat completion request member set to null where the API's request schema takes no null "
    "(`web_search_options: null`) is served as if absent, not refused",
    {"OPENAI-001"},
    only=(OPENAI,),
)
def _openai_off_schema_null_accepted() -> None:
    import reference_server.channels.openai_chat as openai_chat

    openai_chat.refuse_off_schema = lambda body, endpoint: None


@mutant(
    "openai-models-without-gns3-copilot",
    "the model list names the upstream LLM (`gpt-4o-mini`), not `gns3-copilot`",
    {"OPENAI-007"},
    only=(OPENAI,),
)
def _openai_models_without_gns3_copilot() -> None:
    import reference_server.channels.openai_chat as openai_chat

    original = openai_chat.model_list

    def model_list():
        listed = original()
        listed["data"] = [{**model, "id": "gpt-4o-mini"} for model in listed["data"]]
        return listed

    openai_chat.model_list = model_list


@mutant(
    "openai-models-not-served",
    "GET .../openai/v1/models is not served (404): the OpenAI client cannot list the model",
    {"CHANNEL-001", "OPENAI-PROTO-010"},  # the channel's path not served; the protocol's model list not answered
    {"OPENAI-007"},  # not reached: its check stops when the list is not answered
    only=(OPENAI, SHARED),
)
def _openai_models_not_served() -> None:
    import reference_server.channels.openai_chat as openai_chat
    from reference_server.errors import ApiError

    def model_list():
        raise ApiError(404, "not_found", "Not Found")

    openai_chat.model_list = model_list


# --- OpenAI Responses -----------------------------------------------------------------------------------------


@mutant(
    "responses-sequence-gap",
    "the Responses stream's sequence_number skips a number after the opening events",
    {"OPENAI-PROTO-009"},  # sequence_number increases by one (it still starts at 0, as OPENAI-006 adds)
    only=(OPENAI,),
)
def _responses_sequence_gap() -> None:
    from reference_server.channels.openai_responses import ResponseEventStream

    original = ResponseEventStream.event

    def event(self, kind, **fields):
        if self.sequence == 4:  # after response.content_part.added
            self.sequence += 1
        return original(self, kind, **fields)

    ResponseEventStream.event = event


@mutant(
    "responses-failed-as-completed",
    "a Responses turn that failed ends with `response.completed` (the error dropped), not `response.failed`",
    {"OPENAI-006", "CHANNEL-010"},
    only=(OPENAI, SHARED),
)
def _responses_failed_as_completed() -> None:
    from reference_server.channels.openai_responses import ResponseEventStream

    original = ResponseEventStream.feed
    ResponseEventStream.feed = lambda self, batch: original(self, [e for e in batch if e["type"] != "error"])


@mutant(
    "responses-metadata-without-session",
    "the Response's `metadata` does not hold `session_id`",
    {"OPENAI-005"},
    only=(OPENAI,),
)
def _responses_metadata_without_session() -> None:
    from reference_server.channels.openai_responses import ResponseBuilder

    def change(_self, response, *_args):
        response["metadata"] = {}
        return response

    _after(ResponseBuilder, "response", change)


# --- UI message stream ------------------------------------------------------------------------------------------


@mutant(
    "ui-no-stream-header",
    "the UI message stream is answered without `x-vercel-ai-ui-message-stream: v1`",
    {"UI-PROTO-001"},  # the protocol's header (the contract's own, cache-control and x-accel-buffering, are kept)
    only=(UI,),
)
def _ui_no_stream_header() -> None:
    import reference_server.channels.ui_stream as ui_stream

    ui_stream.UI_STREAM_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


@mutant(
    "ui-stream-may-be-buffered",
    "the UI message stream is answered without `cache-control: no-cache` and `x-accel-buffering: no` (a proxy may "
    "hold it back)",
    {"UI-002"},  # the contract's headers; the protocol's own (x-vercel-ai-ui-message-stream: v1) is kept
    only=(UI,),
)
def _ui_stream_may_be_buffered() -> None:
    import reference_server.channels.ui_stream as ui_stream

    ui_stream.UI_STREAM_HEADERS = {"x-vercel-ai-ui-message-stream": "v1"}


@mutant(
    "ui-no-done",
    "the UI message stream ends without `data: [DONE]`",
    {"UI-PROTO-001"},  # "The stream ends with a special [DONE] marker"
    only=(UI,),
)
def _ui_no_done() -> None:
    import reference_server.channels.ui_stream as ui_stream

    ui_stream.DONE_FRAME = ""


@mutant(
    "ui-text-never-ends",
    "a text part is never closed: no `text-end` (a new part still starts after a tool call)",
    {"UI-003"},
    {"UI-004"},  # the history's text part is done; what `ai` made of the stream is a part still streaming
    only=(UI,),
)
def _ui_text_never_ends() -> None:
    from reference_server.channels.ui_stream import UiMessageStream

    def close_text(self):
        self._text_id = None
        return []

    UiMessageStream._close_text = close_text


@mutant(
    "ui-finish-without-usage",
    "the `finish` chunk's messageMetadata has the sessionId but no usage",
    {"UI-003", "CHANNEL-008"},
    only=(UI, SHARED),
)
def _ui_finish_without_usage() -> None:
    from reference_server.channels.ui_stream import UiMessageStream

    def change(_self, chunks, *_):
        for chunk in chunks:
            if chunk["type"] == "finish":
                chunk["messageMetadata"].pop("usage", None)
        return chunks

    _after(UiMessageStream, "_done", change)


@mutant(
    "ui-tools-not-provider-executed",
    "the tool chunks lack `providerExecuted: true`: useChat takes the server's calls for client tools",
    {"UI-003"},
    {"UI-004"},  # the history's tool parts (providerExecuted) are not what `ai` made of the stream
    only=(UI,),
)
def _ui_tools_not_provider_executed() -> None:
    from reference_server.channels.ui_stream import UiMessageStream

    def change(_self, chunks, *_):
        for chunk in chunks:
            chunk.pop("providerExecuted", None)
        return chunks

    _after(UiMessageStream, "chunks", change)


@mutant(
    "ui-error-not-sent",
    "a contract `error` is not sent as an `error` chunk: the stream just finishes",
    {"UI-003", "CHANNEL-010"},
    only=(UI, SHARED),
)
def _ui_error_not_sent() -> None:
    from reference_server.channels.ui_stream import UiMessageStream

    def change(_self, chunks, *_):
        return [chunk for chunk in chunks if chunk["type"] != "error"]

    _after(UiMessageStream, "chunks", change)


@mutant(
    "ui-history-tools-input-available",
    "the UI history's tool parts stay in state `input-available`, without their output",
    {"UI-004"},
    only=(UI,),
)
def _ui_history_tools_input_available() -> None:
    import reference_server.channels.ui_messages as ui_messages

    original = ui_messages._tool_part

    def tool_part(call, outputs):
        part = original(call, outputs)
        part["state"] = "input-available"
        part.pop("output", None)
        return part

    ui_messages._tool_part = tool_part


@mutant(
    "ui-chat-id-ignored",
    "the UI request's chat `id` is ignored: every request starts a new session with an id of the server's",
    {"UI-001", "CHANNEL-002"},
    # the busy lock across channels never meets the UI turn, which starts a session of its own (CHANNEL-005); the
    # `start` chunk names a session other than the chat id (UI-003); the chat's messages, asked for by its id, are
    # those of no session (UI-004); judged by the checks of those rules too: a continued UI
    # turn reaches the model without its earlier turns (CHANNEL-004), and the abort of the chat's id stops nothing
    # (CHANNEL-009), so no aborted UI turn ends to be judged (UI-003, UI-PROTO-004: blocked by CHANNEL-009)
    {"CHANNEL-005", "UI-003", "UI-004", "CHANNEL-004", "CHANNEL-009", "UI-PROTO-004"},
    only=(UI, ACROSS, SHARED),
)
def _ui_chat_id_ignored() -> None:
    from dataclasses import replace

    import reference_server.channels.ui_stream as ui_stream

    original = ui_stream.turn_request
    ui_stream.turn_request = lambda body: replace(original(body), session_id=None, carries_history=False)


# --- AG-UI -----------------------------------------------------------------------------------------------------


@mutant(
    "agui-crlf-framing",
    "the AG-UI frames end their lines with CRLF",
    {"AGUI-002"},  # the contract's frames are LF only
    {"AGUI-PROTO-001"},  # @ag-ui/client's HttpAgent splits events on "\n\n" only: it cannot parse the run
    only=(AG_UI,),
)
def _agui_crlf_framing() -> None:
    import reference_server.channels.ag_ui as ag_ui
    from reference_server.turns.sse import data_frame

    ag_ui.data_frame = lambda payload: data_frame(payload).replace("\n", "\r\n")


@mutant(
    "agui-done-frame",
    "the AG-UI run ends with an OpenAI-style `data: [DONE]` frame",
    {"AGUI-PROTO-001"},  # every data: event is a JSON AG-UI event; HttpAgent fails to parse `[DONE]`
    only=(AG_UI,),
)
def _agui_done_frame() -> None:
    from reference_server.channels.ag_ui import AgUiStream
    from reference_server.turns.sse import DONE_FRAME

    def change(_self, text, batch):
        return text + DONE_FRAME if any(event["type"] == "done" for event in batch) else text

    _after(AgUiStream, "feed", change)


@mutant(
    "agui-no-run-finished",
    "an AG-UI run that was not stopped ends without RUN_FINISHED (an aborted run keeps its cancelled one)",
    {"AGUI-003", "AGUI-PROTO-002"},  # the protocol's run never ends; the contract's end (usage, thread, run) is missing
    # the run's end no longer echoes the request's runId (AGUI-001). (An aborted run's end is kept: without it, the
    # call it cut short read as a broken call (AGUI-002) only when the abort came mid-call, which the machine's load
    # decides, and the mutant's consequences must not depend on timing.)
    {"AGUI-001"},
    only=(AG_UI,),
)
def _agui_no_run_finished() -> None:
    from reference_server.channels.ag_ui import AgUiStream

    def ended(event: dict) -> bool:
        return event["type"] == "RUN_FINISHED" and event.get("outcome", {}).get("type") != "cancelled"

    _after(AgUiStream, "_done", lambda _self, events, *_: [e for e in events if not ended(e)])


@mutant(
    "agui-run-error-without-code",
    "RUN_ERROR carries the message but not the contract error's `code`",
    {"AGUI-003", "CHANNEL-010"},
    only=(AG_UI, SHARED),
)
def _agui_run_error_without_code() -> None:
    from reference_server.channels.ag_ui import AgUiStream

    def change(_self, events, *_):
        for event in events:
            if event["type"] == "RUN_ERROR":
                event.pop("code", None)
        return events

    _after(AgUiStream, "_done", change)


@mutant(
    "agui-run-id-not-echoed",
    "the run's events carry a runId of the server's, not the request's",
    {"AGUI-001"},
    {"AGUI-002"},  # the contract's RUN_STARTED names the request's thread and run (AG-UI itself does not ask it)
    only=(AG_UI,),
)
def _agui_run_id_not_echoed() -> None:
    from reference_server.channels.ag_ui import AgUiStream

    original = AgUiStream.__init__

    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        self.run_id = str(uuid.uuid4())

    AgUiStream.__init__ = __init__


@mutant(
    "agui-run-finished-new-run-id",
    "RUN_STARTED echoes the request's runId, but RUN_FINISHED names a runId made anew at the end",
    {"AGUI-003", "AGUI-001"},
    only=(AG_UI,),
)
def _agui_run_finished_new_run_id() -> None:
    from reference_server.channels.ag_ui import AgUiStream

    def change(_self, events, *_):
        for event in events:
            if event["type"] == "RUN_FINISHED":
                event["runId"] = str(uuid.uuid4())
        return events

    _after(AgUiStream, "_done", change)


# --- Across channels, and what every channel shares ------------------------------------------------------------


@mutant(
    "heartbeat-as-data-frame",
    "channels send their heartbeat as a data frame (`data: {}`), which the protocols' clients read as a message",
    {"CHANNEL-007"},
    only=(SHARED,),
)
def _heartbeat_as_data_frame() -> None:
    for module in _translators():
        module.HEARTBEAT_FRAME = "data: {}\n\n"


def _route_modules() -> list[Any]:
    """The modules of the channels' routes (the GNS3 stream starts its turns with the same core: not these)."""
    from reference_server.channels import ag_ui, openai_chat, openai_responses, ui_stream

    return [openai_chat, openai_responses, ui_stream, ag_ui]


_IN_CHANNEL_ROUTE: ContextVar[bool] = ContextVar("in_channel_route", default=False)


def _on_channel_turns(started=None) -> None:
    """Wrap the start of every channel turn (never a GNS3 stream turn): `_IN_CHANNEL_ROUTE` is true while it starts,
    and `started(channel_turn)` is called once it did."""
    import reference_server.turns.core as turns

    original = turns.start_channel_turn

    async def start_channel_turn(*args, **kwargs):
        token = _IN_CHANNEL_ROUTE.set(True)
        try:
            channel_turn = await original(*args, **kwargs)
        finally:
            _IN_CHANNEL_ROUTE.reset(token)
        if started is not None:
            started(channel_turn)
        return channel_turn

    for module in _route_modules():
        module.start_channel_turn = start_channel_turn


@mutant(
    "channel-llm-calls-counted-twice",
    "a channel turn counts each LLM call twice in the session's statistics",
    {"CHANNEL-003"},
    only=(ACROSS,),
)
def _channel_llm_calls_counted_twice() -> None:
    def started(channel_turn):
        turn = channel_turn.turn
        finish = turn._finish

        async def counted_twice(done_turn):
            done_turn.stats.llm_calls *= 2
            await finish(done_turn)

        turn._finish = counted_twice

    _on_channel_turns(started)


class _NoLockService:
    """The project's service as a channel turn sees it when the channel forgets the busy lock."""

    def __init__(self, service) -> None:
        self._service = service

    def __getattr__(self, name):
        return getattr(self._service, name)

    def is_busy(self, session_id):
        return False

    async def claim(self, session_id):
        self._service.running[session_id] = None  # reserved over the running turn, never refused
        return True


@mutant(
    "channel-no-busy-lock",
    "channel turns do not check the busy lock: a second turn of a running session is accepted on every channel "
    "(the GNS3 stream still refuses it)",
    {"CHANNEL-002", "CHANNEL-005"},
    # no OpenAI endpoint answers 409, so the x-should-retry of its 409 cannot be seen: NOT TESTABLE, not a pass
    {"OPENAI-004"},
    only=(ACROSS,),
)
def _channel_no_busy_lock() -> None:
    import reference_server.turns.core as turns

    original = turns.opened_project

    async def opened_project(*args, **kwargs):
        service = await original(*args, **kwargs)
        return _NoLockService(service) if _IN_CHANNEL_ROUTE.get() else service

    turns.opened_project = opened_project
    _on_channel_turns()


@mutant(
    "channel-client-tools-accepted",
    "client-side tools (OpenAI `tools`/`functions`, AG-UI `tools`) are ignored and the turn runs",
    {"CHANNEL-006"},
    only=(SHARED,),
)
def _channel_client_tools_accepted() -> None:
    import reference_server.channels.ag_ui as ag_ui
    import reference_server.channels.openai_chat as openai_chat
    import reference_server.channels.openai_responses as openai_responses

    def refuse_client_tools(body):
        if body.get("tool_choice") not in (None, "none", "auto"):
            raise openai_chat.unsupported("tool_choice")

    openai_chat.refuse_client_tools = refuse_client_tools
    openai_responses.refuse_client_tools = refuse_client_tools
    original = ag_ui.turn_request

    def turn_request(body):
        return original(body.model_copy(update={"tools": []}))

    ag_ui.turn_request = turn_request


@mutant(
    "channel-reads-client-history",
    "the OpenAI endpoints hand the client's copy of earlier messages to the model (as instructions)",
    {"CHANNEL-004"},
    only=(SHARED,),
)
def _channel_reads_client_history() -> None:
    import reference_server.channels.openai_chat as openai_chat
    import reference_server.channels.openai_responses as openai_responses
    from reference_server.channels.openai_common import split_conversation

    def with_history(messages, param, part_types):
        message, instructions, earlier = split_conversation(messages, param, part_types)
        copied = [m.get("content") for m in messages[:-1] if m.get("role") in ("user", "assistant")]
        texts = [text for text in copied if isinstance(text, str)]
        return message, [*instructions, *texts], earlier

    openai_chat.split_conversation = with_history
    openai_responses.split_conversation = with_history


@mutant(
    "channel-disconnect-leaves-busy",
    "a channel turn stopped by the client's disconnect finishes, but leaves its session marked busy",
    {"CHANNEL-009"},
    only=(SHARED,),
)
def _channel_disconnect_leaves_busy() -> None:
    from reference_server.agent.service import AgentService

    original = AgentService._finish_turn
    channel_turns: set[int] = set()

    async def finish_turn(self, turn):
        await original(self, turn)
        if id(turn) in channel_turns and turn.stop_reason == "client disconnected":  # turns/core.py
            self.running[turn.session_id] = None  # reserved, and never released
        channel_turns.discard(id(turn))

    AgentService._finish_turn = finish_turn
    _on_channel_turns(lambda channel_turn: channel_turns.add(id(channel_turn.turn)))


LATE_END_SECONDS = 7.0  # past CHANNEL-009's 5 s


@mutant(
    "channel-abort-ends-late",
    "an aborted channel turn's stream stays open 7 s (heartbeats only) before its end",
    {"CHANNEL-009"},
    only=(SHARED,),
)
def _channel_abort_ends_late() -> None:
    from fastapi.responses import StreamingResponse

    import reference_server.turns.sse as sse

    def stream_response(channel_turn, translator, headers):
        async def frames():
            yield translator.opening()
            async for batch in sse.contract_events(channel_turn):
                if channel_turn.turn.stop_reason == "aborted" and any(e["type"] == "done" for e in batch):
                    waited = 0.0
                    while waited < LATE_END_SECONDS:
                        await asyncio.sleep(0.5)
                        waited += 0.5
                        yield ": heartbeat\n\n"
                if text := translator.feed(batch):
                    yield text

        headers = {**headers, **sse.session_header(channel_turn)}
        return StreamingResponse(frames(), media_type="text/event-stream", headers=headers)

    for module in _route_modules():
        module.stream_response = stream_response


@mutant(
    "channel-refusals-in-openai-envelope",
    "the UI and AG-UI channels refuse in OpenAI's error envelope instead of the contract's error body",
    {"CHANNEL-005"},
    # their refusals are read by the contract's code too, by the cross-channel precondition check as well
    {"CHANNEL-004", "CHANNEL-006", "CHANNEL-002"},
    only=(SHARED, ACROSS),
)
def _channel_refusals_in_openai_envelope() -> None:
    from gns3_copilot_generated.constants import CHANNEL_PATHS
    from reference_server.channels import routes
    from reference_server.channels.openai_common import render_openai_error

    routes.ERROR_SHAPES = (
        *routes.ERROR_SHAPES,
        ("/chat" + CHANNEL_PATHS["ui"], render_openai_error),
        ("/chat" + CHANNEL_PATHS["ag_ui"], render_openai_error),
    )


# --- Not caught yet (SUITE_GAPS) -------------------------------------------------------------------------------


@mutant(
    "responses-unknown-member-accepted",
    "a Responses request member the channel does not take (`conversation`, an unknown member) is ignored, not "
    "refused `unsupported_field`",
    {"OPENAI-005"},
    {"OPENAI-004"},  # channel_openai.errors sends an unsupported member to /responses too
    only=(OPENAI,),
)
def _responses_unknown_member_accepted() -> None:
    import reference_server.channels.openai_responses as openai_responses

    openai_responses.refuse_unknown_members = lambda body, supported: None


@mutant(
    "openai-whole-usage-off-by-one",
    "a chat completion that is not streamed reports one prompt token more than the turn's statistics",
    {"OPENAI-003", "CHANNEL-008"},
    only=(OPENAI, SHARED),
)
def _openai_whole_usage_off_by_one() -> None:
    import reference_server.channels.openai_chat as openai_chat

    original = openai_chat.completion_object

    def completion_object(completion_id, created, text, usage):
        return original(completion_id, created, text, (usage[0] + 1, usage[1]))

    openai_chat.completion_object = completion_object
