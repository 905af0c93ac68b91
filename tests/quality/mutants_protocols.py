"""Mutants of the channels' protocols (spec/behaviour.md: "OpenAI protocol", "UI message stream protocol", "AG-UI
protocol": OPENAI-PROTO-*, UI-PROTO-*, AGUI-PROTO-*): each a channel of the reference server broken where the
protocol itself is broken, the way a real implementer breaks it (a standard member refused, a field of the official
type left out, an event of a part, message or call that is not open), so that the suite's protocol voice is proven
to speak. The mutants of tests/quality/mutants_channels.py that break a protocol rule on their way (a chunk without
its id, no `[DONE]`) target it there; these are the protocol rules no break of the contract's forms reaches.

Each patches reference_server.channels in the mutant's process only, names the conformance areas its run needs
(`only`: its channel's), and fails exactly its targets and consequences (tests/quality/test_channel_mutants.py); a
contract rule among its consequences is one the break truly breaks as well. Registered in tests/quality/mutants.py's
MUTANTS by importing this module.
"""

from __future__ import annotations

from typing import Any

from .mutant_kit import mutant

OPENAI, UI, AG_UI = "channel_openai", "channel_ui", "channel_ag_ui"


def _unsupported_parameter(name: str) -> Exception:
    """A refusal as servers that know only part of OpenAI's API answer it: 400, naming the member."""
    from reference_server.errors import ApiError

    message = f"Unsupported parameter: '{name}' is not supported with this model."
    return ApiError(400, "unsupported_parameter", message, details={"param": name})


# --- OpenAI -------------------------------------------------------------------------------------------------------


@mutant(
    "openai-standard-members-refused",
    "the chat endpoint refuses `temperature` and `max_completion_tokens` with 400 (as langgraph-openai-serve 0.31 "
    "does)",
    # members the API defines, not served (the contract accepts them too: OPENAI-001 fails where it judges its own
    # bounds of `temperature`, 0 and 2; the standard values are judged in the protocol's voice only)
    {"OPENAI-PROTO-001"},
    {"OPENAI-001"},
    only=(OPENAI,),
)
def _openai_standard_members_refused() -> None:
    import reference_server.channels.openai_chat as openai_chat

    original = openai_chat.chat_request

    def chat_request(body: Any):
        for name in ("temperature", "max_completion_tokens"):
            if isinstance(body, dict) and body.get(name) is not None:
                raise _unsupported_parameter(name)
        return original(body)

    openai_chat.chat_request = chat_request


@mutant(
    "openai-top-p-refused",
    "the chat endpoint refuses `top_p` with 400, a sampling parameter the API defines (as langgraph-openai-serve 0.31 "
    "does)",
    {"OPENAI-PROTO-001"},  # served by the contract too; the suite sends it in the protocol's voice only
    only=(OPENAI,),
)
def _openai_top_p_refused() -> None:
    import reference_server.channels.openai_chat as openai_chat

    original = openai_chat.chat_request

    def chat_request(body: Any):
        if isinstance(body, dict) and body.get("top_p") is not None:
            raise _unsupported_parameter("top_p")
        return original(body)

    openai_chat.chat_request = chat_request


@mutant(
    "openai-chunks-without-usage-null",
    "with `stream_options.include_usage`, the chunks before the usage chunk leave `usage` out instead of `usage: null`",
    {"OPENAI-PROTO-004"},  # "All other chunks will also include a usage field, but with a null value"
    only=(OPENAI,),
)
def _openai_chunks_without_usage_null() -> None:
    from reference_server.channels.openai_chat import ChatCompletionStream

    original = ChatCompletionStream.chunk

    def chunk(self, delta, finish_reason=None):
        made = original(self, delta, finish_reason)
        made.pop("usage", None)  # the usage chunk sets its own `usage` after this
        return made

    ChatCompletionStream.chunk = chunk


@mutant(
    "openai-completion-without-created",
    "a chat completion answered without `stream` has no `created`",
    {"OPENAI-PROTO-005"},  # ChatCompletion.created is required; the contract's message, finish and usage hold
    only=(OPENAI,),
)
def _openai_completion_without_created() -> None:
    import reference_server.channels.openai_chat as openai_chat

    original = openai_chat.completion_object

    def completion_object(*args):
        made = original(*args)
        made.pop("created", None)
        return made

    openai_chat.completion_object = completion_object


@mutant(
    "responses-max-output-tokens-refused",
    "the Responses endpoint refuses `max_output_tokens` with 400 (a server that knows only Chat Completions' "
    "`max_tokens`)",
    # a member the API defines, not served (OPENAI-005 accepts it too; the suite judges the standard members in the
    # protocol's voice only)
    {"OPENAI-PROTO-007"},
    only=(OPENAI,),
)
def _responses_max_output_tokens_refused() -> None:
    import reference_server.channels.openai_responses as openai_responses

    original = openai_responses.responses_request

    def responses_request(body: Any):
        if isinstance(body, dict) and body.get("max_output_tokens") is not None:
            raise _unsupported_parameter("max_output_tokens")
        return original(body)

    openai_responses.responses_request = responses_request


@mutant(
    "responses-top-p-refused",
    "the Responses endpoint refuses `top_p` with 400, a sampling parameter the API defines",
    {"OPENAI-PROTO-007"},  # its one standard request carries `top_p` (OPENAI-005 serves it too)
    only=(OPENAI,),
)
def _responses_top_p_refused() -> None:
    import reference_server.channels.openai_responses as openai_responses

    original = openai_responses.responses_request

    def responses_request(body: Any):
        if isinstance(body, dict) and body.get("top_p") is not None:
            raise _unsupported_parameter("top_p")
        return original(body)

    openai_responses.responses_request = responses_request


@mutant(
    "responses-created-not-created-at",
    "a Response answered without `stream` names its time `created` (Chat Completions' name), not `created_at`",
    {"OPENAI-PROTO-008"},  # Response.created_at is required; the contract's session, output and usage hold
    only=(OPENAI,),
)
def _responses_created_not_created_at() -> None:
    import reference_server.channels.openai_responses as openai_responses

    original = openai_responses.JSONResponse  # the non-streamed Response only (the stream's events are not)

    def json_response(body, **kwargs):
        if isinstance(body, dict) and "created_at" in body:
            body = {("created" if key == "created_at" else key): value for key, value in body.items()}
        return original(body, **kwargs)

    openai_responses.JSONResponse = json_response


# --- UI message stream --------------------------------------------------------------------------------------------


@mutant(
    "ui-message-id-refused",
    "the UI endpoint refuses a body that carries `messageId` with 422, as a request schema that knows only `id`, "
    "`messages` and `trigger` does (DefaultChatTransport sends it when the user resubmits a message edited)",
    {"UI-PROTO-006"},  # a member DefaultChatTransport sends, refused
    # channel_ui.request stops at that refusal (the chat's next message): the session's continuation by the chat id,
    # which the contract judges on that very request, is not reached (NOT TESTABLE)
    {"UI-001"},
    only=(UI,),
)
def _ui_message_id_refused() -> None:
    import reference_server.channels.ui_stream as ui_stream
    from reference_server.errors import invalid_field

    original = ui_stream.turn_request

    def turn_request(body):
        if body.messageId is not None:
            raise invalid_field(["body", "messageId"], "Extra inputs are not permitted", "extra_forbidden")
        return original(body)

    ui_stream.turn_request = turn_request


@mutant(
    "ui-text-delta-before-start",
    "a text part's first text-delta comes before its text-start",
    {"UI-PROTO-002"},  # a text-delta of no open text part (`ai`: "Received text-delta for missing text part")
    {"UI-003"},  # the contract's text part is text-start, then a text-delta per content: its first one is lost
    only=(UI,),
)
def _ui_text_delta_before_start() -> None:
    from reference_server.channels.ui_stream import UiMessageStream

    original = UiMessageStream._content

    def content(self, text):
        chunks = original(self, text)
        kinds = [chunk["type"] for chunk in chunks]
        if kinds[-2:] == ["text-start", "text-delta"]:
            chunks[-2:] = [chunks[-1], chunks[-2]]
        return chunks

    UiMessageStream._content = content


@mutant(
    "ui-tool-output-unknown-call",
    "tool-output-available names the tool run by an id of its own, not the toolCallId its tool-input-start announced",
    {"UI-PROTO-003"},  # a tool output of a call no input chunk announced (`ai`: "No tool invocation found")
    {"UI-003"},  # the contract's tool part gets its output at its tool_end: the announced part never does
    only=(UI,),
)
def _ui_tool_output_unknown_call() -> None:
    from reference_server.channels.ui_stream import UiMessageStream

    original = UiMessageStream._tool_end

    def tool_end(self, event):
        chunks = original(self, event)
        for chunk in chunks:
            if chunk["type"] == "tool-output-available":
                chunk["toolCallId"] = f"run-{self.new_id()}"
        return chunks

    UiMessageStream._tool_end = tool_end


@mutant(
    "ui-no-start-chunk",
    "the UI message stream begins with start-step: no `start` chunk",
    {"UI-PROTO-004"},  # a message begins with `start`
    {"UI-003"},  # the contract's `start` names the message and its session (messageMetadata.sessionId)
    only=(UI,),
)
def _ui_no_start_chunk() -> None:
    from reference_server.channels.ui_stream import UiMessageStream
    from reference_server.turns.sse import data_frame

    original = UiMessageStream.opening

    def opening(self):
        return data_frame({"type": "start-step"}) if original(self) else ""

    UiMessageStream.opening = opening


# --- AG-UI --------------------------------------------------------------------------------------------------------


@mutant(
    "agui-state-context-refused",
    "the AG-UI endpoint refuses a RunAgentInput whose `state` or `context` is not empty with 422, as an agent "
    "that takes neither does (HttpAgent sends the agent's state and the application's context on every run)",
    {"AGUI-PROTO-007"},  # a RunAgentInput valid against RunAgentInputSchema, without tools, refused
    # channel_ag_ui.input stops at that refusal (a new thread's first run): the contract's mapping of the run (the
    # thread as the session, the run echoed, the temperature) is not reached (NOT TESTABLE)
    {"AGUI-001"},
    only=(AG_UI,),
)
def _agui_state_context_refused() -> None:
    import reference_server.channels.ag_ui as ag_ui
    from reference_server.errors import invalid_field

    original = ag_ui.turn_request

    def turn_request(body):
        for name, value in (("state", body.state), ("context", body.context)):
            if value:
                raise invalid_field(["body", name], f"this agent takes no {name}", "value_error")
        return original(body)

    ag_ui.turn_request = turn_request


def _rewrite_ag_ui_events(change) -> None:
    """Rewrite the AG-UI events of each contract event: `change(stream, events)` returns them (AgUiStream.events)."""
    from reference_server.channels.ag_ui import AgUiStream

    original = AgUiStream.events

    def events(self, event):
        return change(self, original(self, event))

    AgUiStream.events = events


@mutant(
    "agui-text-content-after-end",
    "a text message is ended after its first TEXT_MESSAGE_CONTENT: its later deltas follow its TEXT_MESSAGE_END",
    {"AGUI-PROTO-003"},  # TEXT_MESSAGE_CONTENT of a message no longer open (verifyEvents: "No active text message")
    {"AGUI-002"},  # the contract's text message holds every delta between its START and END: the run's text is cut
    only=(AG_UI,),
)
def _agui_text_content_after_end() -> None:
    _rewrite_ag_ui_events(_ended_after_first("TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "messageId"))


@mutant(
    "agui-tool-args-after-end",
    "a tool call is ended after its first TOOL_CALL_ARGS: its later argument deltas follow its TOOL_CALL_END",
    {"AGUI-PROTO-004"},  # TOOL_CALL_ARGS of a call no longer open (verifyEvents: "No active tool call")
    {"AGUI-PROTO-006"},  # the arguments a call streams between its start and end are cut: not the model's
    only=(AG_UI,),
)
def _agui_tool_args_after_end() -> None:
    _rewrite_ag_ui_events(_ended_after_first("TOOL_CALL_ARGS", "TOOL_CALL_END", "toolCallId"))


def _ended_after_first(delta: str, end: str, key: str):
    """A rewrite of the AG-UI events that ends each message or call (by `key`) right after its first `delta` event
    and drops its own `end` event: its later deltas then follow its end."""

    def change(stream, events):
        ended = stream.__dict__.setdefault("_mutant_ended_early", set())
        out = []
        for event in events:
            kind, ident = event["type"], event.get(key)
            if kind == end and ident in ended:
                continue  # ended already, after its first delta
            out.append(event)
            if kind == delta and ident not in ended:
                ended.add(ident)
                out.append({"type": end, key: ident})
        return out

    return change


@mutant(
    "agui-text-open-at-run-finished",
    "the last text message is left open: no TEXT_MESSAGE_END before RUN_FINISHED",
    # verifyEvents: "Cannot send 'RUN_FINISHED' while text messages are still active" (the contract's events judge
    # the text, which is whole)
    {"AGUI-PROTO-005"},
    only=(AG_UI,),
)
def _agui_text_open_at_run_finished() -> None:
    from reference_server.channels.ag_ui import AgUiStream

    original = AgUiStream._done

    def done(self):
        return [event for event in original(self) if event["type"] != "TEXT_MESSAGE_END"]

    AgUiStream._done = done
